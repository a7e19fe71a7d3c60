"""Covers conformance.authoring.budget.Share: a check is partly checked only when its share ran
out before it ran the examples it asked for; Hypothesis runs its explicit examples on top of
them, so 44 of 40 is a whole run, never "budget reached"."""

from __future__ import annotations

from conformance.authoring import budget


def _share_after(monkeypatch, examples: int, asked: int) -> budget.Share:
    clock = [0.0]
    monkeypatch.setattr(budget, "engine_seconds", lambda: clock[0])
    share = budget.Share(seconds=1.0, asked=asked)
    share.start()
    share.examples = examples
    clock[0] = 5.0  # the engine's calls went past the share
    share.spent()
    return share


def test_a_share_spent_before_the_ask_is_partly_checked(monkeypatch):
    share = _share_after(monkeypatch, examples=9, asked=40)
    assert share.reached and "passed: 9 of 40 examples" in share.note()


def test_a_check_that_ran_every_example_it_asked_for_is_not_cut_short(monkeypatch):
    share = _share_after(monkeypatch, examples=44, asked=40)
    assert not share.reached and share.note() == ""
