"""Host profiles: which Hermes host the reference host plays.

``documented`` (the default) follows the seeds and docs/contract.md. ``hermes-0.19`` plays
what the released hermes-agent 0.19.0 host does (docs/host.md, Profiles), so an engine
author can see whether an engine works on both:

- select_context and on_turn_complete are never called (H4 note);
- compress() gets the live history without the system message, on the caller's thread,
  with no timeout;
- on_session_end, then on_session_start(boundary_reason="compression"), fire after every
  committed compaction (the documented host sends them too, as current Hermes does);
- prompt-cache markers are placed before the request sanitizers;
- no clone_for_agent (deepcopy only) and no user plugin folder;
- no model_thresholds and no message_uid / tool-call uids;
- the wire rule strips every top-level key starting with ``_``;
- the hooks' messages carry no system row and the assistant rows no SDK extras.

``hermes-0.22`` plays what hermes-agent 0.22.2 does (docs/host.md, Profiles): select_context
before the pre-API gate and not on a transport retry, ``request_messages`` stripped of the
persistence-only fields, hooks without the system row, boundary callbacks on the pool thread,
clone_for_agent only for general plugins, ``usage=`` as a keyword, the 300 s / 600 s compaction
timeouts with a stall retry, and the 0.22 ABC extras (prune, info, defer) when an engine has them.
Every difference is one named field of :class:`HostProfile`.
"""

from __future__ import annotations

from dataclasses import dataclass

DOCUMENTED = "documented"
HERMES_019 = "hermes-0.19"
HERMES_022 = "hermes-0.22"

#: Hermes 0.22's ``PERSISTENCE_ONLY_MESSAGE_FIELDS`` (13 names + the 2 repair-bookkeeping
#: ones): what a real 0.22 host pops from the wire copy of every message before select_context
#: sees it, and again from the returned selection (U9, H3). ``_db_persisted`` is not in it.
HERMES_022_PERSISTENCE_FIELDS = frozenset(
    {
        "timestamp",
        "display_kind",
        "display_metadata",
        "_row_id",
        "_submit_row_session_id",
        "_merged_turn_prefix",
        "message_uid",
        "_absorbed_message_uids",
        "_tool_call_uids",
        "_tool_call_uid",
        "_merged_durable_rows",
        "_unnamed_durable_rows",
        "_retired_durable_rows",
        "_db_row_snapshot",
        "_canonical_row",
    }
)

#: The assistant row Hermes 0.22 persists after a content-filtered response.
HERMES_022_CONTENT_FILTER_REPLY = (
    "Your request was not processed. Send it again if you still want me to carry it out."
)
#: The assistant row Hermes 0.22 persists when a pre-API compaction times out.
HERMES_022_TIMEOUT_REPLY = (
    "Context compression timed out without reducing this conversation. No messages were "
    "dropped. Start a fresh session with /new, or check auxiliary.compression before "
    "retrying /compress."
)


