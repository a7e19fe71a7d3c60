"""Covers simulator.host.clones, simulator.host.builtin, simulator.host.session and
simulator.host.abc (model thresholds): C1-C3 per-agent engines (the injected or minimal
built-in fallback) and K1-K2 thresholds."""

from __future__ import annotations

import copy

import pytest

from reference_engines.compressor import ReferenceCompressor
from simulator.host import clones
from simulator.host.abc import resolve_model_threshold
from simulator.host.builtin import BUILTIN_NAME, minimal_compressor_class
from simulator.host.gateway import Gateway
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider
from tests.host.conftest import warnings_of
from tests.host.engines import CountingClone, Locked, Plain, PolicyOwner, RaisingClone


def is_minimal_builtin(engine) -> bool:
    """True when ``engine`` is the host's own minimal built-in compressor (no injection)."""
    return isinstance(engine, minimal_compressor_class()) and engine.name == BUILTIN_NAME


# -- C1 --------------------------------------------------------------------------------------------
def test_clone_for_agent_called_at_every_agent_init():
    """C1: parent, subagent and gateway session each get clone_for_agent() of the registered
    engine."""
    CountingClone.clones = 0
    registered = CountingClone()
    parent = HostSession(registered, Provider(), clone=True)
    parent.start()
    child = parent.spawn_subagent()
    gw = Gateway(registered, provider=Provider())
    gw.handle_message("chat-1", "hi")
    gw.handle_message("chat-2", "hi")
    assert CountingClone.clones == 4
    engines = {
        id(parent.engine),
        id(child.engine),
        id(gw.sessions["chat-1"].engine),
        id(gw.sessions["chat-2"].engine),
        id(registered),
    }
    assert len(engines) == 5
    assert [c.method for c in parent.recorder.calls].count("clone_for_agent") == 2


def test_default_clone_is_deepcopy():
    """C1/O11: without an override the ABC default deep-copies."""
    registered = Plain()
    registered.some_state = {"nested": [1, 2]}
    s = HostSession(registered, Provider(), clone=True)
    assert s.engine is not registered and s.engine.some_state == registered.some_state
    assert s.engine.some_state is not registered.some_state


def test_update_model_and_session_start_run_on_the_clone():
    """C1: the registered prototype never gets update_model or on_session_start."""
    registered = Plain()
    s = HostSession(registered, Provider(), clone=True, context_length=77_000)
    s.start()
    assert s.engine.context_length == 77_000 and registered.context_length == 0


# -- C2 --------------------------------------------------------------------------------------------
def test_child_update_model_leaves_parent_budget_alone():
    """C2: a subagent on a smaller model changes only its own budget."""
    registered = Plain()
    parent = HostSession(registered, Provider(), clone=True, context_length=1_000_000)
    parent.start()
    before = (parent.engine.context_length, parent.engine.threshold_tokens)
    child = parent.spawn_subagent(model="small-model", context_length=204_800)
    child.switch_model("smaller-model", 100_000)
    assert (
        (parent.engine.context_length, parent.engine.threshold_tokens)
        == before
        == (1_000_000, 500_000)
    )
    assert child.engine.context_length == 100_000 and registered.context_length == 0


def test_shared_engine_without_clone_leaks_budget():
    """C2 violated: handing the same instance to two agents lets the child move the parent's
    budget."""
    shared = Plain()
    parent = HostSession(shared, Provider(), context_length=1_000_000)
    parent.start()
    child = HostSession(shared, Provider(), context_length=100_000)
    child.start()
    assert parent.engine.context_length == 100_000  # the defect the per-agent clone prevents


# -- C3 --------------------------------------------------------------------------------------------
def test_raising_clone_falls_back_to_builtin_with_log_line(host_log):
    """C3: clone_for_agent raising -> the built-in compressor and the documented log line."""
    s = HostSession(RaisingClone(), Provider(), clone=True)
    s.start()
    assert is_minimal_builtin(s.engine) and not s.engine_active
    assert "cannot clone" in s.clone_error
    assert any(
        "Context engine 'minimal' could not be safely copied for this agent" in w
        for w in warnings_of(host_log)
    )
    assert s.user_turn("still works").reply


def test_raising_clone_falls_back_to_the_injected_builtin(host_log):
    """C3: with ``HostConfig.builtin_factory`` the agent falls back to that built-in."""
    cfg = HostConfig(builtin_factory=ReferenceCompressor)
    s = HostSession(RaisingClone(), Provider(), config=cfg, clone=True)
    s.start()
    assert type(s.engine) is ReferenceCompressor and s.engine.name == BUILTIN_NAME
    assert not s.engine_active and "cannot clone" in s.clone_error
    assert s.user_turn("still works").reply


def test_uncopyable_engine_without_hook_falls_back(host_log):
    """C3 (0.19.0 path): deepcopy of an engine holding a lock fails -> built-in."""
    agent = clones.clone_for_agent(Locked(), profile="hermes-0.19")
    assert agent.fell_back and is_minimal_builtin(agent.engine) and agent.method == "builtin"
    assert any("could not be safely copied" in w for w in warnings_of(host_log))
    injected = clones.clone_for_agent(
        Locked(), profile="hermes-0.19", builtin_factory=ReferenceCompressor
    )
    assert injected.fell_back and type(injected.engine) is ReferenceCompressor
    assert injected.method == "builtin"


