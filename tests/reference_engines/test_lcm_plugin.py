"""Covers reference_engines.lcm.install and simulator.host.discovery: LCM as a real Hermes plugin
folder (R3, R4, R6), plugin.yaml, install_plugin, and loading the installed copy from
``$HERMES_HOME/plugins/lcm/`` the way Hermes' user-directory loader does (text heuristic,
synthetic namespace, sibling modules first, ``register(ctx)`` then subclass)."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest
import yaml

from reference_engines.lcm.install import install_plugin, plugin_source_dir

from .test_lcm_helpers import carrier_of, conversation, expand_all, top_node_id

NAMESPACE = "_hermes_user_context_engine"


def test_plugin_yaml_fields():
    meta = yaml.safe_load((plugin_source_dir() / "plugin.yaml").read_text())
    assert meta["name"] == "lcm"
    assert isinstance(meta["description"], str) and meta["description"]
    assert isinstance(meta["version"], str) and meta["version"]


def test_install_plugin_copies_folder(tmp_path):
    target = install_plugin("lcm", tmp_path)
    assert target == (tmp_path / "plugins" / "lcm").resolve()
    names = {p.name for p in target.iterdir()}
    assert {
        "__init__.py",
        "plugin.yaml",
        "engine.py",
        "store.py",
        "tools.py",
        "install.py",
    } <= names
    assert "__pycache__" not in names
    (target / "stale.txt").write_text("old install")
    install_plugin("lcm", tmp_path)  # reinstall replaces
    assert not (target / "stale.txt").exists()
    with pytest.raises(ValueError, match="only 'lcm'"):
        install_plugin("other", tmp_path)


class _Collector:
    """Stand-in for Hermes' ``_EngineCollector``: records register_context_engine calls."""

    def __init__(self):
        self.engines = []

    def register_context_engine(self, engine):
        self.engines.append(engine)


def _load_user_plugin(plugin_dir: Path, name: str):
    """Load ``plugin_dir`` as Hermes MAIN does for a user-directory engine."""
    head = (plugin_dir / "__init__.py").read_text(encoding="utf-8-sig")[:8192]
    assert "register_context_engine" in head or "ContextEngine" in head, (
        "Hermes would skip this directory"
    )
    if NAMESPACE not in sys.modules:
        ns = types.ModuleType(NAMESPACE)
        ns.__path__ = []
        sys.modules[NAMESPACE] = ns
    modname = f"{NAMESPACE}.{name}"
    spec = importlib.util.spec_from_file_location(
        modname, plugin_dir / "__init__.py", submodule_search_locations=[str(plugin_dir)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    # siblings first (failures tolerated, as Hermes only debug-logs them)
    for sibling in sorted(plugin_dir.glob("*.py")):
        if sibling.stem == "__init__":
            continue
        try:
            importlib.import_module(f"{modname}.{sibling.stem}")
        except Exception:
            pass
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def installed(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    target = install_plugin("lcm", tmp_path)
    module = _load_user_plugin(target, "lcm")
    yield tmp_path, module
    for key in [k for k in sys.modules if k.startswith(f"{NAMESPACE}.lcm")]:
        del sys.modules[key]


def test_installed_copy_loads_and_registers(installed):
    home, module = installed
    from agent.context_engine import ContextEngine

    assert module.__file__.startswith(str(home))
    collector = _Collector()
    module.register(collector)
    assert len(collector.engines) == 1
    engine = collector.engines[0]
    assert isinstance(engine, ContextEngine) and engine.name == "lcm"  # R6
    assert engine.db_path == home / "lcm" / "lcm.sqlite3"
    assert type(engine).__module__.startswith(f"{NAMESPACE}.lcm"), (
        "the installed copy, not the kit's package"
    )
    # subclass fallback (no register): the first ContextEngine subclass in dir() order
    subclasses = [
        getattr(module, n)
        for n in dir(module)
        if isinstance(getattr(module, n), type)
        and issubclass(getattr(module, n), ContextEngine)
        and getattr(module, n) is not ContextEngine
    ]
    assert [c.__name__ for c in subclasses] == ["LCMEngine"]


def test_installed_engine_works_end_to_end(installed):
    home, module = installed
    engine = module.LCMEngine().clone_for_agent()
    engine.update_model("m", 3000)
    engine.on_session_start("s1")
    out = engine.compress(conversation(1, 40))
    engine.on_turn_complete(list(out))
    assert expand_all(engine, top_node_id(carrier_of(out)))
    assert (home / "lcm" / "lcm.sqlite3").exists()
    assert json.loads(engine.handle_tool_call("nope", {}))["error"]


def test_kit_discovery_finds_installed_plugin(tmp_path):
    """R3/R4/R6: the reference host selects the installed copy from $HERMES_HOME/plugins/lcm/."""
    from simulator.host import discovery

    install_plugin("lcm", tmp_path)
    (tmp_path / "config.yaml").write_text("context:\n  engine: lcm\n", encoding="utf-8")
    selection = discovery.select_engine(hermes_home=tmp_path)
    assert not selection.fell_back
    assert selection.name == "lcm" and selection.engine.name == "lcm"
    assert Path(selection.path).resolve() == (tmp_path / "plugins" / "lcm").resolve()
    factory, report = discovery.load_engine_plugin(tmp_path / "plugins" / "lcm")
    assert factory is not None, report
    assert factory().name == "lcm"


def test_install_main_prints_target(tmp_path, capsys):
    from reference_engines.lcm.install import main

    assert main(["--hermes-home", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == str((tmp_path / "plugins" / "lcm").resolve())
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["--hermes-home", str(blocker)]) == 2
    assert "install failed" in capsys.readouterr().err
    # the kit's install-plugin runs the same main under its own name: the folder alone
    kit = "context-engine-kit install-plugin"
    assert main(["lcm", "--hermes-home", str(tmp_path)], prog=kit) == 0
    assert capsys.readouterr().out == f"{(tmp_path / 'plugins' / 'lcm').resolve()}\n"
    assert main(["lcm", "--hermes-home", str(blocker)], prog=kit) == 2
    assert capsys.readouterr().err.startswith(f"{kit}: error: install_plugin: could not write")
