"""Benchmark of the engine door (supervised cases, drawing budget). Prints one run's figures.

1. Time to a complete verdict for slow correct engines (``benchmarks/slow_engines.py``):
   OneSecondCompress (goal <= 180 s on 2 cores) and SlowEverything, 1.3 s constructor and 2.8 s
   compress() (goal <= 300 s); each run must have no MUST failure, and the figures say how many
   checks the budget limited. Default profile, bundled scenarios included, through
   ``context-engine-kit check`` as users run it.
2. The slow buggy engine DropsSystemPastForty: its V4 failure and the seconds to the verdict.
3. ReferenceCompressor, default profile, scenarios included: wall seconds (goal <= 30 s), with
   ``--conformance-isolation=fork`` (the default) and ``inprocess``; the ratio is the
   supervision overhead (goal <= 5 %).

Time to first failure on the mutants is ``benchmarks/bench_conformance.py --skip-verdict``.

Usage: ``PYTHONPATH=. python benchmarks/bench_door.py [--only slow|buggy|reference]
[--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOW = ["benchmarks.slow_engines:OneSecondCompress", "benchmarks.slow_engines:SlowEverything"]
BUGGY = "benchmarks.slow_engines:DropsSystemPastForty"
REFERENCE = "reference_engines.compressor:ReferenceCompressor"


def check(spec: str, *extra: str) -> tuple[float, dict]:
    """One ``context-engine-kit check`` run of ``spec``: (wall seconds, the JSON verdict)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "verdict.json"
        cmd = [sys.executable, "-m", "conformance.cli", "check", spec, "--json", str(out)]
        cmd += ["--state-dir", str(Path(tmp) / "state"), *extra]
        started = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        data = json.loads(out.read_text()) if out.is_file() else {}
    return seconds, data


def describe(spec: str, seconds: float, data: dict) -> str:
    """One line: seconds, verdict, MUST failures, cases run, budget-limited checks."""
    limited = [r for r in data.get("results", []) if "examples" in r]
    return (
        f"{spec.rpartition(':')[2]:24} {seconds:7.1f} s  verdict {data.get('verdict')}  "
        f"MUST failures {data.get('failures_by_level', {}).get('MUST')}  "
        f"cases {data.get('cases_run')}/{data.get('cases_total')}  "
        f"budget-limited checks {len(limited)}"
    )


def main() -> None:
    """Run the sections asked for and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["slow", "buggy", "reference"], default=None)
    parser.add_argument("--repeat", type=int, default=3, help="repeats of the reference runs")
    args = parser.parse_args()
    if args.only in (None, "slow"):
        for spec in SLOW:
            print(describe(spec, *check(spec)), flush=True)
    if args.only in (None, "buggy"):
        seconds, data = check(BUGGY, "-k", "V4")
        v4 = [
            r for r in data.get("results", []) if r["clause"] == "V4" and r["outcome"] == "failed"
        ]
        print(describe(BUGGY, seconds, data), f"V4 failures {len(v4)}", flush=True)
    if args.only in (None, "reference"):
        times: dict[str, list[float]] = {"fork": [], "inprocess": []}
        for _ in range(args.repeat):
            for isolation in times:
                seconds, data = check(REFERENCE, f"--conformance-isolation={isolation}")
                times[isolation].append(seconds)
                print(describe(f"{REFERENCE} [{isolation}]", seconds, data), flush=True)
        fork, plain = statistics.median(times["fork"]), statistics.median(times["inprocess"])
        print(
            f"ReferenceCompressor default profile: median {fork:.1f} s supervised, "
            f"{plain:.1f} s in-process; supervision overhead {100 * (fork / plain - 1):+.1f} %"
        )


if __name__ == "__main__":
    main()
