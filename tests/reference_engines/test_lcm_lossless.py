"""Covers reference_engines.lcm (engine, store, dag and the ``lcm_expand`` tool): after three
rounds of compaction every original message is recoverable through ``lcm_expand``, nothing is
lost (Hypothesis).

Each example plays a host: it appends turns (tool calls, uid-less legacy rows, merged
user messages with ``_absorbed_message_uids``), rewrites a live row under its uid (U4),
runs compress(), commits the result, sometimes lets alternation repair fold the carrier
into its neighbour (U5), and shows the engine the committed transcript through one of
the four observation points (TS2). At the end, expanding the last carrier's top node
plus the live transcript must give back every message of the whole history, verbatim,
in order.
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_engines.lcm import LCMEngine
from reference_engines.lcm.dag import DagParams
from reference_engines.lcm.messages import canonical_json

from .test_lcm_helpers import carrier_of, expand_all, top_node_id, turn, uid, validate_sequence

round_spec = st.fixed_dictionaries(
    {
        "turns": st.integers(min_value=3, max_value=25),
        "tool_every": st.integers(min_value=1, max_value=4),
        "legacy_every": st.integers(min_value=0, max_value=5),
        "double_user": st.booleans(),
        "rewrite": st.booleans(),
        "observe": st.sampled_from(["turn_complete", "next_compress", "session_end", "tool_call"]),
        "fold_carrier": st.booleans(),
        "focus": st.sampled_from([None, "kubernetes", "invoice"]),
    }
)


def _merge(a, b):
    """Alternation repair as the host does it (U5): a's uid survives, b's is absorbed."""
    merged = dict(a)
    merged["content"] = f"{a['content']}\n\n{b['content']}"
    absorbed = list(a.get("_absorbed_message_uids") or [])
    if b.get("message_uid"):
        absorbed.append(b["message_uid"])
    absorbed += list(b.get("_absorbed_message_uids") or [])
    if absorbed:
        merged["_absorbed_message_uids"] = absorbed
    return merged


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    rounds=st.lists(round_spec, min_size=3, max_size=3),
    leaf=st.integers(min_value=1, max_value=8),
    fanout=st.integers(min_value=2, max_value=5),
    context=st.sampled_from([1200, 2500, 5000]),
)
def test_every_message_recoverable_after_three_compactions(seed, rounds, leaf, fanout, context):
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        engine = LCMEngine(
            Path(tmp) / "lcm.sqlite3",
            dag_params=DagParams(leaf_chunk_messages=leaf, condense_fanout=fanout),
            protect_last_n=4,
            uid_factory=lambda: uid(rng),
        )
        engine.update_model("m", context)
        engine.on_session_start("s1")
        live = [{"role": "system", "content": "You are a helpful agent.", "message_uid": uid(rng)}]
        history = list(live)  # every logical message the host ever had, at its latest version
        index = 0
        for spec in rounds:

            def add_turns(count, spec=spec, live=live):
                nonlocal index
                for _ in range(count):
                    new = turn(rng, index, with_tool=(index % spec["tool_every"] == 0))
                    if spec["legacy_every"] and index % spec["legacy_every"] == 0:
                        new[0].pop("message_uid")  # a legacy row: no identity (U2)
                    index += 1
                    live.extend(new)
                    history.extend(new)

            add_turns(spec["turns"])
            if spec["double_user"]:
                a = {
                    "role": "user",
                    "content": "First half of a split request about invoice 17.",
                    "message_uid": uid(rng),
                }
                b = {
                    "role": "user",
                    "content": "Second half: also check kubernetes.",
                    "message_uid": uid(rng),
                }
                merged = _merge(a, b)
                live.append(merged)
                history.append(merged)
                reply = {
                    "role": "assistant",
                    "content": "Noted both halves.",
                    "message_uid": uid(rng),
                }
                live.append(reply)
                history.append(reply)
            if spec["rewrite"]:
                candidates = [
                    m
                    for m in live[1:]
                    if m.get("role") == "assistant"
                    and isinstance(m.get("content"), str)
                    and not m["content"].startswith("[LCM summary]")
                ]
                if candidates:
                    target = rng.choice(candidates)
                    at = next(k for k, m in enumerate(history) if m == target)
                    target["content"] += " (edited by the host)"  # U4: same uid, new version
                    history[at] = target

            for _attempt in range(30):
                snapshot = copy.deepcopy(live)
                out = engine.compress(snapshot, focus_topic=spec["focus"])
                if out is not snapshot:
                    break
                add_turns(3)  # everything still fits the tail: the host would not compact yet
            assert out is not snapshot, "the round never compacted"
            assert validate_sequence(out) == []
            carrier = next(
                m
                for m in out
                if m.get("message_uid")
                and m["message_uid"] not in {x.get("message_uid") for x in snapshot}
            )
            live = out
            if spec["fold_carrier"]:
                pos = live.index(carrier)
                nxt = live[pos + 1] if pos + 1 < len(live) else None
                if (
                    nxt is not None
                    and nxt.get("role") == carrier["role"]
                    and not nxt.get("tool_calls")
                ):
                    merged = _merge(carrier, nxt)
                    live[pos : pos + 2] = [merged]
                    history[history.index(nxt)] = merged
            if spec["observe"] == "turn_complete":
                engine.on_turn_complete(list(live))
            elif spec["observe"] == "session_end":
                engine.on_session_end("s1", list(live))
            elif spec["observe"] == "tool_call":
                reply = json.loads(
                    engine.handle_tool_call("lcm_grep", {"pattern": "turn"}, messages=list(live))
                )
                assert "error" not in reply
            # "next_compress": the next compress() input shows the commit
        engine.on_session_end("s1", list(live))
        final_carrier = carrier_of(live) or next(
            m for m in live if isinstance(m.get("content"), str) and "[LCM summary]" in m["content"]
        )
        recovered = expand_all(engine, top_node_id(final_carrier))
        pool = [canonical_json(m) for m in recovered] + [canonical_json(m) for m in live]
        have = set(pool)
        missing = [m for m in history if canonical_json(m) not in have]
        assert not missing, f"{len(missing)} messages lost, first: {missing[0]}"
        # order: the expansion lists originals in the order the host had them
        positions = {canonical_json(m): i for i, m in enumerate(history)}
        order = [positions[canonical_json(m)] for m in recovered if canonical_json(m) in positions]
        assert order == sorted(order)
        engine.close()
