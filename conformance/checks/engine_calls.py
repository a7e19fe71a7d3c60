"""The one calling module: every engine call a check makes goes through here.

Calls use the host's own call shapes (:mod:`simulator.host.calls`), so a check passes what
the host passes.

Engine exceptions become :class:`~conformance.expect.ContractViolation` of the clause
being checked (an engine that raises where the contract expects a value breaks it).
Hostile behaviour stops the check at once with :class:`~conformance.expect.HostileEngine`
naming the method and the clause: ``SystemExit`` (or any other BaseException but
KeyboardInterrupt) raised by the engine, and return values over
:data:`~conformance.expect.MAX_VALUE_BYTES` (measured before anything is copied or
printed). The method being called is recorded per thread in :data:`CURRENT_CALL`, so a
check that times out can say which method hung.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from conformance.errors import ContractViolation, HostileEngine
from conformance.expect import MAX_VALUE_BYTES, approx_size, short
from conformance.timeouts import CURRENT_CALL
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

    Raises:
        ContractViolation: the method raised an Exception.
        HostileEngine: the method raised SystemExit (or another BaseException) or
            returned more than MAX_VALUE_BYTES.
        KeyboardInterrupt: passed through (Ctrl-C stops the run).
    """
    __tracebackhide__ = True
    me = threading.get_ident()
    CURRENT_CALL[me] = (clause, level, method)
    try:
        out = getattr(engine, method)(*args, **kwargs)
    except ContractViolation:
        raise
    except KeyboardInterrupt:
        raise
    except HostileEngine:
        raise
    except Exception as exc:
        raised = f"{type(exc).__name__}: {short(str(exc), 200)}"
        violation = ContractViolation(
            clause, level, f"{method}() raised: expected a normal return, got {raised}.", example
        )
        violation.raised = raised  # the exception text, for checks that reword the finding (H1)
        violation.cause = exc  # the engine's exception (fail-open callers, O10's TypeError)
        raise violation from None
    except (
        BaseException
    ) as exc:  # SystemExit, GeneratorExit from an engine: never let it end the run
        raise HostileEngine(
            clause,
            level,
            method,
            f"raised {type(exc).__name__}({', '.join(repr(a)[:40] for a in exc.args)}); "
            "an engine must not end the host process. The run continued.",
        ) from None
    finally:
        CURRENT_CALL.pop(me, None)
    if out is not None and not isinstance(out, (bool, int, float)):
        size = approx_size(out, MAX_VALUE_BYTES)
        if size > MAX_VALUE_BYTES:
            raise HostileEngine(
                clause,
                level,
                method,
                f"returned a {type(out).__name__} of more than {MAX_VALUE_BYTES // (1024 * 1024)} "
                "MB (measured before copying or printing it); output was discarded",
            )
    return out


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
    snapshot = copy.deepcopy(history)
    tokens = count_messages(history) if current_tokens is None else current_tokens
    kwargs = calls.compress_kwargs(
        engine, current_tokens=tokens, focus_topic=focus_topic, force=force
    )
    return invoke(
        clause, level, engine, "compress", snapshot, example={"history": history}, **kwargs
    )


def compress_keeping_snapshot(
    clause: str,
    level: str,
    engine: Any,
    history: list[dict[str, Any]],
    *,
    focus_topic: str | None = None,
    force: bool = False,
) -> tuple[list[dict[str, Any]], Any]:
    """``(snapshot, output)``: :func:`compress_like_host`, also returning the very list object
    compress() was handed, so a check can see whether the engine returned it (the host's
    "same object = nothing to do" signal, A4) and what became of it."""
    snapshot = copy.deepcopy(history)
    kwargs = calls.compress_kwargs(
        engine, current_tokens=count_messages(history), focus_topic=focus_topic, force=force
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
