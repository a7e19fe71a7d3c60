"""The in-memory form of a scenario: :class:`Scenario`, :class:`Expectation`.

Steps stay plain dicts (validated by the schema); the runner interprets them. Each
expectation names its clause and level, so the MUST/SHOULD exit rule and the message
grammar ``[CLAUSE LEVEL] ...`` apply to scenarios exactly as to checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Step kinds (one per list item).
STEP_KINDS = (
    "user",
    "fault",
    "model",
    "compress",
    "reset",
    "new",
    "end",
    "restart",
    "branch",
    "rotate",
    "timeout_compactions",
    "subagent",
    "gateway",
    "check",
)

#: Expectation kinds (one per expectation), see :mod:`conformance.scenarios.expectations`.
EXPECTATION_KINDS = (
    "no_orphan_pairs",
    "uids_stable",
    "history_not_rewritten",
    "no_engine_errors",
    "engine_active",
    "compressions",
    "turns_failed",
    "hygiene_runs",
    "cache_read_ratio",
    "tokens_after_compaction",
    "call_order",
    "engine_attr",
)


@dataclass(frozen=True)
class Expectation:
    """One expectation of a scenario (top-level ``expect`` item or a ``check`` step).

    Attributes:
        id: unique within the scenario (given, else ``<kind>`` with a numeric suffix).
        clause: contract clause id, e.g. ``"L1"``.
        level: ``"MUST"`` or ``"SHOULD"``.
        kind: one of :data:`EXPECTATION_KINDS`.
        params: the kind's value (``True``, ``{"min": 1}``, a list of method names ...).
        line: 1-based line in the scenario file.
        step: for a ``check`` step, its field path (``steps[4]``); None for top-level items.
        why: optional explanation shown in failures.
    """

    id: str
    clause: str
    level: str
    kind: str
    params: Any
    line: int = 0
    step: str | None = None
    why: str = ""


@dataclass
class Scenario:
    """A parsed, validated scenario.

    Attributes:
        name: identifier (test ids, report headings).
        description: free text.
        seed: provider and generated-text seed.
        host: the ``host`` mapping (model, context_length, compression, ...).
        tool_outputs: tool name -> text or ``{"bytes": n}``.
        steps: the step dicts, in order.
        expectations: top-level expectations followed by every ``check`` step's, in file order.
        source: the file path (or ``<string>``).
        lines: line marks (:class:`conformance.scenarios.loader._Marks`), for messages.
    """

    name: str
    description: str = ""
    seed: int = 0
    host: dict[str, Any] = field(default_factory=dict)
    tool_outputs: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    expectations: list[Expectation] = field(default_factory=list)
    source: str = "<string>"
    lines: Any = None

    def line_of(self, path: tuple) -> int:
        """The 1-based line of the field at ``path`` (0 when unknown)."""
        return self.lines.line(path) if self.lines is not None else 0

    @classmethod
    def from_data(
        cls, data: dict[str, Any], *, source: str = "<string>", lines: Any = None
    ) -> Scenario:
        """Build from schema-valid data (see :func:`conformance.scenarios.loader.load_text`)."""
        sc = cls(
            name=data["name"],
            description=data.get("description", ""),
            seed=int(data.get("seed", 0)),
            host=dict(data.get("host") or {}),
            tool_outputs=dict(data.get("tool_outputs") or {}),
            steps=list(data["steps"]),
            source=source,
            lines=lines,
        )
        used: dict[str, int] = {}

        def make(item: dict[str, Any], path: tuple, step: str | None) -> Expectation:
            kind = next(k for k in item if k in EXPECTATION_KINDS)
            base = item.get("id") or kind.replace("_", "-")
            used[base] = used.get(base, 0) + 1
            ident = base if used[base] == 1 else f"{base}-{used[base]}"
            return Expectation(
                ident,
                item["clause"],
                item["level"],
                kind,
                item[kind],
                sc.line_of(path),
                step,
                item.get("why", ""),
            )

        for i, item in enumerate(data.get("expect") or ()):
            sc.expectations.append(make(item, ("expect", i), None))

        def walk(steps: list[dict[str, Any]], base: tuple) -> None:
            for i, step in enumerate(steps):
                path = base + (i,)
                if "check" in step:
                    checks = step["check"] if isinstance(step["check"], list) else [step["check"]]
                    for j, item in enumerate(checks):
                        sub = path + ("check",) + ((j,) if isinstance(step["check"], list) else ())
                        sc.expectations.append(make(item, sub, field_name(path)))
                if "subagent" in step:
                    walk(step["subagent"]["steps"], path + ("subagent", "steps"))

        walk(sc.steps, ("steps",))
        return sc


def field_name(path: tuple) -> str:
    """``('steps', 3, 'user', 'words')`` -> ``steps[3].user.words`` (how messages name a field)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"
