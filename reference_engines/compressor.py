"""``ReferenceCompressor``: the kit's reference implementation of the built-in compressor.

Contract section B (seed 002), on the documented ``ContextEngine`` surface (A, O):

- B1 defaults: threshold 0.50 of the context, target_ratio 0.20, protect_last_n 20,
  protect_first_n 3; ``threshold_tokens = int(context_length x threshold_percent)``,
  ``tail_token_budget = int(threshold_tokens x target_ratio)``,
  ``max_summary_tokens = min(int(context_length x 0.05), 12 000)``.
- B2 Phase 1: tool results over 200 characters outside the protected tail read
  ``[Old tool output cleared to save context space]`` (in the kept head and in what the
  summariser sees).
- B3 Phase 2 (the seeds, docs/contract-notes.md 1.5 and 1.6): head = the first
  protect_first_n rows, the system prompt included (seed 002: "[0..2] <- protect_first_n
  (system + first exchange)", "always preserved"), kept on every compaction; it shrinks
  back rather than split a tool group and ends before a previous summary. Tail: walk back
  from the end by token budget, keeping at least protect_last_n rows, uncapped (seed 002:
  "falls back to the fixed protect_last_n count if the budget would protect fewer
  messages"). Boundaries never split an assistant ``tool_calls`` row from its results;
  the last real user row is kept verbatim in the tail (when it lies further back than the
  budgeted tail, it is kept and the rows between it and the budgeted tail are summarised,
  so the summary precedes it; host practice). Opt-in ``head_decay=True`` gives Hermes
  MAIN's head instead (system + protect_first_n until the first compaction, then the
  system prompt only: host practice against the seeds, docs/contract-notes.md 1.5).
- B4 Phase 3: the middle is summarised through the injectable ``summarise`` callable
  (see :mod:`reference_engines._compressor.summariser`), budget = content tokens x 0.20,
  at most ``max_summary_tokens``, at least 2 000 (the floor wins when the ceiling is
  lower, as in Hermes). The summariser input is sized to ``summary_context_length``:
  when the middle does not fit, focus rows and then the newest rows are sent. On failure
  (an exception, or no text) a warning is logged and a deterministic fallback summary in
  the template stands in for the middle (:func:`fallback_summary`: what was removed, the
  previous summary, the last ask; A4: never head + tail with nothing for the middle, as
  Hermes main does it).
- B5 Phase 4: head (the compaction note appended to the system prompt on the first
  compaction only) + summary row (role chosen so no two same roles touch; merged into
  the first tail row when neither role fits) + tail; orphans repaired. A history that ends
  mid tool chain (right after a tool result, or on calls whose results are not appended
  yet) keeps that newest chain verbatim at the end of the tail, and a call still in flight
  gets no stub result (V2's in-flight exception).
- B6 later compactions pass the previous summary (found in the messages) to be updated.
- A3 automatic compaction stops after 2 ineffective passes; A7 never on the -1 sentinel.
- A6 ``compression_count`` counts every compress() call, a no-op pass included (seeds:
  "how many times compress() has run"; docs/contract-notes.md 1.1; Hermes counts only
  compactions, host practice).

It imports only the stdlib, ``tiktoken`` and Hermes' plugin API (``agent.context_engine``):
token counts come from :mod:`reference_engines.tokens` (cl100k read offline, memoised per
string), the default summariser from :mod:`reference_engines._compressor.summariser`.
A compress() call reads only the rows it needs: the tail and head by budget, the middle
up to the summary and summariser-input budgets, plus O(n) role/marker scans.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from agent.context_engine import ContextEngine, sanitize_memory_context

from reference_engines import tokens
from reference_engines._compressor import boundaries as bnd
from reference_engines._compressor import constants as C
from reference_engines._compressor import messages as msgs
from reference_engines._compressor.summariser import (
    ExtractiveSummariser,
    SummaryRequest,
    build_messages,
    split_tokens,
)

logger = logging.getLogger("reference_engines.compressor")

Message = dict[str, Any]
Summarise = Callable[[SummaryRequest], str]


def _positive_int(name: str, value: Any, *, allow_zero: bool = False) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        need = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"{name} must be {need} int (tokens or messages), got {value!r}")
    return value


def _fraction(name: str, value: Any, low: float, high: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (low <= float(value) <= high)
    ):
        raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def fallback_summary(rows: list[Mapping[str, Any]], previous: str | None, error: str) -> str:
    """A4/B4: the stand-in summary of ``rows`` when the summariser failed, built without a
    model (deterministic): the structured template with the number and roles of the removed
    messages, the previous summary carried over (B6), the last user ask and the file paths
    mentioned, each cut short."""
    users = [msgs.content_text(r.get("content")) for r in rows if r.get("role") == "user"]
    roles: dict[str, int] = {}
    for r in rows:
        roles[str(r.get("role"))] = roles.get(str(r.get("role")), 0) + 1
    files = sorted(
        {
            w.strip("\"',.;:()[]{}")
            for r in rows
            for w in msgs.content_text(r.get("content")).split()
            if "/" in w and "." in w.rsplit("/", 1)[-1] and len(w) < 120
        }
    )[:12]
    counts = ", ".join(f"{n} {role}" for role, n in sorted(roles.items()))
    last_ask = " ".join(users[-1].split())[:400] if users else "(none)"
    sections = {
        "## Goal": [f"- {' '.join(users[0].split())[:300]}" if users else "- (none)"],
        "### Done": [
            f"- {len(rows)} earlier messages ({counts}) were compacted without a model "
            "summary (the summary model failed)"
        ],
        "### In Progress": [f"- Last request before the compacted range: {last_ask}"],
        "## Relevant Files": [f"- {f}" for f in files] or ["- (none)"],
        "## Critical Context": [f"- Summary unavailable: {error[:200]}"],
    }
    lines: list[str] = []
    for heading in C.TEMPLATE_HEADINGS:
        lines.append(heading)
        if heading != "## Progress":
            lines += sections.get(heading, ["- (none)"])
    text = "\n".join(lines)
    if previous:
        text = previous.strip() + "\n\n" + text
    return text


class ReferenceCompressor(ContextEngine):
    """The reference built-in compressor (contract B1-B6, A1-A7, O1-O11).

    Args:
        model: model name (free text; recorded, used in summary requests).
        context_length: the model's window in tokens (default 200 000).
        config_context_length: alias of ``context_length`` (Hermes' keyword); wins if given.
        threshold_percent: compaction trigger as a fraction of the window (0 < x <= 1).
        protect_first_n: head rows, the system prompt included (default 3: system + first
            exchange), kept on every compaction (B3, seeds). With ``head_decay``: rows
            kept after the system prompt until the first compaction (Hermes).
        protect_last_n: tail floor in rows, uncapped (B3, seeds; default 20).
        summary_target_ratio: tail budget as a fraction of ``threshold_tokens`` (0.10-0.80).
        summarise: ``summarise(request: SummaryRequest) -> str``; raises on failure.
            Default: :class:`~reference_engines._compressor.summariser.ExtractiveSummariser`
            (deterministic, no model).
        summary_context_length: the summary model's window in tokens, used to size the
            summariser input; default ``context_length``.
        summary_model: model name put in summary requests.
        quiet_mode: no info logs (warnings still go out).
        head_decay: opt in to Hermes MAIN's head (host practice, against the seeds): system
            prompt + ``protect_first_n`` rows until the first compaction or once a previous
            summary exists, then the system prompt only. Adds ``"head-decay"`` to
            ``conformance_capabilities``. Default False (the seeds' head).

    Raises:
        ValueError: a numeric argument is out of range. TypeError: ``summarise`` is not
            callable, or ``head_decay`` is not a bool.

    Attributes (A6, ints): ``last_prompt_tokens``, ``last_completion_tokens``,
    ``last_total_tokens``, ``threshold_tokens``, ``context_length``, ``compression_count``
    (every compress() call). Also ``compactions`` (calls that compacted), ``head_decay``,
    ``conformance_capabilities`` (frozenset, per instance), ``last_compression`` (a dict
    describing the last compress() call), ``last_summary_error`` (str or None) and
    ``ineffective_compressions`` (A3).
    """

    #: Capabilities the conformance kit may test beyond the required surface (the
    #: default; each instance sets its own, adding ``"head-decay"`` with ``head_decay``).
    conformance_capabilities = frozenset({"compressor", "focus"})

    def __init__(
        self,
        model: str = "",
        context_length: int = C.DEFAULT_CONTEXT_LENGTH,
        threshold_percent: float = C.DEFAULT_THRESHOLD_PERCENT,
        protect_first_n: int = C.DEFAULT_PROTECT_FIRST_N,
        protect_last_n: int = C.DEFAULT_PROTECT_LAST_N,
        summary_target_ratio: float = C.DEFAULT_SUMMARY_TARGET_RATIO,
        summarise: Summarise | None = None,
        summary_context_length: int | None = None,
        summary_model: str = "",
        quiet_mode: bool = False,
        config_context_length: int | None = None,
        head_decay: bool = False,
    ) -> None:
        if config_context_length is not None:
            context_length = config_context_length
        self.model = str(model or "")
        self.context_length = _positive_int("context_length", context_length)
        self.threshold_percent = _fraction("threshold_percent", threshold_percent, 0.01, 1.0)
        self.protect_first_n = _positive_int("protect_first_n", protect_first_n, allow_zero=True)
        self.protect_last_n = _positive_int("protect_last_n", protect_last_n)
        self.summary_target_ratio = _fraction(
            "summary_target_ratio", summary_target_ratio, *C.TARGET_RATIO_RANGE
        )
        if summary_context_length is not None:
            summary_context_length = _positive_int("summary_context_length", summary_context_length)
        self.summary_context_length = summary_context_length
        if summarise is not None and not callable(summarise):
            raise TypeError(
                f"summarise must be callable as summarise(SummaryRequest) -> str, got {summarise!r}"
            )
        self.summarise: Summarise = summarise if summarise is not None else ExtractiveSummariser()
        self.summary_model = str(summary_model or "")
        self.quiet_mode = bool(quiet_mode)
        if not isinstance(head_decay, bool):
            raise TypeError(f"head_decay must be True or False, got {head_decay!r}")
        self.head_decay = head_decay
        self.conformance_capabilities = (
            type(self).conformance_capabilities | {"head-decay"}
            if head_decay
            else type(self).conformance_capabilities
        )
        self.threshold_tokens = int(self.context_length * self.threshold_percent)
        self.compression_count = 0
        self.compactions = 0
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.ineffective_compressions = 0
        self.last_summary_error: str | None = None
        self.last_compression: dict[str, Any] = {}
        self._previous_summary: str | None = None
        self._awaiting_usage = False

    # -- A1 ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """A1: ``"compressor"``, the built-in engine's name (contract B)."""
        return "compressor"

    # -- B1 derived budgets -------------------------------------------------------------
    @property
    def tail_token_budget(self) -> int:
        """B1: tokens the verbatim tail may hold, ``int(threshold_tokens x target_ratio)``."""
        return int(self.threshold_tokens * self.summary_target_ratio)

    @property
    def max_summary_tokens(self) -> int:
        """B1: summary ceiling in tokens, ``min(int(context_length x 0.05), 12 000)``."""
        return min(int(self.context_length * C.SUMMARY_CONTEXT_FRACTION), C.SUMMARY_TOKENS_CEILING)

    # -- A2 / A3 / A7 ---------------------------------------------------------------------
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """A2: record the usage of the last provider call (ints, tokens).

        ``prompt_tokens``/``completion_tokens``/``total_tokens`` are read (missing -> 0;
        total defaults to prompt + completion). The first real usage after a compaction
        judges it (A3): still at or over ``threshold_tokens`` counts one ineffective pass;
        any reading under the threshold clears the count.

        Raises:
            TypeError: ``usage`` is not a mapping.
        """
        if not isinstance(usage, Mapping):
            raise TypeError(
                "update_from_response(usage) expects a dict "
                f"of token counts, got {type(usage).__name__}"
            )
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        total = usage.get("total_tokens")
        self.last_prompt_tokens = prompt
        self.last_completion_tokens = completion
        self.last_total_tokens = int(total) if total is not None else prompt + completion
        if prompt > 0:
            if prompt < self.threshold_tokens:
                self.ineffective_compressions = 0
            elif self._awaiting_usage:
                self.ineffective_compressions += 1
                logger.warning(
                    "compaction did not bring the prompt under the threshold (%d >= %d tokens); "
                    "ineffective passes: %d",
                    prompt,
                    self.threshold_tokens,
                    self.ineffective_compressions,
                )
        self._awaiting_usage = False

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """A3/A7: True when ``prompt_tokens`` (default: the last usage) reaches the threshold.

        False on the -1 "compaction just ran" sentinel (or any negative count), while a
        compaction awaits its first real usage, and after 2 ineffective passes (A3).
        """
        if prompt_tokens is None:
            if self._awaiting_usage:
                return False
            prompt_tokens = self.last_prompt_tokens
        if prompt_tokens is None or prompt_tokens < 0:
            return False
        if prompt_tokens < self.threshold_tokens:
            return False
        return self.ineffective_compressions < C.MAX_INEFFECTIVE_PASSES

    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        """O7: rough pre-call check, ``(characters + 3) // 4`` per row against the threshold.

        Linear in the text size and never encodes; False after 2 ineffective passes.
        """
        if self.ineffective_compressions >= C.MAX_INEFFECTIVE_PASSES:
            return False
        rough = 0
        for m in messages or ():
            if isinstance(m, dict):
                rough += (len(msgs.content_text(m.get("content"))) + 3) // 4 + 4
                for call in m.get("tool_calls") or ():
                    if isinstance(call, dict):
                        rough += (
                            len(str((call.get("function") or {}).get("arguments") or "")) + 3
                        ) // 4
        return rough >= self.threshold_tokens

    # -- O: lifecycle, status, model switch ---------------------------------------------------
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """O1: nothing to load; a new session starts with no pending verdict."""
        self._awaiting_usage = False

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """O2: nothing to flush. The compaction state is kept: Hermes also calls this right
        after every committed compaction, followed by ``on_session_start(boundary_reason=
        "compression")``, and that boundary is not a new conversation (L1); ``/new`` and
        ``/reset`` clear it through :meth:`on_session_reset`."""

    def on_session_reset(self) -> None:
        """O3: zero the counters (base behaviour) and forget the per-session compaction state
        (previous summary, A3 count, the count of compactions that decides the B5 note and,
        with ``head_decay``, the B3 head)."""
        super().on_session_reset()
        self._previous_summary = None
        self.compactions = 0
        self.ineffective_compressions = 0
        self._awaiting_usage = False
        self.last_summary_error = None

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
        """O4/K1: new window; the base ABC recomputes ``threshold_tokens``.

        Budgets (B1) derive from it. The A3 count and any pending verdict are cleared:
        they were measured against the old window.

        Raises:
            ValueError: ``context_length`` is not a non-negative int.
        """
        _positive_int("context_length", context_length, allow_zero=True)
        super().update_model(model, context_length, base_url, api_key, provider, api_mode)
        self.model = str(model or "")
        self.ineffective_compressions = 0
        self._awaiting_usage = False

    def get_status(self) -> dict[str, Any]:
        """O8: the base status dict plus ``compressor`` details (budgets, A3 count, last error)."""
        status = super().get_status()
        status["compressor"] = {
            "tail_token_budget": self.tail_token_budget,
            "max_summary_tokens": self.max_summary_tokens,
            "ineffective_compressions": self.ineffective_compressions,
            "last_summary_error": self.last_summary_error,
        }
        return status

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        """Hermes 0.19.0 optional hook (gateway ``/compress`` preflight): True when there
        is at least one row between the protected head and tail (B3). Reads the tail by
        budget only; no summary is made."""
        if not isinstance(messages, list) or not messages:
            return False
        return bool(self._plan(messages)["middle"])

    # -- A4: compress ---------------------------------------------------------------------------
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        """A4/B2-B6: return a new, valid and shorter message list.

        Args:
            messages: OpenAI-format rows; never mutated.
            current_tokens: the host's prompt size in tokens (logged only).
            focus_topic: A5 topic whose facts the summary keeps first.
            force: a manual ``/compress``; also clears the A3 block.
            memory_context: memory-provider text included in the summary prompt.

        Returns:
            A new list. When there is nothing between head and tail, or the compacted
            history would count more tokens than ``messages`` (A9), it is a shallow copy
            of ``messages`` and the pass counts as ineffective (A3). Every call, that one
            included, adds 1 to ``compression_count`` (A6, seeds); ``compactions`` counts
            only the calls that compacted.

        Raises:
            TypeError: ``messages`` is not a list of dicts, or ``focus_topic`` not a str.
        """
        if not isinstance(messages, list) or not all(
            type(m) is dict or isinstance(m, dict) for m in messages
        ):
            bad = (
                next((i for i, m in enumerate(messages) if not isinstance(m, dict)), None)
                if isinstance(messages, list)
                else None
            )
            raise TypeError(
                "compress(messages) expects a list of OpenAI message dicts"
                + (
                    f"; item {bad} is {type(messages[bad]).__name__}"
                    if bad is not None
                    else f"; got {type(messages).__name__}"
                )
            )
        if focus_topic is not None and not isinstance(focus_topic, str):
            raise TypeError(f"focus_topic must be a str or None, got {type(focus_topic).__name__}")
        focus = (focus_topic or "").strip() or None
        self.compression_count += 1  # A6 (seeds): how many times compress() has run
        if force:
            self.ineffective_compressions = 0
        plan = self._plan(messages)
        if plan["previous"] is None:
            self._previous_summary = None  # B6: the messages are the source of truth
        if not plan["middle"]:
            self.ineffective_compressions += 1
            self.last_compression = {
                "compressed": False,
                "reason": "nothing between head and tail",
                **plan["stats"],
            }
            if not self.quiet_mode:
                logger.info("compress: nothing to compact (%d messages)", len(messages))
            return list(messages)
        summary = self._summarise(messages, plan, focus, memory_context)
        middle_tokens = plan["stats"].get("middle_tokens")
        summary_tokens = tokens.count_text(summary) if summary is not None else None
        out = self._assemble(messages, plan, summary)
        # A9: when the middle is a few rows and the protected head and tail hold the bulk, the
        # summary and the compaction note can outweigh what they replace; the history is then
        # kept. Counting both lists reads every row, so it is done only when growth is possible
        # (middle_tokens is None when the middle is over the count limit: too large to lose).
        if (
            middle_tokens is not None
            and (
                summary_tokens is None
                or summary_tokens + C.GROWTH_ALLOWANCE_TOKENS >= middle_tokens
            )
            and tokens.count_messages(out) > tokens.count_messages(messages)
        ):
            self.ineffective_compressions += 1
            self.last_compression = {
                "compressed": False,
                "reason": "the compacted history would count more tokens",
                **plan["stats"],
            }
            if not self.quiet_mode:
                logger.info("compress: not compacted, the result would be larger")
            return list(messages)
        if summary_tokens is not None and middle_tokens is not None:
            if summary_tokens >= middle_tokens:
                # A3: a summary no smaller than what it replaces did not reduce the history.
                self.ineffective_compressions += 1
        self.compactions += 1
        self._previous_summary = summary
        self._awaiting_usage = True
        self.last_compression = {
            "compressed": True,
            "summary": summary is not None,
            "messages_in": len(messages),
            "messages_out": len(out),
            "current_tokens": current_tokens,
            **plan["stats"],
        }
        if not self.quiet_mode:
            logger.info(
                "compress: %d -> %d messages (compaction #%d)",
                len(messages),
                len(out),
                self.compactions,
            )
        return out

    # -- Phase 1 + 2 ------------------------------------------------------------------------------
    def _plan(self, messages: list[Message]) -> dict[str, Any]:
        n = len(messages)
        s = bnd.latest_summary(messages, msgs.summary_body)
        previous = msgs.summary_body(messages[s]) if s >= 0 else None
        if (
            self.head_decay
        ):  # host practice (Hermes MAIN): the head decays after the first compaction
            first_n = self.protect_first_n if (self.compactions == 0 and s < 0) else 0
            head = bnd.head_end_decaying(messages, first_n)
        else:  # B3 (seeds): the first protect_first_n rows, system included, on every compaction
            head = bnd.head_end(messages, self.protect_first_n)
            k = bnd.first_summary_in(messages, head, msgs.summary_body)
            if k >= 0:
                head = max(k, 1 if messages[0].get("role") == "system" else 0)
        raw_cache: dict[int, int] = {}

        def raw(i: int) -> int:
            t = raw_cache.get(i)
            if t is None:
                t = raw_cache[i] = tokens.count_message(messages[i])
            return t

        budget = self.tail_token_budget
        protected = bnd.protected_tail_start(n, raw, budget, self.protect_last_n)
        cut = bnd.tail_cut(messages, head, raw, budget, self.protect_last_n)
        if s >= head and cut <= s:
            cut = bnd.align_forward(messages, s + 1)
        chain = bnd.trailing_chain_start(messages)
        if head <= chain < cut:
            cut = chain  # V2: the newest tool chain stays verbatim in the tail
        user = bnd.last_real_user(messages, head)
        live = user if head <= user < cut else -1
        pure_summary = s >= 0 and msgs.is_pure_summary(messages[s])
        middle = bnd.indices(head, cut, [live] + ([s] if pure_summary else []))
        return {
            "head": head,
            "cut": cut,
            "live": live,
            "summary_index": s,
            "previous": previous,
            "protected": protected,
            "middle": middle,
            "stats": {
                "head_rows": head,
                "tail_rows": n - cut + (1 if live >= 0 else 0),
                "middle_rows": len(middle),
                "previous_summary": previous is not None,
            },
        }

    def _view(self, messages: list[Message], plan: dict[str, Any], i: int) -> Mapping[str, Any]:
        """B2/B6: row ``i`` as kept or summarised: pruned outside the protected tail,
        a merged-in old summary removed."""
        row = messages[i]
        if i == plan["summary_index"]:
            row = msgs.without_summary(row)
        return msgs.pruned(row) if i < plan["protected"] else row

    # -- Phase 3 -----------------------------------------------------------------------------------
    def _summarise(
        self,
        messages: list[Message],
        plan: dict[str, Any],
        focus: str | None,
        memory_context: str,
    ) -> str | None:
        middle: list[int] = plan["middle"]
        cap = self.max_summary_tokens
        view_tokens: dict[int, int] = {}

        def tok(i: int) -> int:
            t = view_tokens.get(i)
            if t is None:
                t = view_tokens[i] = tokens.count_message(self._view(messages, plan, i))
            return t

        # B4: budget = content tokens x 0.20 in [2000, cap]; stop counting once the cap is reached.
        content = 0
        enough = cap / C.SUMMARY_RATIO
        for i in reversed(middle):
            content += tok(i)
            if content >= enough:
                break
        # When the ceiling is under 2000 (windows under 40 000 tokens) the 2000 floor wins,
        # as in Hermes (host practice).
        budget = max(C.MIN_SUMMARY_TOKENS, min(int(content * C.SUMMARY_RATIO), cap))
        previous = plan["previous"]
        memory = (
            sanitize_memory_context(memory_context)
            if memory_context and memory_context.strip()
            else ""
        )
        window = self.summary_context_length or self.context_length
        fixed = (
            C.TEMPLATE_RESERVE_TOKENS
            + tokens.count_text(previous or "")
            + tokens.count_text(memory)
            + tokens.count_text(focus or "")
        )
        room = window - budget - fixed
        chosen, parts = self._select_turns(messages, plan, focus, room, tok)
        turn_parts = [parts[i] for i in sorted(chosen)]
        turns_text = "\n".join(turn_parts).lstrip("\n")
        request = SummaryRequest(
            messages=build_messages(
                turn_parts=turn_parts,
                budget_tokens=budget,
                focus_topic=focus,
                previous_summary=previous,
                memory_context=memory,
                turns_total=len(middle),
                turns_sent=len(chosen),
            ),
            budget_tokens=budget,
            focus_topic=focus,
            previous_summary=previous,
            memory_context=memory,
            turns_text=turns_text,
            turns_total=len(middle),
            turns_sent=len(chosen),
            model=self.summary_model or self.model,
        )
        plan["stats"].update(
            summary_budget_tokens=budget,
            turns_sent=len(chosen),
            middle_tokens=content if content < enough else None,  # None: over the count limit
        )
        self.last_summary_error = None
        try:
            text = self.summarise(request)
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"summariser returned no text ({text!r})")
        except Exception as exc:  # B4/A4: a failed summary is never a silent drop
            self.last_summary_error = f"{type(exc).__name__}: {exc}"
            logger.warning(
                "context summary failed (%s); a deterministic fallback summary stands in for "
                "%d middle messages",
                self.last_summary_error,
                len(middle),
            )
            plan["stats"]["summary_fallback"] = True
            # A11: the stand-in keeps the summary budget too, pass after pass
            text = fallback_summary(
                [self._view(messages, plan, i) for i in middle], previous, self.last_summary_error
            )
            return split_tokens(text, budget)[0]
        text, was_cut = split_tokens(text.strip(), budget)
        plan["stats"]["summary_truncated"] = was_cut
        return text

    def _select_turns(self, messages, plan, focus, room, tok):
        """Phase 3 input: rows of the middle that fit ``room`` tokens, as serialised text.

        A5: rows mentioning the focus topic are chosen first (up to half the room); then
        the newest rows, contiguous from the end of the middle, fill the rest. A row's
        cost is its cl100k count (``tok``, the same cached count as the budget's) plus an
        allowance for its label and call-id lines, so selecting never encodes new text;
        rows clipped for the prompt are over-counted, which only leaves room unused.
        Returns (chosen row indices, {index: serialised row text}); each row becomes one
        text part of the request.
        """
        middle: list[int] = plan["middle"]
        parts: dict[int, str] = {}
        chosen: set = set()
        used = 0

        def cost(i: int) -> int:
            if i not in parts:
                parts[i] = "\n".join(msgs.serialise_parts(self._view(messages, plan, i)))
            n_calls = len(messages[i].get("tool_calls") or ())
            return tok(i) + C.LABEL_ALLOWANCE_TOKENS + n_calls * C.CALL_LINE_ALLOWANCE_TOKENS

        if room <= 0:
            return chosen, parts
        if focus:
            needle = focus.lower()
            for i in reversed(middle):
                view = self._view(messages, plan, i)
                hay = msgs.content_text(view.get("content"))
                if needle in hay.lower() or needle in str(view.get("tool_calls") or "").lower():
                    c = cost(i)
                    if used + c <= room // 2:
                        chosen.add(i)
                        used += c
        for i in reversed(middle):
            if i in chosen:
                continue
            c = cost(i)
            if used + c > room:
                break
            chosen.add(i)
            used += c
        return chosen, parts

    # -- Phase 4 -----------------------------------------------------------------------------------
    def _assemble(
        self, messages: list[Message], plan: dict[str, Any], summary: str | None
    ) -> list[Message]:
        head: list[Message] = []
        for i in range(plan["head"]):
            row = msgs.fresh_copy(self._view(messages, plan, i))
            if i == 0 and row.get("role") == "system" and self.compactions == 0:
                if C.COMPACTION_NOTE not in msgs.content_text(row.get("content")):
                    row["content"] = msgs.append_text(row.get("content"), C.COMPACTION_NOTE)
            head.append(row)
        tail_idx = ([plan["live"]] if plan["live"] >= 0 else []) + list(
            range(plan["cut"], len(messages))
        )
        tail: list[Message] = []
        for i in tail_idx:
            row = messages[i]
            if i == plan["summary_index"]:
                row = msgs.without_summary(row)
            tail.append(msgs.fresh_copy(row))
        middle_rows: list[Message] = []
        if summary is not None:
            block = msgs.summary_block(summary)
            role = self._summary_role(head, tail)
            if role is None:
                tail[0]["content"] = msgs.prepend_text(tail[0].get("content"), block)
            else:
                middle_rows.append({"role": role, "content": block})
            plan["stats"]["summary_role"] = role or f"merged into {tail[0].get('role')}"
        return msgs.repair_tool_pairs(
            head + middle_rows + tail, in_flight=bnd.calls_in_flight(messages)
        )

    @staticmethod
    def _summary_role(head: list[Message], tail: list[Message]) -> str | None:
        """B5: the summary row's role so it touches no row of the same role, or None to merge.

        After the system prompt (or at the very start) the summary is a user row, as
        providers that want a user turn first require; after assistant/tool it is user;
        after user it is assistant. If that equals the first tail row's role, the other
        role is tried unless it equals the head's last role or a user row is required;
        otherwise None: the summary is merged in front of the first tail row.
        """
        prev = head[-1].get("role") if head else None
        nxt = tail[0].get("role") if tail else None
        force_user = prev in (None, "system") or not any(
            r.get("role") == "user" for r in head + tail
        )
        role = "assistant" if (prev == "user" and not force_user) else "user"
        if role != nxt:
            return role
        flipped = "assistant" if role == "user" else "user"
        if flipped != prev and not force_user:
            return flipped
        return None
