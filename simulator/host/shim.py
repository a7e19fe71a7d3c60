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
It is installed by the CLI, by ``reference_engines``, by :mod:`conformance.suite.test_contract`,
and by the pytest plugin when an engine is given or a conftest overrides
``conformance_engine_factory`` (the plugin holds it while the initial conftests load and
takes it out again, with :func:`uninstall`, when neither happened).
"""

from __future__ import annotations

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
        source: ``"hermes-agent"`` (the real package) or ``"context-engine-kit"`` (the shim).
        version: hermes-agent's version, or the contract version for the shim.
        features: ABC features present, e.g. ``select_context``, ``on_turn_complete``,
            ``clone_for_agent``, ``model_thresholds``, ``message_uid``. Checks of clauses whose
            feature is missing are skipped with a reason naming this version.
    """

    source: str
    version: str
    features: frozenset = field(default_factory=frozenset)

    def label(self) -> str:
        return f"{self.source} {self.version}"

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
        return AbcInfo("context-engine-kit", CONTRACT_VERSION, frozenset(features))
    try:
        version = importlib.metadata.version("hermes-agent")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return AbcInfo("hermes-agent", version, frozenset(features))


def context_engine_base() -> type:
    """The ``ContextEngine`` class in use (real or shim)."""
    install()
    return importlib.import_module("agent.context_engine").ContextEngine
