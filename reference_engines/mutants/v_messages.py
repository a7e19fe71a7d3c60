"""Mutants of section V (V1, V3; V2 and V4 orphans and a dropped system prompt have their own
files; here also the in-flight tool chain (V2), the cut or rewritten system prompt (V4) and
engine fields in rows (V5)), with the correct twin of each fault a plugin author shipped."""

from __future__ import annotations

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine


class DeveloperRoleSummary(MinimalEngine):
    """Breaks V1: the summary message has role "developer"."""

    mutant_of = "V1"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, role="developer")
            if m.get("content", "").__class__ is str and m["content"].startswith("[Summary")
            else m
            for m in out
        ]  # the defect


class DictContentSummary(MinimalEngine):
    """Breaks V3: the summary's content is a dict, not a str or a list of parts."""

    mutant_of = "V3"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, content={"text": m["content"]})
            if isinstance(m.get("content"), str) and m["content"].startswith("[Summary")
            else m
            for m in out
        ]  # the defect


# -- V2: the in-flight tool chain (docs/contract-notes.md 6.6) --


def _trailing_chain(messages):
    """Index of the newest assistant tool_calls row when only tool results follow it, else
    len(messages)."""
    k = len(messages)
    while k > 0 and messages[k - 1].get("role") == "tool":
        k -= 1
    if k > 0 and messages[k - 1].get("role") == "assistant" and messages[k - 1].get("tool_calls"):
        return k - 1
    return len(messages)


class KeepsCompleteTurnsOnly(MinimalEngine):
    """Breaks V2 (in flight): "keep only complete turns": a tool exchange the assistant has not
    answered yet is dropped from the end, so the agent runs the newest call again."""

    mutant_of = "V2"

    def _compress(self, messages):
        out = super()._compress(messages)
        while out and (out[-1].get("role") == "tool" or out[-1].get("tool_calls")):
            out.pop()  # the defect: a turn counts only once the assistant replied
        return out


class KeepsCurrentTurnWhole(MinimalEngine):
    """Correct twin of :class:`KeepsCompleteTurnsOnly`: unfinished exchanges are dropped only
    before the current turn; the newest tool chain at the end is the turn in progress and stays."""

    def _compress(self, messages):
        out = super()._compress(messages)
        current = messages[_trailing_chain(messages) :]  # the turn in progress
        while out and (out[-1].get("role") == "tool" or out[-1].get("tool_calls")):
            if out[-1] in current:
                break  # the fix: the newest chain is the current turn, not an unfinished one
            out.pop()
        return out


def _strip_unanswered(rows, exempt=()):
    """Orphan repair as many engines write it: results without a call are dropped, and so are
    calls without a result (an assistant row left with nothing becomes plain text or goes)."""
    answered = [m.get("tool_call_id") for m in rows if m.get("role") == "tool"]
    out = []
    for i, m in enumerate(rows):
        if m.get("tool_calls") and i not in exempt:
            calls = [c for c in m["tool_calls"] if c.get("id") in answered]
            if len(calls) != len(m["tool_calls"]):
                m = {k: v for k, v in m.items() if k != "tool_calls"}
                if calls:
                    m["tool_calls"] = calls
                elif not m.get("content"):
                    continue
        out.append(m)
    return out


class StripsPendingCall(MinimalEngine):
    """Breaks V2 (in flight): its orphan repair strips every call without a result, the call the
    host is still running included."""

    mutant_of = "V2"

    def _compress(self, messages):
        return _strip_unanswered(super()._compress(messages))  # the defect: no in-flight exemption


class StripsOrphansNotInFlight(MinimalEngine):
    """Correct twin of :class:`StripsPendingCall`: the same repair, with the trailing in-flight
    call exempted (the fix Hermes shipped)."""

    def _compress(self, messages):
        out = super()._compress(messages)
        return _strip_unanswered(out, exempt={_trailing_chain(out)})


# -- V4: the system prompt cut or rewritten (docs/contract-notes.md 6.7) --


def _system_text(m):
    c = m.get("content")
    return c if isinstance(c, str) else "".join(str(p.get("text", "")) for p in c or ())


class TruncatesSystemPrompt(MinimalEngine):
    """Breaks V4: a compaction trims the system prompt to its first 600 characters to save
    tokens (the old check compared only the first 200)."""

    mutant_of = "V4"
    system_chars = 600

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) < len(messages) and out and out[0].get("role") == "system":
            text = _system_text(out[0])
            if len(text) > self.system_chars:
                out[0] = dict(out[0], content=text[: self.system_chars])  # the defect
        return out


class TrimsSummaryNotSystemPrompt(MinimalEngine):
    """Correct twin of :class:`TruncatesSystemPrompt`: saves its tokens on the summary (capped at
    600 characters) and leaves the system prompt whole."""

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, content=m["content"][:600])
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
            else m
            for m in out
        ]


COUNTER = "\n\n[Context compacted "


class CounterInSystemPrompt(MinimalEngine):
    """Breaks V4 (SHOULD): renders a compaction counter into the system prompt at every
    compaction, so message 0 changes each time and its prompt cache never survives (P3)."""

    mutant_of = "V4"

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) < len(messages) and out and isinstance(out[0].get("content"), str):
            base = out[0]["content"].split(COUNTER, 1)[0]
            out[0] = dict(
                out[0], content=f"{base}{COUNTER}{self.compression_count} times]"
            )  # the defect: a value that changes at every compaction
        return out


class NoteInSystemPromptOnce(MinimalEngine):
    """Correct twin of :class:`CounterInSystemPrompt`: a fixed note, appended once (the fix:
    nothing in message 0 changes after the first compaction)."""

    NOTE = "\n\n[Earlier turns of this conversation were compacted into a summary.]"

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) < len(messages) and out and isinstance(out[0].get("content"), str):
            if self.NOTE not in out[0]["content"]:
                out[0] = dict(out[0], content=out[0]["content"] + self.NOTE)
        return out


# -- V5: engine-internal fields in rows (win4r/lossless-claw-enhanced #4) --------------------


class StoreRecordRows(MinimalEngine):
    """Breaks V5 (SHOULD): the summary row is the engine's store record, ``dag_node`` and ``raw``
    fields included, so they ride into the provider request."""

    mutant_of = "V5"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, dag_node=f"node-{i}", raw={"kind": "summary", "row": i})  # the defect
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
            else m
            for i, m in enumerate(out)
        ]


class StoreFieldsStayInStore(MinimalEngine):
    """Correct twin of :class:`StoreRecordRows`: the store record keeps ``dag_node`` and ``raw``;
    the row returned carries only its message keys."""

    MESSAGE_KEYS = ("role", "content", "name", "tool_calls", "tool_call_id", "message_uid")

    def __init__(self):
        self.records = []

    def _compress(self, messages):
        out = super()._compress(messages)
        rows = []
        for i, m in enumerate(out):
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX):
                record = dict(m, dag_node=f"node-{i}", raw={"kind": "summary", "row": i})
                self.records = (self.records + [record])[-100:]
                m = {k: record[k] for k in self.MESSAGE_KEYS if k in record}
            rows.append(m)
        return rows
