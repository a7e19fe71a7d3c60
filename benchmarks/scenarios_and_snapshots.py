"""Cost of the scenario library, the snapshot corpus and the report, per reference engine.

Prints, for each reference engine, the median wall time (seconds, over ``--repeat`` runs)
of: running the whole bundled scenario library (11 scenarios) and judging it; capturing
and serialising the 14-case snapshot corpus; and writing the HTML report of the library
(matplotlib SVG plots). The goal: a conformance run's scenario and snapshot tiers add
seconds, not minutes (2 cores), and the report costs about a second.

Run: PYTHONPATH=. python benchmarks/scenarios_and_snapshots.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios import library_paths
from conformance.scenarios.expectations import judge
from conformance.scenarios.loader import load_scenario
from conformance.scenarios.runner import run_scenario
from conformance.snapshots import corpus
from conformance.snapshots.canonical import snapshot_text
from conformance.snapshots.capture import capture_case

ENGINES = [
    "reference_engines.compressor:ReferenceCompressor",
    "reference_engines.router:ReferenceRouter",
    "reference_engines.mutants._base:MinimalEngine",
    "reference_engines.lcm:LCMEngine",
]


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import logging

    logging.getLogger("simulator.host").setLevel(logging.ERROR)
    logging.getLogger("reference_engines").setLevel(logging.ERROR)
    scenarios = [load_scenario(p) for p in library_paths()]
    print(f"{'engine':<20}{'library (11) s':>16}{'corpus (14) s':>15}{'report s':>10}{'calls':>7}")
    for spec in ENGINES:
        factory = load_engine_factory(spec)
        runs = []

        def library(runs=runs, factory=factory):
            runs[:] = [run_scenario(sc, factory) for sc in scenarios]
            for r in runs:
                judge(r)

        def snapshots(factory=factory):
            for cid in corpus.CASES:
                snapshot_text(capture_case(factory, corpus.get(cid)))

        t_lib = median_seconds(library, args.repeat)
        t_snap = median_seconds(snapshots, args.repeat)
        try:
            from conformance.report import write_report

            out = Path(tempfile.mkdtemp()) / "report.html"
            t_rep = median_seconds(
                lambda out=out, runs=runs: write_report(
                    out, [r for run in runs for r in judge(run)], runs
                ),
                args.repeat,
            )
        except ImportError:
            t_rep = float("nan")
        calls = sum(len(r.recorder.provider_calls) for r in runs)
        print(f"{spec.rpartition(':')[2]:<20}{t_lib:>16.3f}{t_snap:>15.3f}{t_rep:>10.3f}{calls:>7}")


if __name__ == "__main__":
    main()
