"""Probe hermes-agent's ContextCompressor offline and print the facts as JSON.

    PYTHONPATH=. python benchmarks/probe_hermes.py [--hermes-python /tmp/hvenv/bin/python]

Runs under ``--hermes-python`` in the same hermetic environment as
``bench_compressor.py`` (temporary ``HOME``/``HERMES_HOME``, no API keys, sockets blocked
and attempts counted). It reports the ABC surface of the installed version, how the
offline constructor resolves its budgets, and what compress() does with no summary
provider (path, side effects, timing), so ``docs/verdicts/`` can cite measured facts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def probe() -> dict[str, Any]:
    """The facts; runs inside the Hermes venv (see module doc)."""
    import copy
    import inspect
    import logging
    import time

    from benchmarks.bench_compressor import _block_sockets, validity_problems
    from benchmarks.histories import history

    attempts: list[str] = []
    _block_sockets(attempts)
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    from importlib.metadata import version

    import agent.context_compressor as cc
    import agent.context_engine as ce

    facts: dict[str, Any] = {
        "hermes_agent": version("hermes-agent"),
        "import_s": round(time.perf_counter() - t0, 3),
    }
    base = ce.ContextEngine
    facts["abc_abstract"] = sorted(base.__abstractmethods__)
    facts["abc_methods"] = sorted(
        k for k, v in vars(base).items() if callable(v) or isinstance(v, property)
    )
    facts["abc_has"] = {
        m: hasattr(base, m) for m in ("select_context", "on_turn_complete", "clone_for_agent")
    }
    facts["abc_class_defaults"] = {
        k: getattr(base, k) for k in ("threshold_percent", "protect_first_n", "protect_last_n")
    }
    facts["name_is_property"] = isinstance(inspect.getattr_static(base, "name"), property)
    facts["resolve_model_threshold_exists"] = hasattr(cc, "resolve_model_threshold")
    facts["sanitize_memory_context_signature"] = str(inspect.signature(ce.sanitize_memory_context))
    facts["signatures"] = {
        "ContextCompressor.__init__": str(inspect.signature(cc.ContextCompressor.__init__)),
        "compress": str(inspect.signature(cc.ContextCompressor.compress)),
        "update_model": str(inspect.signature(cc.ContextCompressor.update_model)),
        "abc.update_model": str(inspect.signature(base.update_model)),
    }

    def make(**kw):
        return cc.ContextCompressor(
            model="test", quiet_mode=True, config_context_length=200_000, **kw
        )

    t = time.perf_counter()
    c = make()
    facts["construct_s"] = round(time.perf_counter() - t, 4)
    facts["budgets_200k"] = {
        "context_length": c.context_length,
        "threshold_percent": c.threshold_percent,
        "threshold_tokens": c.threshold_tokens,
        "tail_token_budget": c.tail_token_budget,
        "max_summary_tokens": c.max_summary_tokens,
    }
    big = cc.ContextCompressor(model="test", quiet_mode=True, config_context_length=1_000_000)
    facts["budgets_1m"] = {
        "threshold_tokens": big.threshold_tokens,
        "max_summary_tokens": big.max_summary_tokens,
    }

    tiny = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    c = make()
    facts["tiny_returns_same_object"] = c.compress(tiny) is tiny
    facts["tiny_counts_ineffective"] = c._ineffective_compression_count

    msgs = history(1_000, 0, "mixed")
    snapshot = copy.deepcopy(msgs)
    c = make()
    t = time.perf_counter()
    out = c.compress(msgs)
    facts["compress_1000_unpatched_s"] = round(time.perf_counter() - t, 3)
    facts["compress_path"] = {
        "fallback_summary_used": c._last_summary_fallback_used,
        "last_summary_error": c._last_summary_error,
        "dropped_rows": c._last_summary_dropped_count,
        "aborted": c._last_compress_aborted,
        "compression_count": c.compression_count,
        "messages": [len(msgs), len(out)],
        "valid": validity_problems(msgs, out) == [],
        "input_mutated": msgs != snapshot,
        "summary_row_keys": [sorted(m) for m in out if m.get("_compressed_summary")],
        "should_compress_after (cooldown)": c.should_compress(10**6),
        "second_compress_calls_llm": None,
    }
    calls = []
    real = cc.call_llm
    cc.call_llm = lambda **k: calls.append(1) or real(**k)
    c.compress(msgs)
    cc.call_llm = real
    facts["compress_path"]["second_compress_calls_llm"] = bool(calls)
    facts["deepcopy_ok"] = copy.deepcopy(c).compression_count == c.compression_count
    facts["should_compress_sentinel"] = make().should_compress(-1)
    s = make()
    s.last_prompt_tokens = -1
    facts["get_status_on_sentinel"] = s.get_status()
    rows = history(200, 2, "tool_heavy") + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "x1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "x2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "x1", "content": "r"},
        {"role": "user", "content": "go"},
    ]
    out = make().compress(rows)
    facts["call_without_result"] = {
        "stub_result_added": any(m.get("tool_call_id") == "x2" for m in out),
        "call_stripped": not any(
            t.get("id") == "x2" for m in out for t in (m.get("tool_calls") or ())
        ),
    }
    c = make()
    try:
        c.update_model("other", 100_000, extra=1)
        facts["update_model_accepts_extra_kwargs"] = True
    except TypeError:
        facts["update_model_accepts_extra_kwargs"] = False
    facts["network_attempts"] = len(attempts)
    return facts


def main(argv: list[str] | None = None) -> int:
    """Run :func:`probe` under the Hermes interpreter and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hermes-python", default="/tmp/hvenv/bin/python")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(probe(), default=str))
        return 0
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="probe-hermes-") as home:
        env = {
            k: v
            for k, v in os.environ.items()
            if not any(s in k.upper() for s in ("API_KEY", "_TOKEN", "SECRET", "PYTHONPATH"))
        }
        env.update(HOME=home, HERMES_HOME=os.path.join(home, ".hermes"), PYTHONPATH=str(ROOT))
        os.makedirs(env["HERMES_HOME"])
        proc = subprocess.run(
            [args.hermes_python, str(Path(__file__).resolve()), "--worker"],
            env=env,
            capture_output=True,
            text=True,
            cwd=home,
        )
        written = sorted(str(p.relative_to(home)) for p in Path(home).rglob("*"))
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    facts["files_written_under_HERMES_HOME"] = written
    print(json.dumps(facts, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
