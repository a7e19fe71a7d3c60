"""Covers the pytest mechanisms of the kit's front end (conformance.plugin,
conformance.frontends.pytest_session.conformance_mark, conformance.frontends.pytest_options):
the registered ``conformance(clause, level, kind)`` marker on every item and ``-m`` selection by
its keyword arguments, the ``--conformance-*`` aliases of the bare options, and the ini keys
``conformance_profile``, ``conformance_host_profile`` and ``conformance_budget`` (the command
line wins). Run in subprocesses, the way users run pytest."""

from __future__ import annotations

import json
import re

import pytest

from conformance.authoring import registry
from conformance.plugin import SUITE_DIR
from conformance.scenarios import library_paths

GOOD = "reference_engines.mutants._base:MinimalEngine"
QUICK = "--conformance-profile=quick"
#: The registry's checks, read at import (pytester drops modules a test imports, so the check
#: modules must be loaded before any test runs).
CHECKS = {c.id: c for c in registry.all_checks()}

#: A conftest that writes each collected item's conformance markers, and the run's options,
#: to collected.json (read by the tests below).
DUMP_CONFTEST = """
import json

def pytest_collection_finish(session):
    from conformance.frontends.pytest_session import conformance_session

    run = conformance_session(session.config)
    o = run.options
    items = {
        item.nodeid.split("::", 1)[1]: [m.kwargs for m in item.iter_markers("conformance")]
        for item in session.items
    }
    with open("collected.json", "w") as f:
        json.dump({"items": items, "profile": o.profile, "budget": o.budget,
                   "hosts": list(o.host_profiles)}, f)
"""


def run(pytester, *args):
    """pytest in a subprocess with the kit's plugin (the scenario library in unless asked)."""
    return pytester.runpytest_subprocess(
        "-p", "conformance.plugin", "-p", "no:cacheprovider", *args
    )


def collected(pytester) -> dict:
    return json.loads((pytester.path / "collected.json").read_text())


