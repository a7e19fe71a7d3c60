"""Run engine code on a real hermes-agent 0.19.0, for the engine-LLM tests (tests/llm).

Run with the Python of a venv holding hermes-agent 0.19.0 (not the kit's venv), with
``HERMES_HOME`` configured by ``simulator.llm.hermes_config.configure_hermes_home``::

    python hermes_driver.py MODE CASES_JSON OUT_JSON

Modes:

- ``engine``: each case ``{"id", "messages", "call_kwargs"}`` runs ``SummaryEngine.compress``
  (``summary_engine.py`` next to this file) and records ``engine.last_outcome`` and the
  summary text.
- ``compressor``: each case ``{"id", "messages"}`` runs a fresh
  ``ContextCompressor(model="test", quiet_mode=True, config_context_length=200000)`` and
  records the summary row, the fallback / abort flags, the cooldown armed (seconds), the
  summary error, the WARNING lines logged by ``agent.*`` and the wall time of compress().
- ``signature``: ``[name, kind, repr(default)]`` of each parameter of the
  ``agent.auxiliary_client`` functions named in CASES_JSON (a list of names).

``KIT_COMPRESSION_TIMEOUT_FLOOR`` (seconds), when set, replaces Hermes' 300 s floor on the
compression deadline (``agent.auxiliary_client._COMPRESSION_TIMEOUT_FLOOR_SECONDS``) so a
timeout test takes seconds; nothing else of Hermes is changed.

Network: every connection to a non-loopback address is refused before it is made (the
guard of ``tests/host/hermes_fixture/drive_hermes.py``).
"""

import importlib.util
import inspect
import json
import logging
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "host" / "hermes_fixture"))

from drive_hermes import _guard_network  # noqa: E402


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        if record.name.startswith("agent"):
            self.lines.append(f"{record.name}: {record.getMessage()}")


def _load_engine_module():
    spec = importlib.util.spec_from_file_location("summary_engine", HERE / "summary_engine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_engine(cases):
    module = _load_engine_module()
    out = []
    for case in cases:
        engine = module.SummaryEngine()
        engine.call_kwargs = case.get("call_kwargs") or {}
        t = time.perf_counter()
        result = engine.compress(case["messages"])
        out.append(
            {
                "id": case["id"],
                "seconds": time.perf_counter() - t,
                "outcome": engine.last_outcome,
                "messages": result,
            }
        )
    return out


def run_compressor(cases):
    from agent.context_compressor import ContextCompressor

    handler = _Warnings()
    logging.getLogger().addHandler(handler)
    out = []
    for case in cases:
        handler.lines = []
        engine = ContextCompressor(model="test", quiet_mode=True, config_context_length=200000)
        t = time.perf_counter()
        result = engine.compress(case["messages"])
        seconds = time.perf_counter() - t
        summaries = [m for m in result if m.get("_compressed_summary")]
        out.append(
            {
                "id": case["id"],
                "seconds": seconds,
                "messages_in": len(case["messages"]),
                "messages_out": len(result),
                "summary": summaries[0].get("content") if summaries else None,
                "fallback_used": bool(engine._last_summary_fallback_used),
                "aborted": bool(engine._last_compress_aborted),
                "network_failure": bool(engine._last_summary_network_failure),
                "summary_error": engine._last_summary_error,
                "cooldown_seconds": round(
                    max(0.0, engine._summary_failure_cooldown_until - time.monotonic())
                ),
                "warnings": handler.lines,
            }
        )
    return out


def run_signature(names):
    import agent.auxiliary_client as aux

    out = {}
    for name in names:
        params = inspect.signature(getattr(aux, name)).parameters.values()
        out[name] = [[p.name, p.kind.name, repr(p.default)] for p in params]
    return out


def main():
    mode, cases_path, out_path = sys.argv[1:4]
    _guard_network()
    logging.basicConfig(level=logging.WARNING)
    floor = os.environ.get("KIT_COMPRESSION_TIMEOUT_FLOOR")
    if floor:
        import agent.auxiliary_client as aux

        aux._COMPRESSION_TIMEOUT_FLOOR_SECONDS = float(floor)
    cases = json.loads(Path(cases_path).read_text())
    run = {"engine": run_engine, "compressor": run_compressor, "signature": run_signature}[mode]
    Path(out_path).write_text(json.dumps(run(cases)))


if __name__ == "__main__":
    main()
