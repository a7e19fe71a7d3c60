"""Mutants of section U (U2, U4, U6, U7, U10). Each breaks one clause."""

from __future__ import annotations

from reference_engines.mutants._base import MinimalEngine


def _uses_uids(messages):
    return any(isinstance(m, dict) and "message_uid" in m for m in messages)


class RequiresUidOnOldRows(MinimalEngine):
    """Breaks U2: once uids are in use, an older row without one is an error."""

    mutant_of = "U2"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        if _uses_uids(messages):
            for m in messages[:-1]:
                _ = m[
                    "message_uid"
                ]  # the defect: KeyError on rows written before the column existed
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class StaleContentByUid(MinimalEngine):
    """Breaks U4: remembers content by uid and puts the old version back."""

    mutant_of = "U4"

    def __init__(self):
        self.by_uid = {}

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        fixed = []
        for m in messages:
            uid = m.get("message_uid")
            if uid is not None:
                self.by_uid.setdefault(uid, m.get("content"))
                m = dict(m, content=self.by_uid[uid])  # the defect: the first version wins
            fixed.append(m)
        return super().compress(fixed, current_tokens, focus_topic, **kwargs)


class BadSummaryUid(MinimalEngine):
    """Breaks U6: stamps a uid the host cannot commit ("summary-<n>") on its summary."""

    mutant_of = "U6"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, message_uid=f"summary-{self.compression_count}")
            if isinstance(m.get("content"), str) and m["content"].startswith("[Summary")
            else m
            for m in out
        ]  # the defect


class RejectsDuplicateUids(MinimalEngine):
    """Breaks U7: two live rows sharing a uid raise."""

    mutant_of = "U7"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        uids = [m["message_uid"] for m in messages if "message_uid" in m]
        if len(uids) != len(set(uids)):
            raise ValueError("duplicate message_uid")  # the defect
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class RequiresUidOnCurrentTurn(MinimalEngine):
    """Breaks U10: the current user message without a uid (preflight before the flush) raises."""

    mutant_of = "U10"

    def _check(self, messages):
        if len(messages) > 1 and _uses_uids(messages[:-1]) and "message_uid" not in messages[-1]:
            raise KeyError("message_uid")  # the defect

    def should_compress_preflight(self, messages):
        self._check(messages)
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self._check(messages)
        return super().compress(messages, current_tokens, focus_topic, **kwargs)
