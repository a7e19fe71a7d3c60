"""H6 measured: prompt-cache reuse of the reference router vs the reshuffling mutant.

Runs the 30-turn scenario of :func:`simulator.host.scenarios.run_cache_scenario` (about 300
tokens a turn, topic blocks, system prompt under 10 % of the prompt, Claude model with
system_and_3 cache control on the provider simulator) for several seeds and prints, per
engine, the median of cache_read_tokens / prompt_tokens over the calls after the first two.
Goal: router >= 0.8, reshuffling mutant <= 0.2.

Run: PYTHONPATH=. python benchmarks/host_cache_stability.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from simulator.host import shim

shim.install()  # agent.* for the engines when hermes-agent is not installed

from reference_engines.mutants._base import MinimalEngine  # noqa: E402
from reference_engines.mutants.h6_reshuffle import ReshufflingRouter  # noqa: E402
from reference_engines.router import ReferenceRouter  # noqa: E402
from simulator.host.scenarios import run_cache_scenario  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    for engine_cls in (ReferenceRouter, ReshufflingRouter, MinimalEngine):
        ratios, shares, turn_tokens, secs = [], [], [], []
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            rep = run_cache_scenario(engine_cls(), seed=seed)
            secs.append(time.perf_counter() - t0)
            ratios.append(rep.ratio)
            shares.append(rep.system_share)
            turn_tokens.append(rep.mean_turn_tokens)
        print(
            f"{engine_cls.__name__:20s} cache_read/prompt median "
            f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max "
            f"{max(ratios):.3f}); system share {statistics.median(shares):.3f}; tokens/turn "
            f"{statistics.median(turn_tokens):.0f}; run {statistics.median(secs):.2f}s"
        )


if __name__ == "__main__":
    main()
