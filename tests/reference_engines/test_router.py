"""Covers reference_engines.router and reference_engines.mutants.h6_reshuffle: ReferenceRouter
(H3, H5, H6, C1) and the H6 reshuffle mutant, measured with provider caching
(simulator.host.scenarios)."""

from __future__ import annotations

import copy
import threading

from reference_engines.mutants.h6_reshuffle import ReshufflingRouter
from reference_engines.router import ReferenceRouter, selection_digest, split_groups
from simulator.host import hooks
from simulator.host.scenarios import run_cache_scenario, user_message
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider


def _conversation():
    msgs = [{"role": "system", "content": "sys"}]
    for i, topic in enumerate(["database", "database", "frontend", "database", "frontend"]):
        msgs.append({"role": "user", "content": user_message(topic, i, words=40)})
        msgs.append({"role": "assistant", "content": f"ok {i}"})
    msgs.append({"role": "user", "content": user_message("database", 99, words=40)})
    return msgs


def test_router_selects_incoming_topic_and_keeps_valid_shape():
    """H3: head + the incoming topic's turns, in order; a valid non-empty list of dicts."""
    r = ReferenceRouter()
    req = _conversation()
    out = r.select_context(req)
    assert hooks.valid_selection(out)
    assert out[0]["role"] == "system" and out[-1] == req[-1]
    texts = [m["content"] for m in out if m["role"] == "user"]
    assert all(" on database:" in t for t in texts) and len(texts) == 4


def test_router_stable_while_nothing_changes():
    """H6: the same request gives an equal selection; appending a same-topic turn only appends."""
    r = ReferenceRouter()
    req = _conversation()
    a, b = r.select_context(copy.deepcopy(req)), r.select_context(copy.deepcopy(req))
    assert a == b and selection_digest(a) == selection_digest(b)
    longer = req + [
        {"role": "assistant", "content": "sure"},
        {"role": "user", "content": user_message("database", 100, words=40)},
    ]
    c = r.select_context(longer)
    assert c[: len(a)] == a  # prefix-stable: the cache keeps hitting


def test_router_returns_none_when_everything_is_selected():
    """H3: single topic -> no change (None keeps the request byte-identical)."""
    r = ReferenceRouter()
    req = [{"role": "system", "content": "s"}] + [
        {"role": "user", "content": user_message("deploy", i, words=30)} for i in range(3)
    ]
    assert r.select_context(req) is None


def test_mutant_reshuffles_every_call():
    """H6 mutant: same input, different selections."""
    m = ReshufflingRouter()
    req = _conversation() + [
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": user_message("database", 7, words=40)},
    ]
    a, b = m.select_context(copy.deepcopy(req)), m.select_context(copy.deepcopy(req))
    assert a != b and hooks.valid_selection(a)


def test_on_turn_complete_indexes_and_clones_share_backend():
    """H5/C1: on_turn_complete indexes turns; clone_for_agent shares the backend and copies budget
    fields."""
    registered = ReferenceRouter()
    s = HostSession(registered, Provider(), clone=True, context_length=100_000)
    s.start()
    s.user_turn(user_message("database", 1, words=40))
    s.user_turn(user_message("frontend", 2, words=40))
    assert s.engine is not registered and s.engine.backend is registered.backend
    assert registered.backend.indexed_turns[s.session_id] == 2
    assert registered.backend.topics(s.session_id) == 2
    child = s.spawn_subagent(context_length=64_000)
    assert child.engine.backend is registered.backend
    assert s.engine.context_length == 100_000 and child.engine.context_length == 64_000


def test_router_backend_thread_safe():
    """TS3: one backend used from many threads assigns each turn exactly one topic."""
    r = ReferenceRouter()
    req = _conversation()
    results = []

    def work():
        clone = r.clone_for_agent()
        results.append(clone.select_context(copy.deepcopy(req)))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(x == results[0] for x in results)


