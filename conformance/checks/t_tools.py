"""Checks of contract section T: engine tools (T1, T2).

Tool ``parameters`` are validated as JSON Schema with the ``jsonschema`` library (the
metaschema of the schema's ``$schema``, Draft 2020-12 by default); arguments built from
each schema are validated against it before the call.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from conformance.authoring.expect import MUST, fail, short
from conformance.authoring.registry import check
from conformance.checks.engine_calls import RAISED, fail_open, invoke
from conformance.clauses.errors import CheckSkipped

_PLACEHOLDER = {
    "string": "kit",
    "integer": 1,
    "number": 1.0,
    "boolean": False,
    "array": [],
    "object": {},
    "null": None,
}


def _schemas(ctx) -> list[dict[str, Any]]:
    engine = ctx.new_engine()
    schemas = fail_open(invoke, "T1", MUST, engine, "get_tool_schemas")
    if schemas is RAISED:
        raise CheckSkipped("get_tool_schemas() raised; O5 reports it")
    if not isinstance(schemas, list) or not schemas:
        raise CheckSkipped(
            "engine declares no tools (get_tool_schemas() "
            "returned [] or a non-list; O5 checks the type)"
        )
    return schemas


def example_args(parameters: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: a placeholder of the declared type for each required property
    (the first ``enum`` value when there is one)."""
    props = parameters.get("properties") or {}
    out: dict[str, Any] = {}
    for name in parameters.get("required") or []:
        spec = props.get(name) or {}
        if "enum" in spec and spec["enum"]:
            out[name] = spec["enum"][0]
            continue
        kind = spec.get("type", "string")
        if isinstance(kind, list):
            kind = kind[0]
        value = _PLACEHOLDER.get(kind, "kit")
        if kind == "integer" and "minimum" in spec:
            value = int(spec["minimum"])
        out[name] = value
    return out


@check(
    "T1",
    "tool-schemas-valid",
    level=MUST,
    title="each tool schema is {name, description, parameters} "
    "with parameters a valid JSON Schema object",
)
def check_t1_tool_schemas_valid(ctx):
    """T1: name (non-empty str, unique), description (str), parameters (a JSON Schema of
    ``"type": "object"`` that passes its metaschema)."""
    schemas = _schemas(ctx)
    names = set()
    for i, schema in enumerate(schemas):
        where = f"get_tool_schemas()[{i}]"
        if not isinstance(schema, dict):
            fail("T1", MUST, where, expected="a dict", got=type(schema).__name__)
        missing = [k for k in ("name", "description", "parameters") if k not in schema]
        if missing:
            hint = (
                " (it looks wrapped as {'type': 'function', 'function': ...}; give the bare schema)"
                if "function" in schema
                else ""
            )
            fail(
                "T1",
                MUST,
                where,
                expected="keys name, description, parameters",
                got=f"missing {', '.join(missing)}{hint}",
            )
        name = schema["name"]
        if not isinstance(name, str) or not name or name in names:
            fail(
                "T1", MUST, f"{where}['name']", expected="a non-empty, unique str", got=short(name)
            )
        names.add(name)
        if not isinstance(schema["description"], str):
            fail(
                "T1",
                MUST,
                f"{where}['description']",
                expected="a str",
                got=short(schema["description"]),
            )
        params = schema["parameters"]
        if not isinstance(params, dict) or params.get("type") != "object":
            fail(
                "T1",
                MUST,
                f"{where}['parameters'] of tool {name!r}",
                expected='a JSON Schema with "type": "object"',
                got=short(params, 100),
            )
        try:
            jsonschema.validators.validator_for(
                params, default=jsonschema.Draft202012Validator
            ).check_schema(params)
        except jsonschema.SchemaError as exc:
            fail(
                "T1",
                MUST,
                f"{where}['parameters'] of tool {name!r}",
                expected="a valid JSON Schema",
                got=f"{exc.message} at {'/'.join(map(str, exc.absolute_path)) or '(root)'}",
            )


@check(
    "T2",
    "tool-calls-return-json",
    level=MUST,
    title="handle_tool_call() returns a JSON string for each declared tool",
)
def check_t2_tool_calls_return_json(ctx):
    """T2: for every declared tool, arguments valid against its schema give a str that
    ``json.loads`` accepts (an error object is fine; an exception or non-JSON is not)."""
    schemas = _schemas(ctx)
    engine = ctx.new_engine()
    for schema in schemas:
        if not isinstance(schema, dict) or not isinstance(schema.get("parameters"), dict):
            continue
        args = example_args(schema["parameters"])
        try:
            jsonschema.validate(args, schema["parameters"])
        except (jsonschema.ValidationError, jsonschema.SchemaError):
            continue  # the kit could not build valid arguments; T1 judges the schema
        out = invoke(
            "T2",
            MUST,
            engine,
            "handle_tool_call",
            schema["name"],
            args,
            messages=[{"role": "user", "content": "hi"}],
        )
        try:
            json.loads(out) if isinstance(out, str) else (_ for _ in ()).throw(TypeError())
        except (TypeError, json.JSONDecodeError):
            fail(
                "T2",
                MUST,
                f"handle_tool_call({schema['name']!r}, {short(args, 80)})",
                expected="a JSON string",
                got=f"{type(out).__name__} {short(out, 80)}",
            )
