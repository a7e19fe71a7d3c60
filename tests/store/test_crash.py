"""Covers simulator.store.sqlite under SIGKILL: a writer process is killed mid-commit, 20 times
on one database.

After every kill: ``PRAGMA integrity_check`` is ``ok``, every batch whose commit returned
is fully present, and the batch that was in flight is present entirely or not at all.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
ITERATIONS = 20


def _run_writer_and_kill(path: Path, seed: int, kill_after_batches: int, extra_delay: float):
    """Start the writer, kill it with SIGKILL while batch ``kill_after_batches`` is in flight.

    Returns (committed uid batches, the in-flight uid batch or None).
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.store.crash_writer", str(path), str(seed)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    committed, inflight, begun = [], None, 0  # type: ignore[var-annotated]
    try:
        ready = proc.stdout.readline()
        assert ready.strip() == "R ok", (
            f"writer failed to open the store: {ready!r} {proc.stderr.read()}"
        )
        while True:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"writer exited early: {proc.stderr.read()}")
            if line.startswith("B "):
                inflight = line.split()[1:]
                begun += 1
                if begun == kill_after_batches:
                    if extra_delay:
                        time.sleep(extra_delay)
                    os.kill(proc.pid, signal.SIGKILL)
                    break
            elif line.strip() == "C":
                committed.append(inflight)
                inflight = None
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    # Lines written before the kill landed but not yet read: the writer may have finished
    # that commit and begun further batches.
    for line in proc.stdout.read().splitlines():
        if line.startswith("B "):
            inflight = line.split()[1:]
        elif line.strip() == "C" and inflight is not None:
            committed.append(inflight)
            inflight = None
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return committed, inflight


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX SIGKILL")
def test_sigkill_mid_commit_loses_no_committed_message(tmp_path):
    path = tmp_path / "crash.sqlite3"
    rng = random.Random(20261130)
    all_committed = []
    survived = 0
    inflight_seen = 0
    killed_before_commit = 0
    for i in range(ITERATIONS):
        committed, inflight = _run_writer_and_kill(
            path,
            seed=i,
            kill_after_batches=rng.randint(1, 4),
            extra_delay=rng.choice([0.0, 0.0, 0.001, 0.003]),
        )
        all_committed.extend(committed)
        with SQLiteStore(path) as store:
            assert store.integrity_check() == "ok", f"iteration {i}: integrity_check failed"
            stored = [m["message_uid"] for m in store.load("crash")]
        present = set(stored)
        missing = [u for batch in all_committed for u in batch if u not in present]
        assert not missing, f"iteration {i}: {len(missing)} committed messages lost"
        assert len(stored) == len(present), f"iteration {i}: a message was stored twice"
        if inflight is not None:
            inflight_seen += 1
            got = [u in present for u in inflight]
            assert all(got) or not any(got), (
                f"iteration {i}: the in-flight batch was half committed"
            )
            if all(got):
                all_committed.append(inflight)
            else:
                killed_before_commit += 1
        expected = [u for batch in all_committed for u in batch]
        assert stored == expected, f"iteration {i}: stored order differs from commit order"
        survived += 1
    assert survived == ITERATIONS
    # The kill must really land during commits most of the time, or the test proves little.
    assert inflight_seen >= ITERATIONS // 2, (
        f"only {inflight_seen}/{ITERATIONS} kills hit an in-flight batch"
    )
    assert killed_before_commit >= ITERATIONS // 2, (
        f"only {killed_before_commit}/{ITERATIONS} kills landed before the batch's commit finished"
    )
