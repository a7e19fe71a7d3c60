"""Run one corpus case through an engine the way the host would, and capture the output.

:func:`capture_case` returns ``{"inputs": [...], "document": {...}}`` for
:func:`conformance.snapshots.canonical.snapshot_text`. The document holds, per case:

- ``case``, ``corpus_version``, ``context_length``, ``input_messages`` / ``input_tokens``;
- ``compress``: the kwargs passed (A4: only those the signature accepts), the output rows
  (rows equal to an input row as ``"= input[i] (role)"``), ``output_tokens``, and the
  engine's ``compression_count`` / ``threshold_tokens`` afterwards;
- ``recompress`` (case with ``recompress_with``): the same for the second pass (B6);
- ``select_context``: ``"not overridden (H2: never called)"``, ``null`` (request
  unchanged), or the rows of the replacement, called with the host's arguments (H3).

An engine exception is captured as ``{"raised": "TypeError: ..."}`` so the snapshot shows it.
Tokens are cl100k counts with persistence-only fields stripped (U9).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from conformance.authoring.expect import MAX_VALUE_BYTES, approx_size
from conformance.clauses.errors import exception_text
from conformance.runtime.timeouts import calling, constructor_label
from conformance.snapshots.canonical import reference_rows
from conformance.snapshots.corpus import CORPUS_VERSION, Case
from simulator.host import calls, hooks, thresholds
from simulator.host.sanitize import strip_persistence_fields
from simulator.provider import tokens

MODEL = "sim-model"
#: What a snapshot records for an output over the kit's size bound (never copied or printed).
OVERSIZED = f"returned more than {MAX_VALUE_BYTES // (1024 * 1024)} MB (output discarded)"


def _oversized(value: Any) -> bool:
    """True when ``value`` is over :data:`~conformance.authoring.expect.MAX_VALUE_BYTES` (measured
    before
    anything copies or prints it)."""
    return value is not None and approx_size(value, MAX_VALUE_BYTES) > MAX_VALUE_BYTES


def _tokens(messages: Any) -> Any:
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return None
    return tokens.count_messages(strip_persistence_fields(messages))


def _compress(
    engine: Any, messages: list[dict[str, Any]], focus: Any, inputs: list[Any]
) -> dict[str, Any]:
    kwargs = calls.compress_kwargs(
        engine, current_tokens=_tokens(messages), focus_topic=focus, force=True
    )
    out: dict[str, Any] = {"kwargs": sorted(kwargs)}
    try:
        with calling("compress"):
            result = engine.compress(copy.deepcopy(messages), **kwargs)
    except Exception as exc:
        out["raised"] = exception_text(exc)
        return out
    if _oversized(result):
        out["raised"] = OVERSIZED
        return out
    out["output"] = reference_rows(result, messages)
    out["output_messages"] = len(result) if isinstance(result, list) else None
    out["output_tokens"] = _tokens(result)
    out["compression_count"] = getattr(engine, "compression_count", None)
    out["threshold_tokens"] = getattr(engine, "threshold_tokens", None)
    inputs.append(result)
    out["_result"] = result
    return out


def capture_case(engine_factory: Callable[[], Any], case: Case) -> dict[str, Any]:
    """Run ``case`` on a fresh engine; returns ``{"inputs", "document"}`` (see the module doc)."""
    with calling(constructor_label(engine_factory)[:-2]):
        engine = engine_factory()
    thresholds.assign_model_thresholds(engine, None)
    with calling("update_model"):
        engine.update_model(**calls.update_model_kwargs(MODEL, case.context_length))
    if callable(getattr(engine, "on_session_start", None)):
        with calling("on_session_start"):
            engine.on_session_start(
                f"snapshot-{case.id}",
                platform="cli",
                model=MODEL,
                context_length=case.context_length,
            )
    history = copy.deepcopy(case.messages)
    inputs: list[Any] = [history]
    doc: dict[str, Any] = {
        "case": case.id,
        "corpus_version": CORPUS_VERSION,
        "context_length": case.context_length,
        "focus_topic": case.focus_topic,
        "input_messages": len(history),
        "input_tokens": _tokens(history),
    }
    first = _compress(engine, history, case.focus_topic, inputs)
    result = first.pop("_result", None)
    doc["compress"] = first
    if case.recompress_with is not None and isinstance(result, list):
        extended = list(result) + copy.deepcopy(case.recompress_with)
        inputs.append(extended)
        second = _compress(engine, extended, None, inputs)
        second.pop("_result", None)
        second["input_messages"] = len(extended)
        second["input_tokens"] = _tokens(extended)
        second["output"] = (
            reference_rows(second.get("output"), extended) if "output" in second else None
        )
        doc["recompress"] = second
    doc["select_context"] = _select(engine_factory, history)
    return {"inputs": inputs, "document": doc}


def _select(engine_factory: Callable[[], Any], history: list[dict[str, Any]]) -> Any:
    with calling(constructor_label(engine_factory)[:-2]):
        engine = engine_factory()
    if not hooks.overrides(engine, "select_context"):
        return "not overridden (H2: never called)"
    incoming = next((copy.deepcopy(m) for m in reversed(history) if m.get("role") == "user"), None)
    try:
        with calling("select_context"):
            result = engine.select_context(
                copy.deepcopy(history),
                **calls.select_context_kwargs(
                    conversation_messages=copy.deepcopy(history),
                    incoming_message=incoming,
                    budget_tokens=int(getattr(engine, "context_length", 0) or 0),
                ),
            )
    except Exception as exc:
        return {"raised": exception_text(exc)}
    if _oversized(result):
        return {"raised": OVERSIZED}
    if result is None:
        return None
    return {
        "output": reference_rows(result, history),
        "output_messages": len(result) if isinstance(result, list) else None,
        "output_tokens": _tokens(result),
    }


__all__ = ["capture_case"]
