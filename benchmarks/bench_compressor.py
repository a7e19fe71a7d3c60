"""Benchmark: ReferenceCompressor vs hermes-agent 0.19.0's ContextCompressor, side by side.

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_compressor.py [--hermes-python /tmp/hvenv/bin/python]
        [--sizes 1000,5000,20000] [--kinds tool_heavy,long_tool_outputs,cjk] [--repeats 3]
        [--json results.json]

Both engines compress the same deterministic histories (:mod:`benchmarks.histories`,
checked by sha256 on both sides) with ``context_length`` 200 000, a fresh engine per
measured call. Not a test: it prints medians, ratios and growth orders (the least-squares
slope of log(time) on log(messages); 1 = linear, 2 = quadratic).

Outputs are checked against contract V1-V4 with the kit's own checkers
(:mod:`conformance.authoring.expect`, imported from the repository root, which this script puts on
``sys.path``; the Hermes venv needs no pytest for that).

Hermes runs in a subprocess of ``--hermes-python`` (a venv with hermes-agent 0.19.0), made
hermetic: ``HERMES_HOME`` and ``HOME`` in a temporary directory (Hermes writes files there
during compress()), every ``*_API_KEY``/``*_TOKEN`` variable removed, and sockets blocked
inside the worker (connect/getaddrinfo raise; attempts are counted and reported).

Excluding Hermes' failed provider lookup. Offline, Hermes' summary call
(``agent.auxiliary_client.call_llm``) spends 0.25-0.65 s per call auto-detecting a
provider before raising "No LLM provider configured". The worker replaces the
``call_llm`` name that ``agent.context_compressor`` imported with a stub raising that same
RuntimeError at once, so the compressor takes exactly its offline path (600 s cooldown,
deterministic fallback summary, middle dropped) minus the lookup. One unpatched call per
kind at the smallest size is timed too, and the difference is printed as the excluded cost.

ReferenceCompressor runs in this interpreter with its default summariser (the in-process
provider simulator). The time spent inside the summarise callable (the simulated LLM: the
provider counting the prompt and writing the summary) is measured and subtracted for the
"own" columns, just as Hermes' LLM call is stubbed out; the "total" column keeps it.
"cold" clears the cl100k count cache before the call (every count is an encode); "warm"
is a second fresh engine on the same history with the cache kept, as in a host that has
counted the conversation before (counts are memoised per string).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.histories import history  # noqa: E402
from conformance.authoring.expect import v1_problems, v2_problems, v3_problems, v4_problems  # noqa: E402

CONTEXT_LENGTH = 200_000
DEFAULT_SIZES = (1_000, 5_000, 20_000)
DEFAULT_KINDS = ("tool_heavy", "long_tool_outputs", "cjk")


def validity_problems(before: list[dict[str, Any]], after: Any) -> list[str]:
    """Contract V1-V4 violations of a compress() output ``after`` for input ``before``.

    The kit's own checkers (:mod:`conformance.authoring.expect`); an empty list means valid. V2
    pairs calls and results per occurrence (seeds, U8).
    """
    if v1_problems(after):
        return ["V1 " + p for p in v1_problems(after)]
    return (
        ["V2 " + p for p in v2_problems(after)]
        + ["V3 " + p for p in v3_problems(after)]
        + ["V4 " + p for p in v4_problems(before, after)]
    )


def digest(messages: list[dict[str, Any]]) -> str:
    """sha256 of the canonical JSON of a message list (same bytes on both sides)."""
    data = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()


def slope(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(sizes): the growth order."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-9)) for t in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return (
        sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")
    )


# -- Hermes worker (runs under --hermes-python) ------------------------------------------------


def _block_sockets(attempts: list[str]) -> None:
    import socket

    def refuse(*args, **kwargs):
        attempts.append(repr(args)[:100])
        raise OSError("network disabled by bench_compressor (hermetic Hermes run)")

    socket.socket.connect = lambda self, *a, **k: refuse(*a)  # type: ignore[assignment]
    socket.socket.connect_ex = lambda self, *a, **k: refuse(*a)  # type: ignore[assignment]
    socket.getaddrinfo = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]


def hermes_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Time Hermes' ContextCompressor.compress() on the spec's histories (see module doc)."""
    import logging

    attempts: list[str] = []
    _block_sockets(attempts)
    logging.disable(logging.WARNING)  # Hermes logs each fallback; keep stdout/stderr quiet
    t0 = time.perf_counter()
    from importlib.metadata import version

    import agent.context_compressor as cc

    import_s = time.perf_counter() - t0
    real_call_llm = cc.call_llm

    def no_provider(**kwargs):
        raise RuntimeError("No LLM provider configured (bench_compressor stub: lookup skipped)")

    def make():
        return cc.ContextCompressor(
            model="test", quiet_mode=True, config_context_length=CONTEXT_LENGTH
        )

    results: dict[str, Any] = {"version": version("hermes-agent"), "import_s": import_s, "runs": []}
    for kind in spec["kinds"]:
        for n in spec["sizes"]:
            msgs = history(n, spec["seed"], kind)
            row: dict[str, Any] = {"kind": kind, "n": n, "sha256": digest(msgs)}
            if n == min(spec["sizes"]):
                cc.call_llm = real_call_llm
                engine = make()
                t = time.perf_counter()
                engine.compress(msgs)
                row["unpatched_s"] = time.perf_counter() - t
            cc.call_llm = no_provider
            times, cpu = [], []
            out: list[dict[str, Any]] = []
            for _ in range(spec["repeats"]):
                engine = make()
                t, c = time.perf_counter(), time.process_time()
                out = engine.compress(msgs)
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            row.update(
                seconds=times,
                cpu=cpu,
                messages_out=len(out),
                fallback_used=bool(getattr(engine, "_last_summary_fallback_used", False)),
                problems=validity_problems(msgs, out)[:3],
                output=out,
            )
            results["runs"].append(row)
    cc.call_llm = real_call_llm
    results["network_attempts"] = attempts
    return results


