"""Covers conformance.snapshots.canonical (and capture): canonical snapshot text, uid masking by
first appearance, row references, line splitting."""

from __future__ import annotations

import subprocess
import sys

from conformance.runtime.engine_loading import load_engine_factory
from conformance.snapshots import corpus
from conformance.snapshots.canonical import UidMask, reference_rows, snapshot_text
from conformance.snapshots.capture import capture_case
from tests.conftest import REPO_ROOT

A, B, C = "a" * 32, "b" * 32, "0123456789abcdef" * 2


def test_uids_are_masked_in_order_of_first_appearance_and_keep_references():
    text = snapshot_text(
        {
            "inputs": [[{"role": "user", "content": "x", "message_uid": B}]],
            "document": {"out": [{"message_uid": A, "refs": [B, A], "note": f"absorbed {C}"}]},
        }
    )
    assert '"message_uid": "<uid-2>"' in text  # B was seen first, in the input
    assert '"<uid-1>",\n        "<uid-2>"' in text
    assert "absorbed <uid-3>" in text
    assert A not in text and B not in text and C not in text


def test_timestamps_are_masked_and_multiline_text_is_split():
    text = snapshot_text(
        {"inputs": [], "document": {"created_at": 1764460800, "content": "one\ntwo"}}
    )
    assert '"created_at": "<timestamp>"' in text
    assert '"text_lines": [\n      "one",\n      "two"\n    ]' in text


def test_rows_equal_to_input_rows_are_references_matched_one_to_one():
    inputs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "hi"},
    ]
    out = reference_rows([inputs[0], {"role": "user", "content": "new"}, inputs[2]], inputs)
    assert out == ["= input[0] (user)", {"role": "user", "content": "new"}, "= input[2] (user)"]


def test_mask_is_stable_for_the_same_walk():
    m1, m2 = UidMask(), UidMask()
    doc = {"z": [A, B], "a": B}
    assert m1.walk(doc) == m2.walk(doc) == {"a": "<uid-1>", "z": ["<uid-2>", "<uid-1>"]}


def test_router_snapshot_is_byte_stable_across_processes_although_it_mints_uuid4():
    code = (
        "import sys\nfrom conformance.runtime.engine_loading import load_engine_factory\n"
        "from conformance.snapshots import corpus\n"
        "from conformance.snapshots.capture import capture_case\n"
        "from conformance.snapshots.canonical import snapshot_text\n"
        "f = load_engine_factory('reference_engines.router:ReferenceRouter')\n"
        "sys.stdout.write(snapshot_text(capture_case(f, corpus.get('focus-topic'))))\n"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO_ROOT), "PYTHONHASHSEED": "3"},
    ).stdout
    here = snapshot_text(
        capture_case(
            load_engine_factory("reference_engines.router:ReferenceRouter"),
            corpus.get("focus-topic"),
        )
    )
    assert other == here
    assert '"select_context"' in here and "<uid-" in here


def test_an_engine_exception_is_captured_in_the_snapshot():
    doc = capture_case(
        load_engine_factory("tests.snapshots.engines:RaisingCompress"), corpus.get("short-chat")
    )
    assert doc["document"]["compress"]["raised"] == "ValueError: cannot compress this"
