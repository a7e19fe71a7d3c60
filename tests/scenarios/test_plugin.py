"""Covers conformance.plugin, conformance.frontends.scenario_items (the collector of a user's
``*.scenario.yaml`` files) and the bundled library as items of conformance.suite, run in
subprocesses the way users run them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.scenarios import LIBRARY_DIR

PLUGINS = ("-p", "conformance.plugin", "-p", "no:cacheprovider")
MINIMAL = "reference_engines.mutants._base:MinimalEngine"


def run(pytester, *args):
    return pytester.runpytest_subprocess(*PLUGINS, "--rootdir", str(pytester.path), *args)


def copy(pytester, name):
    shutil.copy(LIBRARY_DIR / name, pytester.path / name)
    return name


def test_inert_without_an_engine(kit_pytester):
    copy(kit_pytester, "c1_subagents.scenario.yaml")
    kit_pytester.makepyfile(test_mine="def test_one():\n    assert True\n")
    result = run(kit_pytester)
    result.assert_outcomes(passed=1)
    assert "scenario" not in result.stdout.str()


def test_scenario_files_become_items_with_clause_rows_in_the_verdict(kit_pytester):
    name = copy(kit_pytester, "c1_subagents.scenario.yaml")
    # the sub-plugin is registered by conformance.plugin; naming it again is a harmless no-op
    result = run(
        kit_pytester,
        "-p",
        "conformance.frontends.scenario_items",
        f"--engine={MINIMAL}",
        name,
        "-v",
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    result.assert_outcomes(passed=5)  # one item per expectation, none collected twice
    assert "c1_subagents.scenario.yaml::parent-window-unchanged PASSED" in out
    assert (
        "C2             2       0" in out
    )  # the verdict table counts scenario expectations by clause


def test_a_scenario_items_junit_properties_are_listed_once(kit_pytester):
    """Each junit property of a scenario file's item comes once (they were added when the item
    was made and again at collection), with the file it comes from."""
    import xml.etree.ElementTree as ET

    name = copy(kit_pytester, "c1_subagents.scenario.yaml")
    result = run(kit_pytester, f"--engine={MINIMAL}", name, "--junit-xml=j.xml")
    assert result.ret == 0, result.stdout.str()
    cases = ET.parse(kit_pytester.path / "j.xml").getroot().iter("testcase")
    for case in cases:
        names = [p.get("name") for p in case.iter("property")]
        assert len(names) == len(set(names)), (case.get("name"), sorted(names))
        assert {"conformance_check", "clause", "kind", "scenario_file"} <= set(names)


def test_a_scenario_files_items_count_in_the_verdict_under_xdist(kit_pytester):
    """Under pytest-xdist the controller, which never parses a user's scenario file, counts its
    items in ``cases_total`` (it said 0 of 5 run)."""
    import json

    pytest.importorskip("xdist")
    name = copy(kit_pytester, "c1_subagents.scenario.yaml")
    result = run(kit_pytester, f"--engine={MINIMAL}", name, "-n", "2", "--conformance-json=v.json")
    assert result.ret == 0, result.stdout.str()
    data = json.loads((kit_pytester.path / "v.json").read_text())
    assert data["cases_total"] == len(data["results"]) == 5, data["cases_total"]


def test_a_must_failure_fails_the_run_with_the_kit_message(kit_pytester):
    name = copy(kit_pytester, "c1_subagents.scenario.yaml")
    result = run(
        kit_pytester, "--engine=reference_engines.mutants.scn_shared_clone:SharedClone", name
    )
    out = result.stdout.str()
    assert result.ret == 1
    assert (
        "[C2 MUST] scenario 'c1-subagents', expectation 'parent-window-unchanged' at "
        "steps[3] check: expected context_length == 20000, got 8000. See "
        "docs/contract.md#c2 (context-engine-kit explain C2). Repro: pytest "
        "--engine=reference_engines.mutants.scn_shared_clone:SharedClone "
        f"{kit_pytester.path / name} -k 'parent-window-unchanged'"
    ) in out
    assert "Traceback" not in out


def test_a_should_failure_exits_zero(kit_pytester):
    name = copy(kit_pytester, "h6_cache_stability.scenario.yaml")
    result = run(
        kit_pytester, "--engine=reference_engines.mutants.h6_reshuffle:ReshufflingRouter", name
    )
    assert result.ret == 0, result.stdout.str()
    assert (
        "[H6 SHOULD] scenario 'h6-cache-stability', expectation 'cache-read-ratio'"
        in result.stdout.str()
    )
    assert "PASS (with SHOULD failures)" in result.stdout.str()


def test_a_malformed_file_is_a_collection_error_with_file_and_line(kit_pytester):
    kit_pytester.path.joinpath("bad.scenario.yaml").write_text(
        "name: bad\nsteps:\n  - usr: hi\nexpect: []\n", encoding="utf-8"
    )
    result = run(kit_pytester, f"--engine={MINIMAL}", "bad.scenario.yaml")
    out = result.stdout.str()
    assert result.ret != 0
    assert "bad.scenario.yaml:3: steps[0]: unknown step 'usr'; known steps:" in out
    assert "verdict: NO CHECK RAN - collection stopped at 1 error(s) shown above" in out
    assert "deselected" not in out  # nothing was deselected


def test_a_conformance_run_includes_the_library_unless_disabled(kit_pytester):
    listed = run(kit_pytester, f"--engine={MINIMAL}", "--collect-only", "-q").stdout.str()
    assert "test_contract.py::test_contract[scenario:l1-lifecycle:lifecycle-order]" in listed
    assert "test_contract.py::test_contract[A4-compress-returns-list]" in listed
    off = run(
        kit_pytester, f"--engine={MINIMAL}", "--collect-only", "-q", "--conformance-no-scenarios"
    ).stdout.str()
    assert "test_contract[scenario:" not in off and "scenario.yaml" not in off
    assert "test_contract.py::test_contract[A4-compress-returns-list]" in off


def test_an_engine_plugin_folder_alone_adds_the_library_and_names_its_snapshot_folder(kit_pytester):
    from reference_engines.mutants import plugin_dirs

    folder = str(Path(plugin_dirs.__file__).parent / "minimal")
    listed = run(
        kit_pytester, f"--engine-plugin={folder}", "--conformance-snapshots", "--collect-only"
    ).stdout.str()
    assert "test_contract[scenario:l1-lifecycle:lifecycle-order]" in listed, listed
    assert "conformance snapshots: " in listed and "snapshots/plugin.minimal" in listed
    ran = run(kit_pytester, f"--engine-plugin={folder}", "-k", "scenario:c1-subagents", "-v")
    assert (
        "test_contract.py::test_contract[scenario:c1-subagents:parent-window-unchanged] PASSED"
        in ran.stdout.str()
    ), ran.stdout.str()
    ran.assert_outcomes(passed=5)  # the five expectations of c1-subagents, nothing else


@pytest.mark.slow
def test_conformance_timeout_bounds_a_hanging_scenario_and_the_run_goes_on(kit_pytester):
    hang = copy(kit_pytester, "l1_reset_new.scenario.yaml")
    other = copy(kit_pytester, "c1_subagents.scenario.yaml")
    hangs = "tests.scenarios.engines:HangsOnReset"
    result = run(kit_pytester, f"--engine={hangs}", "--conformance-timeout=1", hang, other)
    out = result.stdout.str()
    assert result.ret == 1
    assert (
        "the run stopped at steps[2] reset: timeout: on_session_reset() did not return within 1 s"
    ) in out
    assert (
        f"Repro: pytest --engine={hangs} --conformance-timeout=1 {kit_pytester.path / hang} "
        "-k 'reset-and-new-order'"
    ) in out
    result.assert_outcomes(
        passed=5 + 1, failed=5
    )  # c1-subagents all pass; the check made before the hang too


def test_a_raising_hook_is_filed_under_h1_should_and_the_run_passes(kit_pytester):
    import json

    name = copy(kit_pytester, "h3_history_untouched.scenario.yaml")
    result = run(
        kit_pytester,
        "--engine=tests.scenarios.engines:SelectRaises",
        name,
        "--conformance-json=v.json",
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "[H1 SHOULD] scenario 'h3-history-untouched', expectation 'no-engine-errors'" in out
    rows = {
        r["check"]: r for r in json.loads((kit_pytester.path / "v.json").read_text())["results"]
    }
    row = rows["scenario:h3-history-untouched:no-engine-errors"]
    assert (row["clause"], row["level"], row["outcome"]) == ("H1", "SHOULD", "failed")
