"""H2 measured: the per-request cost of the pipeline with and without a selecting engine.

Builds the request of a 60-message conversation many times with (a) no engine, (b) an
engine that keeps the ABC's select_context (skipped by identity, H2), (c) the reference
router, and prints the median microseconds per build_request and the ratios to (a).
H2's promise: (b) costs nothing measurable over (a).

Run: PYTHONPATH=. python benchmarks/host_pipeline.py [--repeat 300]
"""

from __future__ import annotations

import argparse
import statistics
import time

from simulator.host import shim

shim.install()  # agent.* for the engines when hermes-agent is not installed

from reference_engines.mutants._base import MinimalEngine  # noqa: E402
from reference_engines.router import ReferenceRouter  # noqa: E402
from simulator.host import pipeline  # noqa: E402
from simulator.host.scenarios import user_message  # noqa: E402


def _history():
    msgs = [{"role": "system", "content": "sys"}]
    for i in range(30):
        msgs.append(
            {
                "role": "user",
                "content": user_message("database" if i % 2 else "deploy", i, words=60),
                "message_uid": f"{i:032x}",
            }
        )
        msgs.append({"role": "assistant", "content": f"answer {i}"})
    return msgs


def _median_us(engine, history, repeat):
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        pipeline.build_request(
            engine,
            system_prompt=None,
            history=history,
            incoming=history[-2],
            budget_tokens=200_000,
            cache_control=True,
        )
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=300)
    args = ap.parse_args()
    history = _history()
    base = _median_us(None, history, args.repeat)
    plain = _median_us(MinimalEngine(), history, args.repeat)
    router = _median_us(ReferenceRouter(), history, args.repeat)
    print(f"no engine           {base:8.1f} us/request")
    print(f"non-overriding (H2) {plain:8.1f} us/request  ratio {plain / base:.3f}")
    print(f"reference router    {router:8.1f} us/request  ratio {router / base:.3f}")


if __name__ == "__main__":
    main()
