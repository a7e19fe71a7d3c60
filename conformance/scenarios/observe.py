"""What a scenario run observes of the engine: a :class:`~simulator.host.record.Recorder`
that also keeps the facts expectations need.

The host sends every engine call through its recorder, on every agent (parent,
subagents, gateway sessions, hygiene agents) and on pool threads (TS1). This subclass
adds, per call, the scenario step it happened in, and:

- ``update_from_response``: one :class:`ProviderCall` (canonical usage, A2; the engine's
  ``threshold_tokens`` / ``context_length`` right after it) for plots and ratios;
- ``compress``: one :class:`CompactionEvent` (tokens in and out, thread; committed or
  not is filled in by the runner from the host's pass outcomes);
- ``select_context``: whether the engine changed its arguments in place (H3: a
  selection is request-scoped and never rewrites history; an engine that edits the
  messages it is handed would rewrite a host's history wherever those dicts are shared);
- any method that raised: an :class:`EngineError` with the exception text and thread.
"""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass
from typing import Any

from conformance.authoring.engine_frames import root_cause
from conformance.authoring.expect import MAX_VALUE_BYTES, approx_size
from conformance.clauses.errors import exception_text
from conformance.runtime.timeouts import calling
from simulator.host.record import Recorder
from simulator.host.sanitize import strip_persistence_fields
from simulator.provider import tokens


@dataclass
class ProviderCall:
    """One provider response the engine saw (A2), in tokens.

    Attributes:
        index: 0-based among the run's responses. step: the step label. agent: agent label.
        prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens: canonical usage.
        threshold_tokens, context_length: the engine's values right after update_from_response.
    """

    index: int
    step: str
    agent: str
    prompt_tokens: int
    completion_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    threshold_tokens: int
    context_length: int


@dataclass
class CompactionEvent:
    """One compress() call.

    Attributes:
        step: step label. agent: agent label. after_call: provider responses seen before it.
        tokens_in / tokens_out: cl100k tokens of the input and of the returned list (U9 fields
            stripped; ``tokens_out`` is None when compress raised or returned a non-list).
        thread: the thread it ran on. engine_id: ``id()`` of the engine.
        committed: whether the host committed the pass (filled in by the runner).
        timed_out: whether the host timeout discarded it (TS2).
        declined: the pass changed nothing: compress() returned its input object (the
            engine's no-op signal) or a new list that moved no rows and no tokens (filled in
            by the runner). A declined pass is legal (A4): it is never a missing compaction.
        no_progress: the new-list kind of decline (an equal copy): its ``tokens_out`` still
            counts where an expectation bounds the size after a compaction.
        returned: the type name of what compress() returned when it was not a list
            (``generator``, ``tuple``, ``NoneType``), else "".
    """

    step: str
    agent: str
    after_call: int
    tokens_in: int
    tokens_out: int | None
    thread: str
    engine_id: int
    committed: bool | None = None
    timed_out: bool = False
    declined: bool = False
    no_progress: bool = False
    returned: str = ""


@dataclass
class Finding:
    """An invariant broken at a step: ``step`` label and human ``detail``."""

    step: str
    detail: str


@dataclass
class EngineError:
    """An engine method raised: method, step, thread, ``"TypeError: ..."`` text, and the key of
    its root cause (:func:`conformance.authoring.engine_frames.root_cause`, so the verdict counts
    one
    exception from one engine frame once, in checks and scenarios alike)."""

    method: str
    step: str
    thread: str
    error: str
    root_cause: str = ""


def _digest(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False)


def _first_change(before: Any, after: Any, name: str) -> str:
    """Where ``after`` differs from ``before``, e.g. ``request_messages[2].content``."""
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return f"{name} (length {len(before)} -> {len(after)})"
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            if _digest(b) != _digest(a):
                return _first_change(b, a, f"{name}[{i}]")
    if isinstance(before, dict) and isinstance(after, dict):
        for k in sorted(set(before) | set(after), key=str):
            if _digest(before.get(k)) != _digest(after.get(k)):
                return _first_change(before.get(k), after.get(k), f"{name}.{k}")
    return f"{name} ({diff_at(before, after)})"


def diff_at(before: Any, after: Any, context: int = 24) -> str:
    """The first difference of two values, with ``context`` characters around it, e.g.
    ``at character 41: "...use postgres 15 for" -> "...use postgres 16 for"``.

    Strings are compared as they are, other values by their JSON text (H3 messages).
    """
    a = before if isinstance(before, str) else json.dumps(before, default=repr, ensure_ascii=False)
    b = after if isinstance(after, str) else json.dumps(after, default=repr, ensure_ascii=False)
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, i - context)

    def cut(text: str) -> str:
        piece = text[start : i + context]
        return json.dumps(
            ("..." if start else "") + piece + ("..." if len(text) > i + context else ""),
            ensure_ascii=False,
        )

    sizes = f", {len(a)} -> {len(b)} characters" if len(a) != len(b) else ""
    return f"at character {i}{sizes}: {cut(a)} -> {cut(b)}"


class OversizedOutput(Exception):
    """An engine call returned more than the kit's size bound (the host treats it as a raise)."""


