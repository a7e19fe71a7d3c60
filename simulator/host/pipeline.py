"""The request pipeline: the stages of one provider call, in order (H4).

The order is data, visible here in one place (:data:`STAGE_FUNCTIONS` and the profile's
``stages``). Documented profile (the seeds):

1. ``assemble``: system prompt + persisted history + incoming message, as per-call
   clones (persisted dicts never reach later stages), plus the text ``pre_llm_call``
   plugin hooks append to the user message (H7: inject-only);
2. ``select_context``: request-only replacement (H1-H3, :mod:`simulator.host.hooks`);
3. ``sanitize``: tool-pair repair, alternation repair, U9 stripping
   (:mod:`simulator.host.sanitize`);
4. ``cache_control``: system_and_3 markers, P2 placement, TTL (:mod:`simulator.host.cache_control`);

then the caller sends the result to the provider (stage 5). The ``hermes-0.19`` profile
runs ``assemble, cache_control, sanitize`` (no select_context; markers before sanitizers).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.host import hooks
from simulator.host.cache_control import TTL_5M
from simulator.host.cache_control import apply_cache_control as _cache_control
from simulator.host.profiles import HostProfile, get_profile
from simulator.host.sanitize import sanitize as _sanitize
from simulator.host.sanitize import strip_persistence_fields  # noqa: F401  (re-exported, U9)

Message = dict[str, Any]
_log = logging.getLogger("simulator.host")


def assemble(
    system_prompt: str | None,
    history: list[Message],
    incoming: Message | None = None,
) -> list[Message]:
    """Stage 1: the assembled request as per-call deep clones.

    ``history`` is the persisted transcript; if its first message is already the system
    prompt it is used as is, otherwise ``system_prompt`` (when given) is prepended.
    ``incoming`` is appended when it is not already in ``history`` (by identity).
    """
    out = [copy.deepcopy(m) for m in history]
    if system_prompt and not (out and out[0].get("role") == "system"):
        out.insert(0, {"role": "system", "content": system_prompt})
    if incoming is not None and not any(m is incoming for m in history):
        out.append(copy.deepcopy(incoming))
    return out


def inject_pre_llm_context(
    request: list[Message], hooks_: list[Callable[..., Any]]
) -> list[Message]:
    """H7: run ``pre_llm_call`` plugin hooks; each may only *append* text to the user message.

    Every hook gets copies (``messages=``, ``incoming=``) and returns a string or None;
    the strings are appended (blank-line separated) to the request's last user message,
    for this provider call only. A hook cannot add, drop or reorder messages; a non-str
    return or an exception is logged and ignored.
    """
    if not hooks_:
        return request
    idx = next(
        (i for i in range(len(request) - 1, -1, -1) if request[i].get("role") == "user"), None
    )
    if idx is None:
        return request
    extra = []
    for hook in hooks_:
        try:
            text = hook(messages=copy.deepcopy(request), incoming=copy.deepcopy(request[idx]))
        except Exception as exc:
            _log.warning("pre_llm_call hook failed; ignoring it: %s", exc)
            continue
        if text is None:
            continue
        if not isinstance(text, str):
            _log.warning(
                "pre_llm_call hook returned %s, not a string; ignoring it (H7: inject-only)",
                type(text).__name__,
            )
            continue
        if text.strip():
            extra.append(text)
    if not extra:
        return request
    out = list(request)
    user = dict(out[idx])
    content = user.get("content")
    if isinstance(content, str):
        user["content"] = "\n\n".join([content] + extra)
    elif isinstance(content, list):
        user["content"] = list(content) + [{"type": "text", "text": t} for t in extra]
    out[idx] = user
    return out


def sanitize(messages: list[Message], *, strip_underscore: bool = True) -> list[Message]:
    """Stage 3: tool-pair repair, alternation repair, U9 stripping (copy-on-write)."""
    return _sanitize(messages, strip_underscore=strip_underscore)


def apply_cache_control(
    messages: list[Message],
    *,
    enabled: bool = False,
    ttl: str = TTL_5M,
    native_anthropic: bool = False,
) -> list[Message]:
    """Stage 4: system_and_3 markers when ``enabled`` (P4 decides), else ``messages`` unchanged."""
    if not enabled:
        return messages
    return _cache_control(messages, ttl=ttl, native_anthropic=native_anthropic)


@dataclass
class RequestContext:
    """Everything the stages of one provider call need.

    Attributes:
        engine: the agent's context engine (or None: a host with no engine).
        system_prompt: the system prompt (str) or None.
        history: the persisted transcript (never mutated by the pipeline).
        incoming: this turn's user message (a dict in ``history`` or to append), or None.
        budget_tokens: ``select_context``'s budget: the context length in tokens (H3).
        cache_control: whether stage 4 places markers (P4).
        ttl: "5m" or "1h" (P1).
        native_anthropic: native Anthropic layout for P2 placement.
        recorder: a :class:`~simulator.host.record.Recorder` for engine calls, or None.
        session_id: for log lines.
        strip_underscore: wire rule: strip every ``_*`` key too (U9).
        pre_llm_call: plugin hooks that may append text to the user message (H7).
        stages_run: filled with the stage names actually run, in order.
        conversation: select_context's ``conversation_messages`` (None: ``history``; real
            Hermes hosts give the history without the system row).
        request_strip: keys removed from every request copy at assembly, before
            select_context sees it (hermes-0.22: the persistence-only fields, U9).
        request_drop: host-only keys removed from request copies at assembly
            (``finish_reason``; ``reasoning`` when None), as Hermes builds its wire copies.
        restrip_selection: strip ``request_strip`` from the returned selection too (H3).
        drop_tool_name: tool rows lose their ``name`` at the sanitize stage (0.22 keeps it on
            its rows and on ``request_messages``, never on the wire).
    """

    engine: Any
    system_prompt: str | None
    history: list[Message]
    incoming: Message | None
    budget_tokens: int
    cache_control: bool = False
    ttl: str = TTL_5M
    native_anthropic: bool = False
    recorder: Any = None
    session_id: str = ""
    strip_underscore: bool = True
    pre_llm_call: list[Callable[..., Any]] = field(default_factory=list)
    stages_run: list[str] = field(default_factory=list)
    conversation: list[Message] | None = None
    request_strip: frozenset[str] = frozenset()
    request_drop: tuple[str, ...] = ()
    restrip_selection: bool = False
    drop_tool_name: bool = False


def _without(rows: list[Message], keys: frozenset[str], drop: tuple[str, ...]) -> list[Message]:
    """Copies of ``rows`` without ``keys`` and without the ``drop`` keys (``reasoning`` only
    when it is None); rows with none of them are kept as they are."""
    out = []
    for m in rows:
        if isinstance(m, dict) and any(
            k in keys or (k in drop and (k != "reasoning" or m[k] is None)) for k in m
        ):
            m = {
                k: v
                for k, v in m.items()
                if k not in keys and not (k in drop and (k != "reasoning" or v is None))
            }
        out.append(m)
    return out


def _stage_assemble(ctx: RequestContext, _: list[Message] | None) -> list[Message]:
    request = assemble(ctx.system_prompt, ctx.history, ctx.incoming)
    if ctx.request_strip or ctx.request_drop:
        request = _without(request, ctx.request_strip, ctx.request_drop)

    return inject_pre_llm_context(request, ctx.pre_llm_call)


def _stage_select_context(ctx: RequestContext, request: list[Message]) -> list[Message]:
    selected = hooks.apply_select_context(
        ctx.engine,
        request,
        conversation_messages=ctx.history if ctx.conversation is None else ctx.conversation,
        incoming_message=ctx.incoming,
        budget_tokens=ctx.budget_tokens,
        recorder=ctx.recorder,
        session_id=ctx.session_id,
    )
    if ctx.restrip_selection and selected is not request:
        selected = _without(selected, ctx.request_strip, ())
    return selected


def _stage_sanitize(ctx: RequestContext, request: list[Message]) -> list[Message]:
    out = sanitize(request, strip_underscore=ctx.strip_underscore)
    if ctx.drop_tool_name:
        out = [
            {k: v for k, v in m.items() if k != "name"}
            if isinstance(m, dict) and m.get("role") == "tool" and "name" in m
            else m
            for m in out
        ]
    return out


def _stage_cache_control(ctx: RequestContext, request: list[Message]) -> list[Message]:
    return apply_cache_control(
        request, enabled=ctx.cache_control, ttl=ctx.ttl, native_anthropic=ctx.native_anthropic
    )


#: Stage name -> function(ctx, request) -> request. Profiles list the names in order.
STAGE_FUNCTIONS: dict[str, Callable[[RequestContext, Any], list[Message]]] = {
    "assemble": _stage_assemble,
    "select_context": _stage_select_context,
    "sanitize": _stage_sanitize,
    "cache_control": _stage_cache_control,
}


def run_stages(ctx: RequestContext, profile: HostProfile | None = None) -> list[Message]:
    """Run the profile's stages in order (H4); returns the ``messages`` for the provider."""
    request: Any = None
    for name in get_profile(profile).stages:
        request = STAGE_FUNCTIONS[name](ctx, request)
        ctx.stages_run.append(name)
    return request


def build_request(
    engine: Any,
    *,
    system_prompt: str | None,
    history: list[Message],
    incoming: Message | None,
    budget_tokens: int,
    cache_control: bool = False,
    recorder: Any = None,
    profile: Any = None,
    ttl: str = TTL_5M,
    native_anthropic: bool = False,
    session_id: str = "",
) -> list[Message]:
    """Stages 1-4 in the profile's order; returns the ``messages`` to send (H4)."""
    prof = get_profile(profile)
    ctx = RequestContext(
        engine,
        system_prompt,
        history,
        incoming,
        budget_tokens,
        cache_control,
        ttl,
        native_anthropic,
        recorder,
        session_id,
        prof.strip_underscore_keys,
    )
    return run_stages(ctx, prof)