def test_router_compress_valid_and_counts():
    """A4/V: compress keeps the system first, pairs intact, and counts."""
    r = ReferenceRouter()
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = _conversation()[:-1] + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    msgs += [
        {"role": "user", "content": f"u{i}"}
        if i % 2 == 0
        else {"role": "assistant", "content": f"a{i}"}
        for i in range(10)
    ]
    out = r.compress(msgs)
    assert out[0]["role"] == "system" and len(out) < len(msgs) and r.compression_count == 1
    ids = [m["tool_call_id"] for m in out if m["role"] == "tool"]
    calls = [c["id"] for m in out for c in m.get("tool_calls") or ()]
    assert ids == calls
    head, groups = split_groups(out)
    assert head[1]["content"].startswith("[Router summary")


def test_router_should_compress_sentinel_and_anti_thrash():
    """A3/A7: never on -1; blocked after two ineffective passes."""
    r = ReferenceRouter()
    r.update_model("m", 1000)
    assert r.should_compress(900) and not r.should_compress(-1)
    for _ in range(2):
        r.compress(_conversation() * 2)
        r.update_from_response({"prompt_tokens": 990, "completion_tokens": 1, "total_tokens": 991})
    assert not r.should_compress(990)


def test_router_full_session_with_compaction_and_selection():
    """End to end: select_context, compaction and on_turn_complete together in one session."""
    s = HostSession(
        ReferenceRouter(),
        Provider(),
        clone=True,
        context_length=2_400,
        config=HostConfig(context_timeout_seconds=2.0),
    )
    for i in range(10):
        res = s.user_turn(user_message("database" if i % 3 else "frontend", i, words=150))
        assert res.reply
    assert s.compactions >= 1 and s.provider.u9_leaks == []
    assert "select_context" in s.recorder.methods() and "on_turn_complete" in s.recorder.methods()


# -- H6 measured -----------------------------------------------------------------------------------
def test_cache_ratio_router_vs_reshuffling_mutant():
    """H6: 30 turns x ~300 tokens; cache reads / prompt tokens after the first two calls:
    >= 0.8 for the router, <= 0.2 for the reshuffling mutant."""
    good = run_cache_scenario(ReferenceRouter())
    bad = run_cache_scenario(ReshufflingRouter())
    assert good.system_share < 0.10 and 250 <= good.mean_turn_tokens <= 350
    assert good.ratio >= 0.8, good.ratio
    assert bad.ratio <= 0.2, bad.ratio
    assert good.prompt_tokens == bad.prompt_tokens  # same selection sizes, only the order differs


def test_host_requests_deterministic_across_processes():
    """Determinism: the same scenario gives the same request bytes in two fresh processes."""
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import hashlib\n"
        "from simulator.host import shim\n"
        "shim.install()\n"
        "from reference_engines.router import ReferenceRouter\n"
        "from simulator.host.session import HostSession, HostConfig\n"
        "from simulator.host.scenarios import user_message\n"
        "from simulator.provider.core import Provider\n"
        "s = HostSession(ReferenceRouter(), Provider(seed=3), clone=True, context_length=2400, "
        "model='anthropic/claude-sonnet-4', config=HostConfig(context_timeout_seconds=0))\n"
        "for i in range(12): s.user_turn(user_message('database' if i % 3 else 'frontend', i, "
        "words=150))\n"
        "print(s.compactions, hashlib.sha256(b''.join(s.requests)).hexdigest())\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    outs = [
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=120,
            env={"PYTHONPATH": root, "PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"},
        )
        for seed in (1, 2)
    ]
    assert all(o.returncode == 0 for o in outs), [o.stderr[-500:] for o in outs]
    assert outs[0].stdout == outs[1].stdout and int(outs[0].stdout.split()[0]) >= 1


def _thrash_run(history, turns=20):
    """Host loop of REG-j: real usage every turn, compress() whenever should_compress() says so.

    Returns (router, number of compress() calls)."""
    from simulator.provider.tokens import count_messages

    r = ReferenceRouter()
    r.update_model("m", 4000)  # threshold 3000 tokens
    attempts = 0
    for _ in range(turns):
        tokens = count_messages(history)
        r.update_from_response(
            {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
        )
        if r.should_compress(tokens):
            attempts += 1
            history = r.compress(history)
            r.last_prompt_tokens = -1
        history = history + [
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "next"},
        ]
    return r, attempts


