"""Covers simulator.store.wire: U9, persistence-only fields never reach the provider."""

from __future__ import annotations

import pytest

from simulator.provider import tokens
from simulator.store.wire import (
    PERSISTENCE_ONLY_MESSAGE_FIELDS,
    leaked_fields,
    strip_persistence_fields,
)


def full_message():
    return {
        "role": "assistant",
        "content": "hi",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "message_uid": "a" * 32,
        "_absorbed_message_uids": ["b" * 32],
        "_tool_call_uids": {"c": "c" * 32},
        "_tool_call_uid": "d" * 32,
        "timestamp": 1.0,
        "display_kind": "x",
        "display_metadata": {"k": "v"},
        "_row_id": 7,
        "_merged_turn_prefix": "p",
        "_db_row_snapshot": {},
        "_canonical_row": {},
    }


def test_every_persistence_field_is_stripped_and_wire_fields_kept():
    m = full_message()
    (w,) = strip_persistence_fields([m])
    assert w == {"role": "assistant", "content": "hi", "tool_calls": m["tool_calls"]}
    assert set(full_message()) - set(w) == PERSISTENCE_ONLY_MESSAGE_FIELDS
    assert tokens.PERSISTENCE_ONLY_FIELDS <= PERSISTENCE_ONLY_MESSAGE_FIELDS


def test_input_is_not_modified_and_output_dicts_are_new():
    msgs = [full_message()]
    out = strip_persistence_fields(msgs)
    assert msgs == [full_message()]
    assert out[0] is not msgs[0]


def test_leaked_fields_names_the_message():
    assert leaked_fields([{"role": "user", "content": "x"}]) == []
    assert leaked_fields(
        [{"role": "user", "content": "x"}, {"role": "user", "message_uid": "u"}]
    ) == ["message 1: ['message_uid']"]


def test_non_mapping_is_a_clear_error():
    with pytest.raises(TypeError, match="message 1 is a str"):
        strip_persistence_fields([{"role": "user"}, "oops"])


def test_identity_fields_do_not_change_token_estimates():
    bare = {"role": "assistant", "content": "hello there"}
    stamped = dict(
        bare,
        message_uid="a" * 32,
        _absorbed_message_uids=["b" * 32],
        _tool_call_uids={"c": "d" * 32},
    )
    assert tokens.count_message(stamped) == tokens.count_message(bare)
