"""Load ``*.scenario.yaml`` files: YAML with line marks, JSON Schema validation, clear errors.

Every error names the file, the line and the field, e.g.::

    checkout.scenario.yaml:14: steps[3]: unknown step 'comprss'; known steps: branch, check, ...
    checkout.scenario.yaml:9: steps[1].user.words: expected integer, got 'many'
    checkout.scenario.yaml:22: expect[0]: missing field 'level' (MUST or SHOULD)

Lines come from PyYAML's node marks (``yaml.compose``), so they point at the key or
value the user wrote. :func:`load_scenario` returns a :class:`~conformance.scenarios.spec.Scenario`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from conformance.clauses.errors import ScenarioError
from conformance.scenarios.spec import EXPECTATION_KINDS, STEP_KINDS, Scenario, field_name

SCHEMA_PATH = Path(__file__).with_name("schema.json")
Path_ = tuple[Any, ...]


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The scenario JSON Schema (``schema.json`` shipped next to this module)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


class _Marks:
    """Line numbers by path: ``value[path]`` where the value starts, ``key[path]`` where its key
    is."""

    def __init__(self) -> None:
        self.value: dict[Path_, int] = {}
        self.key: dict[Path_, int] = {}

    def line(self, path: Path_, *, key: bool = False) -> int:
        table = self.key if key else self.value
        while path not in table and path:
            path = path[:-1]
        return table.get(path, 1)


#: Bounds of a scenario document: nesting depth, and values after aliases are expanded (an
#: alias bomb of a few lines would otherwise expand to billions of values).
MAX_DEPTH = 48
MAX_VALUES = 200_000


class _TooLarge(Exception):
    """The document breaks :data:`MAX_DEPTH` or :data:`MAX_VALUES`; the message says which."""

    def __init__(self, line: int, field: str, message: str):
        super().__init__(message)
        self.problem = (line, field, message)


def _construct(
    node: yaml.Node,
    path: Path_,
    marks: _Marks,
    loader: yaml.SafeLoader,
    problems: list[tuple[int, str, str]],
    budget: list[int] | None = None,
) -> Any:
    budget = [MAX_VALUES] if budget is None else budget
    budget[0] -= 1
    line = node.start_mark.line + 1
    if budget[0] < 0:
        raise _TooLarge(
            line,
            field_name(path),
            f"more than {MAX_VALUES} values once aliases are expanded; a scenario is a short "
            "script: write its steps out, or reuse a step with an alias to one value only",
        )
    if len(path) > MAX_DEPTH:
        raise _TooLarge(
            line,
            field_name(path[:MAX_DEPTH]),
            f"nested deeper than {MAX_DEPTH} levels; scenario fields are flat lists and objects",
        )
    marks.value[path] = line
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                problems.append(
                    (
                        key_node.start_mark.line + 1,
                        field_name(path),
                        f"keys must be strings, got {key!r}",
                    )
                )
                continue
            key = str(key) if not isinstance(key, str) else key
            if key in out:
                problems.append(
                    (
                        key_node.start_mark.line + 1,
                        field_name(path + (key,)),
                        f"duplicate key {key!r} (first at line {marks.key[path + (key,)]})",
                    )
                )
                continue
            marks.key[path + (key,)] = key_node.start_mark.line + 1
            out[key] = _construct(value_node, path + (key,), marks, loader, problems, budget)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _construct(item, path + (i,), marks, loader, problems, budget)
            for i, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)


def parse_yaml(text: str, path: str = "<string>") -> tuple[Any, _Marks]:
    """Parse YAML ``text`` into plain data plus line marks.

    Raises:
        ScenarioError: YAML syntax errors (with PyYAML's line), duplicate keys.
    """
    marks = _Marks()
    problems: list[tuple[int, str, str]] = []
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = _construct(node, (), marks, loader, problems) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else 0
        reason = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError(path, [(line, "", f"not valid YAML: {reason}")]) from None
    except _TooLarge as exc:
        raise ScenarioError(path, [exc.problem]) from None
    except RecursionError:  # PyYAML's composer recurses once per nesting level
        raise ScenarioError(
            path,
            [
                (
                    0,
                    "",
                    f"nested deeper than {MAX_DEPTH} levels; scenario fields are flat lists "
                    "and objects",
                )
            ],
        ) from None
    if problems:
        raise ScenarioError(path, problems)
    return data, marks


def _type_name(value: Any) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _describe(error: Any, marks: _Marks) -> tuple[int, str, str]:
    """One jsonschema error as ``(line, field, message)`` in the kit's words."""
    path = tuple(error.absolute_path)
    kind = error.validator
    inst = error.instance
    if kind == "required":
        missing = [r for r in error.validator_value if isinstance(inst, dict) and r not in inst]
        what = missing[0] if missing else "?"
        hint = {
            "level": " (MUST or SHOULD)",
            "clause": " (a contract clause id such as L1 or TS1)",
            "steps": " (a list of steps)",
            "expect": " (a list of expectations, may be empty)",
            "name": " (an identifier)",
            "kind": " ("
            + ", ".join(error.schema.get("properties", {}).get("kind", {}).get("enum", []))
            + ")",
        }.get(what, "")
        line = marks.line(path, key=True) if path in marks.key else marks.line(path)
        return line, field_name(path), f"missing field {what!r}{hint}"
    if kind == "additionalProperties" and isinstance(inst, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in inst if k not in allowed)
        key = extra[0] if extra else "?"
        return (
            marks.line(path + (key,), key=True),
            field_name(path + (key,)),
            f"unknown field {key!r}; allowed: {', '.join(sorted(allowed))}",
        )
    if kind == "type":
        want = (
            error.validator_value
            if isinstance(error.validator_value, str)
            else " or ".join(error.validator_value)
        )
        return (
            marks.line(path),
            field_name(path),
            f"expected {want}, got {_type_name(inst)} {json.dumps(inst, default=str)[:60]}",
        )
    if kind in ("enum", "const"):
        allowed = error.validator_value if kind == "enum" else [error.validator_value]
        return (
            marks.line(path),
            field_name(path),
            f"{json.dumps(inst, default=str)[:60]} is not allowed; "
            f"use one of {', '.join(json.dumps(a) for a in allowed)}",
        )
    if kind == "oneOf":
        from jsonschema.exceptions import best_match

        relevant = [
            s
            for s in error.context or ()
            if not (s.validator in ("type", "const") and not s.relative_path)
        ]
        if relevant:
            return _describe(best_match(relevant), marks)
        return marks.line(path), field_name(path), _one_of_message(error, inst)
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return (
            marks.line(path),
            field_name(path),
            f"{inst!r} is out of range ({kind} {error.validator_value})",
        )
    if kind == "pattern":
        sections = re.match(r"\^\(([A-Z|]+)\)", str(error.validator_value))
        if path and path[-1] == "clause" and sections:
            what = (
                f"{inst!r} is not a contract clause id: a section "
                f"({', '.join(sections.group(1).split('|'))}) and a number, such as V2 or TS1 "
                "(context-engine-kit explain --list lists them)"
            )
        else:
            what = f"{inst!r} does not match {error.validator_value!r}"
        return marks.line(path), field_name(path), what
    if kind in ("minItems", "minProperties", "maxProperties"):
        return marks.line(path), field_name(path), error.message
    return marks.line(path), field_name(path), error.message


def _one_of_message(error: Any, inst: Any) -> str:
    """oneOf failures: pick the alternative of the same JSON type and say what it needed."""
    for sub in error.context or ():
        if sub.validator == "type":
            continue
        if not sub.relative_path or sub.validator in ("required", "additionalProperties"):
            return sub.message
    kinds = []
    for alt in error.validator_value:
        t = alt.get("type") or ("constant " + json.dumps(alt["const"]) if "const" in alt else None)
        if t:
            kinds.append(t if isinstance(t, str) else " or ".join(t))
    return f"expected {' or '.join(kinds) or 'another shape'}, got {_type_name(inst)}"


def _step_problems(steps: Any, base: Path_, marks: _Marks) -> list[tuple[int, str, str]]:
    """Unknown or missing step kinds, worded for people (before the schema's generic text)."""
    out: list[tuple[int, str, str]] = []
    if not isinstance(steps, list):
        return out
    for i, step in enumerate(steps):
        path = base + (i,)
        if not isinstance(step, dict):
            continue
        unknown = [k for k in step if k not in STEP_KINDS]
        for k in unknown:
            out.append(
                (
                    marks.line(path + (k,), key=True),
                    field_name(path),
                    f"unknown step {k!r}; known steps: {', '.join(sorted(STEP_KINDS))}",
                )
            )
        known = [k for k in step if k in STEP_KINDS]
        if not step:
            out.append(
                (
                    marks.line(path),
                    field_name(path),
                    "empty step; give one of " + ", ".join(sorted(STEP_KINDS)),
                )
            )
        elif len(known) > 1:
            out.append(
                (
                    marks.line(path),
                    field_name(path),
                    f"one step per list item, got {', '.join(known)}; "
                    "split them into separate items",
                )
            )
        sub = step.get("subagent")
        if isinstance(sub, dict):
            out += _step_problems(sub.get("steps"), path + ("subagent", "steps"), marks)
    return out


def _expectation_problems(
    items: Any, base: Path_, marks: _Marks, *, kinds: tuple[str, ...]
) -> list[tuple[int, str, str]]:
    out: list[tuple[int, str, str]] = []
    if not isinstance(items, list):
        return out
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        named = [k for k in item if k in kinds]
        unknown = [k for k in item if k not in kinds and k not in ("id", "clause", "level", "why")]
        path = base + (i,)
        for k in unknown:
            out.append(
                (
                    marks.line(path + (k,), key=True),
                    field_name(path),
                    f"unknown expectation {k!r}; known: {', '.join(kinds)}",
                )
            )
        if not named and not unknown:
            out.append(
                (
                    marks.line(path),
                    field_name(path),
                    f"names no expectation; give one of {', '.join(kinds)}",
                )
            )
        elif len(named) > 1:
            out.append(
                (
                    marks.line(path),
                    field_name(path),
                    f"one expectation per item, got {', '.join(named)}; "
                    "split them into separate items",
                )
            )
    return out


def validate(data: Any, marks: _Marks, path: str) -> None:
    """Validate parsed data against the schema and the kit's own rules.

    Raises:
        ScenarioError: every problem found, each with its line and field.
    """
    import jsonschema

    if not isinstance(data, dict):
        raise ScenarioError(
            path,
            [
                (
                    marks.line(()),
                    "",
                    f"a scenario is a mapping with name, steps and expect; got {_type_name(data)}",
                )
            ],
        )
    problems = _step_problems(data.get("steps"), ("steps",), marks)
    problems += _expectation_problems(
        data.get("expect"), ("expect",), marks, kinds=EXPECTATION_KINDS
    )
    flagged = {(p[0], p[1]) for p in problems}
    validator = jsonschema.Draft202012Validator(schema())
    for error in validator.iter_errors(data):
        line, fld, msg = _describe(error, marks)
        if (line, fld) in flagged or any(
            fld.startswith(f) and f != "(top level)"
            for _, f in flagged
            if error.validator
            in ("additionalProperties", "oneOf", "maxProperties", "minProperties")
        ):
            continue
        flagged.add((line, fld))
        problems.append((line, fld, msg))
    if problems:
        raise ScenarioError(path, problems)


def load_text(text: str, path: str = "<string>") -> Scenario:
    """Parse and validate scenario ``text``; ``path`` is used in messages and as the source.

    Raises:
        ScenarioError: malformed YAML or a scenario that breaks the schema (file:line: field).
    """
    data, marks = parse_yaml(text, path)
    validate(data, marks, path)
    return Scenario.from_data(data, source=path, lines=marks)


def load_scenario(path: str | Path) -> Scenario:
    """Load one ``*.scenario.yaml`` file.

    Raises:
        ScenarioError: unreadable file, malformed YAML or schema violations (file:line: field).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ScenarioError(
            str(p), [(0, "", f"cannot read the file: {exc.strerror or exc}")]
        ) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            str(p),
            [
                (
                    0,
                    "",
                    f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
                    "save the scenario as UTF-8 YAML",
                )
            ],
        ) from None
    return load_text(text, str(p))


__all__ = [
    "ScenarioError",
    "load_scenario",
    "load_text",
    "parse_yaml",
    "validate",
    "schema",
    "field_name",
]