def run_hermes(python: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run :func:`hermes_worker` under ``python`` in a hermetic environment; return its JSON."""
    with tempfile.TemporaryDirectory(prefix="bench-hermes-") as home:
        env = {
            k: v
            for k, v in os.environ.items()
            if not any(s in k.upper() for s in ("API_KEY", "_TOKEN", "SECRET", "PYTHONPATH"))
        }
        env.update(
            HOME=home, HERMES_HOME=os.path.join(home, ".hermes"), PYTHONPATH=str(ROOT), NO_PROXY="*"
        )
        os.makedirs(env["HERMES_HOME"])
        proc = subprocess.run(
            [python, str(Path(__file__).resolve()), "--hermes-worker", json.dumps(spec)],
            env=env,
            capture_output=True,
            text=True,
            cwd=home,
        )
        written = sorted(str(p.relative_to(home)) for p in Path(home).rglob("*"))[:12]
    if proc.returncode != 0:
        raise SystemExit(f"Hermes worker failed ({python}):\n{proc.stderr[-3000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    data["files_written_under_home"] = written
    return data


# -- ReferenceCompressor side ------------------------------------------------------------------


class _TimedSummariser:
    """Wraps a summarise callable and adds the seconds spent inside it to ``seconds``."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0
        self.cpu = 0.0

    def __call__(self, request):
        t, c = time.perf_counter(), time.process_time()
        try:
            return self.inner(request)
        finally:
            self.seconds += time.perf_counter() - t
            self.cpu += time.process_time() - c


def run_reference(spec: dict[str, Any]) -> dict[str, Any]:
    """Time ReferenceCompressor.compress() (cold and warm count cache) on the same histories.

    Also records the time spent inside the summarise callable (the simulated LLM: the
    provider simulator counting the prompt and writing the summary), so the engine's own
    work can be compared with Hermes' compressor whose LLM call is stubbed out.
    """
    from simulator.host import shim

    shim.install()  # agent.* for the engine when hermes-agent is not installed
    from reference_engines import tokens as engine_tokens
    from reference_engines.compressor import ReferenceCompressor
    from simulator.provider import tokens

    tokens.encoding()  # one-time encoding loads, not part of any call
    engine_tokens.encoding()
    runs = []
    for kind in spec["kinds"]:
        for n in spec["sizes"]:
            msgs = history(n, spec["seed"], kind)
            cold, warm, own, own_cold, cold_cpu, warm_cpu, own_cold_cpu, own_warm_cpu = (
                [] for _ in range(8)
            )
            out: list[dict[str, Any]] = []
            for _ in range(spec["repeats"]):
                tokens.count_text.cache_clear()
                engine_tokens.clear_memos()
                engine = ReferenceCompressor(context_length=CONTEXT_LENGTH, quiet_mode=True)
                engine.summarise = timed = _TimedSummariser(engine.summarise)
                t, c = time.perf_counter(), time.process_time()
                out = engine.compress(msgs)
                cold.append(time.perf_counter() - t)
                cold_cpu.append(time.process_time() - c)
                own_cold.append(cold[-1] - timed.seconds)
                own_cold_cpu.append(cold_cpu[-1] - timed.cpu)
                engine = ReferenceCompressor(context_length=CONTEXT_LENGTH, quiet_mode=True)
                engine.summarise = timed = _TimedSummariser(engine.summarise)
                t, c = time.perf_counter(), time.process_time()
                out = engine.compress(msgs)
                warm.append(time.perf_counter() - t)
                warm_cpu.append(time.process_time() - c)
                own.append(warm[-1] - timed.seconds)
                own_warm_cpu.append(warm_cpu[-1] - timed.cpu)
            runs.append(
                {
                    "kind": kind,
                    "n": n,
                    "sha256": digest(msgs),
                    "cold": cold,
                    "warm": warm,
                    "own": own,
                    "own_cold": own_cold,
                    "cold_cpu": cold_cpu,
                    "warm_cpu": warm_cpu,
                    "own_cold_cpu": own_cold_cpu,
                    "own_warm_cpu": own_warm_cpu,
                    "messages_out": len(out),
                    "summary": engine.last_compression.get("summary"),
                    "problems": validity_problems(msgs, out)[:3],
                    "output": out,
                    "chars_in": sum(len(str(m.get("content") or "")) for m in msgs),
                }
            )
    return {"runs": runs}


# -- report --------------------------------------------------------------------------------------


def fmt(seconds: float) -> str:
    """Seconds as a short human string (us, ms or s)."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def cell(value: Any, f=None) -> str:
    """A table cell: ``-`` for None, else ``f(value)`` (default :func:`fmt`)."""
    return "-" if value is None else (f or fmt)(value)


def report(
    spec: dict[str, Any], ref: dict[str, Any], herm: dict[str, Any] | None
) -> dict[str, Any]:
    """Print the comparison table and growth orders; return a JSON-able summary."""
    from simulator.provider import tokens

    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(
        f"# bench_compressor  {now}  python {platform.python_version()}  "
        f"{platform.machine()}  cpus={os.cpu_count()}  context_length={CONTEXT_LENGTH}  "
        f"seed={spec['seed']}  repeats={spec['repeats']}"
    )
    if herm:
        print(
            f"# hermes-agent {herm['version']}  network attempts in "
            f"worker: {len(herm['network_attempts'])}  files Hermes wrote "
            f"under its temp HOME: {herm['files_written_under_home']}"
        )
    hermes_rows = {(r["kind"], r["n"]): r for r in (herm or {}).get("runs", [])}
    print()
    print(
        "| kind | messages | chars in | ref own cold | ref own warm "
        "| ref total cold (with simulated LLM) | hermes (lookup excluded) "
        "| hermes / ref own cold | hermes / ref own warm | hermes / ref total cold "
        "| out msgs ref / hermes | out tokens ref / hermes | valid ref / hermes | same input |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary: dict[str, Any] = {"date": now, "rows": [], "slopes": {}}
    for r in ref["runs"]:
        h = hermes_rows.get((r["kind"], r["n"]))
        rc, rw, ro, roc = (statistics.median(r[k]) for k in ("cold", "warm", "own", "own_cold"))
        hm = statistics.median(h["seconds"]) if h else None
        out_tokens_ref = tokens.count_messages(r["output"])
        out_tokens_h = tokens.count_messages(h["output"]) if h else None
        row = {
            "kind": r["kind"],
            "n": r["n"],
            "chars_in": r["chars_in"],
            "ref_cold_s": rc,
            "ref_warm_s": rw,
            "ref_own_s": ro,
            "ref_own_cold_s": roc,
            "hermes_s": hm,
            "ratio_cold": (hm / rc) if hm else None,
            "ratio_own_warm": (hm / ro) if hm else None,
            "ratio_own_cold": (hm / roc) if hm else None,
            "out_messages": [r["messages_out"], h["messages_out"] if h else None],
            "out_tokens": [out_tokens_ref, out_tokens_h],
            "valid": [not r["problems"], (not h["problems"]) if h else None],
            "same_input": (h["sha256"] == r["sha256"]) if h else None,
            "hermes_unpatched_s": h.get("unpatched_s") if h else None,
            "cpu": {
                "ref_cold_s": statistics.median(r["cold_cpu"]),
                "ref_warm_s": statistics.median(r["warm_cpu"]),
                "ref_own_cold_s": statistics.median(r["own_cold_cpu"]),
                "ref_own_warm_s": statistics.median(r["own_warm_cpu"]),
                "hermes_s": statistics.median(h["cpu"]) if h else None,
            },
        }
        summary["rows"].append(row)

        print(
            f"| {r['kind']} | {r['n']:,} | {r['chars_in']:,} | {fmt(roc)} | {fmt(ro)} | "
            f"{fmt(rc)} | {cell(hm)} | {cell(row['ratio_own_cold'], '{:.1f}x'.format)} | "
            f"{cell(row['ratio_own_warm'], '{:.1f}x'.format)} | "
            f"{cell(row['ratio_cold'], '{:.1f}x'.format)} | {r['messages_out']} / "
            f"{cell(h and h['messages_out'], str)} | {out_tokens_ref:,} / "
            f"{cell(out_tokens_h, '{:,}'.format)} | {'yes' if not r['problems'] else 'NO'} "
            f"/ {('yes' if not h['problems'] else 'NO') if h else '-'} | "
            f"{cell(row['same_input'], str)} |"
        )
    print()
    print(
        "CPU time of the calling process (time.process_time; "
        "less sensitive to other load on the machine):"
    )
    print(
        "| kind | messages | ref own cold | ref own warm | ref total cold | ref total warm "
        "| hermes | hermes / ref own cold | hermes / ref own warm | hermes / ref total cold "
        "| hermes / ref total warm |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for x in summary["rows"]:
        c = x["cpu"]
        hc = c["hermes_s"]

        def ratio(v, hc=hc):
            return "-" if hc is None else f"{hc / v:.1f}x"

        print(
            f"| {x['kind']} | {x['n']:,} | {fmt(c['ref_own_cold_s'])} | "
            f"{fmt(c['ref_own_warm_s'])} | {fmt(c['ref_cold_s'])} | {fmt(c['ref_warm_s'])} "
            f"| {cell(hc)} | {ratio(c['ref_own_cold_s'])} | {ratio(c['ref_own_warm_s'])} | "
            f"{ratio(c['ref_cold_s'])} | {ratio(c['ref_warm_s'])} |"
        )
    print()
    print("Growth order (log-log slope over the sizes; 1 = linear):")
    for kind in spec["kinds"]:
        rows = [x for x in summary["rows"] if x["kind"] == kind]
        sizes = [x["n"] for x in rows]
        line = {
            "ref_cold": slope(sizes, [x["ref_cold_s"] for x in rows]),
            "ref_warm": slope(sizes, [x["ref_warm_s"] for x in rows]),
            "ref_own_cold": slope(sizes, [x["ref_own_cold_s"] for x in rows]),
            "ref_own_warm": slope(sizes, [x["ref_own_s"] for x in rows]),
            "ref_cold_cpu": slope(sizes, [x["cpu"]["ref_cold_s"] for x in rows]),
            "ref_own_cold_cpu": slope(sizes, [x["cpu"]["ref_own_cold_s"] for x in rows]),
        }
        if herm:
            line["hermes"] = slope(sizes, [x["hermes_s"] for x in rows])
            line["hermes_cpu"] = slope(sizes, [x["cpu"]["hermes_s"] for x in rows])
        summary["slopes"][kind] = line
        print(f"  {kind}: " + ", ".join(f"{k} {v:.2f}" for k, v in line.items()))
    if herm:
        print()
        print(
            "Excluded Hermes cost (failed provider lookup), "
            "measured once per kind at the smallest size:"
        )
        for x in summary["rows"]:
            if x["hermes_unpatched_s"] is not None:
                print(
                    f"  {x['kind']} n={x['n']:,}: unpatched {fmt(x['hermes_unpatched_s'])} "
                    f"- patched median {fmt(x['hermes_s'])} = "
                    f"{fmt(x['hermes_unpatched_s'] - x['hermes_s'])}"
                )
    return summary


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; see the module doc. Returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hermes-python",
        default="/tmp/hvenv/bin/python",
        help="python of a venv with hermes-agent 0.19.0; 'none' skips the Hermes side",
    )
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--kinds", default=",".join(DEFAULT_KINDS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the summary (no message bodies) to this file")
    parser.add_argument("--hermes-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hermes_worker:
        print(json.dumps(hermes_worker(json.loads(args.hermes_worker)), ensure_ascii=False))
        return 0
    spec = {
        "sizes": [int(x) for x in args.sizes.split(",") if x],
        "kinds": [x for x in args.kinds.split(",") if x],
        "repeats": max(1, args.repeats),
        "seed": args.seed,
    }
    herm = None
    if args.hermes_python.lower() != "none":
        if not Path(args.hermes_python).exists():
            raise SystemExit(
                f"--hermes-python {args.hermes_python} not found: create a venv with 'python3 "
                "-m venv VENV && VENV/bin/pip install hermes-agent==0.19.0', or pass 'none'"
            )
        herm = run_hermes(args.hermes_python, spec)
    ref = run_reference(spec)
    summary = report(spec, ref, herm)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
