"""Admin routes of the loopback server (``/_sim/...``): every input validated.

==========================  ==============================================================
``POST /_sim/reset``        body empty or ``{}``: a fresh server (journal, caches, faults,
                            U9 record, model overrides, reply mode, clock back to 0,
                            token memos), releasing what requests left in memory
``GET|POST /_sim/clock``    ``{"advance": s}`` (finite, >= 0) or ``{"set": t}`` (finite,
                            >= now), virtual seconds, at most ``clock.MAX_SECONDS``
``GET|POST /_sim/faults``   ``[fault, ...]`` or ``{"faults": [...], "append": bool}``
                            (fault keys: :data:`simulator.provider.faults.JSON_KEYS`)
``POST /_sim/cache``        ``{"hold": bool}``
``POST /_sim/models``       ``{"name": id | "family": key, "<field>": value, ...}``
``POST /_sim/replies``      ``{"mode": "echo"}``, ``{"mode": "summariser", "max_chars": n}``,
                            ``{"mode": "scripted", "replies": [...]}``,
                            ``{"mode": "tool_script", "rounds": [[call, ...], ...],
                            "final": text}``
``GET /_sim/journal``       ``?since=N&full=0|1&limit=N``
``GET /_sim/u9``            U9 leaks and keys outside the message schema
``GET /_sim/health``        error and connection counters
==========================  ==============================================================

:func:`admin_answer` returns ``(status, json)``; a rejected input raises
:class:`AdminError` (400) whose message says what was wrong and what is accepted, and
the simulator is left unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from simulator.provider.faults import FaultSchedule
from simulator.provider.inputs import (
    InputError,
    check_bool,
    check_int,
    check_object,
    check_str,
    shown,
)
from simulator.provider.models import check_field, families
from simulator.provider.replies import (
    EchoReplies,
    ReplyPolicy,
    ScriptedReplies,
    SummariserReplies,
    ToolScriptReplies,
    normalise_tool_call,
)

#: The admin routes and the methods each accepts.
ROUTES = {
    "/_sim/reset": ("POST",),
    "/_sim/clock": ("GET", "POST"),
    "/_sim/faults": ("GET", "POST"),
    "/_sim/cache": ("POST",),
    "/_sim/models": ("POST",),
    "/_sim/replies": ("POST",),
    "/_sim/journal": ("GET",),
    "/_sim/u9": ("GET",),
    "/_sim/health": ("GET",),
}
_FINISH = ("stop", "length", "tool_calls", "content_filter")


class AdminError(Exception):
    """A rejected admin request.

    Attributes:
        status: HTTP status (400 bad input, 405 wrong method).
        message: what was wrong and what is accepted.
        param: the offending field (or None).
        accepted: what the field accepts (or None).
    """

    def __init__(
        self, status: int, message: str, param: str | None = None, accepted: str | None = None
    ):
        super().__init__(message)
        self.status, self.message, self.param, self.accepted = status, message, param, accepted


def admin_answer(server: Any, method: str, path: str, query: str, payload: Any) -> tuple[int, Any]:
    """Answer admin request ``method path?query`` with JSON ``payload`` (None: empty body).

    Args:
        server: the :class:`~simulator.provider.http.SimServer` (``provider``, counters).

    Returns:
        ``(200, json)``.

    Raises:
        AdminError: unknown method for the route (405) or a rejected input (400).
        KeyError: ``path`` is not an admin route.
    """
    methods = ROUTES[path]
    if method not in methods:
        raise AdminError(405, f"{method} {path} is not supported; use {' or '.join(methods)}.")
    try:
        return 200, _ROUTE_FUNCS[path](server, method, query, payload)
    except InputError as exc:
        raise AdminError(400, f"{path}: {exc}", exc.field, exc.accepted) from None
    except ValueError as exc:
        raise AdminError(400, f"{path}: {exc}") from None


def _reset(server: Any, method: str, query: str, payload: Any) -> Any:
    if payload is not None:
        check_object(payload, "body", ())
    server.reset_state()
    return {"ok": True, "clock": server.provider.clock.now()}


def _clock(server: Any, method: str, query: str, payload: Any) -> Any:
    clock = server.provider.clock
    if method == "POST":
        check_object(payload, "body", ("advance", "set"))
        if len(payload) != 1:
            raise InputError(
                "body",
                f"got keys {sorted(payload)}",
                'exactly one of {"advance": seconds} or {"set": seconds}',
            )
        if "advance" in payload:
            clock.advance(payload["advance"])
        else:
            clock.set(payload["set"])
    return {"now": clock.now()}


def _faults(server: Any, method: str, query: str, payload: Any) -> Any:
    provider = server.provider
    if method == "POST":
        append = False
        items = payload
        if not isinstance(payload, list):
            check_object(payload, "body", ("faults", "append"))
            if "faults" not in payload:
                raise InputError(
                    "faults",
                    "missing",
                    'a JSON array of faults like {"kind": "rate_limit", "at": [0]}',
                )
            items = payload["faults"]
            append = check_bool(payload.get("append", False), "append")
        if isinstance(items, list) and len(items) > 1000:
            raise InputError("faults", f"{len(items)} faults", "at most 1000 faults per request")
        schedule = FaultSchedule.from_json(items)  # validates every fault before any change
        with provider._lock:
            if not append:
                provider.faults.clear()
            for f in schedule._faults:
                provider.faults.add(f)
    return {"faults": provider.faults.to_json()}


def _cache(server: Any, method: str, query: str, payload: Any) -> Any:
    check_object(payload, "body", ("hold",))
    hold = check_bool(payload.get("hold"), "hold")
    provider = server.provider
    (provider.hold_cache_writes if hold else provider.release_cache_writes)()
    return {"hold": hold}


def _models(server: Any, method: str, query: str, payload: Any) -> Any:
    if not isinstance(payload, Mapping):
        raise InputError(
            "body", f"got {shown(payload)}", '{"name"|"family": ..., "<field>": value}'
        )
    if ("name" in payload) == ("family" in payload):
        raise InputError(
            "body", "needs exactly one of name or family", '{"name": model id} or {"family": key}'
        )
    fields = {k: v for k, v in payload.items() if k not in ("name", "family")}
    if not fields:
        raise InputError("body", "no field to change", "one or more ModelSpec fields")
    checked = {k: check_field(k, v) for k, v in fields.items()}
    if "name" in payload:
        server.provider.models.override(check_field("name", payload["name"]), **checked)
    else:
        family = payload["family"]
        if family not in families():
            raise InputError("family", f"got {shown(family)}", "one of " + ", ".join(families()))
        server.provider.models.override(family=family, **checked)
    return {"ok": True}


def _replies(server: Any, method: str, query: str, payload: Any) -> Any:
    policy = replies_from_json(payload)
    with server.provider._lock:
        server.provider.replies = policy
    return {"ok": True}


def _journal(server: Any, method: str, query: str, payload: Any) -> Any:
    args = _query(query, ("since", "full", "limit"))
    since = _query_int(args, "since", 0)
    limit = _query_int(args, "limit", 10**9)
    full = args.get("full", "0")
    if full not in ("0", "1"):
        raise InputError("full", f"got {shown(full)}", "0 or 1")
    with server.provider._lock:
        picked = [e for e in server.provider.journal if e.index >= since][:limit]
        return {"entries": [entry_json(e, full == "1") for e in picked]}


def _u9(server: Any, method: str, query: str, payload: Any) -> Any:
    p = server.provider
    with p._lock:
        return {
            "u9_leaks": list(p.u9_leaks),
            "count": p.u9_leak_count,
            "unknown_keys": list(p.unknown_keys),
            "unknown_key_count": p.unknown_key_count,
        }


def _health(server: Any, method: str, query: str, payload: Any) -> Any:
    return {
        "ok": True,
        "internal_errors": server.internal_errors,
        "last_internal_error": server.last_internal_error,
        "requests_served": server.requests_served,
        "connections": server.gate.snapshot(),
    }


_ROUTE_FUNCS = {
    "/_sim/reset": _reset,
    "/_sim/clock": _clock,
    "/_sim/faults": _faults,
    "/_sim/cache": _cache,
    "/_sim/models": _models,
    "/_sim/replies": _replies,
    "/_sim/journal": _journal,
    "/_sim/u9": _u9,
    "/_sim/health": _health,
}


def _query(query: str, allowed: tuple[str, ...]) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise InputError("query", f"got {shown(query)}", "name=value pairs joined by &") from None
    unknown = sorted(set(parsed) - set(allowed))
    if unknown:
        raise InputError("query", f"unknown parameter(s) {unknown}", ", ".join(allowed))
    return {k: v[-1] for k, v in parsed.items()}


def _query_int(args: dict[str, str], name: str, default: int) -> int:
    raw = args.get(name)
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 15:
        raise InputError(name, f"got {shown(raw)}", "a whole number from 0 to 10**15")
    return int(raw)


def replies_from_json(payload: Any) -> ReplyPolicy:
    """The reply policy described by ``payload`` (the ``POST /_sim/replies`` body).

    Raises:
        InputError: unknown mode, unknown key, or a bad value (message says which).
    """
    modes = ("echo", "summariser", "scripted", "tool_script")
    keys = {
        "echo": ("mode",),
        "summariser": ("mode", "max_chars"),
        "scripted": ("mode", "replies"),
        "tool_script": ("mode", "rounds", "final"),
    }
    if not isinstance(payload, Mapping) or payload.get("mode") not in modes:
        got = payload.get("mode") if isinstance(payload, Mapping) else payload
        raise InputError("mode", f"got {shown(got)}", "one of " + ", ".join(modes))
    mode = payload["mode"]
    check_object(payload, "body", keys[mode])
    if mode == "echo":
        return EchoReplies()
    if mode == "summariser":
        return SummariserReplies(check_int(payload.get("max_chars", 4000), "max_chars", 1, 10**6))
    if mode == "scripted":
        items = payload.get("replies", [])
        if not isinstance(items, list) or len(items) > 10_000:
            raise InputError("replies", f"got {shown(items)}", "a list of at most 10000 replies")
        return ScriptedReplies([_reply(r, f"replies[{n}]") for n, r in enumerate(items)])
    rounds = payload.get("rounds", [])
    if not isinstance(rounds, list) or len(rounds) > 1000:
        raise InputError("rounds", f"got {shown(rounds)}", "a list of at most 1000 rounds")
    for n, calls in enumerate(rounds):
        if not isinstance(calls, list) or not 1 <= len(calls) <= 128:
            raise InputError(f"rounds[{n}]", f"got {shown(calls)}", "a list of 1 to 128 tool calls")
        for j, call in enumerate(calls):
            _tool_call(call, f"rounds[{n}][{j}]")
    final = check_str(payload.get("final", "Done."), "final", max_len=100_000, allow_empty=True)
    return ToolScriptReplies(rounds, final)


def _reply(item: Any, field: str) -> Any:
    if isinstance(item, str):
        return check_str(item, field, max_len=1_000_000, allow_empty=True)
    check_object(item, field, ("content", "tool_calls", "finish_reason"))
    if item.get("content") is not None:
        check_str(item["content"], f"{field}.content", max_len=1_000_000, allow_empty=True)
    calls = item.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list) or len(calls) > 128:
            raise InputError(f"{field}.tool_calls", f"got {shown(calls)}", "a list of tool calls")
        for j, call in enumerate(calls):
            _tool_call(call, f"{field}.tool_calls[{j}]")
    finish = item.get("finish_reason")
    if finish is not None and finish not in _FINISH:
        raise InputError(
            f"{field}.finish_reason", f"got {shown(finish)}", "one of " + ", ".join(_FINISH)
        )
    return dict(item)


def _tool_call(call: Any, field: str) -> None:
    accepted = '{"name": str, "arguments": object | str} or an OpenAI tool call object'
    if not isinstance(call, Mapping):
        raise InputError(field, f"got {shown(call)}", accepted)
    try:
        out = normalise_tool_call(call, "check")
    except ValueError:
        raise InputError(field, "no function name", accepted) from None
    check_str(out["function"]["name"], f"{field}.name", max_len=256)
    check_str(
        out["function"]["arguments"], f"{field}.arguments", max_len=1_000_000, allow_empty=True
    )


def _usage_json(u: Any) -> dict[str, int] | None:
    if u is None:
        return None
    return {
        "total": u.total,
        "input": u.input,
        "read": u.read,
        "write_5m": u.write_5m,
        "write_1h": u.write_1h,
    }


def entry_json(e: Any, full: bool) -> dict[str, Any]:
    """One :class:`~simulator.provider.core.JournalEntry` as JSON (bodies with ``full``)."""
    out = {
        "index": e.index,
        "route": e.route,
        "status": e.status,
        "stream": e.stream,
        "fault": e.fault,
        "usage": _usage_json(e.usage),
        "cost": e.cost,
        "clock": e.clock,
        "size": e.size,
        "unknown_keys": list(e.unknown_keys),
        "dropped": e.dropped,
    }
    if full:
        out["request"] = e.request
        out["response"] = e.response
    return out


__all__ = ["ROUTES", "AdminError", "admin_answer", "entry_json", "replies_from_json"]