def test_good_clone_hook_avoids_deepcopy():
    """C1: with a hook, deepcopy is not attempted even when the engine cannot be deep-copied."""

    class LockedWithHook(Locked):
        def clone_for_agent(self):
            return LockedWithHook()

    agent = clones.clone_for_agent(LockedWithHook())
    assert not agent.fell_back and agent.method == "clone_for_agent"
    with pytest.raises(TypeError):
        copy.deepcopy(LockedWithHook())


def test_hermes_profile_never_calls_clone_for_agent():
    """0.19.0: deepcopy only; the hook is ignored."""
    CountingClone.clones = 0
    s = HostSession(CountingClone(), Provider(), clone=True, profile="hermes-0.19")
    s.start()
    assert CountingClone.clones == 0 and "clone_for_agent" not in s.recorder.methods()


# -- K1 / K2 ---------------------------------------------------------------------------------------
def test_model_thresholds_assigned_before_first_update_model():
    """K1: engine.model_thresholds is set before update_model runs."""
    seen = {}

    class Spy(Plain):
        def update_model(self, *a, **k):
            seen["map"] = dict(getattr(self, "model_thresholds", {}) or {})
            super().update_model(*a, **k)

    cfg = HostConfig(model_thresholds={"sim-model": 0.25})
    s = HostSession(Spy(), Provider(), config=cfg, context_length=100_000, clone=True)
    s.start()
    assert seen["map"] == {"sim-model": 0.25}
    assert s.engine.threshold_tokens == 25_000


def test_threshold_switches_do_not_compound():
    """K1: switching to an unmatched model restores the configured percent (snapshot once)."""
    eng = Plain()
    eng.threshold_percent = 0.5
    cfg = HostConfig(model_thresholds={"glm-5.2-1M": 0.25})
    s = HostSession(eng, Provider(), config=cfg, model="glm-5.2-1M", context_length=1_000_000)
    s.start()
    assert eng.threshold_percent == 0.25
    s.switch_model("other-model", 200_000)
    assert eng.threshold_percent == 0.5 and eng.threshold_tokens == 100_000
    s.switch_model("glm-5.2-1M", 1_000_000)
    assert eng.threshold_tokens == 250_000


def test_resolve_model_threshold_rules():
    """K1: longest substring wins; provider-scoped keys; else the configured value."""
    m = {"glm-5.2": 0.80, "glm-5.2-1M": 0.90}
    assert resolve_model_threshold("glm-5.2-1M", m, 0.5) == 0.90
    assert resolve_model_threshold("glm-5.2", m, 0.5) == 0.80
    assert resolve_model_threshold("other", m, 0.5) == 0.5
    scoped = {"gpt-5": 0.6, "codex:gpt-5": 0.7}
    assert resolve_model_threshold("gpt-5", scoped, 0.5, provider="Codex") == 0.7
    assert resolve_model_threshold("gpt-5", scoped, 0.5, provider="openai") == 0.6
    assert resolve_model_threshold("gpt-5", {"codex:gpt-5": 0.7}, 0.5, provider="openai") == 0.5
    assert resolve_model_threshold("GLM-5.2", m, 0.5) == 0.5  # case-sensitive model match


def test_update_model_kwargs_on_switch():
    """K1/O4: model switches call update_model with Hermes' keyword arguments."""
    s = HostSession(
        Plain(), Provider(), provider_name="openrouter", base_url="http://127.0.0.1:1/v1"
    )
    s.start()
    s.switch_model("next-model", 90_000, provider="anthropic")
    rec = [c for c in s.recorder.calls if c.method == "update_model"]
    assert len(rec) == 2
    assert rec[-1].kwargs_keys == (
        "api_key",
        "api_mode",
        "base_url",
        "context_length",
        "model",
        "provider",
    )
    assert s.engine.context_length == 90_000


def test_engine_owning_policy_may_ignore_map():
    """K2: an engine overriding update_model keeps its own policy."""
    cfg = HostConfig(model_thresholds={"sim-model": 0.1})
    s = HostSession(PolicyOwner(), Provider(), config=cfg, context_length=100_000)
    s.start()
    assert s.engine.model_thresholds == {"sim-model": 0.1}
    assert s.engine.threshold_tokens == 60_000


def test_hermes_profile_has_no_model_thresholds():
    """0.19.0: the map is never assigned."""
    cfg = HostConfig(model_thresholds={"sim-model": 0.1})
    s = HostSession(Plain(), Provider(), config=cfg, profile="hermes-0.19")
    s.start()
    assert "model_thresholds" not in s.engine.__dict__


def test_config_from_yaml_dict():
    """HostConfig reads the compression block; a wrong type names the key."""
    cfg = HostConfig.from_config(
        {
            "compression": {
                "enabled": "false",
                "context_timeout_seconds": 0,
                "model_thresholds": {"a": "0.3"},
            }
        }
    )
    assert cfg.compression_enabled is False and cfg.context_timeout_seconds == 0
    assert cfg.model_thresholds == {"a": 0.3}
    with pytest.raises(ValueError, match="context_timeout_seconds"):
        HostConfig.from_config({"compression": {"context_timeout_seconds": "soon"}})
