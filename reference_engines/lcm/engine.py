"""``LCMEngine``: Lossless Context Management, the contract's reference durable engine.

Every message is kept verbatim in SQLite, keyed by ``message_uid`` (U1, U4, U5, U7); a
DAG of summaries sits on top (leaf summaries over chunks of the compressible middle,
condensed upward); compress() returns head + one summary carrier stamped with the
engine's own uid (U6) + tail; three tools read the store back (T1, T2).

Durability follows TS2: a pass writes nothing. Its nodes and messages are *staged* in
memory and published in one transaction once the host shows the pass committed, i.e. the
carrier's uid appears in messages the host hands the engine later (a compress() input,
on_turn_complete, handle_tool_call's ``messages=``, or on_session_end). A pass the host
discarded (timeout) is dropped and leaves nothing durable.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.context_engine import ContextEngine

from .dag import (
    DagParams,
    Summariser,
    chunk_entries,
    condense,
    fallback_summary,
    make_node,
    safe_summarise,
    summary_facts,
)
from .messages import (
    ANON_KEY_PREFIX,
    absorbed_of,
    carrier_role,
    count_tokens,
    identities_of,
    message_key,
    searchable_text,
    transcript_text,
    uid_of,
    version_hash,
)
from .plan import align_roles, split
from .store import LCMConnection, MessageVersion, StagedPass, backend_for, default_db_path
from .tools import TOOL_SCHEMAS, LCMTools

log = logging.getLogger("reference_engines.lcm")

#: First text of every summary carrier; lets compress() find candidate carriers cheaply.
CARRIER_TAG = "[LCM summary]"


def default_summariser() -> Summariser:
    """The reference engines' deterministic summariser
    (:func:`reference_engines.extractive.summarise`) when this folder runs inside the
    ``reference_engines`` package, else :func:`reference_engines.lcm.dag.fallback_summary`
    (the folder installed on its own as a Hermes plugin)."""
    try:
        from reference_engines.extractive import summarise

        return summarise
    except Exception:  # pragma: no cover - only outside the reference_engines package
        return fallback_summary


def _local_model_threshold(model: str, thresholds: Mapping[str, float], default: float) -> float:
    best = None
    for key, value in (thresholds or {}).items():
        needle = key.split(":", 1)[1] if ":" in key else key
        if needle and needle in (model or "") and (best is None or len(needle) > best[0]):
            best = (len(needle), float(value))
    return best[1] if best else float(default)


try:  # K1 semantics from the host when it has them (MAIN; the kit's shim has them too)
    from agent.context_compressor import resolve_model_threshold as _resolve_threshold
except Exception:  # pragma: no cover - older hosts
    _resolve_threshold = None


class LCMEngine(ContextEngine):
    """Lossless Context Management engine (clauses A, O, U, T, C, TS).

    Args:
        db_path: SQLite file. Default ``$HERMES_HOME/lcm/lcm.sqlite3`` (HERMES_HOME defaults
            to ``~/.hermes``), read at construction; nothing is created until first use.
        summariser:
            ``summarise(text, *, max_chars, focus_topic=None, previous_summary=None) -> str``.
            Default: :func:`default_summariser` (deterministic). A raising summariser falls
            back to an extractive summary; messages are never lost either way.
        dag_params: :class:`DagParams` (leaf chunk sizes, fan-out, summary caps).
        threshold_percent: compaction trigger as a fraction of the context window (0 < p <= 1).
        protect_first_n: messages after the system prompt kept before the first compaction.
        protect_last_n: messages kept at the end (tail), within the tail's hard cap.
        uid_factory: returns a new carrier ``message_uid``; default ``uuid4().hex`` (U6).

    Raises:
        ValueError: a percent outside (0, 1] or a negative protect count.
    """

    #: Capabilities the conformance kit may test beyond MUSTs (A5 focus, T tools).
    conformance_capabilities = frozenset({"focus", "tools"})

    threshold_percent = 0.75
    protect_first_n = 3
    protect_last_n = 6
    #: Tail budget as a fraction of threshold_tokens.
    tail_ratio = 0.25
    #: The protected last messages may use up to this fraction of threshold_tokens.
    tail_hard_ratio = 0.5
    #: update_model keeps at least this many tokens of the window free for the reply.
    response_reserve_tokens = 8192
    #: A pass is ineffective when its output keeps at least this share of the input tokens.
    ineffective_ratio = 0.95
    #: should_compress() stops asking after this many ineffective passes in a row (A3).
    max_ineffective_passes = 2

    def __init__(
        self,
        db_path: str | Path | None = None,
        *,
        summariser: Summariser | None = None,
        dag_params: DagParams | None = None,
        threshold_percent: float | None = None,
        protect_first_n: int | None = None,
        protect_last_n: int | None = None,
        uid_factory: Callable[[], str] | None = None,
        _backend=None,
    ) -> None:
        if threshold_percent is not None:
            if not (0 < float(threshold_percent) <= 1):
                raise ValueError(f"threshold_percent must be in (0, 1], got {threshold_percent!r}")
            self.threshold_percent = float(threshold_percent)
        for name, value in (
            ("protect_first_n", protect_first_n),
            ("protect_last_n", protect_last_n),
        ):
            if value is not None:
                if int(value) < 0:
                    raise ValueError(f"{name} must be >= 0, got {value!r}")
                setattr(self, name, int(value))
        self._db_path = Path(db_path).expanduser() if db_path else default_db_path()
        self._backend = _backend if _backend is not None else backend_for(self._db_path)
        self._conn = LCMConnection(self._backend)
        self._summariser = summariser if summariser is not None else default_summariser()
        self._params = dag_params or DagParams()
        self._uid_factory = uid_factory or (lambda: uuid.uuid4().hex)
        self._lock = threading.RLock()
        self._tools = LCMTools(self._conn, self._backend, lambda: self._session_id)
        self._session_id: str | None = None
        self._ineffective = 0
        self._published = 0
        self._config_threshold_percent = self.threshold_percent
        self.model = ""
        self.model_thresholds: dict[str, float] = {}
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.threshold_tokens = 0
        self.context_length = 0
        self.compression_count = 0

    # -- A: required surface -----------------------------------------------------------
    @property
    def name(self) -> str:
        """A1/R6: ``"lcm"``, the plugin name in plugin.yaml and ``context.engine``."""
        return "lcm"

    @property
    def summarise(self) -> Summariser:
        """The summariser (the ``summariser=`` argument): the kit's A4 seam (it swaps it for one
        that fails); a raising summariser gets the extractive fallback, nothing is lost."""
        return self._summariser

    @summarise.setter
    def summarise(self, fn: Summariser) -> None:
        self._summariser = fn

    @property
    def db_path(self) -> Path:
        """The SQLite file this engine (and its clones) use."""
        return self._db_path

    def update_from_response(self, usage: dict[str, Any]) -> None:
        """A2: record ``prompt_tokens``/``completion_tokens``/``total_tokens`` (tokens).

        Missing or non-numeric fields count as 0; optional fields (``input_tokens``,
        ``cache_read_tokens``, ...) are ignored. A real usage ends the A7 sentinel.
        """
        if not isinstance(usage, Mapping):
            return

        def num(key: str) -> int:
            v = usage.get(key)
            return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0

        with self._lock:
            self.last_prompt_tokens = num("prompt_tokens")
            self.last_completion_tokens = num("completion_tokens")
            total = num("total_tokens")
            self.last_total_tokens = total or self.last_prompt_tokens + self.last_completion_tokens

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """A3/A7: True when ``prompt_tokens`` (default: last usage) reaches threshold_tokens.

        False on the -1 sentinel (A7: compaction just ran), with no budget yet
        (threshold_tokens 0), and after ``max_ineffective_passes`` ineffective passes in a
        row (A3) until update_model, on_session_start of another session or
        on_session_reset, or an effective (e.g. manual) pass.
        """
        with self._lock:
            if self.last_prompt_tokens < 0:
                return False
            tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
            if not isinstance(tokens, (int, float)) or tokens < 0:
                return False
            if self.threshold_tokens <= 0 or self._ineffective >= self.max_ineffective_passes:
                return False
            return tokens >= self.threshold_tokens

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        """O7: cheap estimate (about 4 characters per token) of ``messages`` against the
        threshold."""
        with self._lock:
            if self.threshold_tokens <= 0 or self._ineffective >= self.max_ineffective_passes:
                return False
            threshold = self.threshold_tokens
        rough = 0
        for m in messages or ():
            if isinstance(m, Mapping):
                rough += 4 + len(searchable_text(m)) // 4
                if rough >= threshold:
                    return True
        return False

    # -- compress (A4, A5, V, U, TS2) ---------------------------------------------------
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str | None = None,
    ) -> list[dict[str, Any]]:
        """A4: head + summary carrier + tail, with everything summarised kept verbatim.

        Args:
            messages: the host's private snapshot (OpenAI-format dicts, with or without a
                leading system message; ``message_uid`` may be absent, U2/U10).
            current_tokens: the host's pressure estimate (unused: the engine counts cl100k).
            focus_topic: A5, steers the top summary (sentences about it are kept first).
            force: manual ``/compress``; accepted, the pass runs the same way.
            memory_context: the memory provider's note; fed into the top summary only.
        Returns:
            The input object itself when there is nothing to compact (the host's no-op
            signal), else a new list: head (V4), one carrier ``{"role", "content",
            "message_uid"}`` (U6), tail. Tool pairs are never split (V2).
        Raises:
            TypeError: ``messages`` is not a list of dicts (says which index is wrong).
        """
        if not isinstance(messages, list):
            raise TypeError(
                "LCMEngine.compress() expects a list of "
                f"message dicts, got {type(messages).__name__}"
            )
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping):
                raise TypeError(
                    f"LCMEngine.compress(): messages[{i}] is {type(m).__name__}, expected a dict"
                )
        with self._lock:
            self.compression_count += 1  # A6 (seeds, contract 1.1): every compress() run counts
        self._observe(messages, may_discard=True)
        focus = (
            focus_topic.strip() if isinstance(focus_topic, str) and focus_topic.strip() else None
        )
        with self._lock:
            session_id = self._session_id
            protect_first_n, protect_last_n = self.protect_first_n, self.protect_last_n
            threshold = self.threshold_tokens
        carriers = self._find_carriers(messages)
        tokens = [count_tokens(m) for m in messages]
        tail_budget = int(threshold * self.tail_ratio) if threshold > 0 else None
        cut = split(
            messages,
            tokens,
            protect_first_n=protect_first_n,
            protect_last_n=protect_last_n,
            tail_budget=tail_budget,
            tail_hard_cap=int(threshold * self.tail_hard_ratio) if threshold > 0 else None,
            has_summary=bool(carriers),
            last_carrier_index=max(carriers) if carriers else None,
        )
        cut = align_roles(  # B5: the carrier's role then touches neither neighbour
            messages,
            tokens,
            cut,
            tail_budget=tail_budget,
            last_carrier_index=max(carriers) if carriers else None,
        )
        middle = range(cut.head_end, cut.tail_start)
        fresh = [i for i in middle if not carriers.get(i, {}).get("pure")]
        if not fresh and sum(1 for i in middle if i in carriers) <= 1:
            self._note_effect(effective=False)
            return messages

        # 1. verbatim versions of everything summarised (U1, U4, U5, U7, U2/U10)
        versions: list[MessageVersion] = []
        absorbed: list[tuple] = []
        version_at: dict[int, int] = {}
        for i in fresh:
            m = messages[i]
            vh = version_hash(m)
            version_at[i] = len(versions)
            versions.append(
                MessageVersion(
                    message_key(m, vh), vh, m.get("role"), searchable_text(m), dict(m), session_id
                )
            )
            uid = uid_of(m)
            if uid:
                absorbed.extend((a, uid) for a in absorbed_of(m))
        middle_uids = frozenset(u for i in middle for u in identities_of(messages[i]))

        # 2. the frontier in transcript order: leaves over runs of new messages, and the
        #    roots of earlier carriers where those carriers sit; then condense upward.
        carrier_uid = self._uid_factory()
        previous_roots, previous_top = self._previous_frontier(carriers, middle)
        frontier: list[dict[str, Any]] = []
        leaves: list[dict[str, Any]] = []
        placed: set = set()
        run: list[int] = []

        def flush_run() -> None:
            entries = [(messages[i], tokens[i]) for i in run]
            for chunk in chunk_entries(entries, self._params):
                chunk_versions = [versions[version_at[run[j]]] for j in chunk]
                summary = safe_summarise(
                    self._summariser,
                    transcript_text(v.message for v in chunk_versions),
                    max_chars=self._params.leaf_summary_chars,
                )
                leaf = make_node(
                    "leaf",
                    0,
                    [[v.key, v.version_hash] for v in chunk_versions],
                    summary,
                    len(chunk_versions),
                    chunk_versions[0].key,
                    chunk_versions[-1].key,
                    session_id=session_id,
                    pass_uid=carrier_uid,
                )
                leaves.append(leaf)
                frontier.append(leaf)
            run.clear()

        for i in middle:
            info = carriers.get(i)
            if info is not None:
                flush_run()
                for p in info["passes"]:
                    for rid in p["roots"]:
                        if rid in previous_roots and rid not in placed:
                            placed.add(rid)
                            frontier.append(previous_roots[rid])
                if info["pure"]:
                    continue
            run.append(i)
        flush_run()
        roots, condensed = condense(
            frontier, self._params, self._summariser, session_id=session_id, pass_uid=carrier_uid
        )

        # 3. the top summary, steered by focus_topic (A5)
        parts: list[str] = []
        if focus:
            hits = self._focus_hits(focus, versions, session_id)
            if hits:
                parts.append("Focus notes:\n" + "\n".join(hits))
        parts.extend(summary_facts(r["summary"]) for r in roots)
        if isinstance(memory_context, str) and memory_context.strip():
            parts.append("Memory context:\n" + memory_context.strip())
        top_summary = safe_summarise(
            self._summariser,
            "\n\n".join(parts),
            max_chars=self._summary_chars(threshold),
            focus_topic=focus,
            previous_summary=previous_top,
        )
        total = sum(r["message_count"] for r in roots)
        top = make_node(
            "top",
            max((r["level"] for r in roots), default=0) + 1,
            [r["node_id"] for r in roots],
            top_summary,
            total,
            roots[0].get("first_key") if roots else None,
            roots[-1].get("last_key") if roots else None,
            session_id=session_id,
            focus_topic=focus,
            pass_uid=carrier_uid,
        )

        # 4. the carrier (U6) between head and tail
        n = len(messages)
        role = carrier_role(
            messages[cut.head_end - 1].get("role") if cut.head_end > 0 else None,
            messages[cut.tail_start].get("role") if cut.tail_start < n else None,
        )
        carrier = {
            "role": role,
            "content": render_carrier(top, roots, focus),
            "message_uid": carrier_uid,
        }
        out = list(messages[: cut.head_end]) + [carrier] + list(messages[cut.tail_start :])

        # 5. stage (TS2): nothing durable until the host shows the carrier committed
        self._backend.stage(
            StagedPass(
                carrier_uid=carrier_uid,
                carrier_hash=version_hash(carrier),
                session_id=session_id,
                top_node_id=top["node_id"],
                roots=[r["node_id"] for r in roots],
                nodes=leaves + condensed + [top],
                versions=versions,
                absorbed=absorbed,
                middle_uids=middle_uids,
                focus_topic=focus,
            )
        )
        tokens_in = sum(tokens)
        tokens_out = (
            sum(tokens[: cut.head_end]) + count_tokens(carrier) + sum(tokens[cut.tail_start :])
        )
        self._note_effect(effective=tokens_out < tokens_in * self.ineffective_ratio)
        return out

    # -- helpers of compress ---------------------------------------------------------------
    def _note_effect(self, effective: bool) -> None:
        with self._lock:
            self._ineffective = 0 if effective else self._ineffective + 1

    def _summary_chars(self, threshold: int) -> int:
        if threshold <= 0:
            return 4000
        return max(1200, min(16000, int(threshold * 0.05) * 4))

    def _find_carriers(self, messages: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
        """``{index: {"passes": [pass dicts], "pure": bool}}`` for messages carrying a committed
        carrier.

        A message is a *pure* carrier when its uid is a carrier uid and its content is still
        exactly what the engine returned; a carrier merged with other text (U4, U5) is also
        summarised as a fresh message so the merged-in text is kept.
        """
        candidates: dict[int, list[str]] = {}
        for i, m in enumerate(messages):
            ids = identities_of(m)
            if ids and CARRIER_TAG in searchable_text(m):
                candidates[i] = ids
        if not candidates:
            return {}
        known = self._conn.passes_for([u for ids in candidates.values() for u in ids])
        out: dict[int, dict[str, Any]] = {}
        for i, ids in candidates.items():
            passes = [known[u] for u in ids if u in known]
            if passes:
                uid = uid_of(messages[i])
                pure = (
                    uid in known
                    and version_hash(messages[i]) == known[uid]["carrier_hash"]
                    and not absorbed_of(messages[i])
                )
                out[i] = {"passes": passes, "pure": pure}
        return out

    def _previous_frontier(self, carriers: dict[int, dict[str, Any]], middle: range):
        """``({root id: node}, previous top summary)`` of the carriers in the middle."""
        root_ids: list[str] = []
        top_ids: list[str] = []
        for i in sorted(carriers):
            if i not in middle:
                continue
            for p in carriers[i]["passes"]:
                root_ids.extend(p["roots"])
                top_ids.append(p["top_node_id"])
        root_ids = list(dict.fromkeys(root_ids))
        found = self._conn.nodes(root_ids + top_ids)
        roots: dict[str, dict[str, Any]] = {}
        for rid in root_ids:
            if rid in found:
                roots[rid] = found[rid]
            else:
                log.warning(
                    "LCM: root node %s of a previous pass is missing from %s", rid, self._db_path
                )
        previous_top = found[top_ids[-1]]["summary"] if top_ids and top_ids[-1] in found else None
        return roots, previous_top

    def _focus_hits(
        self, focus: str, versions: Sequence[MessageVersion], session_id: str | None
    ) -> list[str]:
        """Up to 12 lines mentioning ``focus``: earlier stored messages first, then this pass's."""
        needle = focus.lower()
        hits: list[str] = []
        if focus.isascii():
            for row in self._conn.find_messages(focus, session_id, 6):
                hits.append(_line_with(row[3], needle))
        for v in versions:
            if len(hits) >= 12:
                break
            if needle in v.text.lower():
                hits.append(_line_with(v.text, needle))
        return hits

    # -- commit observation (TS2) --------------------------------------------------------
    def _observe(self, messages: Any, *, may_discard: bool) -> None:
        """Publish staged passes whose carrier uid is in ``messages``; drop ones shown discarded."""
        if not isinstance(messages, (list, tuple)) or not self._backend.staged_count():
            return
        seen = set()
        for m in messages:
            if isinstance(m, Mapping):
                seen.update(identities_of(m))
        committed = self._backend.take_committed(seen)
        if committed:
            try:
                self._conn.publish(committed)
            except Exception:
                for p in committed:
                    self._backend.stage(p)
                raise
            with self._lock:
                self._published += len(committed)
            self._backend.drop_superseded(committed)
        if may_discard:
            for uid in self._backend.drop_discarded(seen):
                log.info("LCM: pass with carrier %s was not committed by the host; dropped", uid)

    # -- O: lifecycle ------------------------------------------------------------------------
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """O1/L1: remember the session and load its state: resuming a session whose committed
        passes outnumber compression_count raises the count to that number.

        With ``boundary_reason="compression"`` (the host's notice after a committed
        compaction, in place or on rotation) counters carry on unchanged.
        """
        with self._lock:
            previous = self._session_id
            self._session_id = session_id
            if kwargs.get("boundary_reason") == "compression" or previous == session_id:
                return
            self._ineffective = 0
        try:
            stored = self._conn.session_pass_count(session_id)
        except (sqlite3.Error, OSError) as exc:
            log.warning(
                "LCM: could not load session %s from %s: %s", session_id, self._db_path, exc
            )
            stored = 0
        with self._lock:
            self.compression_count = max(self.compression_count, stored)

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """O2: publish passes the host committed, then flush the transcript verbatim.

        Every message (except unmodified carriers) is stored as a version under its uid,
        so lcm_grep sees the whole session (U4, U5, U7). Nothing is reset here.
        """
        self._observe(messages, may_discard=False)
        if not isinstance(messages, (list, tuple)):
            return
        carriers = self._find_carriers([m for m in messages if isinstance(m, Mapping)])
        versions: list[MessageVersion] = []
        absorbed: list[tuple] = []
        for i, m in enumerate(x for x in messages if isinstance(x, Mapping)):
            if carriers.get(i, {}).get("pure"):
                continue
            vh = version_hash(m)
            versions.append(
                MessageVersion(
                    message_key(m, vh), vh, m.get("role"), searchable_text(m), dict(m), session_id
                )
            )
            uid = uid_of(m)
            if uid:
                absorbed.extend((a, uid) for a in absorbed_of(m))
        self._conn.ingest(versions, absorbed)

    def on_session_reset(self) -> None:
        """O3: zero the counters (0, not -1) and clear the ineffective-pass block.

        Staged passes stay in memory: one the host already committed is still published
        when its carrier is seen; the durable store is never touched by a reset.
        """
        with self._lock:
            super().on_session_reset()
            self._ineffective = 0

    def on_turn_complete(
        self, messages: list[dict[str, Any]], usage: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """O10/H5: observe the finished turn; publishes a committed pass (TS2). Returns None."""
        self._observe(messages, may_discard=True)
        return None

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
        **kwargs: Any,
    ) -> None:
        """O4/K2: the engine's own budget policy.

        ``threshold_tokens = int(context_length * percent)``, where percent is the
        ``model_thresholds`` match (K1 semantics, honoured) or the configured percent; then,
        for windows larger than twice ``response_reserve_tokens``, capped so at least that
        many tokens stay free for the reply. A new budget lifts the A3 block.

        Raises:
            ValueError: ``context_length`` is negative or not an integer.
        """
        if (
            isinstance(context_length, bool)
            or not isinstance(context_length, (int, float))
            or context_length < 0
        ):
            raise ValueError(
                "update_model: context_length must be a "
                f"non-negative integer, got {context_length!r}"
            )
        ctx = int(context_length)
        with self._lock:
            mapping = dict(getattr(self, "model_thresholds", None) or {})
            if _resolve_threshold is not None:
                percent = _resolve_threshold(
                    model, mapping, self._config_threshold_percent, provider
                )
            else:
                percent = _local_model_threshold(model, mapping, self._config_threshold_percent)
            threshold = int(ctx * percent)
            if ctx > 2 * self.response_reserve_tokens:
                threshold = min(threshold, ctx - self.response_reserve_tokens)
            self.model = model
            self.context_length = ctx
            self.threshold_percent = percent
            self.threshold_tokens = threshold
            self._ineffective = 0

    def get_status(self) -> dict[str, Any]:
        """O8: the ABC's fields (last_prompt_tokens never negative, usage_percent 0-100) plus
        ``engine``, ``db_path``, ``session_id``, ``staged_passes``, ``published_passes``,
        ``ineffective_passes`` and ``compression_blocked`` (A3)."""
        with self._lock:
            status = super().get_status()
            status.update(
                {
                    "engine": self.name,
                    "db_path": str(self._db_path),
                    "session_id": self._session_id,
                    "staged_passes": self._backend.staged_count(),
                    "published_passes": self._published,
                    "ineffective_passes": self._ineffective,
                    "compression_blocked": self._ineffective >= self.max_ineffective_passes,
                }
            )
            return status

    def conformance_stored_uids(self, session_id: str) -> list[str]:
        """The kit's store introspection hook (U7): the ``message_uid`` of every logical message
        the verbatim store holds for ``session_id``, once each (versions of one uid, U4, are
        one message), oldest sighting first; rows stored without a uid are left out."""
        keys = (row[0] for row in self._conn.iter_messages(session_id))
        return [k for k in dict.fromkeys(keys) if not k.startswith(ANON_KEY_PREFIX)]

    # -- T: tools ----------------------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """O5/T1: the ``lcm_grep``, ``lcm_describe``, ``lcm_expand`` schemas (fresh copies)."""
        import copy

        return copy.deepcopy(TOOL_SCHEMAS)

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """O6/T2: run an LCM tool; returns a JSON string, errors included (unknown name too).

        ``messages=`` (the live transcript the host passes) is observed first, so a pass
        committed earlier in this turn is published before the tool reads the store.
        """
        messages = kwargs.get("messages")
        if messages is not None:
            try:
                self._observe(messages, may_discard=False)
            except Exception as exc:  # the tool still answers from what is stored
                log.warning("LCM: publishing before %s failed: %s", name, exc)
        return self._tools.call(name, args)

    # -- C: clones ---------------------------------------------------------------------------
    _BUDGET_FIELDS = (
        "model",
        "context_length",
        "threshold_tokens",
        "threshold_percent",
        "_config_threshold_percent",
        "protect_first_n",
        "protect_last_n",
    )

    def clone_for_agent(self) -> LCMEngine:
        """O11/C1: a per-agent engine sharing this one's backend (database, staging) with its
        own connection; only the budget fields are copied, usage counters start at 0, and
        ``model_thresholds`` is a copy, so a child's update_model never changes the parent (C2)."""
        clone = type(self)(
            self._db_path,
            summariser=self._summariser,
            dag_params=self._params,
            uid_factory=self._uid_factory,
            _backend=self._backend,
        )
        with self._lock:
            for field in self._BUDGET_FIELDS:
                setattr(clone, field, getattr(self, field))
            clone.model_thresholds = dict(getattr(self, "model_thresholds", None) or {})
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> LCMEngine:
        """``copy.deepcopy`` (0.19.0's clone path) gives the same safe clone as clone_for_agent."""
        return self.clone_for_agent()

    def close(self) -> None:
        """Close this engine's own connection (the shared backend stays usable)."""
        self._conn.close()


