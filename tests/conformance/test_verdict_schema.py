"""Covers conformance.run.verdict_schema, the JSON Schema conformance/schemas/verdict.schema.json
and
conformance.run.verdict.write_verdict_json: every front end that writes a JSON verdict (the pytest
plugin, the conftest fixture route, ``context-engine-kit check --json``, ``run_conformance(
json_path=...)``, and the ERROR verdict of a run a usage error stopped) writes a file that
validates, with ``format_version`` its first key and the one writer's layout; the schema
catches a removed or retyped key and lets an added key through."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from conformance.run.verdict import VERDICT_FORMAT_VERSION
from conformance.run.verdict_schema import SCHEMA_PATH, validate_verdict, verdict_schema
from tests.conformance.test_cli import cli
from tests.conftest import REPO_ROOT

COMPRESSOR = "reference_engines.compressor:ReferenceCompressor"
NEVER_COUNTS = "reference_engines.mutants.a6_never_counts:NeverCounts"
#: A few fast checks: they pass on ReferenceCompressor, A6 fails on NeverCounts.
CASES = ("A1-name", "A2-usage-updates-counters", "A6-")
K = "A1-name or A2-usage-updates-counters or A6-"
QUICK = "--conformance-profile=quick"
PYTEST = ("-p", "conformance.plugin", "-p", "no:cacheprovider", "--conformance-no-scenarios")


def verdict_file(path: Path) -> dict:
    """The verdict at ``path``, checked: valid against the schema, ``format_version`` first,
    laid out as the one writer lays it out (2-space indent, non-ASCII kept, final newline)."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    validate_verdict(data)
    assert next(iter(data)) == "format_version" and data["format_version"] == 1, list(data)[:3]
    assert text == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return data


def test_the_schema_is_a_draft_2020_12_schema_shipped_in_the_package():
    schema = verdict_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA_PATH == REPO_ROOT / "conformance" / "schemas" / "verdict.schema.json"
    assert schema["properties"]["format_version"] == {
        "const": VERDICT_FORMAT_VERSION,
        "description": "VERDICT_FORMAT_VERSION; the first key.",
    }


