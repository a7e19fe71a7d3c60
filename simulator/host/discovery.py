"""Engine discovery and registration, as the host does it (R1-R6).

- R1/R2: ``context.engine`` in ``$HERMES_HOME/config.yaml`` (read with PyYAML) selects the
  one active engine; ``"compressor"`` (the default) is the built-in, and a plugin engine
  is never activated unless named there.
- R3: resolution order: the bundled ``<bundled_root>/<name>/`` (Hermes'
  ``plugins/context_engine/<name>/``), then ``$HERMES_HOME/plugins/<name>/`` (documented
  profile only; its ``__init__.py`` must mention ``ContextEngine`` or
  ``register_context_engine`` in its first 8192 characters; no ``plugins.enabled`` entry
  needed), then the general plugin system (``register(ctx)`` ->
  ``ctx.register_context_engine(engine)``, for plugins listed in ``plugins.enabled``),
  else the built-in compressor with a warning. Bundled wins a name clash.
- R4: a plugin directory has ``__init__.py`` exporting a ContextEngine subclass or
  ``register(ctx)``, and ``plugin.yaml`` with name, description, version
  (:data:`PLUGIN_YAML_SCHEMA`, validated with jsonschema).
- R5: the general plugin system keeps the first registered engine and refuses a second
  with a warning (:class:`PluginManager`).
- R6: ``engine.name`` equals the configured name and plugin.yaml's name.

:func:`load_engine_plugin` loads one plugin folder the way the host does and reports
R4-R6 findings for it (for ``--engine-plugin DIR``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from simulator.host import builtin, shim
from simulator.host.profiles import get_profile

log = logging.getLogger("simulator.host")

NOT_FOUND = "Context engine '%s' not found — falling back to built-in compressor"
ALREADY_REGISTERED = (
    "Plugin '%s' tried to register a context engine, but one is already registered. "
    "Only one context engine plugin is allowed."
)
NOT_AN_ENGINE = (
    "Plugin '%s' tried to register a context engine "
    "that does not inherit from ContextEngine. Ignoring."
)
USING_ENGINE = "Using context engine: %s"

#: R4: the plugin.yaml fields a context-engine plugin must carry.
PLUGIN_YAML_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "description", "version"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "pattern": r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"},
        "description": {"type": "string"},
        "version": {"type": ["string", "number"]},
        "author": {"type": "string"},
        "kind": {"type": "string"},
        "requires_env": {"type": "array"},
        "provides_tools": {"type": "array", "items": {"type": "string"}},
        "provides_hooks": {"type": "array", "items": {"type": "string"}},
    },
}

_HEURISTIC_CHARS = 8192
_LOAD_LOCK = threading.Lock()


def default_hermes_home() -> Path:
    """``$HERMES_HOME``, else ``~/.hermes`` (R3)."""
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


def read_config(hermes_home: os.PathLike | None = None) -> dict[str, Any]:
    """Parse ``<hermes_home>/config.yaml`` with PyYAML; a missing file gives ``{}`` (R1).

    Raises:
        ValueError: the file is not valid YAML or its top level is not a mapping; the
            message names the file and what to fix.
    """
    path = Path(hermes_home or default_hermes_home()) / "config.yaml"
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except yaml.YAMLError as exc:
        raise ValueError(
            f"{path}: not valid YAML ({exc}); fix the syntax or remove the file"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: the top level must be a mapping such as 'context: {{engine: <name>}}'"
        )
    return data


def configured_engine_name(config: dict[str, Any] | None) -> str:
    """R1: ``context.engine`` from a parsed config, default ``"compressor"``."""
    ctx = (config or {}).get("context") or {}
    name = ctx.get("engine") if isinstance(ctx, dict) else None
    return str(name).strip() if name else builtin.BUILTIN_NAME


def validate_plugin_yaml(plugin_dir: os.PathLike) -> tuple[dict[str, Any] | None, list[str]]:
    """R4: parse and validate ``plugin.yaml``; returns (data or None, error strings)."""
    path = Path(plugin_dir) / "plugin.yaml"
    if not path.is_file():
        return None, [f"{path} is missing; add one with name, description and version"]
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
    except yaml.YAMLError as exc:
        return None, [f"{path}: not valid YAML ({exc})"]
    validator = jsonschema.Draft202012Validator(PLUGIN_YAML_SCHEMA)
    errors = [
        f"{path}: {'.'.join(str(p) for p in e.path) or 'top level'}: {e.message}"
        for e in sorted(validator.iter_errors(data), key=lambda e: list(e.path))
    ]
    return (data if isinstance(data, dict) else None), errors


def looks_like_engine_dir(plugin_dir: os.PathLike) -> bool:
    """R3 user-directory heuristic: ``__init__.py`` mentions ContextEngine or
    register_context_engine."""
    init = Path(plugin_dir) / "__init__.py"
    if not init.is_file():
        return False
    head = init.read_text(encoding="utf-8-sig", errors="replace")[:_HEURISTIC_CHARS]
    return "register_context_engine" in head or "ContextEngine" in head


def _namespace(ns: str) -> None:
    if ns not in sys.modules:
        pkg = types.ModuleType(ns)
        pkg.__path__ = []  # type: ignore[attr-defined]
        sys.modules[ns] = pkg


def load_plugin_module(
    plugin_dir: os.PathLike, namespace: str = "_kit_context_engine_plugins"
) -> types.ModuleType:
    """Import ``plugin_dir`` as a package under a synthetic namespace (R3, R4).

    The module name carries a digest of the resolved path, so two trees with the same
    plugin name (e.g. in different tmp dirs) never share a module. A cached module is
    reused. Relative imports of sibling files work (the folder is the package path).

    Raises:
        FileNotFoundError: no ``__init__.py``.
        Exception: whatever the plugin's ``__init__`` raises (the module is removed).
    """
    d = Path(plugin_dir).resolve()
    init = d / "__init__.py"
    if not init.is_file():
        raise FileNotFoundError(
            f"{d} has no __init__.py; a plugin directory must be a Python package (R4)"
        )
    shim.install()
    digest = hashlib.sha256(str(d).encode()).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in d.name)
    name = f"{namespace}.{safe}_{digest}"
    with _LOAD_LOCK:
        cached = sys.modules.get(name)
        if cached is not None and getattr(cached, "__file__", None):
            return cached
        _namespace(namespace)
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[str(d)]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {init}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module


class EngineCollector:
    """The ``ctx`` a context-engine directory's ``register(ctx)`` receives.

    ``register_context_engine`` stores the engine (the last call inside one register()
    wins, as in Hermes' directory loader) and counts calls, so :func:`load_engine_plugin`
    can report R5. The other plugin-context methods are accepted and ignored.
    """

    def __init__(self, engine_name: str = "") -> None:
        self.engine_name = engine_name
        self.engine: Any = None
        self.registrations: list[Any] = []

    def register_context_engine(self, engine: Any) -> None:
        """Collect ``engine`` (R4 register path)."""
        self.registrations.append(engine)
        self.engine = engine

    def register_command(self, *args: Any, **kwargs: Any) -> None:
        """Accepted and ignored (commands are outside the engine contract)."""

    def register_tool(self, *args: Any, **kwargs: Any) -> None:
        """Accepted and ignored."""

    def register_hook(self, *args: Any, **kwargs: Any) -> None:
        """Accepted and ignored."""

    def register_cli_command(self, *args: Any, **kwargs: Any) -> None:
        """Accepted and ignored."""

    def register_memory_provider(self, *args: Any, **kwargs: Any) -> None:
        """Accepted and ignored."""


def engine_classes(module: types.ModuleType) -> list[type]:
    """ContextEngine subclasses exported by ``module``, in ``dir()`` (alphabetical) order."""
    base = shim.context_engine_base()
    out = []
    for attr in dir(module):
        obj = getattr(module, attr, None)
        if isinstance(obj, type) and issubclass(obj, base) and obj is not base:
            out.append(obj)
    return out


def instance_from_module(
    module: types.ModuleType, engine_name: str = ""
) -> tuple[Any, EngineCollector]:
    """R4: an engine from a loaded plugin module: ``register(ctx)`` first, else the first subclass.

    Returns (engine or None, the collector used). ``register()`` errors are logged (debug,
    as Hermes) and the subclass fallback is tried; constructor errors give None.
    """
    collector = EngineCollector(engine_name)
    register = getattr(module, "register", None)
    if callable(register):
        try:
            register(collector)
        except Exception as exc:
            log.debug("register() failed for %s: %s", engine_name, exc)
        if collector.engine is not None:
            return collector.engine, collector
    for cls in engine_classes(module):
        try:
            return cls(), collector
        except Exception as exc:
            log.debug("Context engine class %s could not be instantiated: %s", cls.__name__, exc)
            return None, collector
    return None, collector


def load_engine_dir(plugin_dir: os.PathLike, name: str, namespace: str) -> Any:
    """Load ``plugin_dir`` and return a fresh engine instance, or None (logged as Hermes does)."""
    try:
        module = load_plugin_module(plugin_dir, namespace)
        engine, _ = instance_from_module(module, name)
    except Exception as exc:
        log.warning("Failed to load context engine '%s': %s", name, exc)
        return None
    if engine is None:
        log.warning("Context engine '%s' loaded but no engine instance found", name)
    return engine


class PluginManager:
    """The general plugin system (R3 step 3, R5).

    Loads ``$HERMES_HOME/plugins/<dir>/`` plugins listed in ``plugins.enabled`` (each
    with a plugin.yaml) and calls their ``register(ctx)``; ``ctx.register_context_engine``
    keeps the first engine and refuses later ones with a warning (R5).
    """

    def __init__(self) -> None:
        self.context_engine: Any = None
        self.loaded: list[str] = []
        self.refused: list[str] = []

    def context_for(self, plugin_name: str) -> PluginContext:
        """The ``ctx`` handed to one plugin's ``register``."""
        return PluginContext(self, plugin_name)

    def load_plugins(self, hermes_home: os.PathLike, enabled: list[str]) -> None:
        """Load every enabled plugin directory under ``<hermes_home>/plugins`` (sorted)."""
        root = Path(hermes_home) / "plugins"
        if not root.is_dir():
            return
        for d in sorted(
            p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
        ):
            data, errors = validate_plugin_yaml(d)
            pname = str((data or {}).get("name") or d.name)
            if data is None:
                continue
            if d.name not in enabled and pname not in enabled:
                log.debug("Plugin '%s' not enabled in config", pname)
                continue
            try:
                module = load_plugin_module(d, "_kit_general_plugins")
                register = getattr(module, "register", None)
                if callable(register):
                    register(self.context_for(pname))
                self.loaded.append(pname)
            except Exception as exc:
                log.warning("Plugin '%s' failed to load: %s", pname, exc)


class PluginContext:
    """The ``ctx`` of one general plugin (R5)."""

    def __init__(self, manager: PluginManager, plugin_name: str) -> None:
        self._manager = manager
        self.plugin_name = plugin_name

    def register_context_engine(self, engine: Any) -> None:
        """R5: the first engine registered wins; later ones are refused with a warning."""
        if self._manager.context_engine is not None:
            log.warning(ALREADY_REGISTERED, self.plugin_name)
            self._manager.refused.append(self.plugin_name)
            return
        if not isinstance(engine, shim.context_engine_base()):
            log.warning(NOT_AN_ENGINE, self.plugin_name)
            return
        self._manager.context_engine = engine

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("register_"):
            return lambda *a, **k: None
        raise AttributeError(name)


@dataclass
class Selection:
    """The engine the host selected (R1-R3).

    Attributes:
        engine: the registered engine instance (agents clone it, C1).
        name: the configured name.
        source: "builtin", "bundled", "user", "plugin" or "fallback".
        fell_back: True when the configured engine was not found (built-in used).
        path: the plugin directory, when loaded from one.
    """

    engine: Any
    name: str
    source: str
    fell_back: bool = False
    path: Path | None = None


def select_engine(
    config: dict[str, Any] | None = None,
    *,
    hermes_home: os.PathLike | None = None,
    bundled_root: os.PathLike | None = None,
    profile: Any = None,
    plugin_manager: PluginManager | None = None,
    builtin_factory: Callable[[], Any] | None = None,
) -> Selection:
    """R1-R3: select the one active engine as the host does.

    Args:
        config: parsed config.yaml (read from ``hermes_home`` when None).
        hermes_home: ``$HERMES_HOME`` (default from the environment, else ``~/.hermes``).
        bundled_root: the bundled ``plugins/context_engine`` folder (None: none bundled).
        profile: host profile (hermes-0.19 has no user plugin folder).
        plugin_manager: the general plugin system; built from ``plugins.enabled`` when None.
        builtin_factory: the built-in compressor (None: the host's own,
            :func:`simulator.host.builtin.new_builtin`).
    """
    prof = get_profile(profile)
    home = Path(hermes_home) if hermes_home is not None else default_hermes_home()
    if config is None:
        config = read_config(home)
    name = configured_engine_name(config)
    if name == builtin.BUILTIN_NAME:
        return Selection(builtin.new_builtin(builtin_factory), name, "builtin")
    if bundled_root is not None:
        d = Path(bundled_root) / name
        if (d / "__init__.py").is_file():
            engine = load_engine_dir(d, name, "_kit_bundled_context_engine")
            if engine is not None:
                log.info(USING_ENGINE, name)
                return Selection(engine, name, "bundled", path=d)
    if prof.user_plugin_dir:
        d = home / "plugins" / name
        if looks_like_engine_dir(d):
            engine = load_engine_dir(d, name, "_hermes_user_context_engine")
            if engine is not None:
                log.info(USING_ENGINE, name)
                return Selection(engine, name, "user", path=d)
    manager = plugin_manager
    if manager is None:
        manager = PluginManager()
        plugins_cfg = (config or {}).get("plugins") or {}
        enabled = plugins_cfg.get("enabled") if isinstance(plugins_cfg, dict) else None
        manager.load_plugins(home, list(enabled) if isinstance(enabled, list) else [])
    candidate = manager.context_engine
    if candidate is not None and getattr(candidate, "name", None) == name:
        log.info(USING_ENGINE, name)
        return Selection(candidate, name, "plugin")
    log.warning(NOT_FOUND, name)
    return Selection(builtin.new_builtin(builtin_factory), name, "fallback", fell_back=True)


def discover_engines(
    bundled_root: os.PathLike | None,
    hermes_home: os.PathLike | None = None,
    *,
    profile: Any = None,
) -> list[tuple[str, str, Path]]:
    """R3: (name, plugin.yaml description or "", directory) of every discoverable engine.

    Bundled folders first (sorted, skipping ``_``/``.`` names), then user folders whose
    name is not already seen and that pass the heuristic (documented profile only).
    """
    seen: dict[str, tuple[str, str, Path]] = {}
    roots: list[tuple[Path, bool]] = []
    if bundled_root is not None:
        roots.append((Path(bundled_root), False))
    if get_profile(profile).user_plugin_dir:
        roots.append((Path(hermes_home or default_hermes_home()) / "plugins", True))
    for root, user in roots:
        if not root.is_dir():
            continue
        for d in sorted(p for p in root.iterdir() if p.is_dir()):
            if d.name.startswith(("_", ".")) or d.name in seen or not (d / "__init__.py").is_file():
                continue
            if user and not looks_like_engine_dir(d):
                continue
            data, _ = validate_plugin_yaml(d)
            seen[d.name] = (d.name, str((data or {}).get("description") or ""), d)
    return list(seen.values())


@dataclass
class Finding:
    """One R-clause finding about a plugin folder: clause, ok, and a message."""

    clause: str
    ok: bool
    message: str


@dataclass
class PluginReport:
    """What :func:`load_engine_plugin` found (R4-R6).

    Attributes:
        plugin_dir: the folder checked.
        name: plugin.yaml's name (or the folder name).
        findings: one :class:`Finding` per check, in order.
    """

    plugin_dir: Path
    name: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every finding passed."""
        return all(f.ok for f in self.findings)

    def failures(self) -> list[Finding]:
        """The failed findings."""
        return [f for f in self.findings if not f.ok]

    def add(self, clause: str, ok: bool, message: str) -> None:
        self.findings.append(Finding(clause, ok, message))


def load_engine_plugin(plugin_dir: os.PathLike) -> tuple[Callable[[], Any] | None, PluginReport]:
    """Load a plugin folder as the host does and check R4-R6 on it.

    Returns ``(engine_factory, report)``. ``engine_factory()`` makes a fresh engine the
    way each host load does (``register(ctx)`` again, or the subclass again); it is None
    when no engine could be obtained. The report's findings:

    - R4: ``__init__.py`` exists and exports a ContextEngine subclass or ``register``;
      ``plugin.yaml`` exists and validates (:data:`PLUGIN_YAML_SCHEMA`); the module
      yields an engine.
    - R5: ``register(ctx)`` registers exactly one engine (a second registration would be
      refused by the host, so the plugin's intent is lost).
    - R6: ``engine.name`` equals plugin.yaml's name and the folder name (the configured
      ``context.engine``).

    Never raises for a broken plugin: problems become failed findings.
    """
    d = Path(plugin_dir)
    data, yaml_errors = validate_plugin_yaml(d)
    name = str((data or {}).get("name") or d.name)
    report = PluginReport(d, name)
    report.add(
        "R4",
        not yaml_errors,
        "plugin.yaml is valid (name, description, version)"
        if not yaml_errors
        else "; ".join(yaml_errors),
    )
    if not (d / "__init__.py").is_file():
        report.add(
            "R4", False, f"{d} has no __init__.py; export a ContextEngine subclass or register(ctx)"
        )
        return None, report
    try:
        module = load_plugin_module(d, "_kit_checked_plugins")
    except Exception as exc:
        report.add("R4", False, f"importing {d / '__init__.py'} raised {type(exc).__name__}: {exc}")
        return None, report
    has_register = callable(getattr(module, "register", None))
    classes = engine_classes(module)
    report.add(
        "R4",
        has_register or bool(classes),
        "exports "
        + ("register(ctx)" if has_register else f"ContextEngine subclass {classes[0].__name__}")
        if (has_register or classes)
        else "__init__.py exports neither register(ctx) nor a ContextEngine subclass",
    )
    engine, collector = instance_from_module(module, name)
    if engine is None:
        report.add(
            "R4",
            False,
            "no engine instance: register(ctx) registered none and no subclass could be built",
        )
        return None, report
    report.add("R4", True, f"yields engine {type(engine).__name__}")
    if has_register:
        n = len(collector.registrations)
        report.add(
            "R5",
            n == 1,
            "register(ctx) registers exactly one engine"
            if n == 1
            else (
                f"register(ctx) called register_context_engine {n} "
                "times; the host keeps one and refuses the rest"
            ),
        )
    try:
        ename = engine.name
    except Exception as exc:
        ename = f"<name raised {type(exc).__name__}>"
    ok6 = ename == name == d.name
    report.add(
        "R6",
        ok6,
        f"engine.name == plugin.yaml name == folder name == {name!r}"
        if ok6
        else f"engine.name is {ename!r}, plugin.yaml name is {name!r}, folder is {d.name!r}; "
        f"they must all equal the configured context.engine",
    )

    def factory() -> Any:
        fresh, _ = instance_from_module(module, name)
        if fresh is None:
            raise RuntimeError(f"plugin {d} yielded no engine on reload")
        return fresh

    return factory, report
