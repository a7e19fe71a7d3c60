"""Per-scenario plots with matplotlib (SVG text), for the HTML report.

:func:`run_svg` draws, for one :class:`~conformance.scenarios.run.ScenarioRun`, the
prompt tokens of every provider call (A2, canonical usage), the engine's
``threshold_tokens`` and ``context_length`` as step lines (K1, O4), the compress() calls
as vertical lines (committed: solid; timed out or not committed: dashed), and the cache
read / write tokens of each call as bars (P1-P3, H6). Output is byte-stable: fixed
hash salt, no date metadata, text kept as text.

matplotlib is optional (extra ``report``); :data:`AVAILABLE` says whether it imports.
"""

from __future__ import annotations

import io
import re
from typing import Any

try:  # optional dependency: the kit's "report" extra (matplotlib)
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    AVAILABLE = True
    MISSING_NOTE = ""
except ImportError:  # pragma: no cover - exercised by monkeypatching AVAILABLE in tests
    AVAILABLE = False
    MISSING_NOTE = (
        "plots need matplotlib (the kit's report extra): pip install matplotlib next to the kit"
    )


def run_svg(run: Any, *, width: float = 9.0, height: float = 3.6) -> str | None:
    """The SVG document (str) of ``run``'s token plot, or None without matplotlib.

    Args:
        run: a ScenarioRun (uses ``recorder.provider_calls`` and ``recorder.compactions``).
        width, height: figure size in inches.
    """
    if not AVAILABLE:
        return None
    calls = run.recorder.provider_calls
    xs = [c.index + 1 for c in calls]
    with matplotlib.rc_context(
        {
            "svg.hashsalt": "context-engine-kit",
            "svg.fonttype": "none",
            "font.family": "DejaVu Sans",
            "font.size": 8,
        }
    ):
        fig = Figure(figsize=(width, height))
        ax = fig.add_subplot(1, 1, 1)
        if calls:
            ax.bar(
                [x - 0.2 for x in xs],
                [c.cache_read_tokens for c in calls],
                width=0.4,
                color="#59a14f",
                alpha=0.55,
                label="cache read tokens",
            )
            ax.bar(
                [x + 0.2 for x in xs],
                [c.cache_write_tokens for c in calls],
                width=0.4,
                color="#f28e2b",
                alpha=0.55,
                label="cache write tokens",
            )
            ax.plot(
                xs,
                [c.prompt_tokens for c in calls],
                marker="o",
                markersize=3,
                color="#4e79a7",
                linewidth=1.4,
                label="prompt tokens",
            )
            ax.step(
                xs,
                [c.threshold_tokens for c in calls],
                where="mid",
                color="#e15759",
                linestyle="--",
                linewidth=1.1,
                label="threshold_tokens",
            )
            ax.step(
                xs,
                [c.context_length for c in calls],
                where="mid",
                color="#333333",
                linestyle=":",
                linewidth=1.1,
                label="context_length",
            )
        first = {"committed": True, "other": True}
        for ev in run.recorder.compactions:
            committed = bool(ev.committed)
            key = "committed" if committed else "other"
            ax.axvline(
                ev.after_call + 0.5,
                color="#b07aa1",
                linestyle="-" if committed else "--",
                linewidth=1.2,
                label=("compaction" if committed else "compress() not committed")
                if first[key]
                else None,
            )
            first[key] = False
        ax.set_xlabel("provider call")
        ax.set_ylabel("tokens")
        ax.set_title(f"{run.scenario.name}: prompt tokens per provider call", fontsize=9)
        ax.set_ylim(bottom=0)
        if calls:
            ax.set_xlim(0.3, len(calls) + 0.7)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(loc="upper left", fontsize=7, ncols=3, framealpha=0.8)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "context-engine-kit"})
    text = buf.getvalue()
    start = text.find("<svg")
    text = text[start:] if start >= 0 else text
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
