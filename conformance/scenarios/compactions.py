"""The compactions of a scenario run: which committed, and whether the engine compacts at all.

:class:`PassSettler` marks each compaction the recorder saw committed, timed out, declined or
without progress, from the host's pass outcomes (the runner calls it after every step).
:func:`compaction_reason` says why the engine counts as one that compacts (or "" when it never
does; :func:`probe_compacts` asks a fresh engine): expectations about compactions apply only to
such engines, since no clause asks an engine to compact.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.scenarios.observe import ScenarioRecorder


class PassSettler:
    """Settles recorded compactions against the host's pass outcomes, each session's passes
    read once (it remembers how many it has seen per session)."""

    def __init__(self) -> None:
        self._passes_seen: dict[int, int] = {}

    def settle(self, sessions: list[Any], compactions: list[Any]) -> None:
        """Mark each unsettled compaction of ``compactions`` (``CompactionEvent``) from the new
        pass outcomes of ``sessions`` (host sessions, in order; a compaction belongs to the
        session whose engine ran it, oldest first): ``committed`` (and not timed out),
        ``timed_out``, ``declined`` (a no-op or no progress), ``no_progress``."""
        pending: dict[int, list[Any]] = {}
        for ev in compactions:
            if ev.committed is None:
                pending.setdefault(ev.engine_id, []).append(ev)
        for s in sessions:
            key = id(s)
            seen = self._passes_seen.get(key, 0)
            new = s.passes[seen:]
            self._passes_seen[key] = len(s.passes)
            queue = pending.get(id(s.engine), [])
            for outcome in new:
                if queue:
                    ev = queue.pop(0)
                    ev.committed = bool(outcome.committed and not outcome.timed_out)
                    ev.timed_out = bool(outcome.timed_out)
                    ev.declined = bool(outcome.noop or outcome.no_progress)
                    ev.no_progress = bool(outcome.no_progress)


def compaction_reason(
    engine: Any,
    recorder: ScenarioRecorder,
    factory: Callable[[], Any],
    model: str,
    context_length: int,
) -> str:
    """Why ``engine`` (the main agent's, or the registered one) counts as one that compacts (a
    non-empty reason), or "" when it never does: it declares ``compressor``, asked to compact
    in this run (``recorder``), had a pass committed, or, probed on a fresh engine from
    ``factory`` (:func:`probe_compacts` with ``model`` and ``context_length``, tokens), asks to
    at twice its threshold or drops rows from a history over it. A probe that raises says
    nothing ("")."""
    if "compressor" in (getattr(engine, "conformance_capabilities", None) or ()):
        return "it declares the 'compressor' capability"
    if recorder.asked_to_compact:
        return "its should_compress() answered True in this run"
    if any(e.committed for e in recorder.compactions):
        return "a compaction of it was committed in this run"
    try:
        return probe_compacts(factory, model, context_length)
    except Exception:  # a probe that fails says nothing; the run's own record stands
        return ""


def probe_compacts(factory: Callable[[], Any], model: str, context_length: int) -> str:
    """Probe a fresh engine from ``factory`` outside the run (its calls are not recorded):
    ``update_model(model, context_length)``, then ``should_compress(2 x threshold)``; if that
    is not True, ``compress()`` of a plain history over the threshold. Returns the reason it
    compacts, or "" (it never asked and removed no row)."""
    from conformance.authoring.strategies import probe_history
    from simulator.host.calls import compress_kwargs, update_model_kwargs
    from simulator.provider.tokens import count_messages

    engine = factory()
    if callable(getattr(engine, "update_model", None)):
        engine.update_model(**update_model_kwargs(model, context_length))
    threshold = int(getattr(engine, "threshold_tokens", 0) or 0) or context_length // 2
    if engine.should_compress(2 * threshold) is True:
        return "a fresh engine asks to compact at twice its threshold_tokens"
    history = probe_history(threshold)
    out = engine.compress(
        [dict(m) for m in history],
        **compress_kwargs(engine, current_tokens=count_messages(history)),
    )
    if isinstance(out, list) and len(out) < len(history):
        return "a fresh engine drops rows when compress() is called over its threshold_tokens"
    return ""


__all__ = ["PassSettler", "compaction_reason", "probe_compacts"]
