"""The one calling module: every engine call a check makes goes through here.

Calls use the host's own call shapes (:mod:`simulator.host.calls`), so a check passes what
the host passes.

Engine exceptions become :class:`~conformance.authoring.expect.ContractViolation` of the clause
being checked (an engine that raises where the contract expects a value breaks it).
Hostile behaviour stops the check at once with :class:`~conformance.authoring.expect.HostileEngine`
naming the method and the clause: ``SystemExit`` (or any other BaseException but
KeyboardInterrupt) raised by the engine, and return values over
:data:`~conformance.authoring.expect.MAX_VALUE_BYTES` (measured before anything is copied or
printed). The method being called is recorded per thread in :data:`CURRENT_CALL`, so a
check that times out can say which method hung.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from conformance.authoring.engine_frames import root_cause, where
from conformance.authoring.expect import MAX_VALUE_BYTES, approx_size, short
from conformance.clauses.errors import (
    ContractViolation,
    EngineUnavailable,
    HostileEngine,
    with_article,
)
from conformance.runtime.supervisor import supervised
from conformance.runtime.timeouts import calling
from simulator.host import calls, hooks
from simulator.provider.tokens import count_messages


def invoke(
    clause: str,
    level: str,
    engine: Any,
    method: str,
    *args: Any,
    example: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Call ``engine.<method>``; an exception is a violation of ``clause``.

    The call is the one in flight on this thread while it runs
    (:func:`~conformance.runtime.timeouts.calling`), so a hang or a death names it. An exception's
    message ends with the engine's own frames (``raised at mypkg/engine.py:42 in compress``,
    :mod:`conformance.authoring.engine_frames`), and the finding carries its root cause (the same
    exception from the same engine frame is one root cause across cases).

    Raises:
        ContractViolation: the method raised an Exception.
        HostileEngine: the method raised SystemExit (or another BaseException) or
            returned more than MAX_VALUE_BYTES.
        KeyboardInterrupt: passed through outside a supervised case (Ctrl-C stops the run);
            inside one the child ignores SIGINT, so a KeyboardInterrupt there is the engine's
            own and is reported like SystemExit.
    """
    __tracebackhide__ = True
    try:
        with calling(method, clause, level):
            out = getattr(engine, method)(*args, **kwargs)
    except (ContractViolation, HostileEngine):
        raise
    except KeyboardInterrupt as exc:
        if not supervised():
            raise
        raise _ended_the_process(clause, level, method, exc) from None
    except Exception as exc:
        raised = f"{type(exc).__name__}: {short(str(exc), 200)}"
        violation = ContractViolation(
            clause,
            level,
            f"{method}() raised: expected a normal return, got {raised}{where(exc)}.",
            example,
        )
        violation.raised = raised  # the exception text, for checks that reword the finding (H1)
        violation.cause = exc  # the engine's exception (fail-open callers, O10's TypeError)
        violation.root_cause = root_cause(exc, method)
        raise violation from None
    except BaseException as exc:  # SystemExit, GeneratorExit from an engine: never end the run
        raise _ended_the_process(clause, level, method, exc) from None
    if method == "compress" and not isinstance(out, list):
        raise _not_a_list(out, args)
    if out is not None and not isinstance(out, (bool, int, float)):
        size = approx_size(out, MAX_VALUE_BYTES)
        if size > MAX_VALUE_BYTES:
            raise HostileEngine(
                clause,
                level,
                method,
                f"returned {with_article(type(out).__name__)} of more than "
                f"{MAX_VALUE_BYTES // (1024 * 1024)} MB (measured before copying or printing "
                "it); output was discarded",
            )
    return out


def _not_a_list(out: Any, args: tuple) -> ContractViolation:
    """A4's finding for a compress() that returned no list (a generator, a tuple, None), made
    where the call returns, whichever check made it: the host keeps the original messages, so
    nothing a check looks at afterwards (the count, determinism, the next pass) says anything
    but this. One root cause (``compress|returned|<type>``), counted once, under A4."""
    history = args[0] if args and isinstance(args[0], list) else None
    on = f" on a history of {len(history)} messages" if history is not None else ""
    kind = type(out).__name__
    got = (
        "a generator (a generator function: compress() must build and return the list, "
        "e.g. return list(...))"
        if inspect.isgenerator(out)
        else short(out, 120)
    )
    if " at 0x" in got:  # an object's repr: never a memory address (same input, same bytes)
        got = with_article(kind)
    violation = ContractViolation(
        "A4",
        "MUST",
        f"compress(){on}: expected a list, got {got}; the host keeps the original messages.",
    )
    violation.root_cause = f"compress|returned|{kind}"
    return violation


def _ended_the_process(clause: str, level: str, method: str, exc: BaseException) -> Any:
    """The finding of an engine that raised SystemExit, KeyboardInterrupt, GeneratorExit."""
    args = ", ".join(repr(a)[:40] for a in exc.args)
    finding = HostileEngine(
        clause,
        level,
        method,
        f"raised {type(exc).__name__}({args}){where(exc)}; an engine must not end the host "
        "process. The run continued.",
    )
    finding.root_cause = root_cause(exc, method)
    return finding


