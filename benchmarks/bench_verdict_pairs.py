"""Time to a complete verdict: this tree against another commit, in alternated pairs.

Runs the README's main job (``context-engine-kit check ENGINE``, in-process simulator, state
in a temp dir) alternately on a base commit and on this tree, with the same interpreter and
the same installed dependencies (the base is a detached git worktree put first on
``PYTHONPATH``), and prints each run's wall and CPU seconds (user + system of the child
processes), the verdict line, and the medians and their ratios. Alternating pairs is the
only fair comparison on a shared machine: load changes between runs, not within a pair.

Usage: ``python benchmarks/bench_verdict_pairs.py BASE_COMMIT [--pairs N] [--engine SPEC]``
(``--pairs`` 4 by default; the engine ``reference_engines.compressor:ReferenceCompressor``).
The worktree is removed at the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = "reference_engines.compressor:ReferenceCompressor"


def run_once(tree: Path, engine: str) -> tuple[float, float, str]:
    """One main job on the source tree ``tree``: (wall seconds, CPU seconds, verdict line).

    Raises:
        RuntimeError: the run printed no verdict line.
    """
    env = dict(os.environ, PYTHONPATH=str(tree))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "check", engine],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    verdict = next((ln for ln in proc.stdout.splitlines() if ln.startswith("verdict:")), "")
    if not verdict:
        raise RuntimeError(f"no verdict line from {tree}:\n{proc.stdout[-2000:]}{proc.stderr}")
    return wall, cpu, verdict


def main() -> int:
    """Measure ``--pairs`` alternated pairs and print the medians; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="the commit to compare with (any git revision)")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--engine", default=ENGINE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pairs-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(base), args.base],
            cwd=ROOT,
            check=True,
        )
        try:
            times: dict[str, list[tuple[float, float]]] = {"base": [], "this": []}
            for i in range(args.pairs):
                for label, tree in (("base", base), ("this", ROOT)):
                    wall, cpu, verdict = run_once(tree, args.engine)
                    times[label].append((wall, cpu))
                    load = os.getloadavg()[0]
                    print(
                        f"pair {i + 1} {label}: wall {wall:.2f} s, CPU {cpu:.2f} s, load {load:.1f}"
                    )
                    print(f"  {verdict}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT)
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in times.items()
    }
    for label in ("base", "this"):
        print(f"{label}: median wall {med[label][0]:.2f} s, median CPU {med[label][1]:.2f} s")
    print(
        f"this / base: wall {med['this'][0] / med['base'][0]:.2f}x, "
        f"CPU {med['this'][1] / med['base'][1]:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
