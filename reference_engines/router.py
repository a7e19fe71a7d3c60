"""``ReferenceRouter``: a real ``select_context`` engine (H1-H6, C1, TS3, A1-A7, V1-V4).

What it does, per provider request (:meth:`ReferenceRouter.select_context`):

- splits the request into *turn groups*: a user message plus the assistant/tool messages
  after it (so a tool call never leaves its results, V2); messages before the first user
  message (system prompt, a compaction summary) form the always-kept head;
- routes every group to a *topic*: the words of its user message (lowercase, 4+ letters,
  stop words removed) are compared with each topic's vocabulary, in conversation order;
  an overlap of at least :attr:`ReferenceRouter.match_ratio` joins the best topic, else
  a new topic starts. Assignments are memoised in a shared, thread-safe
  :class:`RouterBackend`, keyed by the user message's ``message_uid`` (or a digest of its
  text when the host mints no uids), so a group's topic never changes once decided. Hermes
  0.22 strips ``message_uid`` from ``request_messages`` before select_context but hands
  ``conversation_messages`` with their uids, so a request row without a uid takes the uid of
  the conversation's user row with the same text (:func:`request_turn_keys`);
- selects the head + every group of the incoming message's topic, in order (the current
  turn last). Within one topic a new request only *appends* to the previous selection,
  so the provider's prompt cache keeps hitting (H6); while nothing changed the
  selection is an equal list. When the selection would be the whole request it returns
  None (no change: the request stays byte-identical). Over ``budget_tokens`` it drops
  the oldest in-topic groups.

:meth:`on_turn_complete` indexes the finished turn into the backend (H5). Clones made by
:meth:`clone_for_agent` share the backend (it holds a lock, so ``copy.deepcopy`` of the
whole engine would fail) and copy only the budget fields (C1, C2). Compaction
(:meth:`compress`) keeps the system prompt, a structured summary of the middle and the
last :attr:`keep_last` messages (never splitting a tool call from its results).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import uuid
from typing import Any

from agent.context_engine import ContextEngine

from reference_engines.extractive import summarise
from reference_engines.tokens import count_messages

SUMMARY_PREFIX = "[Router summary of earlier conversation]"

_WORD = re.compile(r"[a-zA-Z][a-zA-Z0-9_]{3,}")
_STOP = frozenset(
    """
about after again also been before being could does doing done each from have having here into just
like make more most much must need only other over same should some such than that their them then
there these they this those through under until very want were what when where which while will with
would your yours please thanks thank could might shall next turn point keep
""".split()
)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def topic_words(text: str) -> frozenset:
    """The routing vocabulary of ``text``: lowercase words of 4+ characters minus stop words."""
    return frozenset(w.lower() for w in _WORD.findall(text or "")) - _STOP


def _digest(message: dict[str, Any]) -> str:
    return "sha:" + hashlib.sha256(_text(message.get("content")).encode("utf-8")).hexdigest()[:24]


def request_turn_keys(
    users: list[dict[str, Any]], conversation_messages: list[dict[str, Any]] | None
) -> list[str]:
    """The turn key of each user row of a request, in order (H3, U2).

    A row's own ``message_uid`` when it has one; else the uid of the user row of
    ``conversation_messages`` with the same text, matched from the end (the k-th last
    request row of a text takes the k-th last conversation row of that text: the newest turns
    are the ones both lists hold); else :func:`turn_key`'s text digest.
    """
    by_text: dict[str, list[str]] = {}
    for m in conversation_messages or []:
        uid = m.get("message_uid") if isinstance(m, dict) else None
        if m.get("role") == "user" and isinstance(uid, str) and uid:
            by_text.setdefault(_digest(m), []).append(uid)
    keys: list[str] = []
    seen: dict[str, int] = {}
    for m in reversed(users):
        own = m.get("message_uid")
        if isinstance(own, str) and own:
            keys.append(own)
            continue
        text = _digest(m)
        k = seen.get(text, 0)
        seen[text] = k + 1
        uids = by_text.get(text, [])
        keys.append(uids[-1 - k] if k < len(uids) else text)
    return keys[::-1]


def turn_key(message: dict[str, Any]) -> str:
    """Key of a turn: its user message's ``message_uid``, else a digest of its text."""
    uid = message.get("message_uid")
    if isinstance(uid, str) and uid:
        return uid
    return _digest(message)


