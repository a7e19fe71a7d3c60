"""Benchmark: SQLite store operations per turn stay O(new rows) as a session grows (U1–U10 store).

Builds one session of 1,000 and one of 100,000 messages (turns of user, assistant with two
tool calls, two results, final assistant), then times the per-turn store work of 200 more
turns on each: the turn-start flush of the user message, the assistant + first result
flush, a late result flushed in a later batch (paired from the stored tail, U8), the final
assistant, and a rewrite of that row (U4). Prints medians per operation and per turn, and
the 100k/1k ratio (about 1.0 means O(new rows)). For contrast it also times operations that
are O(session) by nature: load, branch, rewind.

Run: ``PYTHONPATH=. python benchmarks/bench_store.py [--turns 200] [--big 100000]``.
Wall-clock timing here measures the machine, not simulated behaviour.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

from simulator.store.sqlite import SQLiteStore

TURN_ROWS = 6


def turn_messages(k: int) -> list[dict]:
    """One turn of 6 messages with provider ids reused across turns (``call_0``, ``call_1``)."""
    calls = [
        {
            "id": f"call_{j}",
            "type": "function",
            "function": {"name": "grep", "arguments": f'{{"q": {k}}}'},
        }
        for j in range(2)
    ]
    return [
        {"role": "user", "content": f"question {k} " + "lorem ipsum " * 20},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_0", "content": "result " * 30},
        {"role": "tool", "tool_call_id": "call_1", "content": "result " * 30},
        {"role": "assistant", "content": f"answer {k} " + "dolor sit " * 20},
        {"role": "assistant", "content": "p.s."},
    ]


def build(store: SQLiteStore, rows: int) -> str:
    """Create a session holding ``rows`` messages (appended 1,200 at a time)."""
    sid = store.create_session()
    batch: list[dict] = []
    k = 0
    while k * TURN_ROWS < rows:
        batch.extend(turn_messages(k))
        k += 1
        if len(batch) >= 1200:
            store.append(sid, batch)
            batch = []
    if batch:
        store.append(sid, batch)
    return sid


def time_turns(store: SQLiteStore, sid: str, turns: int) -> dict[str, list[float]]:
    """Time each per-turn store operation for ``turns`` turns; seconds per call."""
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "user flush",
            "assistant+result",
            "late result",
            "final assistant",
            "rewrite",
            "turn total",
        )
    }
    length = store.session_info(sid).length
    for k in range(turns):
        u, a, r0, r1, fin, _ = turn_messages(10_000_000 + k)
        t0 = time.perf_counter()
        store.append(sid, [u])
        t1 = time.perf_counter()
        store.append(sid, [a, r0])
        t2 = time.perf_counter()
        store.append(sid, [r1])
        t3 = time.perf_counter()
        store.append(sid, [fin])
        t4 = time.perf_counter()
        store.rewrite(
            sid, length + 4, {"role": "assistant", "content": "rewritten " + fin["content"]}
        )
        t5 = time.perf_counter()
        assert r1["_tool_call_uid"] == a["_tool_call_uids"]["call_1"]
        length += 5
        for key, dt in zip(
            out, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0), strict=True
        ):
            out[key].append(dt)
    return out


def once(fn) -> float:
    """Seconds one call of ``fn()`` takes (wall clock)."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    """Build both sessions, time the per-turn operations, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--big", type=int, default=100_000)
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, SQLite "
        f"{__import__('sqlite3').sqlite_version}; {args.turns} turns per size"
    )
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for n in (args.small, args.big):
            path = os.path.join(d, f"bench-{n}.sqlite3")
            store = SQLiteStore(path)
            t0 = time.perf_counter()
            sid = build(store, n)
            built = time.perf_counter() - t0
            store.checkpoint()  # measure steady-state turns, not the bulk load's WAL backlog
            length = store.session_info(sid).length
            per = time_turns(store, sid, args.turns)
            med = {k: statistics.median(v) * 1e3 for k, v in per.items()}
            med["load (O(n))"] = once(lambda store=store, sid=sid: store.load(sid)) * 1e3
            med["branch (O(n))"] = once(lambda store=store, sid=sid: store.branch(sid)) * 1e3
            med["rewind to half (O(n))"] = (
                once(lambda store=store, sid=sid, length=length: store.rewind(sid, length // 2))
                * 1e3
            )
            med["replace 20 rows (compaction, x20)"] = (
                statistics.median(
                    once(
                        lambda store=store, sid=sid: store.replace(
                            sid, [turn_messages(i)[0] for i in range(20)]
                        )
                    )
                    for _ in range(20)
                )
                * 1e3
            )
            med["turn total p95"] = (
                sorted(per["turn total"])[int(0.95 * len(per["turn total"]))] * 1e3
            )
            results[n] = med
            print(f"built {length} rows in {built:.1f}s ({os.path.getsize(path) / 1e6:.1f} MB)")
            store.close()
    small, big = results[args.small], results[args.big]
    print(f"\n{'operation (median ms)':34s} {args.small:>10,d} {args.big:>10,d}   ratio")
    for key in small:
        print(f"{key:34s} {small[key]:10.3f} {big[key]:10.3f}   {big[key] / small[key]:5.2f}x")


if __name__ == "__main__":
    main()