def test_marker_is_registered_and_selects_by_clause(kit_pytester):
    result = run(
        kit_pytester,
        f"--engine={GOOD}",
        QUICK,
        "--conformance-no-scenarios",
        "--host-profile=documented",
        "--strict-markers",
        "-m",
        "conformance(clause='A1')",
        "--conformance-json=verdict.json",
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    a1 = sorted(c.id for c in CHECKS.values() if c.clause == "A1")
    assert a1 and sorted(r["check"] for r in data["results"]) == a1
    assert data["verdict"] == "PASS" and {r["outcome"] for r in data["results"]} == {"passed"}
    others = sum(c.clause != "A1" for c in CHECKS.values())
    assert f"{len(a1)} passed, {others} deselected" in out
    markers = run(kit_pytester, "--markers").stdout.str()
    assert "@pytest.mark.conformance(clause, level, kind):" in markers
    assert "-m \"conformance(clause='V2')\"" in markers


def test_every_item_carries_clause_level_and_kind(kit_pytester):
    kit_pytester.makeconftest(DUMP_CONFTEST)
    # a copy under its own name: one file per scenario name in a run (the suite is in this one)
    text = library_paths()[0].read_text(encoding="utf-8")
    (kit_pytester.path / "mine.scenario.yaml").write_text(
        re.sub(r"(?m)^name: .*$", "name: mine", text, count=1), encoding="utf-8"
    )
    result = run(
        kit_pytester,
        f"--engine={GOOD}",
        "--host-profile=documented",
        "--collect-only",
        "-q",
        str(SUITE_DIR),
        "mine.scenario.yaml",
    )
    assert result.ret == 0, result.stdout.str()
    items = collected(kit_pytester)["items"]
    checks = CHECKS
    seen_kinds = set()
    for name, marks in items.items():
        assert len(marks) == 1 and set(marks[0]) == {"clause", "level", "kind"}, (name, marks)
        mark = marks[0]
        assert mark["level"] in ("MUST", "SHOULD"), (name, mark)
        assert mark["kind"] in registry.KINDS, (name, mark)
        seen_kinds.add(mark["kind"])
        case_id = name.split("[", 1)[1][:-1] if name.startswith("test_contract[") else None
        if case_id in checks:
            check = checks[case_id]
            assert mark == {"clause": check.clause, "level": check.level, "kind": check.kind}
    assert {"contract", "scenario"} <= seen_kinds
    assert set(checks) <= {n.split("[", 1)[1][:-1] for n in items if n.startswith("test_contract[")}
    # a user's scenario file: its items carry the marker too
    mine = [m for n, m in items.items() if not n.startswith("test_contract[")]
    assert mine and all(m[0]["kind"] == "scenario" for m in mine)


def test_conformance_aliases_of_the_bare_options(kit_pytester):
    kit_pytester.makeconftest(DUMP_CONFTEST)
    result = run(
        kit_pytester,
        f"--conformance-engine={GOOD}",
        "--conformance-engine-kwargs={}",
        "--conformance-host-profile=hermes-0.19",
        QUICK,
        "--conformance-no-scenarios",
        "-k",
        "A2",
        "--conformance-json=verdict.json",
    )
    assert result.ret == 0, result.stdout.str()
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    assert data["engine"] == {"spec": GOOD, "kwargs": {}}
    assert data["host_profile"] == "hermes-0.19" and data["verdict"] == "PASS"
    assert collected(kit_pytester)["hosts"] == ["hermes-0.19"]
    help_text = run(kit_pytester, "--help").stdout.str()
    for bare in ("--engine", "--engine-kwargs", "--engine-plugin", "--host-profile"):
        alias = "--conformance-" + bare[2:]
        assert f"{bare}=" in help_text and f", {alias}=" in help_text, bare


def test_ini_profile_changes_the_profile_the_run_reports(kit_pytester):
    kit_pytester.makeini("[pytest]\nconformance_profile = quick\n")
    args = (f"--engine={GOOD}", "--conformance-no-scenarios", "-k", "A2")
    result = run(kit_pytester, *args, "--conformance-json=verdict.json")
    assert result.ret == 0, result.stdout.str()
    assert "| profile quick (derandomized)" in result.stdout.str()
    assert json.loads((kit_pytester.path / "verdict.json").read_text())["profile"] == "quick"
    # the command line wins
    result = run(kit_pytester, *args, "--conformance-profile=thorough", "--collect-only")
    assert result.ret == 0, result.stdout.str()
    assert "| profile thorough (derandomized)" in result.stdout.str()


def test_ini_host_profile_and_budget_are_read_and_the_command_line_wins(kit_pytester):
    kit_pytester.makeconftest(DUMP_CONFTEST)
    kit_pytester.makeini(
        "[pytest]\nconformance_host_profile = documented,hermes-0.22\nconformance_budget = 7.5\n"
    )
    base = (f"--engine={GOOD}", "--conformance-no-scenarios", "--collect-only", "-q")
    assert run(kit_pytester, *base).ret == 0
    got = collected(kit_pytester)
    assert got["hosts"] == ["documented", "hermes-0.22"] and got["budget"] == 7.5
    assert got["profile"] == "default"
    given = ("--host-profile=hermes-0.19", "--conformance-budget=0")
    assert run(kit_pytester, *base, *given).ret == 0
    got = collected(kit_pytester)
    assert got["hosts"] == ["hermes-0.19"] and got["budget"] == 0


@pytest.mark.parametrize(
    "ini, needle",
    [
        ("conformance_profile = fast", "ini key conformance_profile = fast: not a profile"),
        ("conformance_budget = soon", "ini key conformance_budget = soon: give a finite number"),
        ("conformance_budget = -1", "ini key conformance_budget = -1: give a finite number"),
        (
            "conformance_host_profile = hermes-0.91",
            "ini key conformance_host_profile = hermes-0.91: host profile 'hermes-0.91': use",
        ),
    ],
)
def test_bad_ini_value_is_one_usage_error(kit_pytester, ini, needle):
    kit_pytester.makeini(f"[pytest]\n{ini}\n")
    result = run(kit_pytester, f"--engine={GOOD}", "--conformance-json=verdict.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert needle in result.stderr.str(), result.stderr.str()
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    assert data["verdict"] == "ERROR" and needle in data["error"]


def test_hypothesis_profile_selects_the_kit_profile_and_the_kit_option_wins(kit_pytester):
    kit_pytester.makeconftest(DUMP_CONFTEST)
    kit_pytester.makeini("[pytest]\nconformance_profile = thorough\n")
    base = (f"--engine={GOOD}", "--conformance-no-scenarios", "--collect-only", "-q")
    # Hypothesis' own option names the kit's registered profile: it wins over the ini key
    assert run(kit_pytester, *base, "--hypothesis-profile=conformance-quick").ret == 0
    assert collected(kit_pytester)["profile"] == "quick"
    # another Hypothesis profile leaves the kit's choice alone
    assert run(kit_pytester, *base, "--hypothesis-profile=default").ret == 0
    assert collected(kit_pytester)["profile"] == "thorough"
    # the kit's own option wins over both
    given = ("--hypothesis-profile=conformance-quick", "--conformance-profile=default")
    assert run(kit_pytester, *base, *given).ret == 0
    assert collected(kit_pytester)["profile"] == "default"


#: A conftest that wipes the junit properties of every report, the way a plugin that rewrites
#: them would: the verdict must not change, as it reads each case's Result object.
WIPE_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.user_properties = []
    return report
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_the_verdict_reads_result_objects_not_junit_properties(kit_pytester, workers):
    """Each case's Result travels on its report as an object (across pytest-xdist through
    pytest's report serialization hooks); the junit properties are an output only: with every
    report's properties wiped, the verdict is the one the clean run writes."""
    pytest.importorskip("xdist") if workers else None
    mutant = "reference_engines.mutants.v4_drops_system:DropsSystemPrompt"
    args = (f"--engine={mutant}", QUICK, "--conformance-no-scenarios", "-k", "V4 or A1-")
    clean = run(kit_pytester, *args, "--conformance-json=clean.json", *workers)
    assert clean.ret == 1, clean.stdout.str()[-2000:]
    kit_pytester.makeconftest(WIPE_CONFTEST)
    wiped = run(kit_pytester, *args, "--conformance-json=wiped.json", *workers)
    assert wiped.ret == 1, wiped.stdout.str()[-2000:]
    first, second = (
        json.loads((kit_pytester.path / n).read_text()) for n in ("clean.json", "wiped.json")
    )
    assert first["results"] and first["counts"]["failed"] > 0
    for data in (first, second):
        for row in data["results"]:
            row.pop("seconds", None)
        data.pop("duration_s", None)
    assert first["results"] == second["results"] and first["counts"] == second["counts"]


def test_the_engine_may_be_a_positional_word_and_only_one(kit_pytester):
    """``pytest mypkg:Engine`` takes the engine from the test paths pytest parsed (as
    ``context-engine-kit check`` does); a second engine, positional or ``--engine``, is one
    usage error."""
    result = run(kit_pytester, GOOD, QUICK, "--conformance-no-scenarios", "-k", "A1-")
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines([f"conformance: engine --engine={GOOD} |*", "*verdict: PASS*"])
    two = run(kit_pytester, GOOD, "reference_engines.router:ReferenceRouter")
    assert two.ret == 4
    two.stderr.fnmatch_lines(["ERROR: give one engine: *both look like MODULE:ATTR*"])
    both = run(kit_pytester, f"--engine={GOOD}", "reference_engines.router:ReferenceRouter")
    assert both.ret == 4 and "give one engine" in both.stderr.str()
    # argparse keeps the last of two --engine values; the kit refuses the pair instead
    twice = run(
        kit_pytester, f"--engine={GOOD}", "--engine=reference_engines.router:ReferenceRouter"
    )
    assert twice.ret == 4
    twice.stderr.fnmatch_lines(["*argument --engine/--conformance-engine: given twice*"])
    same = run(kit_pytester, f"--engine={GOOD}", f"--conformance-engine={GOOD}", QUICK, "-k", "A1-")
    assert same.ret == 0, same.stdout.str()[-2000:]


def test_a_bad_option_value_is_refused_by_pytests_own_parser(kit_pytester):
    """The kit's option types give pytest's parser the kit's message: what was given, what to
    give, the closest choice."""
    result = run(kit_pytester, f"--engine={GOOD}", "--conformance-profile=quik")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [
            "*error: argument --conformance-profile: 'quik' is not one of its choices; give one "
            "of default, quick, thorough (did you mean quick?)*"
        ]
    )