def _line_with(text: str, needle: str, width: int = 300) -> str:
    """The line of ``text`` containing ``needle`` (lowercase), cut to ``width`` characters."""
    low = text.lower()
    pos = low.find(needle)
    if pos < 0:
        return text[:width].replace("\n", " ")
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start : end if end >= 0 else len(text)]
    if len(line) > width:
        rel = pos - start
        line = line[max(0, rel - width // 2) : max(0, rel - width // 2) + width]
    return line.strip()


def render_carrier(
    top: Mapping[str, Any], roots: Sequence[Mapping[str, Any]], focus: str | None
) -> str:
    """The carrier's text: what LCM kept, the node ids to expand, and the top summary."""
    lines = [
        f"{CARRIER_TAG} {top['message_count']} earlier messages were compacted by Lossless Context "
        "Management. They are stored verbatim; nothing was deleted.",
        (
            "Use lcm_expand(node_id) for the original messages behind a node, "
            "lcm_describe(id) to inspect a node, lcm_grep(pattern) to search the full history."
        ),
    ]
    if focus:
        lines.append(f"Focus: {focus}")
    lines.append(f"Top node: {top['node_id']} ({top['message_count']} messages)")
    lines.append("Summary nodes, oldest first:")
    for r in roots:
        lines.append(f"- {r['node_id']} · level {r['level']} · {r['message_count']} messages")
    lines.append("")
    lines.append(top["summary"])
    return "\n".join(lines)
