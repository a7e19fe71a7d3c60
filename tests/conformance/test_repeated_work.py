"""Work the kit used to repeat for every case or every drawn turn, now done once, with the same
answers: the sandbox's write rule compares root strings (as the ``Path`` comparison it
replaced decided), case threads share one registered Hypothesis PRNG (the draws are the same;
a Hypothesis with one process-wide PRNG needs no sharing), and the turn strategies are one
object per argument set."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.internal import entropy

from conformance.authoring.strategies import _turn, texts, tool_turn, user_content
from conformance.runtime import inprocess as inprocess_module
from conformance.runtime import sandbox as sandbox_module
from conformance.runtime.sandbox import Sandbox
from conformance.runtime.supervisor import supervise_inprocess


def _path_rule(path: str) -> bool:
    """The rule as it was written before: ``Path`` objects, the root or one of the parents."""
    resolved = Path(os.path.abspath(path))
    return any(
        Path(root) == resolved or Path(root) in resolved.parents for root in sandbox_module._ROOTS
    )


def test_write_rule_matches_the_path_comparison(tmp_path):
    sandbox = Sandbox()
    try:
        root = str(sandbox.root)
        candidates = [
            root,
            root + "/",
            root + "/engine-1/home/x.txt",
            root + "/engine-1/../../escape.txt",
            root + "x/file",  # a sibling whose name starts with the root's
            root + "-10/file",
            root[:-1],
            "/" + root,  # two leading slashes: another path on POSIX
            root + "/./a//b/../c",
            str(tmp_path / "elsewhere.txt"),
            "relative/file.txt",
            "/",
        ]
        for path in candidates:
            assert sandbox.allows_write(path) == _path_rule(path), path
        assert sandbox.allows_write(root + "/engine-1/home/x.txt")
        assert not sandbox.allows_write(root + "x/file")
    finally:
        sandbox.close()


def test_case_threads_share_one_registered_prng(monkeypatch):
    seen: list[list[int]] = []
    registered: list[object] = []
    register = entropy.register_random

    @settings(derandomize=True, max_examples=5, database=None)
    @given(st.integers(0, 10**9))
    def draws(n: int) -> None:
        seen[-1].append(n)

    def case() -> None:
        seen.append([])
        draws()

    supervise_inprocess(case, call_limit=60, case_limit=60)  # registers the shared PRNG
    monkeypatch.setattr(entropy, "register_random", lambda r: (registered.append(r), register(r)))
    for _ in range(3):
        supervise_inprocess(case, call_limit=60, case_limit=60)
    assert registered == []  # no registration (a full gc.collect()) per case thread
    assert all(run == seen[0] for run in seen)

    plain = threading.Thread(target=case)  # a thread Hypothesis sets up itself draws the same
    plain.start()
    plain.join()
    assert seen[-1] == seen[0]
    if _per_thread_prng():
        assert len(registered) == 1  # Hypothesis registered the plain thread's own PRNG
        assert os.getpid() in inprocess_module._SHARED_PRNG
    else:  # one process-wide PRNG, registered once by Hypothesis: the kit has nothing to share
        assert registered == []
        assert os.getpid() not in inprocess_module._SHARED_PRNG


def _per_thread_prng() -> bool:
    """Whether this Hypothesis keeps its global ``Random`` per thread (``hypothesis.core``'s
    ``threadlocal``, what the kit shares) or, like the releases before it, one per process."""
    import hypothesis.core

    return hasattr(hypothesis.core, "threadlocal")


def test_turn_strategies_are_built_once_per_argument_set():
    assert texts(label="turn.reply") is texts(label="turn.reply")
    assert texts(label="a") is not texts(label="b")
    assert user_content(multipart=True, label="turn.user") is user_content(
        multipart=True, label="turn.user"
    )
    assert tool_turn(first_call=5, long_outputs=False) is tool_turn(
        first_call=5, long_outputs=False
    )
    kwargs = {"tool_calls": True, "parallel": True, "multipart": True, "long_outputs": True}
    assert _turn(**kwargs) is _turn(**kwargs)
