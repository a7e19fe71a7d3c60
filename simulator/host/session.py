"""One agent session: the turn loop and the lifecycle (L1, A2, A7, H4, H5, C1, K1, TS1-TS3).

L1: instantiate -> ``on_session_start`` -> per provider call ``update_from_response`` ->
per loop iteration ``should_compress`` -> ``compress`` when True -> ``on_session_end`` at a
real boundary; ``on_session_reset`` on /new or /reset. Every engine call goes through a
:class:`~simulator.host.record.Recorder`.

A turn (:meth:`HostSession.user_turn`):

1. the incoming user message is appended and persisted (documented: it gets its
   ``message_uid`` at this flush, U10);
2. loop, once per provider request: the pre-API compaction check (when the history
   has more than one message, compression is enabled and no cooldown is active:
   ``should_compress(estimate)`` -> a compression pass, then the loop restarts); the
   request pipeline (:mod:`simulator.host.pipeline`, select_context included, so
   every retry re-runs it: H4); the provider; on a 429/5xx the host retries up to
   ``max_retries`` times, then switches to ``fallback_model`` (``update_model``) if
   configured; on a context overflow it compresses (forced) and restarts;
3. usage -> :func:`~simulator.host.usage.canonical_usage` -> ``update_from_response``;
   a content-policy block (``finish_reason == "content_filter"``) or a terminal provider
   failure ends the turn early without ``on_turn_complete``;
4. tool calls run (engine tools go to ``handle_tool_call``), then the post-tool check
   ``should_compress(real prompt tokens)``, and the loop goes on;
5. a normal end fires ``on_turn_complete`` (H5; documented profile only).
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.host import calls, clones, hooks, pipeline, thresholds
from simulator.host.compression import TIMEOUT_WARNING, PassOutcome, run_pass, shared_pool
from simulator.host.profiles import HostProfile, get_profile
from simulator.host.record import Recorder
from simulator.host.usage import canonical_usage
from simulator.provider import tokens
from simulator.provider.core import Provider, ProviderError
from simulator.store.memory import MemoryStore

log = logging.getLogger("simulator.host")

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant working in a software repository."
#: Status codes the host retries itself (H4 "after a simulated 429/5xx").
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: finish_reason of a content-policy block (H5: on_turn_complete not fired).
CONTENT_FILTER = "content_filter"


@dataclass
class HostConfig:
    """The host-side configuration (config.yaml ``compression.*`` and friends).

    Attributes:
        compression_enabled: ``compression.enabled``; False disables automatic compaction.
        context_timeout_seconds: TS1 host timeout of a pass, real seconds; 0 = inline.
        failure_cooldown_seconds: cooldown after a timed-out pass (virtual seconds).
        model_thresholds: ``compression.model_thresholds`` (K1), or None when not set.
        max_retries: host retries of a 429/5xx before the fallback (H4).
        fallback_model: model switched to when retries are exhausted (None = none).
        fallback_context_length: the fallback model's window (tokens; default: same).
        cache_ttl: prompt-cache TTL, "5m" or "1h" (P1).
        native_anthropic: native Anthropic marker layout (P2).
        max_compression_attempts: compactions per turn at most (overflow restarts included).
        compression_in_place: ``compression.in_place`` (Hermes' default true): a committed
            compaction is a new generation of the same session; false: it rotates the
            session into a child holding the compacted rows (the legacy mode), mid-turn too.
        seconds_per_turn: virtual seconds the clock advances at each user turn.
        max_iterations: provider calls per turn at most (tool loops).
        hygiene_hard_message_limit: B7 message-count valve.
        builtin_factory: the built-in compressor agents fall back to when cloning fails (C3);
            None: the host's own minimal one (:mod:`simulator.host.builtin`).
    """

    compression_enabled: bool = True
    context_timeout_seconds: float = 120.0
    failure_cooldown_seconds: float = 60.0
    model_thresholds: dict[str, float] | None = None
    max_retries: int = 2
    fallback_model: str | None = None
    fallback_context_length: int | None = None
    cache_ttl: str = "5m"
    native_anthropic: bool = False
    max_compression_attempts: int = 3
    compression_in_place: bool = True
    seconds_per_turn: float = 30.0
    max_iterations: int = 16
    hygiene_hard_message_limit: int = 5000
    builtin_factory: Callable[[], Any] | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> HostConfig:
        """Build from a parsed config.yaml dict (``compression`` block; K1, TS1, B7).

        Raises:
            ValueError: a ``compression`` value of the wrong type, naming the key.
        """
        comp = dict((config or {}).get("compression") or {})
        out = cls()
        if "enabled" in comp:
            out.compression_enabled = str(comp["enabled"]).strip().lower() in ("true", "1", "yes")
        for key, attr in (("context_timeout_seconds", "context_timeout_seconds"),):
            if key in comp:
                try:
                    setattr(out, attr, float(comp[key]))
                except (TypeError, ValueError):
                    raise ValueError(
                        f"compression.{key} must be a number of seconds, got {comp[key]!r}"
                    ) from None
        if "model_thresholds" in comp:
            mt = comp["model_thresholds"] or {}
            if not isinstance(mt, Mapping):
                raise ValueError(
                    "compression.model_thresholds must be a mapping {model substring: percent}"
                )
            out.model_thresholds = {str(k): float(v) for k, v in mt.items()}
        if "in_place" in comp:
            out.compression_in_place = str(comp["in_place"]).strip().lower() in (
                "true",
                "1",
                "yes",
            )
        if "hygiene_hard_message_limit" in comp:
            out.hygiene_hard_message_limit = int(comp["hygiene_hard_message_limit"])
        return out


@dataclass
class TurnResult:
    """What one user turn did.

    Attributes:
        reply: the final assistant message, or None.
        provider_calls: provider responses received this turn (``api_call_count``).
        compactions: committed compression passes this turn.
        usage: the canonical usage of the last response (None: no response reached).
        failed: the turn ended on a terminal provider failure.
        interrupted: the turn was interrupted before a provider response.
        turn_exit_reason: "text_response", "content_filter", "provider_error", "interrupted",
            "max_iterations".
        on_turn_complete_fired: whether H5's hook was called.
        requests: serialized requests sent this turn (bytes, in order).
        error: the provider's answer that ended a failed turn, ``"<status>: <message>"`` in
            the provider's own words (e.g. ``400: A maximum of 4 blocks with cache_control may
            be provided. Found 5.``); "" otherwise.
    """

    reply: dict[str, Any] | None
    provider_calls: int
    compactions: int
    usage: dict[str, int] | None
    failed: bool = False
    interrupted: bool = False
    turn_exit_reason: str = "text_response"
    on_turn_complete_fired: bool = False
    requests: list[bytes] = field(default_factory=list)
    error: str = ""


def _canonical_call(call: Any) -> Any:
    """A tool call as Hermes stores it: ``function.arguments`` re-dumped as compact JSON with
    sorted keys when it parses (unparseable arguments are kept as given)."""
    call = copy.deepcopy(call)
    fn = call.get("function") if isinstance(call, dict) else None
    if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
        try:
            fn["arguments"] = json.dumps(
                json.loads(fn["arguments"]),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            )
        except ValueError:
            pass
    return call


def serialize_request(request: Mapping[str, Any]) -> bytes:
    """Canonical bytes of a request body (sorted keys, compact): for byte-identity checks."""
    return json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8"
    )


def default_tool_executor(name: str, arguments: Any) -> str:
    """Deterministic stand-in for a non-engine tool: a small JSON result."""
    return json.dumps({"ok": True, "tool": name, "arguments": arguments}, sort_keys=True)


class HostSession:
    """One agent session around ``engine``.

    Args:
        engine: the context engine this agent uses; with ``clone=True`` it is the
            registered engine and the agent gets ``clone_for_agent()`` of it (C1).
        provider: the provider simulator (a fresh one by default).
        store: the session store (in-memory by default).
        model: model name passed to ``update_model`` and to the provider.
        context_length: the model's window, in tokens.
        system_prompt: the system prompt, kept as message 0 of :attr:`messages`.
        profile: "documented" (default), "hermes-0.19" or a :class:`HostProfile`.
        config: :class:`HostConfig` (defaults when None).
        recorder: a :class:`Recorder` (a new one by default; share one across agents to
            see their calls interleaved).
        cache_control: place prompt-cache markers; None = automatic for Claude models (P4).
        clone: clone ``engine`` at agent init (C1); default False (``engine`` is already
            the agent's own).
        platform: "cli" or a gateway platform name (on_session_start kwarg).
        conversation_id: gateway session key, or None.
        tool_executor: callable(name, arguments) -> str for non-engine tools.
        provider_name, base_url, api_key, api_mode: update_model kwargs.
        hermes_home: on_session_start kwarg.
        engine_source: how the engine was found (:class:`~simulator.host.discovery.Selection`
            ``source``: "plugin", "user", "bundled", ...); a profile with
            ``clone_plugins_only`` clones only general-plugin engines (C1).
        force_compress_timeout: test hook (TS2): every pool pass is treated as timed out.
        parent: the parent session of a subagent (set by :meth:`spawn_subagent`).
        pre_llm_call: plugin hooks that may append text to the user message (H7).

    Attributes:
        transcript: the live history (without the system message).
        system_message: the system message dict (None without a system prompt).
        messages: system message + transcript (a new list each time).
        engine: the agent's engine (the clone, or the built-in compressor after C3).
        engine_active: False when the engine under test was replaced by the built-in.
        clone_error: the C3 error text, or "".
        requests: every serialized request sent by this session (bytes).
        compactions: committed passes. passes: every :class:`PassOutcome`.
        cooldown_until: virtual time until which automatic compaction is blocked.
    """

    def __init__(
        self,
        engine: Any,
        provider: Provider | None = None,
        store: Any = None,
        *,
        model: str = "sim-model",
        context_length: int = 32_000,
        system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
        profile: Any = None,
        config: HostConfig | None = None,
        recorder: Recorder | None = None,
        cache_control: bool | None = None,
        clone: bool = False,
        platform: str = "cli",
        conversation_id: str | None = None,
        tool_executor: Callable[[str, Any], str] = default_tool_executor,
        provider_name: str = "",
        base_url: str = "",
        api_key: str = "",
        api_mode: str = "chat_completions",
        hermes_home: str = "",
        force_compress_timeout: bool = False,
        parent: HostSession | None = None,
        pre_llm_call: list[Callable[..., Any]] | None = None,
        engine_source: str = "plugin",
    ) -> None:
        self.profile: HostProfile = get_profile(profile)
        self.config = config or HostConfig()
        self.provider = provider if provider is not None else Provider()
        self.store = store if store is not None else MemoryStore()
        self.model = model
        self.context_length = int(context_length)
        self.system_prompt = system_prompt
        self.recorder = recorder if recorder is not None else Recorder()
        self._cache_control = cache_control
        self.platform = platform
        self.conversation_id = conversation_id
        self.tool_executor = tool_executor
        self.provider_name, self.base_url, self.api_key, self.api_mode = (
            provider_name,
            base_url,
            api_key,
            api_mode,
        )
        self.hermes_home = hermes_home
        self.force_compress_timeout = force_compress_timeout
        self.parent = parent
        self.pre_llm_call: list[Callable[..., Any]] = list(pre_llm_call or [])
        self.registered = engine
        self.engine_active = True
        self.clone_error = ""
        self.engine_source = engine_source
        if (
            engine is not None
            and clone
            and self.profile.clone_plugins_only
            and engine_source != "plugin"
        ):
            # C1 on 0.22: an engine folder is loaded fresh for every agent, never cloned; a
            # subagent gets its own fresh copy (no clone_for_agent call).
            self.engine = engine if parent is None else copy.deepcopy(engine)
        elif engine is not None and clone:
            agent = clones.clone_for_agent(
                engine,
                profile=self.profile,
                recorder=self.recorder,
                builtin_factory=self.config.builtin_factory,
            )
            self.engine = agent.engine
            self.engine_active = not agent.fell_back
            self.clone_error = agent.error
        else:
            self.engine = engine
        self.session_id = ""
        self.system_message: dict[str, Any] | None = None
        self.transcript: list[dict[str, Any]] = []
        self.requests: list[bytes] = []
        self.compactions = 0
        self.passes: list[PassOutcome] = []
        self.cooldown_until = float("-inf")
        self.on_fallback = False
        self.last_turn_usage: dict[str, int] | None = None
        self.children: list[HostSession] = []
        self._turns = itertools.count(1)
        self._engine_tools: list[dict[str, Any]] = []
        self._engine_tool_names: set = set()
        self._started = False
        self._row_ids = itertools.count(1)
        self._anchored = False  # real usage arrived since the last compaction / new session
        self._last_finish_reason = "stop"
        self._pending: list[dict[str, Any]] = []  # persist_at_turn_end: rows not yet persisted

    # -- helpers ---------------------------------------------------------------------
    @property
    def clock(self) -> Any:
        """The virtual clock (the provider's), seconds."""
        return self.provider.clock

    @property
    def cache_control(self) -> bool:
        """P4: markers are placed for Claude models unless configured otherwise."""
        if self._cache_control is not None:
            return bool(self._cache_control)
        return "claude" in self.model.lower()

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an engine method through the recorder (exceptions propagate)."""
        return self.recorder.call(self.engine, method, *args, **kwargs)

    def _call_optional(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an optional engine method if present; errors are logged, not raised."""
        if self.engine is None or not callable(getattr(self.engine, method, None)):
            return None
        try:
            return self.call(method, *args, **kwargs)
        except Exception as exc:
            log.warning("Context engine %s() failed (session=%s): %s", method, self.session_id, exc)
            return None

    def _persist_turn_rows(self, new: list[dict[str, Any]]) -> None:
        """Persist rows a turn adds after its user message: now, or at the turn's end when
        the profile has ``persist_at_turn_end`` (they get their ``timestamp`` now)."""
        if not self.profile.persist_at_turn_end:
            self._persist(new)
            return
        if "timestamp" in self.profile.row_bookkeeping:
            for m in new:
                m.setdefault("timestamp", float(self.clock.now()))
        self._pending.extend(new)

    def _flush_pending(self) -> None:
        """Persist the rows :meth:`_persist_turn_rows` held back (still in the transcript)."""
        if self._pending:
            live = {id(m) for m in self.transcript}
            rows = [m for m in self._pending if id(m) in live]
            self._pending = []
            if rows:
                self._persist(rows)

    def _persist(self, new: list[dict[str, Any]]) -> None:
        if self.profile.stamps_uids:
            self.store.append(self.session_id, new)
        else:
            self.store.append(self.session_id, copy.deepcopy(new))
        self._stamp_rows(new)

    def _persist_all(self) -> None:
        rows = self.messages
        self.store.replace(
            self.session_id, rows if self.profile.stamps_uids else copy.deepcopy(rows)
        )
        self._stamp_rows(self.transcript)

    def _stamp_rows(self, rows: list[dict[str, Any]]) -> None:
        """The profile's ``row_bookkeeping`` keys on persisted live rows (not the system
        row), where missing: what a real Hermes host keeps on its rows (U9: never sent)."""
        keys = self.profile.row_bookkeeping
        if not keys:
            return
        for m in rows:
            if not isinstance(m, dict) or m.get("role") == "system":
                continue
            for key in keys:
                if key in m:
                    continue
                if key == "timestamp":
                    m[key] = float(self.clock.now())
                elif key == "_row_id":
                    m[key] = next(self._row_ids)
                elif key == "_db_persisted":
                    m[key] = True
                elif key == "_db_row_snapshot":
                    m[key] = json.dumps(
                        {"role": m.get("role"), "content": m.get("content")}, sort_keys=True
                    )

    def _assistant_row(self, choice: Mapping[str, Any]) -> dict[str, Any]:
        """The assistant row persisted for a response: the SDK message as returned
        (documented), or the row Hermes builds itself: role, content ("" when None),
        ``reasoning``, ``finish_reason`` and the tool calls."""
        message = choice.get("message") or {"role": "assistant", "content": ""}
        if self.profile.assistant_sdk_fields:
            return dict(message)
        row: dict[str, Any] = {
            "role": "assistant",
            "content": message.get("content") or "",
            "reasoning": message.get("reasoning_content") or message.get("reasoning"),
            "finish_reason": choice.get("finish_reason") or "stop",
        }
        if message.get("tool_calls"):
            row["tool_calls"] = [_canonical_call(tc) for tc in message["tool_calls"]]
        return row

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The transcript with the system message first (a new list of the live dicts)."""
        return ([self.system_message] if self.system_message is not None else []) + self.transcript

    @messages.setter
    def messages(self, value: list[dict[str, Any]]) -> None:
        """Replace the transcript; a leading system message becomes :attr:`system_message`."""
        value = list(value)
        if value and isinstance(value[0], dict) and value[0].get("role") == "system":
            self.system_message, value = value[0], value[1:]
        self.transcript = value

    def history(self) -> list[dict[str, Any]]:
        """The transcript without the system message (a new list of the live dicts)."""
        return list(self.transcript)

    # -- lifecycle -----------------------------------------------------------------
    def start(self, *, resume: str | None = None) -> None:
        """Agent init: model_thresholds (K1), update_model (O4), on_session_start (O1, L1).

        With ``resume`` (a session id in the store), the agent resumes that session instead of
        opening a new one: its history is restored from the store (U2, U3), as after a
        restart (:meth:`restore`). Idempotent: a second call does nothing.
        """
        if self._started:
            return
        self._started = True
        if resume is None:
            self.session_id = self.store.create_session(
                parent_id=self.parent.session_id if self.parent else None
            )
            if self.system_prompt:
                self.system_message = {"role": "system", "content": self.system_prompt}
                self._persist([self.system_message])
        else:
            self.session_id = resume
            self.messages = self.store.load(resume)
        if self.engine is None:
            return
        thresholds.assign_model_thresholds(
            self.engine, self.config.model_thresholds, profile=self.profile
        )
        self._call_optional(
            "update_model", **self._update_model_kwargs(self.model, self.context_length)
        )
        self._call_optional(
            "on_session_start",
            self.session_id,
            hermes_home=self.hermes_home,
            platform=self.platform or "cli",
            model=self.model,
            context_length=int(getattr(self.engine, "context_length", 0) or self.context_length),
            conversation_id=self.conversation_id,
        )
        self._load_engine_tools()

    def restore(self, session_id: str) -> None:
        """A new process resumes ``session_id``: :meth:`start` with the history restored from the
        store (U2, U3); this agent's engine is the fresh one it was built with."""
        self.start(resume=session_id)

    def continue_in(self, child_id: str, reason: str) -> None:
        """Branch or rotation: the agent goes on in ``child_id`` (a session the store made from
        this one) with its restored rows (U3), and the engine hears
        ``on_session_start(child_id, old_session_id=, boundary_reason=reason, platform=, model=)``.
        """
        old = self.session_id
        self.session_id = child_id
        self.messages = self.store.load(child_id)
        self._call_optional(
            "on_session_start",
            child_id,
            old_session_id=old,
            boundary_reason=reason,
            platform=self.platform or "cli",
            model=self.model,
        )

    def branch(self, upto: int | None = None) -> str:
        """Branch the session (the store copies it, up to row ``upto``) and continue in the
        child (:meth:`continue_in`, reason ``"branch"``); returns the child id."""
        child = self.store.branch(self.session_id, upto)
        self.continue_in(child, "branch")
        return child

    def rotate(self) -> str:
        """Rotate the session into a child holding the current messages and continue there, as
        Hermes rotates at a compaction with ``compression.in_place: false``: the store ends
        the session and copies its rows into the child (U3), then the engine hears
        ``on_session_end(old, messages)`` and ``on_session_start(child,
        boundary_reason="compression", old_session_id=old, ...)`` (Hermes sends no other
        reason for a rotation). Returns the child id."""
        if not self._started:
            self.start()
        old, previous = self.session_id, copy.deepcopy(self._hook_rows())
        child = self.store.rotate(old, self.messages)
        self.session_id = child
        self.messages = self.store.load(child)
        self._boundary_callbacks(old, previous)
        return child

    def _update_model_kwargs(self, model: str, context_length: int) -> dict[str, Any]:
        return calls.update_model_kwargs(
            model,
            context_length,
            base_url=self.base_url,
            api_key=self.api_key,
            provider=self.provider_name,
            api_mode=self.api_mode,
        )

    def switch_model(self, model: str, context_length: int | None = None, **kwargs: Any) -> None:
        """A model switch (/model, fallback): ``update_model`` with Hermes' kwargs (K1, K2)."""
        self.model = model
        if context_length is not None:
            self.context_length = int(context_length)
        for key in ("base_url", "api_key", "api_mode"):
            if key in kwargs:
                setattr(self, key, kwargs[key])
        if "provider" in kwargs:
            self.provider_name = kwargs["provider"]
        self._call_optional(
            "update_model", **self._update_model_kwargs(self.model, self.context_length)
        )

    def _load_engine_tools(self) -> None:
        schemas = self._call_optional("get_tool_schemas") or []
        for schema in schemas if isinstance(schemas, list) else []:
            name = schema.get("name") if isinstance(schema, dict) else None
            if not name:
                log.warning("Context engine tool schema without a name skipped (T1)")
                continue
            if name in self._engine_tool_names:
                continue
            self._engine_tool_names.add(name)
            self._engine_tools.append({"type": "function", "function": schema})

    def end(self) -> None:
        """A real session boundary: on_session_end(session_id, messages) (O2)."""
        self._call_optional("on_session_end", self.session_id, copy.deepcopy(self._hook_rows()))

    def _hook_rows(self) -> list[dict[str, Any]]:
        """The rows on_session_end and on_turn_complete get: with the system row first
        (documented) or the history alone (real Hermes hosts, ``hooks_with_system``)."""
        return self.messages if self.profile.hooks_with_system else self.history()

    def reset(self) -> None:
        """``reset_session_state()`` with no arguments: only on_session_reset (O3)."""
        self._call_optional("on_session_reset")

    def new_session(self) -> str:
        """/new: a session transition (O2, O3, O1 in Hermes' order); returns the new id.

        on_session_end(old id, previous messages) -> on_session_reset() ->
        on_session_start(new id, old_session_id=, platform=, model=, context_length=,
        conversation_id=) with None/"" values dropped. The transcript starts empty
        (system prompt kept).
        """
        if not self._started:
            self.start()
        old, previous = self.session_id, copy.deepcopy(self._hook_rows())
        self._call_optional("on_session_end", old, previous)
        self._call_optional("on_session_reset")
        self._anchored = False
        self.session_id = self.store.create_session(parent_id=old)
        self.transcript = []
        if self.system_message is not None:
            self._persist(
                [self.system_message] if self.profile.stamps_uids else [dict(self.system_message)]
            )
        kwargs: dict[str, Any] = {"old_session_id": old}
        if self.profile.new_session_carry_over:
            kwargs["carry_over_context"] = False
        kwargs |= {
            "platform": self.platform or "cli",
            "model": self.model,
            "context_length": int(getattr(self.engine, "context_length", 0) or self.context_length),
            "conversation_id": self.conversation_id,
        }
        self._call_optional(
            "on_session_start",
            self.session_id,
            **{k: v for k, v in kwargs.items() if v not in (None, "")},
        )
        self.cooldown_until = float("-inf")
        return self.session_id

    def spawn_subagent(
        self,
        *,
        model: str | None = None,
        context_length: int | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> HostSession:
        """C1: a child agent; its engine is cloned from the *registered* engine at its init.

        The child shares the provider, store, recorder, profile and config; ``model`` /
        ``context_length`` default to the parent's. Returns the started child session.
        """
        child = HostSession(
            self.registered,
            self.provider,
            self.store,
            model=model or self.model,
            context_length=context_length or self.context_length,
            system_prompt=system_prompt if system_prompt is not None else self.system_prompt,
            profile=self.profile,
            config=self.config,
            recorder=self.recorder,
            cache_control=self._cache_control,
            clone=True,
            platform=self.platform,
            tool_executor=self.tool_executor,
            parent=self,
            provider_name=self.provider_name,
            base_url=self.base_url,
            api_key=self.api_key,
            api_mode=self.api_mode,
            hermes_home=self.hermes_home,
            **kwargs,
        )
        child.start()
        self.children.append(child)
        return child

    # -- requests -----------------------------------------------------------------------
    def _incoming(self, incoming: dict[str, Any] | None) -> dict[str, Any] | None:
        if incoming is not None and any(m is incoming for m in self.messages):
            return incoming
        return next((m for m in reversed(self.messages) if m.get("role") == "user"), None)

    def build_request(self, incoming: dict[str, Any] | None = None) -> dict[str, Any]:
        """The provider request body for the current transcript (pipeline stages 1-4, H4)."""
        prof = self.profile
        ctx = pipeline.RequestContext(
            self.engine,
            None,
            self.messages,
            self._incoming(incoming),
            int(getattr(self.engine, "context_length", 0) or 0) if self.engine is not None else 0,
            self.cache_control,
            self.config.cache_ttl,
            self.config.native_anthropic,
            self.recorder,
            self.session_id,
            prof.strip_underscore_keys,
            list(self.pre_llm_call),
            conversation=None if prof.hooks_with_system else self.history(),
            request_strip=(
                prof.persistence_fields | tokens.PERSISTENCE_ONLY_FIELDS
                if prof.request_strips_persistence_fields
                else frozenset()
            ),
            request_drop=() if prof.assistant_sdk_fields else ("finish_reason", "reasoning"),
            restrip_selection=prof.restrip_selection,
            drop_tool_name=prof.tool_rows_named and not prof.wire_tool_name,
        )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": pipeline.run_stages(ctx, self.profile),
        }
        if self._engine_tools:
            body["tools"] = copy.deepcopy(self._engine_tools)
        return body

    def _send(self, body: dict[str, Any], sent: list[bytes]) -> dict[str, Any]:
        raw = serialize_request(body)
        self.requests.append(raw)
        sent.append(raw)
        return self.provider.chat_completions(body)

    @staticmethod
    def _classify(err: ProviderError) -> str:
        body = err.body if isinstance(err.body, dict) else {}
        code = (
            str((body.get("error") or {}).get("code") or "")
            if isinstance(body.get("error"), dict)
            else ""
        )
        text = json.dumps(body).lower()
        if (
            err.status == 413
            or code == "context_length_exceeded"
            or "context length" in text
            or "too long" in text
        ):
            return "overflow"
        headers = {k.lower(): v for k, v in (err.headers or {}).items()}
        if headers.get("x-should-retry") == "false":
            return "terminal"
        return "retryable" if err.status in RETRYABLE_STATUS else "terminal"

    # -- turns -------------------------------------------------------------------------
    def user_turn(self, text: str, *, interrupt: bool = False) -> TurnResult:
        """Run one user turn (see the module doc); returns a :class:`TurnResult`.

        Args:
            text: the user's message content.
            interrupt: simulate an interrupt before the first provider response
                (on_turn_complete then gets ``usage=None, interrupted=True``).
        """
        if not self._started:
            self.start()
        self.clock.advance(self.config.seconds_per_turn)
        self.last_turn_usage = None
        turn_id = f"turn-{next(self._turns)}"
        incoming = {"role": "user", "content": text}
        self.transcript.append(incoming)
        self._persist([incoming])
        res = TurnResult(None, 0, 0, None)
        if interrupt:
            res.interrupted, res.turn_exit_reason = True, "interrupted"
            return self._finish_turn(res, turn_id)
        retries = 0
        compression_attempts = 0
        prof = self.profile
        body: dict[str, Any] = {}
        resend = False  # a transport retry re-sends the assembled request as is
        while True:
            if res.provider_calls >= self.config.max_iterations:
                res.turn_exit_reason = "max_iterations"
                break
            if not resend:
                if prof.select_before_gate:  # 0.22: assembled (select_context) before the gate
                    body = self.build_request(incoming)
                if (
                    compression_attempts < self.config.max_compression_attempts
                    and self._pre_api_check()
                ):
                    compression_attempts += 1
                    if self._compress_pass(current_tokens=self._estimate(), force=False):
                        res.compactions += 1
                        continue  # restart: the request is re-assembled, select_context re-runs
                    if self.passes and self.passes[-1].timed_out and prof.timeout_ends_turn:
                        return self._end_on_timeout(res, turn_id)
                if not prof.select_before_gate:
                    body = self.build_request(incoming)
            resend = False
            try:
                response = self._send(body, res.requests)
            except ProviderError as err:
                kind = self._classify(err)
                if kind == "retryable" and retries < self.config.max_retries:
                    retries += 1
                    resend = not prof.reselect_on_retry
                    log.info(
                        "Provider answered %s; host retry %d (%s)",
                        err.status,
                        retries,
                        "the same request" if resend else "select_context re-runs",
                    )
                    continue
                if (
                    kind in ("retryable", "terminal")
                    and self.config.fallback_model
                    and not self.on_fallback
                ):
                    self.on_fallback = True
                    retries = 0
                    log.warning(
                        "Provider answered %s; switching to fallback model %s",
                        err.status,
                        self.config.fallback_model,
                    )
                    self.switch_model(
                        self.config.fallback_model,
                        self.config.fallback_context_length or self.context_length,
                    )
                    continue
                if (
                    kind == "overflow"
                    and compression_attempts < self.config.max_compression_attempts
                ):
                    compression_attempts += 1
                    if self._compress_pass(
                        current_tokens=self._estimate(),
                        force=True,
                        bypass_cooldown=prof.bypass_cooldown_kwarg,
                    ):
                        res.compactions += 1
                        continue
                log.warning(
                    "Provider failed terminally (%s); the turn ends without on_turn_complete",
                    err.status,
                )
                res.failed, res.turn_exit_reason = True, "provider_error"
                res.error = str(err)
                self._flush_pending()
                return res
            res.provider_calls += 1
            usage = canonical_usage(response.get("usage"))
            res.usage = self.last_turn_usage = usage
            choice = (response.get("choices") or [{}])[0]
            filtered = choice.get("finish_reason") == CONTENT_FILTER
            if self.engine is not None and (prof.usage_on_content_filter or not filtered):
                self.call("update_from_response", usage)
                self._anchored = True
            if filtered:
                log.warning(
                    "Provider blocked the response (content "
                    "policy); the turn ends without on_turn_complete"
                )
                res.turn_exit_reason = CONTENT_FILTER
                if prof.content_filter_stand_in:
                    notice = {
                        "role": "assistant",
                        "content": prof.content_filter_stand_in,
                        "display_kind": "notice",
                        "display_metadata": {},
                    }
                    self.transcript.append(notice)
                    self._persist_turn_rows([notice])
                self._flush_pending()
                return res
            reply = self._assistant_row(choice)
            self._last_finish_reason = str(choice.get("finish_reason") or "stop")
            self.transcript.append(reply)
            self._persist_turn_rows([reply])
            res.reply = reply
            if reply.get("tool_calls"):
                known = self._run_tools(reply)
                if not known:
                    continue  # only tools the request never offered: no post-tool check
                real = (
                    int(getattr(self.engine, "last_prompt_tokens", 0) or 0)
                    if self.engine is not None
                    else 0
                )
                if (
                    self.engine is not None
                    and self.config.compression_enabled
                    and not self._cooling_down()
                    and compression_attempts < self.config.max_compression_attempts
                ):
                    pressure = real if real > 0 else (0 if real == -1 else self._estimate())
                    if self._should_compress(pressure):
                        compression_attempts += 1
                        if self._compress_pass(current_tokens=real, force=False):
                            res.compactions += 1
                    elif prof.prune_after_tools:
                        self._prune_tool_results(pressure)
                continue
            res.turn_exit_reason = "text_response"
            break
        return self._finish_turn(res, turn_id)

    def _end_on_timeout(self, res: TurnResult, turn_id: str) -> TurnResult:
        """0.22: a pre-API compaction that timed out ends the turn: the stand-in assistant
        row is persisted and on_turn_complete gets ``failed=True,
        turn_exit_reason="context_compression_timeout"`` (TS1)."""
        if self.profile.timeout_stand_in:
            notice = {"role": "assistant", "content": self.profile.timeout_stand_in}
            self.transcript.append(notice)
            self._persist_turn_rows([notice])
        res.failed, res.turn_exit_reason = True, "context_compression_timeout"
        return self._finish_turn(res, turn_id)

    def _prune_tool_results(self, pressure: int) -> None:
        """0.22's post-tool path when should_compress said no: ``should_compress_info``
        (why a compaction is blocked) and the cheap ``prune_tool_results_only(messages,
        current_tokens=)``, each only when the engine has it; a NEW list with a non-zero
        count replaces the transcript."""
        if self.profile.compress_info and callable(
            getattr(self.engine, "should_compress_info", None)
        ):
            self._call_optional("should_compress_info", int(pressure))
        if not callable(getattr(self.engine, "prune_tool_results_only", None)):
            return
        live = self.transcript
        out = self._call_optional("prune_tool_results_only", live, current_tokens=int(pressure))
        if isinstance(out, tuple) and len(out) == 2:
            pruned, count = out
            if count and pruned is not live and isinstance(pruned, list):
                self.transcript = list(pruned)
                self._persist_all()

    def _finish_turn(self, res: TurnResult, turn_id: str) -> TurnResult:
        self._flush_pending()
        prof = self.profile
        if prof.calls_on_turn_complete and self.engine is not None:
            reason = res.turn_exit_reason
            if prof.exit_reason_finish and reason == "text_response":
                reason = f"text_response(finish_reason={self._last_finish_reason})"
            res.on_turn_complete_fired = hooks.fire_on_turn_complete(
                self.engine,
                self.messages if prof.hooks_with_system else self.history(),
                res.usage,
                recorder=self.recorder,
                session_id=self.session_id,
                usage_keyword=prof.usage_keyword,
                turn_id=turn_id,
                task_id=self.session_id,
                api_call_count=res.provider_calls,
                interrupted=res.interrupted,
                failed=res.failed,
                turn_exit_reason=reason,
            )
        return res

    def _run_tools(self, reply: dict[str, Any]) -> bool:
        """Run the reply's tool calls and persist their results; returns False when every
        call named a tool the request never offered and the profile answers those the way
        Hermes does (``unknown_tool_reply``: no post-tool check follows)."""
        results = []
        known = False
        prof = self.profile
        for tc in reply.get("tool_calls") or ():
            fn = tc.get("function") or {}
            name = fn.get("name", "")
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except (TypeError, ValueError):
                args = fn.get("arguments")
            if prof.unknown_tool_reply and name not in self._engine_tool_names:
                available = ", ".join(sorted(self._engine_tool_names))
                content = f"Tool '{name}' does not exist. Available tools: {available}".rstrip()
                row = {"role": "tool", "tool_call_id": tc.get("id"), "content": content}
                if prof.tool_rows_named:
                    row["name"] = name
                results.append(row)
                continue
            known = True
            if name in self._engine_tool_names:
                try:
                    content = self.call("handle_tool_call", name, args, messages=self.transcript)
                except Exception as exc:
                    content = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            else:
                content = self.tool_executor(name, args)
            row = {"role": "tool", "tool_call_id": tc.get("id"), "content": str(content)}
            if prof.tool_rows_named:
                row["name"] = name
            results.append(row)
        self.transcript.extend(results)
        self._persist_turn_rows(results)
        return known or not prof.unknown_tool_reply

    def _estimate(self) -> int:
        """Request pressure: the tokens of the assembled request plus tool schemas."""
        return tokens.count_messages(
            pipeline.strip_persistence_fields(self.messages)
        ) + tokens.count_tools(self._engine_tools or None)

    def _cooling_down(self) -> bool:
        return self.clock.now() < self.cooldown_until

    def _pre_api_check(self) -> bool:
        if self.engine is None or not self.config.compression_enabled or len(self.history()) <= 1:
            return False
        if self._cooling_down():
            return False
        estimate = self._estimate()
        mode = self.profile.defer_preflight
        ask = mode == "every_check" or (mode == "unanchored" and not self._anchored)
        defer = getattr(self.engine, "should_defer_preflight_to_real_usage", None)
        if ask and callable(defer):
            if self._call_optional("should_defer_preflight_to_real_usage", int(estimate)):
                return False
        result = self._should_compress(estimate)
        if ask and callable(defer) and mode == "unanchored":
            # 0.22 asks again when it seeds the display figure from the same rough estimate
            self._call_optional("should_defer_preflight_to_real_usage", int(estimate))
        return result

    def _should_compress(self, prompt_tokens: int) -> bool:
        return bool(self.call("should_compress", int(prompt_tokens)))

    # -- compaction --------------------------------------------------------------------
    def compress(
        self,
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = True,
    ) -> int:
        """Manual ``/compress [focus]``: one pass, ignoring the cooldown; returns 1 if committed."""
        if not self._started:
            self.start()
        if current_tokens is None:
            current_tokens = self._estimate()
        return (
            1
            if self._compress_pass(
                current_tokens=current_tokens, focus_topic=focus_topic, force=force, manual=True
            )
            else 0
        )

    def _compress_pass(
        self,
        *,
        current_tokens: int | None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
        bypass_cooldown: bool = False,
        manual: bool = False,
    ) -> bool:
        """Run one compression pass and commit it if it finished in time (TS1, TS2, A7)."""
        if self.engine is None:
            return False
        self._flush_pending()
        prof = self.profile
        if self.profile.compress_with_system:
            source = self.messages  # a new list; run_pass deep-copies it when the profile snapshots
        else:
            source = (
                self.transcript if not self.profile.compress_snapshot else list(self.transcript)
            )
        pre = list(source)
        kwargs = calls.compress_kwargs(
            self.engine,
            current_tokens=current_tokens,
            focus_topic=focus_topic,
            force=force,
            memory_context=memory_context,
            bypass_cooldown=bypass_cooldown,
        )
        timeout = self.compaction_timeout()
        outcome = run_pass(
            self.engine,
            source,
            kwargs=kwargs,
            profile=prof,
            timeout_seconds=timeout,
            recorder=self.recorder,
            force_timeout=self.force_compress_timeout,
        )
        self.passes.append(outcome)
        if outcome.timed_out:
            if prof.host_timeout_cooldown:
                self.cooldown_until = self.clock.now() + self.config.failure_cooldown_seconds
            log.warning(TIMEOUT_WARNING, timeout, self.config.failure_cooldown_seconds)
            failures = getattr(self.engine, "_consecutive_timeout_failures", 0)
            if (
                prof.stall_retry
                and not bypass_cooldown
                and isinstance(failures, int)
                and not isinstance(failures, bool)
                and failures >= 1
            ):
                # 0.22's stall retry: an uncleared earlier timeout escalates to one more
                # pass (its deterministic route), with bypass_cooldown=True
                return self._compress_pass(
                    current_tokens=current_tokens,
                    focus_topic=focus_topic,
                    force=force,
                    memory_context=memory_context,
                    bypass_cooldown=True,
                    manual=manual,
                )
            return False
        if not outcome.committed or outcome.result is None:
            return False
        result = list(outcome.result)
        if (
            self.profile.compress_with_system
            and result
            and isinstance(result[0], dict)
            and result[0].get("role") == "system"
        ):
            self.system_message, result = result[0], result[1:]
        self.transcript = result
        old = self.session_id
        if self.config.compression_in_place:
            self._persist_all()  # a new generation of the same session; the old one is kept
        else:  # compression.in_place: false: the compacted rows go on in a child session
            rows = self.messages
            self.session_id = self.store.rotate(
                old, rows if self.profile.stamps_uids else copy.deepcopy(rows)
            )
        self.engine.last_prompt_tokens = -1  # A7: "compression just ran, no real usage yet"
        self.compactions += 1
        self._anchored = False
        if prof.boundary_callbacks:
            if prof.boundary_on_pool_thread and outcome.worker is not None:
                # 0.22: the worker that ran compress() also commits and notifies
                if manual and prof.manual_start_on_caller:
                    shared_pool().submit(self._call_optional, "on_session_end", old, pre).result()
                    self._boundary_start(old)
                else:
                    shared_pool().submit(self._boundary_callbacks, old, pre).result()
            else:
                self._boundary_callbacks(old, pre)
        return True

    def compaction_timeout(self) -> float:
        """The host timeout of a compaction pass in seconds (TS1): the configured
        ``compression.context_timeout_seconds``, raised to the profile's floor and capped by
        its ceiling (0.22: at least 300 s, at most 600 s); 0 stays 0 (inline)."""
        timeout = float(self.config.context_timeout_seconds)
        if timeout <= 0:
            return timeout
        prof = self.profile
        if prof.timeout_floor_seconds > 0:
            ceiling = prof.timeout_ceiling_seconds or float("inf")
            timeout = max(timeout, min(prof.timeout_floor_seconds, ceiling))
        if prof.timeout_ceiling_seconds > 0:
            timeout = min(timeout, max(prof.timeout_ceiling_seconds, prof.timeout_floor_seconds))
        return timeout

    def _boundary_callbacks(self, old: str, previous: list[dict[str, Any]]) -> None:
        """What Hermes sends after a committed compaction (L1, O2): ``on_session_end(old,
        previous)``, then ``on_session_start(current id, boundary_reason="compression",
        old_session_id=old, ...)``; the current id is ``old`` in place and the child's on
        rotation. Not a new conversation: the engine keeps its state (L1)."""
        self._call_optional("on_session_end", old, previous)
        self._boundary_start(old)

    def _boundary_start(self, old: str) -> None:
        """``on_session_start(current id, boundary_reason="compression", old_session_id=old,
        platform=, conversation_id=)`` after a committed compaction (L1)."""
        self._call_optional(
            "on_session_start",
            self.session_id,
            boundary_reason="compression",
            old_session_id=old,
            platform=self.platform or "cli",
            conversation_id=self.conversation_id,
        )  # no model=: Hermes 0.19.0 sends none here (tests/host/test_hermes_profile.py)