class RouterBackend:
    """Durable routing index shared by every clone of one registered router (thread-safe).

    Per session id: the topic vocabularies (list of word sets, index = topic id) and
    the memoised topic of each turn key. ``indexed_turns`` counts turns indexed through
    on_turn_complete.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._topics: dict[str, list[set]] = {}
        self._assigned: dict[str, dict[str, int]] = {}
        self.indexed_turns: dict[str, int] = {}

    def topic_of(self, session_id: str, key: str, words: frozenset, match_ratio: float) -> int:
        """The topic id of turn ``key`` (assigned once, on first sight, in call order)."""
        with self._lock:
            assigned = self._assigned.setdefault(session_id, {})
            if key in assigned:
                return assigned[key]
            topics = self._topics.setdefault(session_id, [])
            best, best_score = -1, 0.0
            for i, vocab in enumerate(topics):
                score = len(words & vocab) / len(words) if words else 0.0
                if score > best_score:
                    best, best_score = i, score
            if best < 0 or best_score < match_ratio:
                topics.append(set())
                best = len(topics) - 1
            topics[best] |= words
            assigned[key] = best
            return best

    def note_indexed(self, session_id: str) -> None:
        """Count one on_turn_complete indexing of ``session_id``."""
        with self._lock:
            self.indexed_turns[session_id] = self.indexed_turns.get(session_id, 0) + 1

    def topics(self, session_id: str) -> int:
        """Number of topics known for ``session_id``."""
        with self._lock:
            return len(self._topics.get(session_id, []))


def split_groups(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """(head, groups): messages before the first user message, then one group per user turn."""
    head: list[dict[str, Any]] = []
    groups: list[list[dict[str, Any]]] = []
    for m in messages:
        if m.get("role") == "user" and not _text(m.get("content")).startswith(SUMMARY_PREFIX):
            groups.append([m])
        elif groups:
            groups[-1].append(m)
        else:
            head.append(m)
    return head, groups


class ReferenceRouter(ContextEngine):
    """Topic-routing context engine; passes every check (see the module doc).

    Attributes:
        threshold_percent: compaction trigger as a share of the context (0.75).
        keep_last: messages kept verbatim by compress().
        match_ratio: word overlap needed to join an existing topic (0.2).
        max_ineffective_passes: should_compress() stops asking after this many ineffective
            compactions in a row (2, as Hermes; A3).
    """

    #: No optional capability: its select_context and on_turn_complete are found by H2's
    #: identity rule (the hooks are overridden), not declared.
    conformance_capabilities = frozenset()
    threshold_percent = 0.75
    keep_last = 8
    match_ratio = 0.2
    max_ineffective_passes = 2

    def __init__(self, backend: RouterBackend | None = None) -> None:
        self.backend = backend if backend is not None else RouterBackend()
        self.session_id = "default"
        self._ineffective = 0
        self._awaiting_verdict = False
        self.selections = 0

    # -- A: required surface -------------------------------------------------------------
    @property
    def name(self) -> str:
        """A1: ``"router"``."""
        return "router"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        """A2: record the usage; judge whether the last compaction was effective (A3)."""
        usage = usage or {}
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)
        if self.last_prompt_tokens <= 0:
            return
        below = self.last_prompt_tokens < self.threshold_tokens
        if self._awaiting_verdict:
            self._awaiting_verdict = False
            self._ineffective = 0 if below else self._ineffective + 1
        elif below:
            self._ineffective = 0  # the pressure is gone: a later rise may try compaction again

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """A3/A7: True at or over the threshold; never on the -1 sentinel, nor after
        ``max_ineffective_passes`` ineffective passes in a row (see :meth:`compress`)."""
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if tokens is None or tokens < 0 or self._ineffective >= self.max_ineffective_passes:
            return False
        return self.threshold_tokens > 0 and int(tokens) >= self.threshold_tokens

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        **kwargs: Any,
    ) -> list[dict[str, Any]]:
        """A4/V1-V4: system + structured summary of the middle + the last ``keep_last`` messages.

        Every call counts in ``compression_count`` (A6, as the seeds define it), also one
        that finds nothing to compact and returns its input unchanged.

        Anti-thrash (A3): a pass that returns its input unchanged, or whose output still
        holds at least ``threshold_tokens`` cl100k tokens, is ineffective at once (as
        Hermes' early returns are); any other pass waits for the next real usage
        (:meth:`update_from_response`): a prompt still at or over the threshold makes it
        ineffective, one below resets the count.
        """
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = list(messages[len(head) :])
        start = max(len(body) - self.keep_last, 0)
        while 0 < start < len(body) and body[start].get("role") != "assistant":
            start -= (
                1  # the tail starts on an assistant message: no tool result cut from its call (V2)
            )
        # A8: a live ask (the last user message, no plain assistant reply after it: its tool
        # loop is running) stays in the tail, however long the loop
        for i in range(len(body) - 1, -1, -1):
            if body[i].get("role") == "assistant" and not body[i].get("tool_calls"):
                break
            if body[i].get("role") == "user":
                start = min(start, i)
                break
        if start <= 0:
            self._note_ineffective()
            return messages
        # B6/A10: the previous summary is carried into the next one, not summarised away
        previous = [
            _text(m.get("content"))
            for m in body[:start]
            if _text(m.get("content")).startswith(SUMMARY_PREFIX)
        ]
        middle = "\n".join(
            _text(m.get("content"))
            for m in body[:start]
            if not _text(m.get("content")).startswith(SUMMARY_PREFIX)
        )
        summary = {
            "role": "assistant" if body[start].get("role") == "user" else "user",
            "content": SUMMARY_PREFIX
            + "\n"
            + summarise(
                middle,
                focus_topic=focus_topic,
                previous_summary=previous[-1][len(SUMMARY_PREFIX) :] if previous else None,
            ),
            "message_uid": uuid.uuid4().hex,  # U6: the host keeps an engine-stamped uid
        }
        tail = [dict(m) for m in body[start:]]  # the summary's role differs from tail[0]'s
        out = head + [summary] + tail
        if self.threshold_tokens > 0 and count_messages(out) >= self.threshold_tokens:
            # the protected parts alone hold the threshold: no verdict needed
            self._note_ineffective()
        else:
            self._awaiting_verdict = True
        return out

    def _note_ineffective(self) -> None:
        """A3: count one ineffective pass now (no real usage needed to judge it)."""
        self._ineffective += 1
        self._awaiting_verdict = False

    # -- lifecycle -------------------------------------------------------------------------
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """O1: routing state is kept per session id in the shared backend."""
        self.session_id = str(session_id or "default")

    def on_session_reset(self) -> None:
        """O3: zero the counters and the anti-thrash state."""
        super().on_session_reset()
        self._ineffective = 0
        self._awaiting_verdict = False

    def clone_for_agent(self) -> ReferenceRouter:
        """C1: a fresh engine sharing the durable backend; budget fields copied (C2 safe)."""
        clone = type(self)(backend=self.backend)
        for attr in (
            "threshold_percent",
            "context_length",
            "threshold_tokens",
            "keep_last",
            "match_ratio",
        ):
            if attr in self.__dict__:
                setattr(clone, attr, copy.deepcopy(self.__dict__[attr]))
        if "model_thresholds" in self.__dict__:
            clone.model_thresholds = dict(self.__dict__["model_thresholds"])
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> ReferenceRouter:
        """``copy.deepcopy`` (hermes-agent 0.19.0's only clone path, C1) gives the same clone as
        clone_for_agent: the backend holds an RLock, which cannot be deep-copied."""
        return self.clone_for_agent()

    # -- H: selection and observation ----------------------------------------------------------
    def _topic(self, group: list[dict[str, Any]], key: str | None = None) -> int:
        user = group[0]
        return self.backend.topic_of(
            self.session_id,
            turn_key(user) if key is None else key,
            topic_words(_text(user.get("content"))),
            self.match_ratio,
        )

    def route(
        self,
        request_messages: list[dict[str, Any]],
        conversation_messages: list[dict[str, Any]] | None = None,
    ) -> tuple[list[dict[str, Any]], bool]:
        """(selection, changed): the routed messages and whether anything was left out; turns
        keyed by :func:`request_turn_keys` (uids from ``conversation_messages`` when the
        request's rows have none)."""
        head, groups = split_groups(request_messages)
        if len(groups) <= 1:
            return request_messages, False
        keys = request_turn_keys([g[0] for g in groups], conversation_messages)
        topics = [self._topic(g, k) for g, k in zip(groups, keys, strict=True)]
        current = topics[-1]
        chosen = [g for g, t in zip(groups, topics, strict=True) if t == current]
        if len(chosen) == len(groups):
            return request_messages, False
        return head + [m for g in chosen for m in g], True

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
        **kwargs: Any,
    ) -> list[dict[str, Any]] | None:
        """H3/H6: the incoming topic's turns (plus the head), or None when that is everything."""
        self.selections += 1
        selected, changed = self.route(request_messages, conversation_messages)
        if budget_tokens and count_messages(selected) > budget_tokens:
            head, groups = split_groups(selected)
            while (
                len(groups) > 1
                and count_messages(head + [m for g in groups for m in g]) > budget_tokens
            ):
                groups.pop(0)
            selected, changed = head + [m for g in groups for m in g], True
        if not changed:
            return None
        return [copy.deepcopy(m) for m in selected]

    def on_turn_complete(
        self, messages: list[dict[str, Any]], usage: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """H5: index every turn of the finished transcript into the shared backend."""
        _, groups = split_groups(list(messages))
        for g in groups:
            self._topic(g)
        self.backend.note_indexed(self.session_id)

    def get_status(self) -> dict[str, Any]:
        """O8 plus the router's topic count for this session."""
        status = super().get_status()
        status["topics"] = self.backend.topics(self.session_id)
        return status


def selection_digest(messages: list[dict[str, Any]] | None) -> str:
    """A digest of a selection (for stability checks): sha256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()
