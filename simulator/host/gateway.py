"""A gateway host: one agent per conversation key, with session hygiene (B7, C1).

Each conversation key gets its own :class:`~simulator.host.session.HostSession`, whose
engine is cloned from the registered engine at init (C1). Before each turn the gateway
runs hygiene (:mod:`simulator.host.hygiene`): at >= 85 % of the window (real usage of the
last turn, else a rough estimate), with >= 4 messages and compression enabled, a
separate hygiene agent (its own clone, update_model, on_session_start on the conversation's
own session: no new store session) compresses the stored history before the user's turn
runs. The pass commits only when it moved rows or tokens (documented profile, as current
Hermes: :func:`~simulator.host.compression.made_progress`), so a pass that changed nothing
leaves the store as it was.
"""

from __future__ import annotations

import logging
from typing import Any

from simulator.host import hygiene
from simulator.host.session import HostConfig, HostSession, TurnResult

log = logging.getLogger("simulator.host")


class Gateway:
    """Gateway sessions around one registered engine.

    Args:
        registered: the process-wide registered engine (cloned per agent, C1).
        session_kwargs: keyword arguments for every :class:`HostSession` (provider,
            store, model, context_length, profile, config, recorder, ...).

    Attributes:
        sessions: conversation key -> session.
        hygiene_log: every :class:`~simulator.host.hygiene.HygieneDecision`, in order.
        hygiene_agents: the hygiene agents built (for checks on their calls).
    """

    def __init__(self, registered: Any, **session_kwargs: Any) -> None:
        self.registered = registered
        self.session_kwargs = session_kwargs
        self.sessions: dict[str, HostSession] = {}
        self.hygiene_log: list[hygiene.HygieneDecision] = []
        self.hygiene_agents: list[HostSession] = []
        self._hygiene_streak: dict[str, int] = {}  # failed hygiene passes in a row, per key
        self._hygiene_until: dict[str, float] = {}  # cooldown end (virtual seconds), per key

    def session(self, key: str) -> HostSession:
        """The session of conversation ``key`` (built and started on first use)."""
        sess = self.sessions.get(key)
        if sess is None:
            sess = HostSession(
                self.registered,
                clone=True,
                platform="gateway",
                conversation_id=key,
                **self.session_kwargs,
            )
            sess.start()
            self.sessions[key] = sess
        return sess

    def shutdown(self) -> None:
        """Gateway stop: a real boundary for every session (on_session_end, O2)."""
        for sess in self.sessions.values():
            sess.end()

    def handle_message(self, key: str, text: str) -> TurnResult:
        """B7 hygiene, then the user's turn on the session of ``key``."""
        sess = self.session(key)
        self.run_hygiene(sess)
        return sess.user_turn(text)

    def run_hygiene(self, sess: HostSession) -> bool | None:
        """B7: compress ``sess`` before the turn when :func:`hygiene.decide` says so.

        Returns None when hygiene did not fire, else whether the pass committed.
        """
        config: HostConfig = sess.config
        prof = sess.profile
        key = sess.conversation_id or sess.session_id
        last = int(getattr(sess.engine, "last_prompt_tokens", 0) or 0)
        anchor = None
        if prof.hygiene_anchor and sess.usage_anchor is not None:
            prompt, rows = sess.usage_anchor
            anchor = prompt + hygiene.rough_tokens(sess.history()[rows:])
        decision = hygiene.decide(
            sess.history(),
            context_length=sess.context_length,
            last_prompt_tokens=last,
            compression_enabled=config.compression_enabled,
            hard_message_limit=config.hygiene_hard_message_limit,
            anchored_tokens=anchor,
            cooling_down=prof.hygiene_cooldown_ladder
            and sess.clock.now() < self._hygiene_until.get(key, float("-inf")),
        )
        self.hygiene_log.append(decision)
        if not decision.run:
            return None
        agent = HostSession(
            self.registered,
            sess.provider,
            sess.store,
            model=sess.model,
            context_length=sess.context_length,
            system_prompt=sess.system_prompt,
            profile=sess.profile,
            config=config,
            recorder=sess.recorder,
            clone=True,
            platform=sess.platform,
            conversation_id=sess.conversation_id,
        )
        agent.start(resume=sess.session_id)  # the conversation's own session: no new store row
        self.hygiene_agents.append(agent)
        agent.system_message, agent.transcript = sess.system_message, list(sess.transcript)
        before = len(sess.transcript)
        committed = agent._compress_pass(current_tokens=decision.tokens, force=False)
        if committed:
            sess.system_message, sess.transcript = agent.system_message, agent.transcript
            sess.session_id = agent.session_id  # a child session when compression rotates
            sess.engine.last_prompt_tokens = -1 if hasattr(sess.engine, "last_prompt_tokens") else 0
            log.info("Session hygiene: compressed %d → %d msgs", before, len(sess.transcript))
            self._hygiene_streak.pop(key, None)
        else:
            log.info("Session hygiene: still ~%d tokens after the pass", decision.tokens)
            if prof.hygiene_cooldown_ladder:
                streak = self._hygiene_streak.get(key, 0) + 1
                self._hygiene_streak[key] = streak
                self._hygiene_until[key] = sess.clock.now() + hygiene.failure_cooldown(streak)
        return committed
