"""Covers simulator.host.discovery and simulator.host.builtin: R1-R6 selection (the injected or
minimal built-in), discovery, registration, and load_engine_plugin on fake plugin trees."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from reference_engines.compressor import ReferenceCompressor
from simulator.host import discovery
from simulator.host.builtin import BUILTIN_NAME, minimal_compressor_class
from simulator.host.session import HostSession
from simulator.provider.core import Provider
from tests.host.conftest import warnings_of

ENGINE_SRC = """
from agent.context_engine import ContextEngine


class {cls}(ContextEngine):
    origin = "{origin}"

    @property
    def name(self):
        return "{name}"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages
"""


def make_plugin(
    root: Path,
    dirname: str,
    *,
    name: str = None,
    origin: str = "x",
    register: bool = False,
    yaml_text: str = None,
    registrations: int = 1,
    init_text: str = None,
) -> Path:
    """Write a fake engine plugin folder under ``root``; returns it."""
    d = root / dirname
    d.mkdir(parents=True, exist_ok=True)
    ename = name or dirname
    src = ENGINE_SRC.format(cls="Eng" + origin.capitalize(), origin=origin, name=ename)
    if register:
        src += "\n\ndef register(ctx):\n" + "".join(
            f"    ctx.register_context_engine(Eng{origin.capitalize()}())\n"
            for _ in range(registrations)
        )
    (d / "__init__.py").write_text(init_text if init_text is not None else src)
    (d / "plugin.yaml").write_text(
        yaml_text
        if yaml_text is not None
        else f"name: {ename}\ndescription: test engine\nversion: 1.0.0\n"
    )
    return d


def is_minimal_builtin(engine) -> bool:
    """True when ``engine`` is the host's own minimal built-in compressor (no injection)."""
    return isinstance(engine, minimal_compressor_class()) and engine.name == BUILTIN_NAME


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(textwrap.dedent(text))


@pytest.fixture
def tree(tmp_path):
    home, bundled = tmp_path / "home", tmp_path / "bundled"
    home.mkdir()
    bundled.mkdir()
    return home, bundled


# -- R1 / R2 ---------------------------------------------------------------------------------------
def test_default_is_builtin_and_plugins_never_auto_activate(tree):
    """R1/R2: no config -> built-in; a present plugin stays inactive unless named."""
    home, bundled = tree
    make_plugin(bundled, "router2")
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    assert sel.source == "builtin" and is_minimal_builtin(sel.engine)
    sel = discovery.select_engine(
        hermes_home=home, bundled_root=bundled, builtin_factory=ReferenceCompressor
    )
    assert sel.source == "builtin" and type(sel.engine) is ReferenceCompressor
    write_config(home, "context:\n  engine: compressor\n")
    assert discovery.select_engine(hermes_home=home, bundled_root=bundled).source == "builtin"


