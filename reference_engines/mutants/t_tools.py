"""Mutants of section T (T1, T2). Each breaks one clause."""

from __future__ import annotations

from reference_engines.mutants._base import HookedEngine


class InvalidToolSchema(HookedEngine):
    """Breaks T1: the tool's parameters are not a valid JSON Schema ("type": "strin")."""

    mutant_of = "T1"

    def tool_parameters(self):
        return {
            "type": "object",
            "properties": {"query": {"type": "strin"}},
            "required": ["query"],
        }  # the defect


class ToolReturnsDict(HookedEngine):
    """Breaks T2: a known tool returns a dict instead of a JSON string."""

    mutant_of = "T2"

    def handle_tool_call(self, name, args, **kwargs):
        if name == "context_recall":
            return {"matches": []}  # the defect
        return super().handle_tool_call(name, args, **kwargs)
