"""Covers conformance.snapshots.corpus: the seeded corpus, at least 12 cases of the kinds the
snapshot tier needs, same bytes in every process."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from conformance.snapshots import corpus
from tests.conftest import REPO_ROOT


def digest() -> str:
    blob = json.dumps(
        [
            [c, corpus.get(c).messages, corpus.get(c).focus_topic, corpus.get(c).context_length]
            for c in corpus.CASES
        ],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def test_corpus_has_the_required_kinds_of_history():
    assert len(corpus.CASES) >= 12
    cases = {c: corpus.get(c) for c in corpus.CASES}
    tool_sizes = [
        len(m["content"]) for m in cases["tool-output-40kb"].messages if m["role"] == "tool"
    ]
    assert tool_sizes == [40_000, 40_000]
    parallel = [
        m
        for m in cases["parallel-calls"].messages
        if m["role"] == "assistant" and m.get("tool_calls")
    ]
    assert parallel and all(len(m["tool_calls"]) == 3 for m in parallel)
    text = json.dumps(cases["cjk-emoji"].messages, ensure_ascii=False)
    assert "数据库" in text and any(e in text for e in ("🚀", "✅", "🔥"))
    parts = [
        p["type"]
        for m in cases["multipart-image"].messages
        if isinstance(m["content"], list)
        for p in m["content"]
    ]
    assert "image_url" in parts and "text" in parts
    assert cases["focus-topic"].focus_topic == "database"
    assert cases["recompress"].recompress_with
    uids = [m.get("message_uid") for m in cases["missing-and-duplicate-uids"].messages]
    assert uids.count(None) == 3 and len(set(u for u in uids if u)) < len([u for u in uids if u])
    assert cases["no-system-prompt"].messages[0]["role"] != "system"


def test_corpus_is_the_same_in_another_process():
    code = "from tests.snapshots.test_corpus import digest; print(digest())"
    other = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO_ROOT), "PYTHONHASHSEED": "7"},
    ).stdout.strip()
    assert other == digest()


def test_unknown_case_lists_the_known_ones():
    try:
        corpus.get("nope")
    except KeyError as exc:
        assert "known: short-chat, long-chat" in str(exc)
    else:
        raise AssertionError("no KeyError")
