"""Benchmark of one run on several hosts. Prints one run's medians and ratios (not a test).

Time to a complete verdict on ReferenceCompressor through ``context-engine-kit check`` (default
profile, bundled scenarios included, as users run it), each run in a fresh temp folder:

1. ``--host-profile=documented`` (one host) and ``--host-profile=all`` (every host profile the
   kit knows), alternated ``--repeat`` times; the ratio of the medians is the cost of checking
   every host (goal: at most 2x on 2 cores).
2. With ``--baseline DIR`` (a checkout of the kit before this change, e.g. a ``git worktree``
   of the previous commit), the one-host run of that checkout too, alternated with ours: the
   one-host time must not grow.

Each line also says how many cases ran (a case runs once per host view,
conformance.authoring.hosts) and
the per-host verdict line. CPU time of the child processes is printed next to the wall time,
since the machine is shared.

Usage: ``PYTHONPATH=. python benchmarks/bench_multihost.py [--repeat N] [--baseline DIR]
[--python PYTHON]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = "reference_engines.compressor:ReferenceCompressor"


def check(root: Path, python: str, *extra: str) -> tuple[float, float, dict]:
    """One ``check`` run of ReferenceCompressor from the checkout ``root``: (wall seconds, CPU
    seconds of the children, the JSON verdict)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    env = {k: v for k, v in env.items() if not k.startswith(("CONFORMANCE_", "PYTEST_XDIST"))}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "verdict.json"
        cmd = [python, "-m", "conformance.cli", "check", REFERENCE, "--json", str(out)]
        cmd += ["--state-dir", str(Path(tmp) / "state"), *extra]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        data = json.loads(out.read_text()) if out.is_file() else {}
    return seconds, cpu, data


def describe(label: str, seconds: float, cpu: float, data: dict) -> str:
    """One line: wall and CPU seconds, verdict, cases, the per-host line."""
    return (
        f"{label:34} {seconds:6.1f} s wall {cpu:6.1f} s CPU  verdict {data.get('verdict')}  "
        f"cases {data.get('cases_run')}  {data.get('by_host_line', '')}"
    )


def main() -> None:
    """Alternate the runs, then print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout before the change")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (a venv's)")
    args = parser.parse_args()
    runs = {
        "documented": (ROOT, ["--host-profile=documented"]),
        "all": (ROOT, ["--host-profile=all"]),
    }
    if args.baseline is not None:
        runs["baseline documented"] = (args.baseline.resolve(), ["--host-profile=documented"])
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeat):
        for label, (root, extra) in runs.items():
            seconds, used, data = check(root, args.python, *extra)
            wall[label].append(seconds)
            cpu[label].append(used)
            print(describe(label, seconds, used, data), flush=True)
    med = {k: statistics.median(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    for label in runs:
        print(f"median {label:22} {med[label]:6.1f} s wall, {med_cpu[label]:6.1f} s CPU")
    print(
        f"all hosts / one host: {med['all'] / med['documented']:.2f}x wall, "
        f"{med_cpu['all'] / med_cpu['documented']:.2f}x CPU (goal <= 2x)"
    )
    if args.baseline is not None:
        base, base_cpu = med["baseline documented"], med_cpu["baseline documented"]
        print(
            f"one host, this checkout / baseline: {med['documented'] / base:.2f}x wall, "
            f"{med_cpu['documented'] / base_cpu:.2f}x CPU (goal: no growth)"
        )


if __name__ == "__main__":
    main()
