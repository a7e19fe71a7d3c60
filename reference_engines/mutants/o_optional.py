"""Mutants of section O (O1-O11). Each breaks one clause."""

from __future__ import annotations

from reference_engines.mutants._base import HookedEngine, MinimalEngine

KNOWN_SESSION_KEYS = {"platform", "model", "context_length"}


class StrictSessionStart(MinimalEngine):
    """Breaks O1: on_session_start rejects keyword arguments it does not know."""

    mutant_of = "O1"

    def on_session_start(self, session_id, **kwargs):
        unknown = set(kwargs) - KNOWN_SESSION_KEYS
        if unknown:
            raise TypeError(f"unexpected session keys {sorted(unknown)}")  # the defect


class EndWithoutStart(MinimalEngine):
    """Breaks O2: on_session_end raises for a session it did not see start."""

    mutant_of = "O2"

    def on_session_start(self, session_id, **kwargs):
        self.session_id = session_id

    def on_session_end(self, session_id, messages):
        if getattr(self, "session_id", None) != session_id:
            raise RuntimeError(f"session {session_id} was never started")  # the defect


class ResetKeepsCompletion(MinimalEngine):
    """Breaks O3: on_session_reset forgets last_completion_tokens."""

    mutant_of = "O3"

    def on_session_reset(self):
        kept = self.last_completion_tokens
        super().on_session_reset()
        self.last_completion_tokens = kept  # the defect


class StaleThreshold(MinimalEngine):
    """Breaks O4: update_model sets context_length but keeps the first threshold."""

    mutant_of = "O4"

    def update_model(
        self, model, context_length, base_url="", api_key="", provider="", api_mode="", **kwargs
    ):
        first = self.threshold_tokens
        super().update_model(model, context_length, base_url, api_key, provider, api_mode, **kwargs)
        if first:
            self.threshold_tokens = first  # the defect


class StaleSessionWindow(MinimalEngine):
    """Breaks O4 (REG-d): on_session_start applies the context_length it is handed."""

    mutant_of = "O4"

    def on_session_start(self, session_id, **kwargs):
        if kwargs.get("context_length"):
            self.context_length = int(kwargs["context_length"])  # the defect


class SchemasAsDict(MinimalEngine):
    """Breaks O5: get_tool_schemas returns a dict."""

    mutant_of = "O5"

    def get_tool_schemas(self):
        return {}  # the defect


class PlainTextUnknownTool(MinimalEngine):
    """Breaks O6: an unknown tool gets plain text, not a JSON error."""

    mutant_of = "O6"

    def handle_tool_call(self, name, args, **kwargs):
        return f"unknown tool {name}"  # the defect


class PreflightReturnsNone(MinimalEngine):
    """Breaks O7: should_compress_preflight returns None."""

    mutant_of = "O7"

    def should_compress_preflight(self, messages):
        return None  # the defect


class StatusWithoutPercent(MinimalEngine):
    """Breaks O8: get_status lacks usage_percent."""

    mutant_of = "O8"

    def get_status(self):
        status = super().get_status()
        status.pop("usage_percent")  # the defect
        return status


class PercentOfZeroWindow(MinimalEngine):
    """Breaks O8: get_status() divides by context_length, which is 0 before the first
    update_model() and for a model whose window is unknown."""

    mutant_of = "O8"

    def get_status(self):
        status = super().get_status()
        status["usage_percent"] = min(
            100.0, 100 * self.last_prompt_tokens / self.context_length
        )  # the defect: ZeroDivisionError on a zero window
        return status


class GuardsZeroWindow(MinimalEngine):
    """Correct twin of :class:`PercentOfZeroWindow`: the same percentage, 0 on a zero window."""

    def get_status(self):
        status = super().get_status()
        window = self.context_length
        last = max(self.last_prompt_tokens, 0)
        status["usage_percent"] = min(100.0, 100 * last / window) if window > 0 else 0
        return status


class SelectReturnsTuple(HookedEngine):
    """Breaks O9: select_context returns a tuple."""

    mutant_of = "O9"

    def select_context(self, request_messages, **kwargs):
        out = super().select_context(request_messages, **kwargs)
        return tuple(out) if out is not None else tuple(request_messages)  # the defect


class TurnCompleteNoKwargs(HookedEngine):
    """Breaks O10: on_turn_complete does not accept the host's keyword arguments."""

    mutant_of = "O10"

    def on_turn_complete(self, messages, usage=None):  # the defect: no **kwargs
        self.turns_seen += 1


class CloneRenamed(MinimalEngine):
    """Breaks O11: clone_for_agent returns an engine with another name."""

    mutant_of = "O11"

    def clone_for_agent(self):
        return _Renamed()  # the defect


class _Renamed(MinimalEngine):
    @property
    def name(self):
        return "minimal-clone"
