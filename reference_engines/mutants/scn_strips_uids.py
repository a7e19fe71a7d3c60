"""Scenario mutant for U3: ``compress`` rebuilds every row it keeps without
``message_uid``, so the host mints new uids for messages that did not change."""

from reference_engines.mutants._base import MinimalEngine


class StripsUids(MinimalEngine):
    """Breaks U3 only (the engine drops the identity of the rows it keeps)."""

    mutant_of = "U3"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        return [{k: v for k, v in m.items() if k != "message_uid"} for m in out]  # the defect
