"""Checks of contract section R for a plugin folder (R4-R6), with ``--engine-plugin DIR``.

The folder is loaded the way the host loads ``$HERMES_HOME/plugins/<name>/`` (the host's
``load_engine_plugin``); R1-R3 (selection and resolution order) are host behaviour.
Without ``--engine-plugin`` these checks skip.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from conformance.authoring.expect import MUST, SHOULD, fail
from conformance.authoring.registry import check
from conformance.clauses.errors import CheckSkipped

_CACHE: dict = {}


def load(ctx) -> tuple[Any, Any]:
    """``(factory, report)`` from the host's ``load_engine_plugin(ctx.plugin_dir)`` (cached)."""
    if not ctx.plugin_dir:
        raise CheckSkipped(
            "no plugin folder given (--engine-plugin DIR / run_conformance(plugin_dir=...))"
        )
    try:
        discovery = importlib.import_module("simulator.host.discovery")
        loader = discovery.load_engine_plugin
    except (ImportError, AttributeError):
        raise CheckSkipped(
            "this kit's host has no load_engine_plugin (simulator.host.discovery) yet"
        ) from None
    key = str(Path(ctx.plugin_dir).resolve())
    if key not in _CACHE:
        _CACHE[key] = loader(ctx.plugin_dir)
    return _CACHE[key]


def _findings(report, clause):
    return [f for f in report.findings if f.clause == clause]


@check(
    "R4",
    "plugin-folder-loads",
    level=MUST,
    title="the folder has __init__.py exporting a ContextEngine "
    "subclass or register(ctx), and a valid plugin.yaml",
)
def check_r4_plugin_folder_loads(ctx):
    """R4: every R4 finding of the host's loader passes."""
    _factory, report = load(ctx)
    bad = [f for f in _findings(report, "R4") if not f.ok]
    if bad:
        fail(
            "R4",
            MUST,
            f"plugin folder {report.plugin_dir}",
            expected="__init__.py exporting a ContextEngine "
            "subclass or register(ctx), and plugin.yaml with name, description, version",
            got="; ".join(f.message for f in bad),
        )


@check(
    "R5",
    "registers-one-engine",
    level=MUST,
    title="register(ctx) registers exactly one engine (a second registration is refused)",
)
def check_r5_registers_one_engine(ctx):
    """R5: ``register(ctx)`` calls ``ctx.register_context_engine`` once."""
    _factory, report = load(ctx)
    found = _findings(report, "R5")
    if not found:
        raise CheckSkipped("the plugin exports a ContextEngine subclass, not register(ctx)")
    bad = [f for f in found if not f.ok]
    if bad:
        fail(
            "R5",
            MUST,
            f"register(ctx) of {report.plugin_dir.name}",
            expected="one register_context_engine() call",
            got=bad[0].message,
        )


@check(
    "R6",
    "name-matches-folder",
    level=MUST,
    title="engine.name equals the configured context.engine (the folder name)",
)
def check_r6_name_matches_folder(ctx):
    """R6: ``engine.name`` == the folder name, which the user puts in ``context.engine``."""
    factory, report = load(ctx)
    if factory is None:
        raise CheckSkipped("no engine could be loaded (R4 reports why)")
    name = factory().name
    if name != report.plugin_dir.name:
        fail(
            "R6",
            MUST,
            f"engine.name of plugin folder {report.plugin_dir.name!r}",
            expected=f"{report.plugin_dir.name!r} (context.engine selects it by that name)",
            got=repr(name),
        )


@check(
    "R6",
    "name-matches-plugin-yaml",
    level=SHOULD,
    practice="host",
    title="engine.name equals plugin.yaml's name (host practice; not in seeds)",
)
def check_r6_name_matches_plugin_yaml(ctx):
    """R6 (host practice; not in seeds): plugin.yaml's ``name`` equals ``engine.name``. A
    plugin.yaml that is missing or names nothing is R4's finding (reported once, there):
    this check then skips rather than compare with the folder name the host falls back to."""
    factory, report = load(ctx)
    if factory is None:
        raise CheckSkipped("no engine could be loaded (R4 reports why)")
    from simulator.host.discovery import validate_plugin_yaml

    data, _errors = validate_plugin_yaml(report.plugin_dir)
    if not (data or {}).get("name"):
        raise CheckSkipped(
            f"{Path(report.plugin_dir) / 'plugin.yaml'} is missing or has no name "
            "(R4-plugin-folder-loads reports it); nothing to compare engine.name with"
        )
    name = factory().name
    if name != str(data["name"]):
        fail(
            "R6",
            SHOULD,
            f"plugin.yaml name of plugin folder {report.plugin_dir.name!r}",
            expected=f"engine.name {name!r}",
            got=repr(str(data["name"])),
            host_practice=True,
        )
