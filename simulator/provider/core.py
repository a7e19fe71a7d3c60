"""The in-process provider: OpenAI- and Anthropic-shaped, deterministic, with prompt caching.

``Provider.chat_completions(request)`` answers an OpenAI chat-completions request and
``Provider.messages(request)`` an Anthropic Messages request; both return the
provider's JSON body as a dict or raise :class:`ProviderError` with the provider's own
error body. Usage is counted with the real tokenizer (cl100k), cached per content block;
caching follows the model table (:mod:`simulator.provider.models`): Anthropic rules
(P1–P3, also for ``cache_control`` parts on the OpenAI route, as OpenRouter does) or
OpenAI automatic caching. TTLs run on a :class:`VirtualClock`; faults come from a
deterministic :class:`FaultSchedule`. Every request is journaled, and persistence-only
fields reaching the wire, at any depth of a message, are recorded in ``u9_leaks`` (or
raise, with ``strict_u9``); keys outside the message schema are journaled
(``JournalEntry.unknown_keys``) and, with ``strict_u9``, rejected with a 400.

Same seed and same requests in the same order give the same bytes in any process. With
the default ``reply_mode="request"`` the reply *content* (echo text) is a function of the
seed and the request alone, whatever came before it; ``reply_mode="sequence"`` mixes in
the request index (:mod:`simulator.provider.replies`). Scripted replies, tool-call ids,
response ids and faults by request index do not depend on the mode.

A request is validated, rendered and counted outside the provider's lock, so one large
request does not hold up others; the lock covers the request index, faults, caches, the
reply and the journal.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from simulator.provider import responses as R
from simulator.provider import tokens
from simulator.provider.anthropic_cache import AnthropicCache, CacheUsage
from simulator.provider.clock import MAX_SECONDS, VirtualClock
from simulator.provider.convert import anthropic_view
from simulator.provider.errors import (
    ProviderError,
    U9LeakError,
    ValidationFailure,
    anthropic_error,
    openai_error,
)
from simulator.provider.exchange import CHAT, MESSAGES, Outcome
from simulator.provider.exchange import salt as _salt
from simulator.provider.faults import Fault, FaultContext, FaultSchedule
from simulator.provider.models import DEFAULT_MODEL, ModelSpec, ModelTable
from simulator.provider.openai_cache import OpenAICache
from simulator.provider.render import Renderer
from simulator.provider.replies import (
    REPLY_KEY_MODES,
    EchoReplies,
    Reply,
    ReplyPolicy,
    is_summary_request,
    reply_context,
)

__all__ = ["Provider", "ProviderError", "JournalEntry", "Outcome", "DEFAULT_MODEL", "U9LeakError"]

#: At most this many lines are kept in ``u9_leaks`` / ``unknown_keys`` (counts go on).
MAX_RECORDED = 10_000


class JournalEntry:
    """One request the provider received and what it answered.

    Attributes:
        index: 0-based request index (all routes).
        route: ``"chat.completions"`` or ``"messages"``.
        request: the request body as received (dict; materialised lazily for
            :class:`~simulator.provider.conversation.Conversation` requests).
        status: HTTP status answered (200, 400, 429...).
        response: the response body (dict); for streams, the equivalent non-streamed body.
        stream: whether the request was streamed.
        fault: the fault kind that fired, or None.
        usage: the :class:`CacheUsage` (prompt side), or None for rejected requests.
        cost: USD cost of the request (model prices and cache multipliers), 0.0 if rejected.
        clock: virtual time (seconds) when it was answered.
        size: request body size in bytes when known (HTTP), else 0.
        unknown_keys: ``path.key`` of every key outside the message schema, e.g.
            ``("messages[0].timestamp",)``.
        dropped: the request and response bodies were released (journal byte budget);
            ``request`` and ``response`` are then None.
    """

    __slots__ = (
        "index",
        "route",
        "_request",
        "status",
        "response",
        "stream",
        "fault",
        "usage",
        "cost",
        "clock",
        "size",
        "unknown_keys",
        "dropped",
    )

    def __init__(
        self,
        index: int,
        route: str,
        request: Any,
        status: int,
        response: dict[str, Any],
        stream: bool = False,
        fault: str | None = None,
        usage: CacheUsage | None = None,
        cost: float = 0.0,
        clock: float = 0.0,
        size: int = 0,
        unknown_keys: tuple[str, ...] = (),
    ) -> None:
        self.size, self.unknown_keys, self.dropped = size, unknown_keys, False
        self.index, self.route, self._request, self.status, self.response = (
            index,
            route,
            request,
            status,
            response,
        )
        self.stream, self.fault, self.usage, self.cost, self.clock = (
            stream,
            fault,
            usage,
            cost,
            clock,
        )

    @property
    def request(self) -> dict[str, Any]:
        """The request body (dict), or None once :attr:`dropped`."""
        if callable(self._request):
            self._request = self._request()
        return self._request

    def drop(self) -> None:
        """Release the request and response bodies (metadata, usage and cost stay)."""
        self._request = None
        self.response = None  # type: ignore[assignment]
        self.dropped = True

    def __repr__(self) -> str:
        return (
            f"JournalEntry(index={self.index}, route={self.route!r}, status={self.status}, "
            f"fault={self.fault!r})"
        )


def _last_text(messages: Any) -> str:
    if isinstance(messages, list) and messages and isinstance(messages[-1], Mapping):
        c = messages[-1].get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            return "\n".join(str(p.get("text", "")) for p in c if isinstance(p, Mapping))
    return ""


class Provider:
    """Deterministic in-process provider (clauses P1–P4, U9).

    Args:
        seed: reply seed; the same seed and requests give the same replies and bytes.
        replies: the reply mode (:class:`EchoReplies` by default).
        model: model used when a request names none (default: a Claude model behind the
            OpenAI-compatible route, Anthropic caching rules).
        clock: the :class:`VirtualClock` (a new one at 0 s by default).
        models: the :class:`ModelTable` (a fresh default table by default).
        faults: a :class:`FaultSchedule` or a list of :class:`Fault`.
        strict_u9: raise :class:`U9LeakError` (in process) / answer 400 (HTTP) as soon as a
            persistence-only field reaches the provider, instead of only recording it.
            With it, keys outside the message schema are rejected too (400 naming the key).
        namespace: cache namespace (an organisation); the HTTP server uses the API key.
        journal_limit: keep at most this many journal entries (oldest dropped), None = all.
        reply_mode: ``"request"`` (default: echo content is a function of seed and request)
            or ``"sequence"`` (it also depends on the request index); see
            :mod:`simulator.provider.replies`.
        journal_body_bytes: keep request/response bodies of the newest entries whose
            request sizes (``size``, bytes; known for HTTP requests) add up to at most this;
            older entries are :meth:`JournalEntry.drop`-ped. None = keep all.

    Attributes:
        journal: list of :class:`JournalEntry`, one per request, in order.
        u9_leaks: one string per object carrying persistence-only fields on the wire (U9),
            at any depth; at most :data:`MAX_RECORDED` kept, ``u9_leak_count`` counts all.
        unknown_keys: ``"request N: path.key"`` per key outside the message schema (bounded
            likewise; ``unknown_key_count`` counts all).

    Raises:
        ValueError: unknown ``reply_mode``.
    """

    def __init__(
        self,
        seed: int = 0,
        replies: ReplyPolicy | None = None,
        model: str = DEFAULT_MODEL,
        *,
        clock: VirtualClock | None = None,
        models: ModelTable | None = None,
        faults: Any = None,
        strict_u9: bool = False,
        namespace: str = "org-sim",
        journal_limit: int | None = None,
        reply_mode: str = "request",
        journal_body_bytes: int | None = None,
    ) -> None:
        if reply_mode not in REPLY_KEY_MODES:
            raise ValueError(f"reply_mode {reply_mode!r} is unknown; use one of {REPLY_KEY_MODES}")
        self.seed = seed
        self.reply_mode = reply_mode
        self.journal_body_bytes = journal_body_bytes
        self.replies: ReplyPolicy = replies if replies is not None else EchoReplies()
        self._initial_replies = self.replies
        self.model = model
        self.clock = clock or VirtualClock()
        self.models = models or ModelTable()
        self.faults = (
            faults if isinstance(faults, FaultSchedule) else FaultSchedule(list(faults or ()))
        )
        self.strict_u9 = strict_u9
        self.namespace = namespace
        self.journal_limit = journal_limit
        self.journal: list[JournalEntry] = []
        self.u9_leaks: list[str] = []
        self.u9_leak_count = 0
        self.unknown_keys: list[str] = []
        self.unknown_key_count = 0
        self.anthropic_cache = AnthropicCache(self.clock)
        self.openai_cache = OpenAICache(self.clock)
        self._lock = threading.RLock()
        self._next_index = 0
        self._not_before = 0.0
        self._bodies: deque[JournalEntry] = deque()  # entries still holding their bodies
        self._body_bytes = 0
        self._models_snapshot = self.models.snapshot()

    # -- public API ------------------------------------------------------------------------
    def chat_completions(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one OpenAI chat-completions request; returns the ``chat.completion`` dict.

        A ``stream: true`` request is answered with the equivalent non-streamed body here;
        use :meth:`handle` for the SSE bytes.

        Raises:
            ProviderError: the provider's 4xx/5xx answer (validation, context length,
                scheduled faults), body in OpenAI shape.
            U9LeakError: ``strict_u9`` and a persistence-only field was sent.
        """
        return self._raise_or_body(self.handle(CHAT, request, raise_u9=True))

    def messages(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one Anthropic Messages request; returns the ``message`` dict.

        Raises:
            ProviderError: the provider's error answer, body in Anthropic shape.
            U9LeakError: ``strict_u9`` and a persistence-only field was sent.
        """
        return self._raise_or_body(self.handle(MESSAGES, request, raise_u9=True))

    def conversation(self, **params: Any) -> Any:
        """A :class:`~simulator.provider.conversation.Conversation` handle on this provider."""
        from simulator.provider.conversation import Conversation

        return Conversation(self, **params)

    def count_tokens(self, request: Mapping[str, Any]) -> dict[str, int]:
        """Anthropic ``/v1/messages/count_tokens``: ``{"input_tokens": n}`` (not journaled).

        Raises:
            ProviderError: 400 for a malformed request (Anthropic shape).
        """
        try:
            spec = self.models.resolve(str(request.get("model") or self.model))
            r = self._render_anthropic(request, spec)
        except ValidationFailure as vf:
            raise ProviderError(vf.status, anthropic_error(vf.message, vf.anthropic_type)) from None
        return {"input_tokens": r.total}

    def reset(self, full: bool = False) -> None:
        """Forget caches, journal, leaks, faults and retry windows; the clock keeps its time.

        With ``full``, return to the state of a freshly constructed provider: also the
        clock back to its start, model overrides made since construction undone, and the
        reply policy given at construction back in place (:meth:`ReplyPolicy.reset`).
        Nothing keeps a request body alive afterwards.
        """
        with self._lock:
            self.anthropic_cache.reset()
            self.openai_cache.reset()
            self.faults.clear()
            self.journal.clear()
            self.u9_leaks.clear()
            self.u9_leak_count = 0
            self.unknown_keys.clear()
            self.unknown_key_count = 0
            self._bodies.clear()
            self._body_bytes = 0
            self._next_index = 0
            self._not_before = 0.0
            if full:
                self.clock.reset()
                self.models.restore(self._models_snapshot)
                self.replies = self._initial_replies
                reset = getattr(self.replies, "reset", None)
                if callable(reset):
                    reset()

    def hold_cache_writes(self) -> None:
        """Start a parallel burst: no request reads another's writes until released.

        See :meth:`release_cache_writes`.
        """
        with self._lock:
            self.anthropic_cache.hold()
            self.openai_cache.hold()

    def release_cache_writes(self) -> None:
        """End a parallel burst; held cache writes become readable."""
        with self._lock:
            self.anthropic_cache.release()
            self.openai_cache.release()

    # -- the pipeline ------------------------------------------------------------------------
    def handle(
        self,
        route: str,
        request: Any,
        *,
        namespace: str | None = None,
        raise_u9: bool = False,
        body_bytes: int = 0,
    ) -> Outcome:
        """Answer one request on ``route`` (``"chat.completions"`` or ``"messages"``).

        Returns an :class:`Outcome` (status, body or SSE events, headers); never raises
        for bad input. ``raise_u9`` makes a strict-mode U9 leak raise :class:`U9LeakError`.
        ``body_bytes`` is the request's size on the wire (bytes; for the journal budget).
        Validation and rendering run before the provider's lock is taken.
        """
        stream = isinstance(request, Mapping) and request.get("stream") is True
        prep = _Prepared()
        try:
            self._prepare(route, request, namespace, prep)
        except ValidationFailure as vf:
            prep.failure = vf
        with self._lock:
            index = self._begin()
            try:
                if prep.failure is not None:
                    raise prep.failure
                view = (lambda: request) if route == CHAT else (lambda: anthropic_view(request))
                return self._respond(
                    index,
                    route,
                    prep.spec,
                    prep.model,
                    prep.renderer,
                    prep.breakpoints,
                    request,
                    view,
                    request,
                    stream,
                    raise_u9,
                    body_bytes,
                )
            except ValidationFailure as vf:
                unknown: tuple[str, ...] = ()
                if prep.renderer is not None:
                    self._record_u9(index, prep.renderer)
                    unknown = self._record_unknown(index, prep.renderer)
                outcome = self._reject(index, route, request, vf, stream, body_bytes, unknown)
                if raise_u9 and getattr(vf, "u9", False):
                    raise U9LeakError(vf.message) from None
                return outcome

    def _prepare(self, route: str, request: Any, namespace: str | None, prep: _Prepared) -> None:
        """Validate and render ``request`` into ``prep`` (touches no provider state).

        Raises:
            ValidationFailure: the provider's 400; ``prep.renderer`` holds what was
                rendered so far (for the U9 record).
        """
        if not isinstance(request, Mapping):
            raise ValidationFailure("The request body must be a JSON object.", param=None)
        model = request.get("model", self.model if route == CHAT else None)
        if not isinstance(model, str) or not model:
            if route == MESSAGES:
                raise ValidationFailure("model: Field required", param="model")
            raise ValidationFailure("you must provide a model parameter", param="model")
        try:
            model.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationFailure(
                "Invalid 'model': it contains a lone UTF-16 surrogate, which is not valid Unicode.",
                param="model",
            ) from None
        if "stream" in request and not isinstance(request["stream"], bool):
            raise ValidationFailure(
                "Invalid type for 'stream': expected a boolean.",
                param="stream",
                code="invalid_type",
            )
        if route == CHAT:
            _check_stream_options(request.get("stream_options"))
        spec = self.models.resolve(model)
        prep.spec, prep.model = spec, model
        if route == CHAT:
            ns = namespace or self.namespace
            pck = request.get("prompt_cache_key")
            if pck is not None and not spec.anthropic_rules:
                # OpenAI routes by (prefix, key): another key misses
                ns = f"{ns}\0prompt_cache_key:{pck}"
            prep.renderer = Renderer(
                ns,
                model,
                spec.anthropic_rules,
                _salt(request.get("tool_choice"), request.get("reasoning_effort")),
            )
            self._render_openai_into(prep.renderer, request)
        else:
            prep.renderer = self._new_anthropic_renderer(request, spec, namespace)
            self._render_anthropic_into(prep.renderer, request)
        prep.breakpoints = prep.renderer.breakpoints(auto=request.get("cache_control"))

    def _begin(self) -> int:
        index = self._next_index
        self._next_index += 1
        if self._not_before > self.clock.now():
            self.clock.set(min(self._not_before, MAX_SECONDS))  # the client waited out retry-after
        return index

    def _render_openai_into(self, renderer: Renderer, request: Mapping[str, Any]) -> None:
        messages = request.get("messages")
        if not isinstance(messages, list):
            if messages is None:
                raise ValidationFailure(
                    "Missing required parameter: 'messages'.",
                    param="messages",
                    code="missing_required_parameter",
                )
            raise ValidationFailure(
                "Invalid type for 'messages': expected an array, but got "
                f"{type(messages).__name__} instead.",
                param="messages",
                code="invalid_type",
            )
        if not messages:
            raise ValidationFailure(
                "[] is too short - 'messages'", param="messages", code="empty_array"
            )
        renderer.add_tools(request.get("tools"), anthropic_shape=False)
        add = renderer.add_openai_message
        for i, m in enumerate(messages):
            add(m, i)
        err = renderer.pending_tool_calls()
        if err is not None:
            raise err

    def _render_anthropic(
        self, request: Mapping[str, Any], spec: ModelSpec, namespace: str | None = None
    ) -> Renderer:
        if not isinstance(request, Mapping):
            raise ValidationFailure("The request body must be a JSON object.")
        renderer = self._new_anthropic_renderer(request, spec, namespace)
        self._render_anthropic_into(renderer, request)
        return renderer

    def _new_anthropic_renderer(
        self, request: Mapping[str, Any], spec: ModelSpec, namespace: str | None
    ) -> Renderer:
        return Renderer(
            namespace or self.namespace,
            spec.name,
            spec.anthropic_rules,
            _salt(request.get("tool_choice"), request.get("thinking")),
        )

    def _render_anthropic_into(self, renderer: Renderer, request: Mapping[str, Any]) -> None:
        renderer.add_tools(request.get("tools"), anthropic_shape=True)
        renderer.add_anthropic_system(request.get("system"))
        messages = request.get("messages")
        if not isinstance(messages, list):
            raise ValidationFailure(
                "messages: Field required"
                if messages is None
                else "messages: Input should be a valid list",
                param="messages",
            )
        if not messages:
            raise ValidationFailure("messages: at least one message is required", param="messages")
        last = len(messages) - 1
        for i, m in enumerate(messages):
            renderer.add_anthropic_message(m, i, i == last)

    def _record_u9(self, index: int, renderer: Renderer) -> str | None:
        """Record the renderer's new U9 findings; returns the first line in strict mode."""
        done = getattr(renderer, "u9_recorded", 0)
        if len(renderer.u9) <= done:
            return None
        renderer.u9_recorded = len(renderer.u9)
        lines = [
            f"U9 violation in request {index}: {path} carries persistence-only field(s) {fields}; "
            "the host must strip them from every copy sent to the provider"
            for path, fields in renderer.u9[done:]
        ]
        self.u9_leak_count += len(lines)
        self.u9_leaks.extend(lines[: max(0, MAX_RECORDED - len(self.u9_leaks))])
        return lines[0] if self.strict_u9 else None

    def _record_unknown(self, index: int, renderer: Renderer) -> tuple[str, ...]:
        """Record the keys outside the message schema this request carried; returns them."""
        keys = tuple(renderer.unknown)
        if keys:
            self.unknown_key_count += len(keys)
            room = max(0, MAX_RECORDED - len(self.unknown_keys))
            self.unknown_keys.extend(f"request {index}: {k}" for k in keys[:room])
        return keys

    def _respond(
        self,
        index: int,
        route: str,
        spec: ModelSpec,
        model: str,
        renderer: Renderer,
        breakpoints: list[tuple[int, str, str]],
        params: Mapping[str, Any],
        view: Callable[[], Mapping[str, Any]],
        journal_request: Any,
        stream: bool,
        raise_u9: bool,
        body_bytes: int = 0,
    ) -> Outcome:
        strict = self._record_u9(index, renderer)
        if strict is not None:
            vf = ValidationFailure(strict, param="messages")
            vf.u9 = True
            raise vf
        if self.strict_u9 and renderer.unknown:
            where = renderer.unknown[0]
            key = where.rsplit(".", 1)[1]
            raise ValidationFailure(
                f"Unrecognized key {key!r} at {where} (strict mode rejects keys outside the "
                "message schema).",
                param=where,
                code="unknown_parameter",
            )
        total = renderer.total
        max_tokens = self._max_tokens(route, params, spec)
        self._check_window(route, spec, total, max_tokens)
        ctx = FaultContext(
            index,
            route,
            stream,
            model,
            total,
            _last_text(params.get("messages")),
            is_summary_request(params.get("messages") or [])
            if isinstance(params.get("messages"), list)
            else False,
        )
        fault = self.faults.match(ctx)
        rid = hashlib.sha256(
            f"{self.seed}:{index}:".encode() + (renderer.chain[-1] if renderer.chain else b"")
        ).hexdigest()[:24]
        unknown = self._record_unknown(index, renderer)
        if fault is not None and fault.http_status != 200:
            return self._fault_error(
                index, route, journal_request, fault, stream, model, total, rid, body_bytes, unknown
            )
        if spec.anthropic_rules:
            usage = self.anthropic_cache.apply(
                renderer.chain, renderer.cum, total, breakpoints, spec.min_cacheable_tokens
            )
        else:
            retention = (
                86_400.0
                if params.get("prompt_cache_retention") == "24h"
                else spec.openai_retention_seconds
            )
            usage = self.openai_cache.apply(
                renderer.chain,
                renderer.cum,
                total,
                spec.min_cacheable_tokens,
                spec.cache_step_tokens,
                retention,
            )
        if fault is not None and fault.kind == "content_filter":
            reply = Reply(content=None if route == CHAT else "", finish_reason="content_filter")
        else:
            with reply_context(self.reply_mode):
                reply = self.replies.reply(view(), index, self.seed)
            reply = reply.with_ids(self.seed, index)
        message = reply.message()
        finish = reply.finish()
        completion = tokens.count_text(message.get("content") or "")
        if max_tokens is not None and completion > max_tokens and message.get("content"):
            enc = tokens.encoding()
            message["content"] = enc.decode(enc.encode_ordinary(message["content"])[:max_tokens])
            completion = max_tokens
            finish = "length"
        for call in message.get("tool_calls") or ():
            completion += tokens.count_text(call["function"]["name"]) + tokens.count_text(
                call["function"]["arguments"]
            )
        cost = _cost(spec, usage, completion)
        created = self.clock.unix()
        options = params.get("stream_options")
        include_usage = (
            stream and isinstance(options, Mapping) and bool(options.get("include_usage"))
            if route == CHAT
            else True
        )
        if route == CHAT:
            u = _openai_usage(spec, usage, completion, cost)
            body = R.openai_completion(f"chatcmpl-{rid}", created, model, message, finish, u)
            headers = {"x-request-id": f"req_{rid}", "openai-processing-ms": "1"}
            events = (
                R.openai_stream(
                    f"chatcmpl-{rid}", created, model, message, finish, u if include_usage else None
                )
                if stream
                else None
            )
        else:
            u = _anthropic_usage(usage, completion)
            content = R.anthropic_content(message)
            stop = {
                "stop": "end_turn",
                "tool_calls": "tool_use",
                "length": "max_tokens",
                "content_filter": "refusal",
            }.get(finish, "end_turn")
            body = R.anthropic_message(f"msg_{rid}", model, content, stop, u)
            headers = {"request-id": f"req_{rid}"}
            events = R.anthropic_stream(f"msg_{rid}", model, content, stop, u) if stream else None
        cut = False
        if (
            events is not None
            and fault is not None
            and fault.kind in ("stream_cut", "stream_error")
        ):
            k = max(0, min(fault.after_events, len(events) - 1))
            events = events[:k]
            if fault.kind == "stream_error":
                msg = fault.message or "Overloaded"
                events.append(
                    R.openai_stream_error(502, msg)
                    if route == CHAT
                    else R.anthropic_stream_error(message=msg)
                )
            cut = True
        self._journal(
            JournalEntry(
                index,
                route,
                journal_request,
                200,
                body,
                stream,
                fault.kind if fault else None,
                usage,
                cost,
                self.clock.now(),
                body_bytes,
                unknown,
            )
        )
        return Outcome(200, body, headers, events, cut)

    def _max_tokens(self, route: str, params: Mapping[str, Any], spec: ModelSpec) -> int | None:
        key = "max_tokens"
        value = params.get("max_tokens")
        if route == CHAT and params.get("max_completion_tokens") is not None:
            key, value = "max_completion_tokens", params.get("max_completion_tokens")
        if value is None:
            if route == MESSAGES:
                raise ValidationFailure("max_tokens: Field required", param="max_tokens")
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationFailure(
                f"Invalid type for '{key}': expected an integer, but got {type(value).__name__} "
                "instead.",
                param=key,
                code="invalid_type",
            )
        if value < 1:
            raise ValidationFailure(
                f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got "
                f"{value} instead.",
                param=key,
                code="integer_below_min_value",
            )
        if value > spec.max_output_tokens:
            if route == MESSAGES:
                raise ValidationFailure(
                    f"max_tokens: {value} > {spec.max_output_tokens}, which is the maximum allowed "
                    "number "
                    f"of output tokens for {spec.name}",
                    param="max_tokens",
                )
            raise ValidationFailure(
                f"max_tokens is too large: {value}. This model supports at most "
                f"{spec.max_output_tokens} "
                f"completion tokens, whereas you provided {value}.",
                param=key,
                code="invalid_value",
            )
        return value

    def _check_window(
        self, route: str, spec: ModelSpec, total: int, max_tokens: int | None
    ) -> None:
        window = spec.context_length
        if route == CHAT:
            if total > window:
                raise ValidationFailure(
                    f"This model's maximum context length is {window} tokens. However, your "
                    "messages "
                    f"resulted in {total} tokens. Please reduce the length of the messages.",
                    param="messages",
                    code="context_length_exceeded",
                )
            if max_tokens is not None and total + max_tokens > window:
                raise ValidationFailure(
                    f"This model's maximum context length is {window} tokens. However, you "
                    "requested "
                    f"{total + max_tokens} tokens ({total} in the messages, {max_tokens} in the "
                    "completion). "
                    "Please reduce the length of the messages or completion.",
                    param="messages",
                    code="context_length_exceeded",
                )
        else:
            if total > window:
                raise ValidationFailure(f"prompt is too long: {total} tokens > {window} maximum")
            if max_tokens is not None and total + max_tokens > window:
                raise ValidationFailure(
                    f"input length and `max_tokens` exceed context limit: {total} + {max_tokens} > "
                    f"{window}, "
                    "decrease input length or `max_tokens` and try again"
                )

    def _reject(
        self,
        index: int,
        route: str,
        request: Any,
        vf: ValidationFailure,
        stream: bool,
        body_bytes: int = 0,
        unknown: tuple[str, ...] = (),
    ) -> Outcome:
        rid = hashlib.sha256(f"{self.seed}:{index}:reject".encode()).hexdigest()[:24]
        if route == CHAT:
            body = openai_error(vf.message, vf.openai_type, vf.param, vf.code)
            headers = {"x-request-id": f"req_{rid}"}
        else:
            body = anthropic_error(vf.message, vf.anthropic_type, f"req_{rid}")
            headers = {"request-id": f"req_{rid}"}
        self._journal(
            JournalEntry(
                index,
                route,
                request,
                vf.status,
                body,
                stream,
                None,
                None,
                0.0,
                self.clock.now(),
                body_bytes,
                unknown,
            )
        )
        return Outcome(vf.status, body, headers)

    def _fault_error(
        self,
        index: int,
        route: str,
        request: Any,
        fault: Fault,
        stream: bool,
        model: str,
        total: int,
        rid: str,
        body_bytes: int = 0,
        unknown: tuple[str, ...] = (),
    ) -> Outcome:
        status = fault.http_status
        kind = fault.kind
        headers: dict[str, str] = (
            {"x-request-id": f"req_{rid}"} if route == CHAT else {"request-id": f"req_{rid}"}
        )
        if kind == "rate_limit":
            secs = fault.retry_after
            ms = (
                fault.retry_after_ms
                if fault.retry_after_ms is not None
                else int(round(secs * 1000))
            )
            headers["retry-after"] = str(max(0, -(-int(secs * 1000) // 1000)))
            headers["retry-after-ms"] = str(ms)
            self._not_before = min(
                MAX_SECONDS, max(self._not_before, self.clock.now() + max(secs, ms / 1000.0))
            )
            if route == CHAT:
                msg = fault.message or (
                    f"Rate limit reached for {model} in organization org-sim on tokens per min "
                    "(TPM): "
                    f"Limit 30000, Used 30000, Requested {total}. Please try again in {secs:g}s. "
                    "Visit https://platform.openai.com/account/rate-limits to learn more."
                )
                body = openai_error(msg, "tokens", None, "rate_limit_exceeded")
                headers.update(
                    {
                        "x-ratelimit-limit-tokens": "30000",
                        "x-ratelimit-remaining-tokens": "0",
                        "x-ratelimit-reset-tokens": f"{secs:g}s",
                    }
                )
            else:
                msg = fault.message or (
                    "This request would exceed the rate limit for your organization of 50,000 "
                    "input "
                    "tokens per minute. Please try again later."
                )
                body = anthropic_error(msg, "rate_limit_error", f"req_{rid}")
                headers.update(
                    {
                        "anthropic-ratelimit-input-tokens-limit": "50000",
                        "anthropic-ratelimit-input-tokens-remaining": "0",
                    }
                )
        else:
            if kind == "terminal":
                headers["x-should-retry"] = "false"
            if route == CHAT:
                if status == 529:
                    body = openai_error(
                        fault.message or "Overloaded", "overloaded_error", None, "overloaded"
                    )
                elif status == 503:
                    body = openai_error(
                        fault.message
                        or "The engine is currently overloaded, please try again later",
                        "service_unavailable_error",
                        None,
                        "server_is_overloaded",
                    )
                else:
                    body = openai_error(
                        fault.message
                        or "The server had an error while processing your request. "
                        "Sorry about that!",
                        "server_error",
                        None,
                        None,
                    )
            else:
                if status == 529:
                    body = anthropic_error(
                        fault.message or "Overloaded", "overloaded_error", f"req_{rid}"
                    )
                else:
                    body = anthropic_error(
                        fault.message or "Internal server error", "api_error", f"req_{rid}"
                    )
        self._journal(
            JournalEntry(
                index,
                route,
                request,
                status,
                body,
                stream,
                kind,
                None,
                0.0,
                self.clock.now(),
                body_bytes,
                unknown,
            )
        )
        return Outcome(status, body, headers)

    def _journal(self, entry: JournalEntry) -> None:
        self.journal.append(entry)
        limit = self.journal_limit
        if limit is not None and len(self.journal) > limit + max(16, limit // 4):
            del self.journal[: len(self.journal) - limit]
        budget = self.journal_body_bytes
        if budget is None:
            return
        bodies = self._bodies
        bodies.append(entry)
        self._body_bytes += entry.size
        first = self.journal[0].index
        while bodies and (bodies[0].index < first or self._body_bytes > budget):
            old = bodies.popleft()
            self._body_bytes -= old.size
            old.drop()

    @staticmethod
    def _raise_or_body(outcome: Outcome) -> dict[str, Any]:
        if outcome.status != 200:
            raise ProviderError(outcome.status, outcome.body or {}, outcome.headers)
        return outcome.body or {}


class _Prepared:
    """A request validated and rendered outside the lock, or its failure and partial renderer."""

    __slots__ = ("spec", "model", "renderer", "breakpoints", "failure")

    def __init__(self) -> None:
        self.spec: Any = None
        self.model = ""
        self.renderer: Any = None
        self.breakpoints: list[tuple[int, str, str]] = []
        self.failure: ValidationFailure | None = None


def _check_stream_options(options: Any) -> None:
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise ValidationFailure(
            f"Invalid type for 'stream_options': expected an object, but got {_json_type(options)} "
            "instead.",
            param="stream_options",
            code="invalid_type",
        )
    include = options.get("include_usage")
    if include is not None and not isinstance(include, bool):
        raise ValidationFailure(
            "Invalid type for 'stream_options.include_usage': expected a boolean, but got "
            f"{_json_type(include)} instead.",
            param="stream_options.include_usage",
            code="invalid_type",
        )


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _cost(spec: ModelSpec, usage: CacheUsage, completion: int) -> float:
    p, q = spec.price_input / 1e6, spec.price_output / 1e6
    if spec.anthropic_rules:
        c = (
            p * (usage.input + 1.25 * usage.write_5m + 2.0 * usage.write_1h + 0.1 * usage.read)
            + q * completion
        )
    else:
        c = (
            p * (usage.total - usage.read)
            + p * spec.openai_cached_multiplier * usage.read
            + q * completion
        )
    return round(c, 10)


def _openai_usage(
    spec: ModelSpec, usage: CacheUsage, completion: int, cost: float
) -> dict[str, Any]:
    details: dict[str, Any] = {"cached_tokens": usage.read}
    if spec.anthropic_rules:
        details["cache_write_tokens"] = usage.write
    details["audio_tokens"] = 0
    return {
        "prompt_tokens": usage.total,
        "completion_tokens": completion,
        "total_tokens": usage.total + completion,
        "prompt_tokens_details": details,
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
        "cost": cost,
    }


def _anthropic_usage(usage: CacheUsage, completion: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.write,
        "cache_read_input_tokens": usage.read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.write_5m,
            "ephemeral_1h_input_tokens": usage.write_1h,
        },
        "output_tokens": completion,
        "service_tier": "standard",
    }