@dataclass(frozen=True)
class HostProfile:
    """What one host version does; every field names the behaviour it switches.

    Attributes:
        name: ``"documented"``, ``"hermes-0.19"`` or ``"hermes-0.22"``.
        stages: request pipeline stage names, in order (H4; see :mod:`simulator.host.pipeline`).
        calls_on_turn_complete: H5 hook fired at the end of a normal turn.
        compress_with_system: compress() input starts with the system message (documented)
            or is the history without it (0.19.0).
        compress_snapshot: compress() gets a private deep snapshot (TS2) or the live list.
        compress_timeout: ``compression.context_timeout_seconds`` is honoured (TS1); when
            False every pass runs inline on the caller's thread with no timeout.
        boundary_callbacks: on_session_end + on_session_start(boundary_reason="compression",
            old_session_id=...) after every committed compaction (0.19.0 and current Hermes).
        commit_needs_progress: a pass commits only when its new list removed rows or tokens
            (current Hermes); when False any new list commits (0.19.0 as recorded).
        clone_for_agent: C1 hook used at agent init (False: ``copy.deepcopy`` only).
        user_plugin_dir: R3 ``$HERMES_HOME/plugins/<name>/`` is searched for engines.
        model_thresholds: K1 ``compression.model_thresholds`` assigned before update_model.
        stamps_uids: U1 message_uid minted on persisted messages.
        strip_underscore_keys: wire rule of 0.19.0: strip every top-level ``_*`` key.
        hooks_with_system: select_context's ``conversation_messages``, on_turn_complete's and
            on_session_end's ``messages`` start with the system message (documented); real
            Hermes hosts hand the history without it.
        request_strips_persistence_fields: select_context's ``request_messages`` arrive with
            the persistence-only fields (``message_uid``, ``timestamp``, ...) already removed
            (real Hermes 0.22); False: they carry ``message_uid`` (documented).
        select_before_gate: the request (select_context included) is assembled BEFORE the
            pre-API ``should_compress`` gate of every loop iteration, so a compaction turn
            runs select_context twice (0.22); False: the gate first, then the request.
        reselect_on_retry: a transport retry (429/5xx) goes back through the pre-API check and
            assembles the request again, select_context included (documented); False: the
            assembled request is re-sent as is (0.19, 0.22).
        persistence_fields: extra persistence-only keys the host keeps off the wire and off
            ``request_messages`` (0.22: :data:`HERMES_022_PERSISTENCE_FIELDS`).
        db_persisted_marker: request copies of persisted rows carry ``_db_persisted: True``
            (0.22's marker; select_context sees it, the wire does not).
        restrip_selection: the returned selection is stripped of the persistence fields again.
        assistant_sdk_fields: the persisted assistant row keeps the SDK message's extra keys
            (``refusal``, ...) as the provider returned them (documented); False: Hermes builds
            its own row (role, content, tool_calls, reasoning fields only).
        boundary_on_pool_thread: on_session_end / on_session_start(boundary_reason=
            "compression") after a compaction run on the compression pool thread (0.22).
        clone_plugins_only: clone_for_agent only for engines loaded as general plugins;
            plugin-folder engines are loaded fresh per agent (0.22).
        usage_keyword: on_turn_complete gets ``usage=`` as a keyword (0.22); False: positional.
        exit_reason_finish: turn_exit_reason carries the finish reason,
            ``"text_response(finish_reason=stop)"`` (0.22).
        bypass_cooldown_kwarg: overflow recovery and the stall retry pass compress()
            ``bypass_cooldown=True`` when the signature accepts it (0.22).
        timeout_floor_seconds: the compaction idle timeout is at least this many seconds
            (0.22: 300, the auxiliary compression timeout); 0: no floor.
        timeout_ceiling_seconds: the compaction timeout never exceeds this (0.22: 600); 0: none.
        stall_retry: a timed-out pass re-runs compress() once on the fallback route (0.22).
        timeout_ends_turn: a pre-API compaction timeout ends the turn with
            ``context_compression_timeout`` (0.22); False: the turn goes on uncompacted.
        prune_after_tools: after tool results, when should_compress says no, the host calls
            ``prune_tool_results_only(messages, current_tokens=)`` if the engine has it (0.22).
        compress_info: a blocked or declined compaction asks ``should_compress_info`` and the
            preflight asks ``should_defer_preflight_to_real_usage``; manual /compress asks
            ``has_content_to_compress`` (0.22; only when the engine has them).
        hygiene_anchor: gateway hygiene measures with the persisted usage anchor between real
            usage and the rough estimate (0.22).
        hygiene_cooldown_ladder: a failed hygiene pass starts a 300 s cooldown growing x1/x3/x9.
        row_bookkeeping: keys the host keeps on its live rows once they are persisted, so
            engines see them in compress() input and the hooks (0.19: ``_db_persisted``;
            0.22: ``timestamp``, ``_row_id``, ``_db_persisted``, ``_db_row_snapshot``).
        tool_rows_named: tool result rows carry the tool's ``name`` (0.19 sends it on the
            wire; 0.22 keeps it off the wire, see ``wire_tool_name``).
        wire_tool_name: the tool row's ``name`` reaches the provider (0.19).
        usage_on_content_filter: update_from_response is called for a content-filtered
            response (documented); real Hermes hosts skip it.
        content_filter_stand_in: the assistant row a host persists after a content-filtered
            response ("" = none, the turn's user message stays unanswered).
        timeout_stand_in: the assistant row persisted when a pre-API compaction times out
            and ``timeout_ends_turn``.
        host_timeout_cooldown: the host blocks automatic compaction for
            ``failure_cooldown_seconds`` after a timed-out pass (documented); 0.22 leaves the
            cooldown to the engine (its built-in compressor keeps one; plugin engines do not).
        defer_preflight: when the pre-API check asks ``should_defer_preflight_to_real_usage``
            (engines that have it): ``"every_check"`` (0.19: before every should_compress),
            ``"unanchored"`` (0.22: before and after should_compress while no real usage has
            arrived since the last compaction), ``""`` never.
        new_session_carry_over: /new's on_session_start gets ``carry_over_context=False``.
        manual_start_on_caller: after a manual /compress, on_session_start runs on the
            caller's thread (0.22 defers that notification to the caller).
        persist_at_turn_end: the rows of a turn after its user message (assistant replies,
            tool results) are persisted when the turn ends; until then they carry only a
            ``timestamp`` (0.22: no uid, no ``_db_persisted`` mid-turn).
        unknown_tool_reply: a call to a tool the request did not offer is answered with
            Hermes' ``Tool 'X' does not exist. Available tools: ...`` and no post-tool
            compaction check follows (0.19, 0.22).
    """

    name: str
    stages: tuple[str, ...]
    calls_on_turn_complete: bool
    compress_with_system: bool
    compress_snapshot: bool
    compress_timeout: bool
    boundary_callbacks: bool
    commit_needs_progress: bool
    clone_for_agent: bool
    user_plugin_dir: bool
    model_thresholds: bool
    stamps_uids: bool
    strip_underscore_keys: bool
    hooks_with_system: bool = True
    request_strips_persistence_fields: bool = False
    select_before_gate: bool = False
    reselect_on_retry: bool = True
    persistence_fields: frozenset[str] = frozenset()
    db_persisted_marker: bool = False
    restrip_selection: bool = False
    assistant_sdk_fields: bool = True
    boundary_on_pool_thread: bool = False
    clone_plugins_only: bool = False
    usage_keyword: bool = False
    exit_reason_finish: bool = False
    bypass_cooldown_kwarg: bool = False
    timeout_floor_seconds: float = 0.0
    timeout_ceiling_seconds: float = 0.0
    stall_retry: bool = False
    timeout_ends_turn: bool = False
    prune_after_tools: bool = False
    compress_info: bool = False
    hygiene_anchor: bool = False
    hygiene_cooldown_ladder: bool = False
    row_bookkeeping: tuple[str, ...] = ()
    tool_rows_named: bool = False
    wire_tool_name: bool = False
    usage_on_content_filter: bool = True
    content_filter_stand_in: str = ""
    timeout_stand_in: str = ""
    host_timeout_cooldown: bool = True
    defer_preflight: str = ""
    new_session_carry_over: bool = False
    manual_start_on_caller: bool = False
    unknown_tool_reply: bool = False
    persist_at_turn_end: bool = False

    def has(self, feature: str) -> bool:
        """Whether this host has ``feature`` (one of :data:`HOST_FEATURES`), read off its own
        fields: ``select_context`` is a request stage (H3), ``on_turn_complete`` is fired (H5),
        ``clone_for_agent`` is used at agent init (C1), ``model_thresholds`` is assigned (K1),
        ``message_uid`` is stamped on persisted messages (U1).

        Raises:
            KeyError: an unknown feature name.
        """
        return _FEATURE_FIELDS[feature](self)