def test_router_stops_after_ineffective_noop_passes():
    """A3: a short history over the threshold (the system prompt holds it) gives no-op passes;
    each counts as ineffective at once, so compress() is asked for only twice in 20 turns."""
    big = " ".join(f"rule{i}" for i in range(4000))
    r, attempts = _thrash_run(
        [{"role": "system", "content": big}, {"role": "user", "content": "hi"}]
    )
    assert attempts == 2
    assert r.compression_count == 2 and r.should_compress(10**6) is False


def test_router_stops_when_output_still_over_threshold():
    """A3: a pass that compacts but leaves the protected tail over the threshold is ineffective
    too (judged from the output, before any real usage arrives)."""
    r = ReferenceRouter()
    r.update_model("m", 4000)
    blob = " ".join(f"word{i}" for i in range(4000))
    history = [{"role": "system", "content": "s"}] + [
        {"role": ("user", "assistant")[i % 2], "content": f"turn {i}"} for i in range(10)
    ]
    history += [{"role": "assistant", "content": "see"}, {"role": "user", "content": blob}]
    out = r.compress(history)
    assert out is not history and len(out) < len(history)
    assert r._ineffective == 1 and not r._awaiting_verdict
    r.compress(out)
    assert r.should_compress(10**6) is False


def test_router_effective_pass_waits_for_usage_and_block_lifts_below_threshold():
    """A3: an effective pass is judged by the next real usage; a blocked router asks again once
    the prompt has fallen below the threshold."""
    r = ReferenceRouter()
    r.update_model("m", 4000)
    history = (
        [{"role": "system", "content": "s"}]
        + [
            {
                "role": ("user", "assistant")[i % 2],
                "content": " ".join(f"w{i}x{k}" for k in range(40)),
            }
            for i in range(30)
        ]
        + [{"role": "user", "content": "now"}]
    )
    out = r.compress(history)
    assert out is not history and r._awaiting_verdict and r._ineffective == 0
    r.update_from_response({"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101})
    assert r._ineffective == 0 and not r._awaiting_verdict
    r._ineffective = r.max_ineffective_passes
    assert r.should_compress(5000) is False
    r.update_from_response({"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101})
    assert r.should_compress(5000) is True


def test_router_keys_turns_by_the_uids_a_real_0_22_host_gives():
    """H3/U2: Hermes 0.22 strips ``message_uid`` from ``request_messages`` but hands
    ``conversation_messages`` (no system row) with uids. The router keys every turn by the uid
    of its conversation row, not by a text digest: two turns with the same text stay two turns,
    and the turns it indexes on on_turn_complete (uids present) are the same keys."""
    conv = _conversation()[1:]
    conv.insert(4, {"role": "user", "content": conv[0]["content"]})  # a repeated text
    conv.insert(5, {"role": "assistant", "content": "again"})
    for i, m in enumerate(conv):
        m["message_uid"] = f"{i:032x}"
    request = [{"role": "system", "content": "sys"}] + [
        {k: v for k, v in m.items() if k != "message_uid"} for m in conv
    ]
    r = ReferenceRouter()
    r.on_session_start("s")
    r.select_context(request, conversation_messages=copy.deepcopy(conv), budget_tokens=0)
    keys = set(r.backend._assigned["s"])
    users = {m["message_uid"] for m in conv if m["role"] == "user"}
    assert keys == users  # every user turn by its uid, none by digest
    r.on_turn_complete(copy.deepcopy(conv))
    assert set(r.backend._assigned["s"]) == users  # the same keys: nothing indexed twice
    documented = ReferenceRouter()
    documented.on_session_start("s")
    same = documented.select_context(
        [request[0]] + copy.deepcopy(conv), conversation_messages=None, budget_tokens=0
    )
    got = r.select_context(request, conversation_messages=copy.deepcopy(conv), budget_tokens=0)
    strip = [{k: v for k, v in m.items() if k != "message_uid"} for m in same]
    assert got == strip  # the same selection as on a host that leaves the uids on
