"""The published engines the compatibility table covers (``docs/verdicts/``): for each, how the
kit loads it and how it is constructed.

:data:`ENGINES` lists one :class:`Engine` per distribution on the package index, in the order the
index shows them; :mod:`conformance.devtools.pypi_engines` runs and renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The kwargs Hermes' own verdict uses (tox.ini ``[testenv:hermes]``): a known window, so the
#: constructor does not probe the network for the model's context length.
COMPRESSOR_KWARGS = {"model": "test", "quiet_mode": True, "config_context_length": 200000}
#: Extra ``check`` options of every run: none, the default per-call limit and budget (the kit
#: serves the engines' summary LLM, so no engine waits on a provider it cannot reach).
KIT_ARGS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Engine:
    """One published engine: how the kit loads it, and how it is constructed.

    Exactly one of ``spec`` (``MODULE:ATTR``, built with ``kwargs``) or ``plugin_package``
    (an importable package holding a plugin folder, copied to a temporary folder named
    ``plugin_name`` and loaded with ``--engine-plugin``) is set. ``owned_by`` names the tool
    that writes the page instead (the row is read, never run, here); ``slug`` overrides the
    page name (default ``<distribution>-<version>``).
    """

    distribution: str
    title: str
    construction: str
    spec: str = ""
    kwargs: dict[str, Any] | None = None
    plugin_package: str = ""
    plugin_subdir: str = ""
    plugin_name: str = ""
    kit_args: tuple[str, ...] = KIT_ARGS
    env: dict[str, str] = field(default_factory=dict)
    owned_by: str = ""
    slug: str = ""


ENGINES: tuple[Engine, ...] = (
    Engine(
        distribution="hermes-agent",
        title="Hermes' built-in `ContextCompressor`",
        construction="see its page",
        owned_by="tox -e hermes",
        slug="hermes-0.19.0",
    ),
    Engine(
        distribution="hermes-context-tuner",
        title="`ContextTunerEngine` (a wrapper delegating to Hermes' `ContextCompressor`)",
        construction=(
            "The package ships a plugin folder, `hermes_context_tuner/hermes_engine/` "
            "(`plugin.yaml` name `context-tuner`, `register(ctx)` registering "
            "`ContextTunerEngine()`), which its installer `hermes-context-tuner install-hermes` "
            "copies to `plugins/context_engine/context-tuner/`. The kit loads that folder, "
            "copied to a temporary `context-tuner/`, with `--engine-plugin` (R4-R6 run too). "
            "The constructor takes no model or window: it builds the delegate with "
            "`model=$HERMES_MODEL or 'unknown'` and no `config_context_length`."
        ),
        plugin_package="hermes_context_tuner",
        plugin_subdir="hermes_engine",
        plugin_name="context-tuner",
    ),
    Engine(
        distribution="hermes-jev-compact",
        title="`JevContextCompressor` (a `ContextCompressor` subclass, engine name `jev`)",
        construction=(
            "An entry-point plugin (`hermes_agent.plugins`); its `register(ctx)` builds "
            "`JevContextCompressor(model='jev-latest', **config)`. The kit builds the class "
            "directly with the kwargs of Hermes' own verdict (a known window, quiet), since "
            "the `register` path reads the host's `config.yaml` and `ctx._manager`. No "
            "`TYPESAFE_API_KEY` is set, so the engine's documented path is its fallback to "
            "the built-in prune (no network)."
        ),
        spec="hermes_jev_compact.engine:JevContextCompressor",
        kwargs=COMPRESSOR_KWARGS,
    ),
    Engine(
        distribution="hermes-laya",
        title="`LayaContextCompressor` (a `ContextCompressor` subclass, engine name `laya`)",
        construction=(
            "An entry-point plugin (`hermes_agent.plugins`) whose `register(ctx)` also "
            "registers tools, hooks, a command and a skill, then "
            "`LayaContextCompressor()`. The kit builds the class directly with the kwargs "
            "of Hermes' own verdict. `LAYA_AUTO_INSTALL=0` and no Laya backend package "
            "installed: the engine's documented path is its fallback to the built-in prune "
            "(no model download, no pip)."
        ),
        spec="hermes_laya.engine:LayaContextCompressor",
        kwargs=COMPRESSOR_KWARGS,
        env={"LAYA_AUTO_INSTALL": "0"},
    ),
)


__all__ = ["COMPRESSOR_KWARGS", "ENGINES", "KIT_ARGS", "Engine"]
