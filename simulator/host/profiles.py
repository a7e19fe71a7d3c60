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
- the wire rule strips every top-level key starting with ``_``.
"""

from __future__ import annotations

from dataclasses import dataclass

DOCUMENTED = "documented"
HERMES_019 = "hermes-0.19"


@dataclass(frozen=True)
class HostProfile:
    """What one host version does; every field names the behaviour it switches.

    Attributes:
        name: ``"documented"`` or ``"hermes-0.19"``.
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
