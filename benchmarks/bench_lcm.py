"""Benchmark: LCM compaction time grows linearly with history length.

For each history length N (default 1k, 2k, 5k, 10k, 20k messages) it builds a deterministic
session (users, assistants, tool calls with results), then times, in seconds of wall clock:

- ``compress``: one ``LCMEngine.compress()`` over the whole history (head + carrier + tail,
  every middle message summarised into leaves and condensed upward; nothing written), and
- ``publish``: the host's commit observed through ``on_turn_complete`` (one SQLite
  transaction writing every message version, node and leaf index row),

plus the process CPU time of both (less sensitive to other load on a shared machine),
each the median of ``--repeats`` runs with a fresh database and a fresh session (a new seed,
so token counts are not served from the tokenizer's cache). It prints the table, the
log-log slope of total time against N (least squares; the goal is <= 1.15), and the
ratio time(20k)/time(1k) against the ideal 20.

Run: ``PYTHONPATH=. python benchmarks/bench_lcm.py [--sizes 1000,2000,...] [--repeats 3]``.
Exit status 1 when both the wall and the CPU slope exceed ``--max-slope``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.host import shim  # noqa: E402

shim.install()  # agent.* for the engine when hermes-agent is not installed

from reference_engines.lcm import LCMEngine  # noqa: E402

WORDS = (
    "deploy kubernetes cluster database migration parser cache token budget invoice report "
    "refactor schema endpoint latency backup retry timeout queue worker config secret path"
).split()


def build_session(n_messages: int, seed: int) -> list[dict]:
    """A deterministic transcript of exactly ``n_messages`` messages (system first)."""
    rng = random.Random(seed)

    def text(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    def uid() -> str:
        return f"{rng.getrandbits(128):032x}"

    msgs: list[dict] = [
        {"role": "system", "content": "You are a helpful agent.", "message_uid": uid()}
    ]
    turn = 0
    while len(msgs) < n_messages:
        msgs.append(
            {"role": "user", "content": f"Turn {turn}: {text(12)} {text(8)}", "message_uid": uid()}
        )
        if turn % 4 == 1:
            cid = f"call_{turn}"
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "message_uid": uid(),
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": json.dumps({"path": f"src/m{turn}.py"}),
                            },
                        }
                    ],
                }
            )
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": cid,
                    "content": f"{text(30)} {text(20)}",
                    "message_uid": uid(),
                }
            )
        msgs.append(
            {
                "role": "assistant",
                "content": f"Answer {turn}: {text(20)} {text(10)}",
                "message_uid": uid(),
            }
        )
        turn += 1
    del msgs[n_messages:]
    while msgs[-1]["role"] == "assistant" and msgs[-1].get("tool_calls"):
        msgs.pop()  # never end on an unanswered call
    return msgs


def run_once(n: int, seed: int) -> dict[str, float]:
    """Time one compaction of an ``n``-message session; returns seconds per phase."""
    session = build_session(n, seed)
    with tempfile.TemporaryDirectory() as tmp:
        engine = LCMEngine(Path(tmp) / "lcm.sqlite3")
        engine.update_model("bench-model", 32_000)
        engine.on_session_start(f"bench-{n}-{seed}")
        engine._conn._db()  # open the connection outside the timed region
        c0, t0 = time.process_time(), time.perf_counter()
        out = engine.compress(session)
        t1 = time.perf_counter()
        engine.on_turn_complete(list(out))
        c2, t2 = time.process_time(), time.perf_counter()
        status = engine.get_status()
        assert status["published_passes"] == 1 and status["staged_passes"] == 0
        engine.close()
    return {
        "compress": t1 - t0,
        "publish": t2 - t1,
        "total": t2 - t0,
        "cpu": c2 - c0,
        "kept": len(out),
    }


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(ys) against log(xs)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den


def main(argv=None) -> int:
    """Run the sizes, print the table and slopes; 0 when a slope meets ``--max-slope``, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2000,5000,10000,20000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-slope", type=float, default=1.15)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    run_once(500, 0)  # warm imports and the tokenizer
    print(
        f"LCM compaction benchmark - python {platform.python_version()}, {os.cpu_count()} cpu(s), "
        f"{time.strftime('%Y-%m-%d')}, median of {args.repeats}"
    )
    print(
        f"{'messages':>9} {'compress s':>11} {'publish s':>10} "
        f"{'total s':>9} {'cpu s':>8} {'us/msg':>8} {'kept':>6}"
    )
    medians, cpu_medians = [], []
    for n in sizes:
        runs = [run_once(n, seed=1000 * n + r) for r in range(args.repeats)]
        med = {
            k: statistics.median(r[k] for r in runs)
            for k in ("compress", "publish", "total", "cpu", "kept")
        }
        medians.append(med["total"])
        cpu_medians.append(med["cpu"])
        print(
            f"{n:>9} {med['compress']:>11.3f} {med['publish']:>10.3f} {med['total']:>9.3f} "
            f"{med['cpu']:>8.3f} {med['total'] / n * 1e6:>8.1f} {int(med['kept']):>6}"
        )
    s = slope(sizes, medians)
    s_cpu = slope(sizes, cpu_medians)
    print(f"log-log slope vs messages: wall {s:.3f}, cpu {s_cpu:.3f} (goal <= {args.max_slope})")
    print(
        f"time({sizes[-1]}) / time({sizes[0]}): wall {medians[-1] / medians[0]:.2f}, "
        f"cpu {cpu_medians[-1] / cpu_medians[0]:.2f} (linear would be {sizes[-1] / sizes[0]:.2f})"
    )
    return 0 if min(s, s_cpu) <= args.max_slope else 1


if __name__ == "__main__":
    raise SystemExit(main())