def test_config_read_with_yaml(tree):
    """R1: config.yaml is real YAML (comments, flow style, nesting)."""
    home, bundled = tree
    make_plugin(bundled, "lcm2")
    write_config(
        home, "# comment\ncontext: {engine: lcm2}  # trailing\ncompression:\n  enabled: true\n"
    )
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    assert sel.source == "bundled" and sel.engine.name == "lcm2"
    write_config(home, "context: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        discovery.read_config(home)


# -- R3 --------------------------------------------------------------------------------------------
def test_bundled_then_user_then_plugin_order(tree, host_log):
    """R3: bundled wins a clash; a user dir needs no plugins.enabled; general plugins come last."""
    home, bundled = tree
    make_plugin(bundled, "clash", origin="bundled")
    make_plugin(home / "plugins", "clash", origin="user")
    write_config(home, "context:\n  engine: clash\n")
    assert (
        discovery.select_engine(hermes_home=home, bundled_root=bundled).engine.origin == "bundled"
    )
    make_plugin(home / "plugins", "mine", origin="user")
    write_config(home, "context:\n  engine: mine\n")
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    assert sel.source == "user" and sel.engine.origin == "user"


def test_user_dir_needs_the_heuristic(tree, host_log):
    """R3: a user dir whose __init__ mentions neither ContextEngine nor register_context_engine is
    ignored."""
    home, bundled = tree
    make_plugin(home / "plugins", "odd", init_text="x = 1\n")
    write_config(home, "context:\n  engine: odd\n")
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    assert sel.fell_back and sel.source == "fallback"


def test_general_plugin_registration_and_second_refused(tree, host_log):
    """R3/R5: register(ctx) through the plugin system; a second registration is refused with a
    warning."""
    home, bundled = tree
    plugins = home / "plugins"
    make_plugin(
        plugins,
        "aaa_plugin",
        name="viaplugin",
        origin="first",
        register=True,
        yaml_text="name: aaa_plugin\ndescription: d\nversion: '1'\n",
    )
    make_plugin(
        plugins,
        "bbb_plugin",
        name="viaplugin",
        origin="second",
        register=True,
        yaml_text="name: bbb_plugin\ndescription: d\nversion: '1'\n",
    )
    write_config(
        home, "context:\n  engine: viaplugin\nplugins:\n  enabled: [aaa_plugin, bbb_plugin]\n"
    )
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    assert sel.source == "plugin" and sel.engine.origin == "first"
    assert any("already registered" in w and "bbb_plugin" in w for w in warnings_of(host_log))


def test_general_plugin_not_enabled_is_not_loaded(tree, host_log):
    """R3: a general plugin must be listed in plugins.enabled."""
    home, bundled = tree
    make_plugin(
        home / "plugins",
        "gp",
        name="viaplugin",
        register=True,
        yaml_text="name: gp\ndescription: d\nversion: '1'\n",
    )
    write_config(home, "context:\n  engine: viaplugin\n")
    assert discovery.select_engine(hermes_home=home, bundled_root=bundled).fell_back


def test_non_engine_registration_ignored(tree, host_log):
    """R5: a non-ContextEngine object is ignored with a warning."""
    mgr = discovery.PluginManager()
    mgr.context_for("weird").register_context_engine(object())
    assert mgr.context_engine is None
    assert any("does not inherit from ContextEngine" in w for w in warnings_of(host_log))


def test_unknown_name_falls_back_with_warning(tree, host_log):
    """R3: an unknown name -> built-in compressor and the exact warning."""
    home, bundled = tree
    write_config(home, "context:\n  engine: nowhere\n")
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    assert sel.fell_back and is_minimal_builtin(sel.engine)
    sel = discovery.select_engine(
        hermes_home=home, bundled_root=bundled, builtin_factory=ReferenceCompressor
    )
    assert sel.fell_back and type(sel.engine) is ReferenceCompressor
    assert (
        "Context engine 'nowhere' not found — falling back to built-in compressor"
        in warnings_of(host_log)
    )


def test_hermes_profile_has_no_user_dir(tree, host_log):
    """0.19.0: $HERMES_HOME/plugins/<name>/ is not an engine source."""
    home, bundled = tree
    make_plugin(home / "plugins", "mine")
    write_config(home, "context:\n  engine: mine\n")
    assert discovery.select_engine(
        hermes_home=home, bundled_root=bundled, profile="hermes-0.19"
    ).fell_back
    names = [n for n, _, _ in discovery.discover_engines(bundled, home, profile="hermes-0.19")]
    assert names == []
    assert [n for n, _, _ in discovery.discover_engines(bundled, home)] == ["mine"]


def test_each_load_gives_a_fresh_instance(tree):
    """R3: register()/the subclass runs on each load (two loads, two instances)."""
    home, bundled = tree
    make_plugin(bundled, "fresh", register=True)
    write_config(home, "context:\n  engine: fresh\n")
    a = discovery.select_engine(hermes_home=home, bundled_root=bundled).engine
    b = discovery.select_engine(hermes_home=home, bundled_root=bundled).engine
    assert a is not b and type(a) is type(b)


def test_selected_engine_drives_a_session(tree):
    """R1 end to end: the selected engine is cloned into an agent and runs a turn."""
    home, bundled = tree
    make_plugin(bundled, "e2e")
    write_config(home, "context:\n  engine: e2e\n")
    sel = discovery.select_engine(hermes_home=home, bundled_root=bundled)
    s = HostSession(sel.engine, Provider(), clone=True)
    s.user_turn("hello")
    assert s.engine.name == "e2e" and s.engine.last_prompt_tokens > 0 and s.engine is not sel.engine


# -- R4-R6: load_engine_plugin ---------------------------------------------------------------------
def test_load_engine_plugin_good(tmp_path):
    """R4-R6 all pass for a well-formed plugin (subclass and register variants)."""
    for register in (False, True):
        d = make_plugin(tmp_path / ("reg" if register else "cls"), "goodeng", register=register)
        factory, report = discovery.load_engine_plugin(d)
        assert report.ok, report.failures()
        assert factory().name == "goodeng" and factory() is not factory()
        assert {f.clause for f in report.findings} >= {"R4", "R6"}


def test_load_engine_plugin_missing_yaml_fields(tmp_path):
    """R4: plugin.yaml without version/description fails validation."""
    d = make_plugin(tmp_path, "noversion", yaml_text="name: noversion\n")
    _, report = discovery.load_engine_plugin(d)
    bad = [f for f in report.failures() if f.clause == "R4"]
    assert bad and "version" in bad[0].message and "description" in bad[0].message


def test_load_engine_plugin_no_engine(tmp_path):
    """R4: __init__ exporting neither a subclass nor register(ctx) fails."""
    d = make_plugin(tmp_path, "empty", init_text="VALUE = 1\n")
    factory, report = discovery.load_engine_plugin(d)
    assert factory is None and any(f.clause == "R4" and not f.ok for f in report.findings)


def test_load_engine_plugin_name_mismatch(tmp_path):
    """R6: engine.name must equal plugin.yaml's name and the folder name."""
    d = make_plugin(tmp_path, "folder", name="other")
    _, report = discovery.load_engine_plugin(d)
    assert [f.clause for f in report.failures()] == ["R6"]


def test_load_engine_plugin_double_registration(tmp_path):
    """R5: a register() that registers twice is reported."""
    d = make_plugin(tmp_path, "twice", register=True, registrations=2)
    _, report = discovery.load_engine_plugin(d)
    assert [f.clause for f in report.failures()] == ["R5"]


def test_load_engine_plugin_import_error(tmp_path):
    """R4: an __init__ that raises is a failed finding, not an exception."""
    d = make_plugin(tmp_path, "broken", init_text="raise RuntimeError('no')\n")
    factory, report = discovery.load_engine_plugin(d)
    assert factory is None and "RuntimeError" in report.failures()[-1].message
