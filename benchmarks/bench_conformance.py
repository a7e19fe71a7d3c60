"""Benchmark of the conformance wing. Prints medians measured in one run.

1. Time to verdict with the default profile, through pytest as users run it
   (``pytest -p conformance.plugin --engine=X --conformance-profile=default``), plain and
   with ``-n 2``, for MinimalEngine and ReferenceCompressor (when present). Bundled
   scenarios are left out (``--conformance-no-scenarios``).
2. Time to first failure on each mutant (quick profile, shrinking on), in-process.
3. The median shrunk counterexample length (messages) across mutants, with protect
   settings pinned to the smallest values (PINNED: protect_first_n=1, protect_last_n=1, on engines
   that expose them; B2, B3 and B5 mutants get protect_first_n=2, since clauses about the
   protected head cannot show when it is the system prompt alone). The checks size their fixed
   scaffolding from these settings (``head_size``/``tail_size`` in
   conformance/checks/engine_calls.py).

Usage: ``PYTHONPATH=. python benchmarks/bench_conformance.py [--repeat N] [--skip-verdict]
[--skip-mutants]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINES = [
    "reference_engines.mutants._base:MinimalEngine",
    "reference_engines.compressor:ReferenceCompressor",
]
#: The smallest protect settings (protect_last_n >= 1 by the seeds' ranges), for every engine that
#: exposes them.
PINNED = {"protect_first_n": 1, "protect_last_n": 1}
#: Clauses about the protected head cannot be observed when it is the system prompt alone (the
#: seeds' reading of protect_first_n=1): old tool output in the head (B2), head decay (B3), the
#: summary between a user head and a user tail (B5). Their mutants get protect_first_n=2.
PIN_OVERRIDES = {clause: {"protect_first_n": 2} for clause in ("B2", "B3", "B5")}


def verdict_seconds(spec: str, extra: list[str]) -> float:
    """Wall seconds of one pytest run of the checks against ``spec`` (default profile)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CONFORMANCE_ENGINE", None)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "conformance.plugin",
            "-p",
            "no:cacheprovider",
            f"--engine={spec}",
            "--conformance-profile=default",
            "--conformance-no-scenarios",
            "--rootdir",
            tmp,
            *extra,
        ]
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1, 6):  # 6: PARTIAL, the budget cut checks short
        raise SystemExit(
            f"pytest failed for {spec} {extra}: rc={proc.returncode}\n{proc.stdout[-2000:]}"
        )
    return elapsed


def pinned_factory(spec: str, clause: str = ""):
    """A factory for ``spec`` whose engines get PINNED protect settings (with ``clause``'s
    PIN_OVERRIDES) when they expose them."""
    from conformance.authoring.context import CheckContext
    from conformance.runtime.engine_loading import load_engine_factory

    base = load_engine_factory(spec)
    probe = CheckContext(base)
    pins = {**PINNED, **PIN_OVERRIDES.get(clause, {})}

    def factory():
        engine = base()
        if probe.exposes(engine, *pins):
            for k, v in pins.items():
                setattr(engine, k, v)
        return engine

    factory.spec = spec  # type: ignore[attr-defined]
    return factory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-verdict", action="store_true")
    parser.add_argument("--skip-mutants", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(
        f"# bench_conformance  python {sys.version.split()[0]}  cpus {os.cpu_count()}  "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    if not args.skip_verdict:
        print(f"\n## 1. time to verdict, default profile (seconds, median of {args.repeat:d})")
        print(f"{'engine':<55} {'plain':>8} {'-n 2':>8} {'ratio':>7}")
        for spec in ENGINES:
            module = spec.split(":")[0]
            if not (ROOT / (module.replace(".", "/") + ".py")).exists():
                print(f"{spec:<55} (not in this tree)")
                continue
            plain = statistics.median(verdict_seconds(spec, []) for _ in range(args.repeat))
            xdist = statistics.median(
                verdict_seconds(spec, ["-n", "2"]) for _ in range(args.repeat)
            )
            print(f"{spec:<55} {plain:>8.1f} {xdist:>8.1f} {plain / xdist:>7.2f}")
    if not args.skip_mutants:
        from conformance.devtools.killmatrix import judge
        from conformance.run.session import run_conformance
        from reference_engines.mutants import KILLS, engine_spec

        print(
            "\n## 2-3. mutants: time to first failure (quick profile, "
            "shrinking on) and shrunk size (protect settings pinned: "
            f"{PINNED}; for {', '.join(PIN_OVERRIDES)} protect_first_n=2)"
        )
        print(f"{'mutant':<55} {'clause':<6} {'t_first(s)':>10} {'total(s)':>9} {'msgs':>5}")
        firsts, sizes = [], []
        for spec, kill in KILLS.items():
            started = time.perf_counter()
            results = run_conformance(
                pinned_factory(engine_spec(spec), kill.clause),
                scenarios=False,  # as the kill matrix: the registry's checks
                profile="quick",
                shrink=True,
                plugin_dir=str(kill.plugin_dir) if kill.plugin_dir else None,
                xfails=kill.xfails,
                host_profile=kill.host_profile,
            )
            row = judge(spec, kill.clause, kill.pattern, results, time.perf_counter() - started)
            t = row.seconds_to_first_failure
            if t is not None:
                firsts.append(t)
            if row.counterexample_messages:
                sizes.append(row.counterexample_messages)
            print(
                f"{spec.replace('reference_engines.mutants.', ''):<55} {kill.clause:<6} "
                f"{(f'{t:.2f}' if t is not None else 'ALIVE'):>10} {row.seconds_total:>9.1f} "
                f"{row.counterexample_messages if row.counterexample_messages else '-':>5}"
            )
        print(
            f"\nmedian time to first failure: {statistics.median(firsts):.2f} "
            f"s over {len(firsts)} mutants; max {max(firsts):.2f} s"
        )
        print(
            f"median shrunk counterexample: {statistics.median(sizes)} messages over "
            f"{len(sizes)} mutants with a transcript (target <= 6); all: {sorted(sizes)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
