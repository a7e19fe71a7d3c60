"""Covers conformance.scenarios.loader and conformance.scenarios.spec: scenario files, schema
validation with file:line: field errors."""

from __future__ import annotations

import jsonschema
import pytest

from conformance.clauses.errors import ScenarioError
from conformance.scenarios import library_paths
from conformance.scenarios.loader import load_scenario, load_text, schema

GOOD = """\
name: tiny
host:
  context_length: 4000
steps:
  - user: hello
  - compress: null
expect:
  - {clause: L1, level: MUST, compressions: {max: 3}}
"""


def error_of(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_text(text, "bad.scenario.yaml")
    return info.value


def test_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_a_good_scenario_loads_with_its_expectation():
    sc = load_text(GOOD, "tiny.scenario.yaml")
    assert sc.name == "tiny" and len(sc.steps) == 2
    assert [(e.id, e.clause, e.level, e.kind, e.line) for e in sc.expectations] == [
        ("compressions", "L1", "MUST", "compressions", 8)
    ]


def test_wrong_type_names_file_line_and_field():
    err = error_of(GOOD.replace("context_length: 4000", "context_length: lots"))
    assert (
        str(err) == 'bad.scenario.yaml:3: host.context_length: expected integer, got string "lots"'
    )


def test_unknown_step_names_file_line_and_the_known_steps():
    err = error_of(GOOD.replace("  - compress: null", "  - comprss: null"))
    assert str(err).startswith(
        "bad.scenario.yaml:6: steps[1]: unknown step 'comprss'; known steps: branch, check,"
    )
    assert len(err.problems) == 1  # the schema's own additionalProperties error is not repeated


def test_missing_field_names_file_line_and_field():
    err = error_of(
        GOOD.replace(
            "{clause: L1, level: MUST, compressions: {max: 3}}",
            "{clause: L1, compressions: {max: 3}}",
        )
    )
    assert str(err) == "bad.scenario.yaml:8: expect[0]: missing field 'level' (MUST or SHOULD)"


def test_missing_fault_kind_and_unknown_fault_field():
    err = error_of(GOOD.replace("  - compress: null", "  - fault:\n      nxt: 1"))
    text = str(err)
    assert (
        "bad.scenario.yaml:6: steps[1].fault: missing field 'kind' (rate_limit, server_error"
        in text
    )
    assert (
        "bad.scenario.yaml:7: steps[1].fault.nxt: unknown field 'nxt'; allowed: count, kind, next"
        in text
    )


def test_nested_subagent_step_error_points_at_its_line():
    text = GOOD.replace(
        "  - compress: null", "  - subagent:\n      steps:\n        - user: {words: many}"
    )
    err = error_of(text)
    assert str(err) == (
        "bad.scenario.yaml:8: steps[1].subagent.steps[0].user.words: "
        'expected integer, got string "many"'
    )


def test_two_step_kinds_in_one_item_and_unknown_expectation():
    text = GOOD.replace("  - compress: null", "  - compress: null\n    reset: true").replace(
        "compressions: {max: 3}", "compresions: {max: 3}"
    )
    err = str(error_of(text))
    assert "bad.scenario.yaml:6: steps[1]: one step per list item, got compress, reset" in err
    assert "bad.scenario.yaml:9: expect[0]: unknown expectation 'compresions'" in err


def test_bad_level_and_clause():
    err = str(
        error_of(GOOD.replace("level: MUST", "level: MAY").replace("clause: L1", "clause: Z9"))
    )
    assert (
        'bad.scenario.yaml:8: expect[0].level: "MAY" is not allowed; use one of "MUST", "SHOULD"'
        in err
    )
    assert "bad.scenario.yaml:8: expect[0].clause: 'Z9' is not a contract clause id" in err


def test_yaml_syntax_error_and_duplicate_key_have_lines():
    assert str(error_of("name: x\nsteps: [\n")).startswith("bad.scenario.yaml:3: not valid YAML")
    err = error_of(GOOD.replace("host:\n", "host:\n  model: a\n  model: b\n"))
    assert str(err) == "bad.scenario.yaml:4: host.model: duplicate key 'model' (first at line 3)"


def test_unreadable_file(tmp_path):
    with pytest.raises(ScenarioError, match=r"missing.scenario.yaml: cannot read the file"):
        load_scenario(tmp_path / "missing.scenario.yaml")


def test_the_bundled_library_loads_and_covers_the_clauses():
    paths = library_paths()
    assert len(paths) >= 10
    clauses = set()
    for p in paths:
        sc = load_scenario(p)
        assert sc.expectations, p
        clauses |= {e.clause for e in sc.expectations}
    families = {c.rstrip("0123456789") for c in clauses}
    assert {"L", "H", "C", "K", "TS", "U"} <= families and "B7" in clauses