def test_pytest_plugin_and_fixture_route_write_valid_verdicts(kit_pytester):
    result = kit_pytester.runpytest_subprocess(
        *PYTEST, f"--engine={COMPRESSOR}", QUICK, "-k", K, "--conformance-json=out/v.json"
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    data = verdict_file(kit_pytester.path / "out" / "v.json")
    assert data["verdict"] == "PASS" and data["counts"]["passed"] >= 3
    kit_pytester.makeconftest(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef conformance_engine_factory():\n"
        "    from reference_engines.compressor import ReferenceCompressor\n"
        "    return ReferenceCompressor\n"
    )
    kit_pytester.makepyfile(
        test_suite="from conformance.suite.test_contract import test_contract  # noqa: F401\n"
    )
    result = kit_pytester.runpytest_subprocess(
        *PYTEST, QUICK, "-k", K, "--conformance-json=fixture.json"
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert verdict_file(kit_pytester.path / "fixture.json")["verdict"] == "PASS"


def test_check_command_writes_valid_verdicts_failing_and_refused(tmp_path):
    out = tmp_path / "v.json"
    proc = cli(
        "check",
        NEVER_COUNTS,
        "--json",
        str(out),
        QUICK,
        "--conformance-no-scenarios",
        "--conformance-no-shrink",
        "--state-dir",
        str(tmp_path / "state"),
        "-k",
        K,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    data = verdict_file(out)
    assert data["verdict"] == "FAIL" and data["failures_by_level"]["MUST"] >= 1
    assert any(r["outcome"] == "failed" for r in data["results"])
    refused = cli("check", "nope", "--json", str(out), cwd=tmp_path)
    assert refused.returncode == 4, refused.stderr
    data = verdict_file(out)
    assert data["verdict"] == "ERROR" and data["host_profile"] is None and data["results"] == []


def test_scenario_command_writes_valid_verdicts_played_and_refused(tmp_path):
    """``context-engine-kit scenario FILE MODULE:ATTR --json FILE`` (the engine given as an
    argument, as check takes it) writes the verdict of the played file, and an ERROR verdict
    when the engine does not load."""
    out = tmp_path / "v.json"
    scenario = REPO_ROOT / "conformance" / "scenarios" / "library" / "l1_lifecycle.scenario.yaml"
    proc = cli(
        "scenario",
        str(scenario),
        "reference_engines.compressor:ReferenceCompressor",
        "--json",
        str(out),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    data = verdict_file(out)
    assert data["verdict"] == "PASS" and data["results"]
    assert all(r["check"].startswith("scenario:l1-lifecycle") for r in data["results"])
    assert data["cases_total"] == len(data["results"])
    refused = cli("scenario", str(scenario), "nope:Engine", "--json", str(out), cwd=tmp_path)
    assert refused.returncode == 4, refused.stderr
    data = verdict_file(out)
    assert data["verdict"] == "ERROR" and "nope" in data["error"] and data["results"] == []


def test_pytest_usage_error_writes_a_valid_error_verdict(kit_pytester):
    result = kit_pytester.runpytest_subprocess(
        *PYTEST, "--engine=nope", "--conformance-json=v.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    data = verdict_file(kit_pytester.path / "v.json")
    assert data["verdict"] == "ERROR" and "MODULE:ATTR" in data["error"]


@pytest.mark.parametrize("kwargs", ["[1]", "5", "{bad json"])
def test_an_error_verdict_for_engine_kwargs_that_are_no_object_validates(kit_pytester, kwargs):
    """``--engine-kwargs`` that is valid JSON but no object is refused; the ERROR verdict names
    it as the text given, as the schema says (it was written as the parsed list or number)."""
    result = kit_pytester.runpytest_subprocess(
        *PYTEST, f"--engine={COMPRESSOR}", f"--engine-kwargs={kwargs}", "--conformance-json=v.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    data = verdict_file(kit_pytester.path / "v.json")
    assert data["verdict"] == "ERROR" and data["engine"] == {"spec": COMPRESSOR, "kwargs": kwargs}


def test_run_conformance_writes_a_valid_verdict_on_several_hosts(tmp_path):
    from conformance import run_conformance
    from reference_engines.compressor import ReferenceCompressor

    path = tmp_path / "deep" / "v.json"
    run_conformance(
        ReferenceCompressor,
        profile="quick",
        only=CASES,
        scenarios=False,
        host_profile="documented,hermes-0.19",
        json_path=path,
    )
    data = verdict_file(path)
    assert data["host_profiles"] == ["documented", "hermes-0.19"] and data["by_host"]
    assert all("hosts" in r for r in data["results"])


def _verdict_with_every_row_key() -> dict:
    """A verdict (to_json) whose rows carry the optional keys: ``root_cause``, ``examples`` and
    ``partly_checked``, a non-empty ``llm`` ledger."""
    from conformance.run.session import ConformanceSession, Result, RunOptions
    from conformance.run.verdict import Verdict
    from reference_engines.mutants._base import MinimalEngine

    ledger = {
        "calls": 1,
        "requests": 2,
        "failed_requests": 1,
        "faults": {"rate_limit": 1},
        "errors": {},
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": 0.0012,
        "models": {"sim-summary": 2},
    }
    v = Verdict(
        [
            Result("A2-x", "A2", "MUST", "failed", "[A2 MUST] boom", root_cause="update|e.py:3"),
            Result("A3-y", "A3", "MUST", "error", "[A3 MUST] boom", root_cause="update|e.py:3"),
            Result(
                "V2-z",
                "V2",
                "SHOULD",
                "passed",
                llm=ledger,
                examples_run=3,
                examples_asked=10,
                budget_reached=True,
            ),
        ]
    )
    return v.to_json(session=ConformanceSession(RunOptions(), MinimalEngine))


def test_a_verdict_with_every_optional_row_key_validates():
    data = _verdict_with_every_row_key()
    validate_verdict(data)
    assert next(iter(data)) == "format_version"
    rows = {r["check"]: r for r in data["results"]}
    assert rows["A3-y"]["root_cause"] == "A2-x"
    assert rows["V2-z"]["partly_checked"] is True and rows["V2-z"]["examples"]["run"] == 3


def test_interrupted_error_verdict_validates():
    from conformance.run.verdict_format import error_verdict

    data = error_verdict("interrupted", engine={"plugin": "/p"}, word="INTERRUPTED")
    validate_verdict(data)
    assert list(data)[0] == "format_version"


def _drop(key):
    return lambda d: d.pop(key)


def _set(value, *path):
    def change(d):
        for key in path[:-1]:
            d = d[key]
        d[path[-1]] = value

    return change


#: name: (the change, the path of the key the error names: "/"-joined, "" for the top level)
BREAKS = {
    "format_version removed": (_drop("format_version"), ""),
    "format_version 2": (_set(2, "format_version"), "format_version"),
    "format_version a string": (_set("1", "format_version"), "format_version"),
    "outcome retyped": (_set(1, "results", 0, "outcome"), "results/0/outcome"),
    "outcome an unknown word": (_set("PASSED", "results", 0, "outcome"), "results/0/outcome"),
    "row level unknown": (_set("MAY", "results", 0, "level"), "results/0/level"),
    "row message removed": (lambda d: d["results"][0].pop("message"), "results/0"),
    "row examples without partly_checked": (
        lambda d: d["results"][2].pop("partly_checked"),
        "results/2",
    ),
    "verdict an unknown word": (_set("OK", "verdict"), "verdict"),
    "counts retyped": (_set("3", "counts", "passed"), "counts/passed"),
    "llm cost retyped": (_set("0", "llm", "cost_usd"), "llm/cost_usd"),
    "strict retyped": (_set(1, "strict"), "strict"),
    "engine retyped": (_set("spec", "engine"), "engine"),
    "cases_run removed from a run": (_drop("cases_run"), ""),
    "ERROR without its message": (_set("ERROR", "verdict"), ""),
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_a_removed_or_retyped_key_fails_validation(name):
    change, where = BREAKS[name]
    data = _verdict_with_every_row_key()
    validate_verdict(copy.deepcopy(data))
    change(data)
    with pytest.raises(jsonschema.ValidationError) as caught:
        validate_verdict(data)
    assert "/".join(map(str, caught.value.absolute_path)) == where, caught.value.message


def test_an_added_key_is_no_break():
    data = _verdict_with_every_row_key()
    data["new_top_level"] = {"anything": [1]}
    data["results"][0]["new_row_key"] = 3.5
    data["counts"]["new_count"] = 0
    validate_verdict(copy.deepcopy(data))


@pytest.mark.parametrize(
    "path", sorted((REPO_ROOT / "docs" / "verdicts").glob("*.json")), ids=lambda p: p.name
)
def test_committed_verdicts_validate_once_they_carry_a_format_version(path):
    """The published verdicts of docs/verdicts/ are validated once regenerated by a kit that
    writes ``format_version``; those written before it (no ``format_version``, and no
    top-level ``partly_checked``) are skipped, not rewritten."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if "format_version" not in data:
        pytest.skip(f"{path.name}: written by a kit before format_version")
    validate_verdict(data)