def fail_open(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` (:func:`invoke` or one of the ``*_like_host`` helpers) for a
    hook the host calls fail-open (H1): its return value, or :data:`RAISED` when the engine
    raised an Exception (the host then goes on unchanged; H1's check reports the raise).

    Raises:
        HostileEngine: as :func:`invoke` (SystemExit, oversized output).
        ContractViolation: a finding that is not the engine raising.
    """
    try:
        return call(*args, **kwargs)
    except ContractViolation as exc:
        if getattr(exc, "cause", None) is None:
            raise
        return RAISED


#: What :func:`fail_open` returns for a hook that raised.
RAISED = object()


def compress_like_host(
    clause: str,
    level: str,
    engine: Any,
    history: list[dict[str, Any]],
    *,
    focus_topic: str | None = None,
    force: bool = False,
    current_tokens: int | None = None,
) -> Any:
    """compress() on a deep snapshot with the kwargs the host would pass (A4, TS2)."""
    return compress_keeping_snapshot(
        clause,
        level,
        engine,
        history,
        focus_topic=focus_topic,
        force=force,
        current_tokens=current_tokens,
    )[1]


def compress_keeping_snapshot(
    clause: str,
    level: str,
    engine: Any,
    history: list[dict[str, Any]],
    *,
    focus_topic: str | None = None,
    force: bool = False,
    current_tokens: int | None = None,
) -> tuple[list[dict[str, Any]], Any]:
    """``(snapshot, output)``: :func:`compress_like_host`, also returning the very list object
    compress() was handed, so a check can see whether the engine returned it (the host's
    "same object = nothing to do" signal, A4) and what became of it."""
    snapshot = copy.deepcopy(history)
    tokens = count_messages(history) if current_tokens is None else current_tokens
    kwargs = calls.compress_kwargs(
        engine, current_tokens=tokens, focus_topic=focus_topic, force=force
    )
    out = invoke(
        clause, level, engine, "compress", snapshot, example={"history": history}, **kwargs
    )
    return snapshot, out


def select_like_host(
    clause: str,
    level: str,
    engine: Any,
    history: list[dict[str, Any]],
    *,
    request: list[dict[str, Any]] | None = None,
    conversation: list[dict[str, Any]] | None = None,
    incoming: Any = "last user",
) -> Any:
    """select_context() with the arguments the host passes (H3): by default the request and
    the conversation are copies of ``history`` and the incoming message its last user
    message; pass ``request``/``conversation``/``incoming`` (the very objects) to watch them."""
    if incoming == "last user":
        incoming = next(
            (copy.deepcopy(m) for m in reversed(history) if m.get("role") == "user"), None
        )
    return invoke(
        clause,
        level,
        engine,
        "select_context",
        copy.deepcopy(history) if request is None else request,
        example={"history": history},
        **calls.select_context_kwargs(
            conversation_messages=copy.deepcopy(history) if conversation is None else conversation,
            incoming_message=incoming,
            budget_tokens=int(getattr(engine, "context_length", 0) or 0),
        ),
    )


def turn_complete_like_host(
    clause: str, level: str, engine: Any, messages: list[dict[str, Any]], usage: Any, **meta: Any
) -> Any:
    """on_turn_complete(messages, usage, **meta) with the host's keyword arguments (H5)."""
    return invoke(
        clause,
        level,
        engine,
        "on_turn_complete",
        messages,
        usage,
        **calls.on_turn_complete_kwargs(**meta),
    )


def update_model_like_host(
    clause: str, level: str, engine: Any, model: str, context_length: int, **kwargs: Any
) -> Any:
    """update_model() with the host's six keyword arguments (O4; tokens)."""
    return invoke(
        clause,
        level,
        engine,
        "update_model",
        **calls.update_model_kwargs(model, context_length, **kwargs),
    )


def overrides_select_context(engine: Any) -> bool:
    """H2: whether the host would call ``select_context`` at all."""
    return hooks.overrides(engine, "select_context")


def overrides(engine: Any, name: str) -> bool:
    """H2: whether ``engine.<name>`` is the engine's own (not the ABC default)."""
    return hooks.overrides(engine, name)


def threshold_of(engine: Any, fallback: int) -> int:
    """``engine.threshold_tokens`` as an int, or ``fallback`` when unset/0."""
    value = getattr(engine, "threshold_tokens", 0)
    return (
        int(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0
        else fallback
    )


def head_size(ctx: Any, engine: Any) -> int:
    """Short messages to open a compactable history with, after the system prompt: for engines
    that expose protect_first_n, ``protect_first_n`` (at least 1), else 2 (a first exchange).

    Two readings of protect_first_n exist: the seeds count the system prompt in it ("[0..2] <-
    protect_first_n"), Hermes keeps the system prompt plus protect_first_n rows.
    ``protect_first_n`` short rows keep the bulk after the protected head under either reading.
    """
    n = getattr(engine, "protect_first_n", None)
    if (
        ctx.exposes(engine, "protect_first_n")
        and isinstance(n, int)
        and not isinstance(n, bool)
        and n >= 0
    ):
        return max(1, n)
    return 2


def compactable_shape(ctx: Any, engine: Any) -> dict[str, int]:
    """``compactable_histories`` keyword arguments sized from the engine's protect settings:
    ``{"head": head_size, "small_tail": tail_size}`` (counterexamples as short as the engine
    allows)."""
    return {"head": head_size(ctx, engine), "small_tail": tail_size(ctx, engine)}


def tail_size(ctx: Any, engine: Any) -> int:
    """Short messages to end a compactable history with: protect_last_n + 1 (odd) for engines
    that expose protect_last_n, else 3 (so the protected tail stays small and shrinks well)."""
    n = getattr(engine, "protect_last_n", None)
    if ctx.exposes(engine, "protect_last_n") and isinstance(n, int) and n >= 0:
        size = n + 1
        return size if size % 2 else size + 1
    return 3


def usage(prompt: int, completion: int = 50) -> dict[str, int]:
    """A canonical usage dict (A2): the three required keys."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def compacts(ctx: Any, clause: str, level: str) -> str:
    """Why the engine counts as one that compacts, or "" when it never does (checks of
    compaction behaviour then skip: no clause asks an engine to compact).

    It compacts when it declares the ``compressor`` capability, when a fresh engine's
    ``should_compress(2 x threshold_tokens)`` answers True ("seen asking to"), or when a fresh
    engine's compress() of a plain history over its threshold returns fewer rows. The probes
    run on engines of their own (``ctx.new_engine()``); a probe that raises counts as "it
    compacts" (the check then runs and reports the raise under ``clause`` at ``level``).
    """
    from conformance.authoring.strategies import probe_history

    if "compressor" in (getattr(ctx, "capabilities", None) or ()):
        return "it declares the 'compressor' capability"
    try:
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        if invoke(clause, level, engine, "should_compress", 2 * threshold) is True:
            return "it asks to compact at twice its threshold_tokens"
        history = probe_history(threshold)
        out = compress_like_host(clause, level, ctx.new_engine(), history)
    except Exception:
        return "a probe of its compaction raised"
    if isinstance(out, list) and len(out) < len(history):
        return "its compress() drops rows from a history over its threshold_tokens"
    return ""


#: Sizes of the plain file-reading histories the compaction probe tries, in turns (4 messages
#: each, about 500 tokens): up to about 64 000 tokens and 500 messages.
PROBE_TURNS = (4, 8, 16, 32, 64, 128)
_POINTS: dict[int, tuple[Any, dict[int, Any]]] = {}


def compaction_point(ctx: Any, clause: str, level: str) -> list[dict[str, Any]] | None:
    """Where the engine compacts by its own thresholds: the smallest plain history
    (:func:`~conformance.authoring.probes.point_history` of ``n`` file-reading turns, ``n`` doubling
    through :data:`PROBE_TURNS`, skipping sizes under the engine's ``threshold_tokens``) from
    which a fresh engine's compress() drops rows. An engine whose cut depends on its own
    settings (a leaf size, a fresh tail of so many messages) may never compact on histories
    sized from ``threshold_tokens``; checks of what a compaction does (V2) try this size first.
    None when no size drops a row (or compress() raised: the drawn examples report that).
    Probed once per engine factory and window in a process (about six compress() calls).
    """
    from conformance.authoring.probes import point_history

    factory = ctx.engine_factory
    held = _POINTS.get(id(factory))
    if held is None or held[0] is not factory:
        held = _POINTS[id(factory)] = (factory, {})  # the factory is held: its id stays its own
    cache = held[1]
    if ctx.window in cache:
        return copy.deepcopy(cache[ctx.window])
    point = None
    try:
        threshold = threshold_of(ctx.new_engine(), ctx.window // 2)
        for turns in PROBE_TURNS:
            history = point_history(turns)
            if count_messages(history) <= threshold:
                continue  # the host never asks for a compaction under the threshold
            out = compress_like_host(clause, level, ctx.new_engine(), history)
            if isinstance(out, list) and len(out) < len(history):
                point = history
                break
    except (ContractViolation, EngineUnavailable):
        point = None
    cache[ctx.window] = point
    return copy.deepcopy(point)


def skip_unless_compacts(ctx: Any, clause: str, level: str) -> str:
    """:func:`compacts`, raising :class:`~conformance.clauses.errors.CheckSkipped` with the reason
    when
    the engine never compacts.

    Raises:
        CheckSkipped: the engine declares no ``compressor``, never asks to compact and its
            compress() removes nothing.
    """
    from conformance.clauses.errors import CheckSkipped

    why = compacts(ctx, clause, level)
    if not why:
        raise CheckSkipped(
            "the engine never compacts (no 'compressor' capability, should_compress() is False "
            "at twice its threshold and compress() removes nothing): no clause asks an engine "
            "to compact"
        )
    return why
