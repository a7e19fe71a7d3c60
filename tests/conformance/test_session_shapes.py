"""Covers the realistic session shapes of conformance.authoring.strategies (realistic_sessions,
the shapes
transcripts() adds) and the helpers of conformance.checks.sessions: valid by construction, the
sizes they promise, deterministic, and each shape reachable and removable."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.authoring.expect import v1_problems, v2_problems, v3_problems
from conformance.authoring.strategies import (
    astral_text,
    image_data_url,
    live_ask_index,
    paste_text,
    realistic_sessions,
    transcripts,
)
from conformance.checks.sessions import duplicated_rows, kept_pairs, new_rows
from simulator.provider.tokens import count_messages

FEW = settings(max_examples=25, database=None, derandomize=True, deadline=None)


@FEW
@given(realistic_sessions(min_tokens=8_500))
def test_realistic_sessions_are_valid_and_end_on_the_live_turn(history):
    assert not v1_problems(history) and not v2_problems(history) and not v3_problems(history)
    assert count_messages(history) > 8_500
    ask = live_ask_index(history)
    assert ask is not None
    # after the ask: nothing, or only its tool loop (no plain assistant reply)
    assert all(m.get("tool_calls") or m["role"] == "tool" for m in history[ask + 1 :])


@FEW
@given(transcripts(min_tokens=2_000))
def test_transcripts_with_shapes_stay_valid(history):
    assert not v1_problems(history) and not v2_problems(history) and not v3_problems(history)


@FEW
@given(
    realistic_sessions(
        min_tokens=8_500,
        force={"reasoning", "arguments", "parallel", "astral", "paste", "image", "deep_loop"},
    )
)
def test_every_shape_can_be_forced(history):
    text = json.dumps(history, ensure_ascii=False)
    assert "data:image/png;base64," in text and "write_file" in text
    assert any(len(m.get("tool_calls") or ()) >= 4 for m in history)
    assert history[-1]["role"] == "tool"  # the deep loop ends on a result
    assert any(set(m) & {"reasoning_content", "reasoning_details", "name"} for m in history)


def test_shapes_have_the_sizes_they_promise_and_are_deterministic():
    url = image_data_url(3, 420)
    assert len(url) > 420 * 1024 * 4 // 3 and url == image_data_url(3, 420)
    assert len(paste_text(1, 14_000)) >= 14_000 and paste_text(1, 500) == paste_text(1, 500)
    text = astral_text(7, 4_000)
    assert text == astral_text(7, 4_000)
    offsets = {
        len(text[:i].encode("utf-16-le")) // 2 % 2 for i, c in enumerate(text) if ord(c) > 0xFFFF
    }
    assert offsets == {0, 1}  # astral characters start at odd and even UTF-16 offsets


def test_short_shape_is_what_shrinking_reaches():
    @settings(max_examples=1, database=None, derandomize=True, deadline=None)
    @given(st.data())
    def first(data):
        h = data.draw(realistic_sessions(min_tokens=8_500))
        assert len(h) <= 8  # the simplest draw: shorter than any head + tail

    first()


def test_kept_pairs_duplicates_and_new_rows():
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "hi", "reasoning_content": "think"},
        {"role": "user", "content": "ask"},
    ]
    out = [history[0], {"role": "user", "content": "[summary]"}, history[1], history[1], history[3]]
    assert duplicated_rows(history, out) == [(1, 2)]
    assert (1, 2) in kept_pairs(history, out) and (3, 4) in kept_pairs(history, out)
    assert new_rows(history, out) == [{"role": "user", "content": "[summary]"}]