class ScenarioRecorder(Recorder):
    """A :class:`Recorder` that keeps the observations of one scenario run (thread-safe).

    Attributes:
        step: label of the step running now (set by the runner).
        agents: ``id(engine) -> agent label`` (set by the runner as agents appear).
        provider_calls, compactions, select_mutations, engine_errors: observations, in order.
        asked_to_compact: should_compress() answered True at least once (the engine compacts).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.step = "(setup)"
        self.agents: dict[int, str] = {}
        self.provider_calls: list[ProviderCall] = []
        self.compactions: list[CompactionEvent] = []
        self.select_mutations: list[Finding] = []
        self.engine_errors: list[EngineError] = []
        self.asked_to_compact = False
        self._obs_lock = threading.Lock()
        self._in_flight: dict[int, list[str]] = {}

    def in_flight(self, thread_id: int | None = None) -> str | None:
        """The engine method running now on thread ``thread_id`` (any thread when None), or None.

        Used to name the method of a hanging engine when a scenario exceeds its time limit.
        """
        with self._obs_lock:
            stacks = (
                [self._in_flight.get(thread_id) or []]
                if thread_id is not None
                else list(self._in_flight.values())
            )
        return next((stack[-1] for stack in stacks if stack), None)

    def agent(self, engine: Any) -> str:
        """The label of the agent whose engine is ``engine`` (``"?"`` if unknown)."""
        return self.agents.get(id(engine), "?")

    def call(self, engine: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        """Record and forward one engine call (see the module doc)."""
        step = self.step
        before = None
        if method == "select_context":
            before = copy.deepcopy(
                (
                    list(args[:1]),
                    kwargs.get("conversation_messages"),
                    kwargs.get("incoming_message"),
                )
            )
        me = threading.get_ident()
        with self._obs_lock:
            self._in_flight.setdefault(me, []).append(method)
        try:
            with calling(method):
                result = super().call(engine, method, *args, **kwargs)
            if result is not None and approx_size(result, MAX_VALUE_BYTES) > MAX_VALUE_BYTES:
                result = None  # dropped before anything copies it: the host sees a raise
                raise OversizedOutput(
                    f"{method}() returned more than {MAX_VALUE_BYTES // (1024 * 1024)} MB "
                    "(measured before copying; output discarded)"
                )
        except BaseException as exc:
            with self._obs_lock:
                self.engine_errors.append(
                    EngineError(
                        method,
                        step,
                        threading.current_thread().name,
                        exception_text(exc, 300),
                        root_cause(exc, method),
                    )
                )
                if method == "compress":
                    self._compaction(engine, step, args, None, raised=True)
            raise
        finally:
            with self._obs_lock:
                self._in_flight[me].pop()
        if method == "update_from_response":
            usage = args[0] if args else kwargs.get("usage") or {}
            with self._obs_lock:
                self.provider_calls.append(
                    ProviderCall(
                        len(self.provider_calls),
                        step,
                        self.agent(engine),
                        int(usage.get("prompt_tokens") or 0),
                        int(usage.get("completion_tokens") or 0),
                        int(usage.get("cache_read_tokens") or 0),
                        int(usage.get("cache_write_tokens") or 0),
                        _int(getattr(engine, "threshold_tokens", 0)),
                        _int(getattr(engine, "context_length", 0)),
                    )
                )
        elif method == "compress":
            with self._obs_lock:
                self._compaction(engine, step, args, result)
        elif method == "should_compress" and result is True:
            self.asked_to_compact = True
        elif method == "select_context" and before is not None:
            after = (
                list(args[:1]),
                kwargs.get("conversation_messages"),
                kwargs.get("incoming_message"),
            )
            names = ("request_messages", "conversation_messages", "incoming_message")
            for name, b, a in zip(names, before, after, strict=True):
                b = b[0] if name == "request_messages" and b else b
                a = a[0] if name == "request_messages" and a else a
                if _digest(b) != _digest(a):
                    returned = (
                        "None"
                        if result is None
                        else f"a list of {len(result)}"
                        if isinstance(result, list)
                        else type(result).__name__
                    )
                    with self._obs_lock:
                        self.select_mutations.append(
                            Finding(
                                step,
                                f"select_context() changed {_first_change(b, a, name)} in place "
                                f"(it returned {returned})",
                            )
                        )
                    break
        return result

    def _compaction(
        self, engine: Any, step: str, args: Any, result: Any, *, raised: bool = False
    ) -> None:
        """Record one compress() pass; ``raised``: it raised (then it returned nothing, and its
        root cause is the exception's, recorded with the engine errors)."""
        messages = args[0] if args else []
        try:
            t_in = tokens.count_messages(strip_persistence_fields(list(messages)))
        except Exception:
            t_in = 0
        t_out = None
        if isinstance(result, list) and all(isinstance(m, dict) for m in result):
            try:
                t_out = tokens.count_messages(strip_persistence_fields(list(result)))
            except Exception:
                t_out = None
        self.compactions.append(
            CompactionEvent(
                step,
                self.agent(engine),
                len(self.provider_calls),
                t_in,
                t_out,
                threading.current_thread().name,
                id(engine),
                returned="" if raised or isinstance(result, list) else type(result).__name__,
            )
        )


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


__all__ = [
    "ScenarioRecorder",
    "ProviderCall",
    "CompactionEvent",
    "Finding",
    "EngineError",
    "diff_at",
]
