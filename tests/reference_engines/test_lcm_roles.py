"""Covers reference_engines.lcm.plan (align_roles, roles_clash) through LCMEngine: B5, the summary
carrier never leaves two same-role messages adjacent.

The head may end on ``user`` or ``assistant`` and the tail may start on either; when they
differ no carrier role fits, so the engine moves the tail start (``plan.align_roles``).
These tests fail when that alignment is removed (the carrier then touches a same-role
neighbour in the clashing combinations).
"""

from __future__ import annotations

import copy
import itertools

import pytest

from reference_engines.lcm import CARRIER_TAG, LCMEngine
from reference_engines.lcm.plan import Split, align_roles, roles_clash

from .test_lcm_helpers import validate_sequence

TURN_ROLES = ("user", "assistant")


def _history(head_last: str, tail_first: str, tail_len: int):
    """system, a head of 2 messages ending on ``head_last``, 12 alternating middle messages,
    then ``tail_len`` alternating messages starting on ``tail_first``; last message a user ask."""
    msgs = [
        {"role": "system", "content": "You are a build assistant."},
        {"role": "user", "content": "first question about the deploy"},
        {"role": head_last, "content": "head end " + head_last},
    ]
    for i in range(12):
        msgs.append(
            {"role": TURN_ROLES[i % 2], "content": f"middle {i} " + "filler words here " * 30}
        )
    roles = TURN_ROLES if tail_first == "user" else TURN_ROLES[::-1]
    for i in range(tail_len):
        msgs.append({"role": roles[i % 2], "content": f"tail {i}"})
    if msgs[-1]["role"] != "user":
        msgs.append({"role": "user", "content": "last ask"})
    return msgs


def _touching(out):
    """(index, role) of each same-role user/assistant pair next to the carrier."""
    idx = next(i for i, m in enumerate(out) if str(m.get("content", "")).startswith(CARRIER_TAG))
    bad = []
    for a, b in ((idx - 1, idx), (idx, idx + 1)):
        if (
            0 <= a
            and b < len(out)
            and out[a]["role"] == out[b]["role"]
            and out[a]["role"] in TURN_ROLES
        ):
            bad.append((a, out[a]["role"]))
    return bad


@pytest.mark.parametrize(
    "head_last,tail_first,budget", list(itertools.product(TURN_ROLES, TURN_ROLES, (None, 6000)))
)
def test_carrier_never_touches_same_role(tmp_path, head_last, tail_first, budget):
    """B5 over all four head/tail role combinations, with and without a token budget."""
    e = LCMEngine(tmp_path / "r.sqlite3", protect_first_n=2, protect_last_n=5)
    if budget:
        e.update_model("m", budget)
    history = _history(head_last, tail_first, 5)
    original = copy.deepcopy(history)
    out = e.compress(history)
    assert out is not history, "the pass must compact"
    assert validate_sequence(out) == []
    assert _touching(out) == [], [(m["role"], str(m["content"])[:20]) for m in out]
    assert out[:3] == original[:3], "the protected head stays"
    idx = next(i for i, m in enumerate(out) if str(m.get("content", "")).startswith(CARRIER_TAG))
    tail = out[idx + 1 :]
    assert tail == original[len(original) - len(tail) :], (
        "the tail is a verbatim suffix of the input"
    )
    assert any(m["role"] == "user" for m in tail), "the latest ask stays in the tail"
    e.close()


def test_roles_clash():
    """Only two different turn roles clash; system, tool and None constrain nothing."""
    assert roles_clash("user", "assistant") and roles_clash("assistant", "user")
    assert not roles_clash("user", "user") and not roles_clash("assistant", "assistant")
    assert not roles_clash("system", "assistant") and not roles_clash("tool", "user")
    assert not roles_clash(None, "user") and not roles_clash("user", None)


def _msgs(roles):
    return [{"role": r, "content": r} for r in roles]


def test_align_moves_back_within_budget_else_forward():
    """Backward (keeping more) when the budget allows, forward (one message) when it does not."""
    msgs = _msgs(["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"])
    tokens = [1, 1, 1, 1, 1, 100, 1, 1]
    cut = Split(head_end=2, tail_start=6)  # head ends user, tail starts assistant
    assert align_roles(msgs, [1] * 8, cut, tail_budget=None, last_carrier_index=None) == Split(2, 5)
    assert align_roles(msgs, tokens, cut, tail_budget=50, last_carrier_index=None) == Split(2, 7)


def test_align_never_summarises_the_last_user_ask():
    """Forward moves stop before the last user message; then backward ignores the budget."""
    msgs = _msgs(["system", "assistant", "user", "assistant", "user"])
    cut = Split(head_end=2, tail_start=4)  # head ends assistant, tail = [user]
    tokens = [1, 1, 1, 100, 1]
    assert align_roles(msgs, tokens, cut, tail_budget=10, last_carrier_index=None) == Split(2, 3)


def test_align_respects_previous_carrier_and_nonempty_middle():
    """The tail never starts at or before a previous carrier, and the middle stays non-empty."""
    msgs = _msgs(["system", "user", "assistant", "user", "assistant", "tool"])
    msgs[4]["tool_calls"] = [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]
    msgs[5]["tool_call_id"] = "c"
    cut = Split(head_end=2, tail_start=4)
    # backward candidate 3 is the carrier's own index: not allowed; no forward user: unchanged
    assert align_roles(msgs, [1] * 6, cut, tail_budget=None, last_carrier_index=3) == cut
    # without a carrier, index 3 is fine (the middle keeps index 2)
    assert align_roles(msgs, [1] * 6, cut, tail_budget=None, last_carrier_index=None) == Split(2, 3)
    # head ends user at 1, middle = [2]; the only backward user candidate would empty it
    short = _msgs(["system", "user", "user", "assistant"])
    assert align_roles(
        short, [1] * 4, Split(2, 3), tail_budget=None, last_carrier_index=None
    ) == Split(2, 3)