_FEATURE_FIELDS = {
    "select_context": lambda p: "select_context" in p.stages,
    "on_turn_complete": lambda p: p.calls_on_turn_complete,
    "clone_for_agent": lambda p: p.clone_for_agent,
    "model_thresholds": lambda p: p.model_thresholds,
    "message_uid": lambda p: p.stamps_uids,
}
#: Host features a clause or a check may need; a host profile lacking one skips them.
HOST_FEATURES = tuple(_FEATURE_FIELDS)


PROFILES = {
    DOCUMENTED: HostProfile(
        name=DOCUMENTED,
        stages=("assemble", "select_context", "sanitize", "cache_control"),
        calls_on_turn_complete=True,
        compress_with_system=True,
        compress_snapshot=True,
        compress_timeout=True,
        boundary_callbacks=True,
        commit_needs_progress=True,
        clone_for_agent=True,
        user_plugin_dir=True,
        model_thresholds=True,
        stamps_uids=True,
        strip_underscore_keys=True,
    ),
    HERMES_019: HostProfile(
        name=HERMES_019,
        stages=("assemble", "cache_control", "sanitize"),
        calls_on_turn_complete=False,
        compress_with_system=False,
        compress_snapshot=False,
        compress_timeout=False,
        boundary_callbacks=True,
        commit_needs_progress=False,
        clone_for_agent=False,
        user_plugin_dir=False,
        model_thresholds=False,
        stamps_uids=False,
        strip_underscore_keys=True,
        hooks_with_system=False,
        assistant_sdk_fields=False,
        row_bookkeeping=("_db_persisted",),
        reselect_on_retry=False,
        tool_rows_named=True,
        wire_tool_name=True,
        usage_on_content_filter=False,
        defer_preflight="every_check",
        new_session_carry_over=True,
        unknown_tool_reply=True,
    ),
    HERMES_022: HostProfile(
        name=HERMES_022,
        stages=("assemble", "select_context", "sanitize", "cache_control"),
        calls_on_turn_complete=True,
        compress_with_system=False,
        compress_snapshot=True,
        compress_timeout=True,
        boundary_callbacks=True,
        commit_needs_progress=True,
        clone_for_agent=True,
        user_plugin_dir=True,
        model_thresholds=True,
        stamps_uids=True,
        strip_underscore_keys=True,
        hooks_with_system=False,
        request_strips_persistence_fields=True,
        select_before_gate=True,
        reselect_on_retry=False,
        persistence_fields=HERMES_022_PERSISTENCE_FIELDS,
        db_persisted_marker=True,
        restrip_selection=True,
        assistant_sdk_fields=False,
        boundary_on_pool_thread=True,
        clone_plugins_only=True,
        usage_keyword=True,
        exit_reason_finish=True,
        bypass_cooldown_kwarg=True,
        timeout_floor_seconds=300.0,
        timeout_ceiling_seconds=600.0,
        stall_retry=True,
        timeout_ends_turn=True,
        prune_after_tools=True,
        compress_info=True,
        hygiene_anchor=True,
        hygiene_cooldown_ladder=True,
        row_bookkeeping=("timestamp", "_row_id", "_db_persisted", "_db_row_snapshot"),
        tool_rows_named=True,
        usage_on_content_filter=False,
        content_filter_stand_in=HERMES_022_CONTENT_FILTER_REPLY,
        timeout_stand_in=HERMES_022_TIMEOUT_REPLY,
        host_timeout_cooldown=False,
        defer_preflight="unanchored",
        new_session_carry_over=True,
        manual_start_on_caller=True,
        unknown_tool_reply=True,
        persist_at_turn_end=True,
    ),
}


def get_profile(profile: str | HostProfile | None) -> HostProfile:
    """Resolve ``profile`` (a name, a :class:`HostProfile`, or None for ``documented``).

    Raises:
        ValueError: an unknown name; the message lists the known ones.
    """
    if profile is None:
        return PROFILES[DOCUMENTED]
    if isinstance(profile, HostProfile):
        return profile
    try:
        return PROFILES[str(profile)]
    except KeyError:
        raise ValueError(
            f"unknown host profile {profile!r}; use one of: {', '.join(sorted(PROFILES))}"
        ) from None
