"""Covers conformance.plugin, conformance.frontends.pytest_options and conformance.suite: the pytest
front end's wiring, run in subprocesses the way users run it."""

from __future__ import annotations

import json
import re

import pytest

GOOD = "reference_engines.mutants._base:MinimalEngine"
QUICK = "--conformance-profile=quick"


@pytest.fixture(scope="module")
def good_counts():
    """(passed, skipped) of the good engine, from the no-pytest API: the plugin must agree."""
    from conformance import run_conformance
    from conformance.runtime.engine_loading import load_engine_factory

    results = run_conformance(load_engine_factory(GOOD), profile="quick", scenarios=False)
    return (
        sum(r.outcome == "passed" for r in results),
        sum(r.outcome == "skipped" for r in results),
    )


def run(pytester, *args, scenarios=False):
    """pytest in a subprocess with the kit's plugins (the scenario library left out unless
    asked)."""
    extra = [] if scenarios else ["--conformance-no-scenarios"]
    return pytester.runpytest_subprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "conformance.frontends.scenario_items",
        "-p",
        "no:cacheprovider",
        *extra,
        *args,
    )


def test_plugin_is_inert_without_an_engine(kit_pytester):
    kit_pytester.makepyfile(test_mine="def test_one():\n    assert 1 + 1 == 2\n")
    result = run(kit_pytester)
    result.assert_outcomes(passed=1)
    assert "conformance" not in result.stdout.str()


def test_engine_without_paths_collects_the_kit_checks_and_passes(kit_pytester, good_counts):
    result = run(kit_pytester, f"--engine={GOOD}", QUICK)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "conformance: engine --engine=" + GOOD in out  # header names engine, kit, contract, ABC
    assert "host ABC context-engine-kit" in out
    assert "conformance verdict by clause" in out
    assert "verdict: PASS" in out
    result.assert_outcomes(passed=good_counts[0], skipped=good_counts[1])


def test_must_failure_fails_the_run_with_clause_and_repro(kit_pytester):
    spec = "reference_engines.mutants.v4_drops_system:DropsSystemPrompt"
    result = run(
        kit_pytester,
        f"--engine={spec}",
        QUICK,
        "-k",
        "V4-system-prompt-first",
        "--conformance-json=verdict.json",
    )
    out = result.stdout.str()
    assert result.ret == 1
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    assert data["verdict"] == "FAIL" and data["failures_by_level"] == {"MUST": 1, "SHOULD": 0}
    assert data["counts"] == {
        "total": 2,
        "passed": 0,
        "failed": 1,
        "skipped": 1,
        "xfailed": 0,
        "xpassed": 0,
        "error": 0,
    }
    assert "[V4 MUST] compress() output: expected the system prompt to stay first" in out
    assert f"Repro: pytest --engine={spec} --conformance-replay=" in out
    # the repro line names the failure file, kept per engine
    assert f"{spec.replace(':', '.')}/V4-system-prompt-first_compress_.json" in out
    assert "Traceback" not in out


def test_should_failure_exits_zero_unless_strict(kit_pytester):
    kit_pytester.makepyfile(
        plain_name="""
        from reference_engines.mutants._base import MinimalEngine
        class PlainName(MinimalEngine):
            name = "plain"
    """
    )
    loose = run(
        kit_pytester,
        "--engine=plain_name:PlainName",
        QUICK,
        "-k",
        "A1-",
        "--conformance-json=loose.json",
    )
    assert loose.ret == 0, loose.stdout.str()
    assert "[A1 SHOULD]" in loose.stdout.str()
    assert "PASS (with SHOULD failures)" in loose.stdout.str()
    strict = run(
        kit_pytester,
        "--engine=plain_name:PlainName",
        QUICK,
        "-k",
        "A1-",
        "--conformance-strict",
        "--conformance-json=strict.json",
    )
    assert strict.ret == 1
    # the JSON verdict follows the same exit rule
    loose_json = json.loads((kit_pytester.path / "loose.json").read_text())
    strict_json = json.loads((kit_pytester.path / "strict.json").read_text())
    assert (loose_json["verdict"], loose_json["strict"]) == ("PASS", False)
    assert (strict_json["verdict"], strict_json["strict"]) == ("FAIL", True)
    for data in (loose_json, strict_json):
        assert data["failures_by_level"] == {"MUST": 0, "SHOULD": 1}
        assert (
            data["counts"]["failed"] == 1
            and data["counts"]["passed"] == 1
            and data["counts"]["total"] == 2
        )


def test_no_check_ran_is_a_failure(kit_pytester):
    # every select_context variant skips for an engine without select_context
    result = run(kit_pytester, f"--engine={GOOD}", QUICK, "-k", "select_context")
    assert result.ret != 0
    assert "NO CHECK RAN" in result.stdout.str()


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("no_colon_here", "is not of the form MODULE:ATTR"),
        ("no_such_module_xyz:Engine", "module 'no_such_module_xyz' could not be imported"),
        ("reference_engines.mutants._base:Missing", "has no attribute 'Missing'"),
        ("reference_engines.mutants._base:SUMMARY_PREFIX", "names a str, not a class or factory"),
        ("json:JSONDecoder", "which is not a context engine"),
    ],
)
def test_malformed_engine_gives_one_paragraph_error(kit_pytester, spec, needle):
    result = run(kit_pytester, f"--engine={spec}")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert needle in err
    assert "Traceback" not in err + result.stdout.str()
    # the folders named are the user's, not the kit's case folder the engine is resolved in
    assert "conformance-case-" not in err
    if "could not be imported" in needle:
        assert f"Searched sys.path starting with: {kit_pytester.path}" in err, err


def test_engine_from_env_var_and_ini(kit_pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_ENGINE", GOOD)
    from_env = run(kit_pytester, QUICK, "-k", "A2")
    assert from_env.ret == 0
    assert f"engine --engine={GOOD} (from the environment variable CONFORMANCE_ENGINE)" in (
        from_env.stdout.str()
    )
    monkeypatch.setenv("CONFORMANCE_ENGINE", GOOD + "x")  # a typo: the error says where it is
    typo = run(kit_pytester, QUICK)
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    assert "given by the environment variable CONFORMANCE_ENGINE" in typo.stderr.str()
    monkeypatch.delenv("CONFORMANCE_ENGINE")
    kit_pytester.makeini(f"[pytest]\nconformance_engine = {GOOD}\n")
    result = run(kit_pytester, QUICK, "-k", "A3-should")
    assert result.ret == 0
    result.assert_outcomes(passed=1)
    assert "(from the ini key conformance_engine (" in result.stdout.str()


@pytest.mark.slow
def test_factory_fixture_override_in_conftest(kit_pytester):
    kit_pytester.makeconftest("""
        import pytest
        from reference_engines.mutants.v4_drops_system import DropsSystemPrompt

        @pytest.fixture(scope="session")
        def conformance_engine_factory():
            return DropsSystemPrompt
    """)
    kit_pytester.makepyfile(
        test_suite="from conformance.suite.test_contract import test_contract  # noqa: F401\n"
    )
    result = run(kit_pytester, QUICK, "-k", "V4")
    assert result.ret == 1
    assert "[V4 MUST]" in result.stdout.str()
    # the repro reruns the same tests (the conftest supplies the engine), never a function's repr
    assert "Repro: pytest " in result.stdout.str() and "<function" not in result.stdout.str()
    assert re.search(
        r"Repro: pytest (\S+ )?(-k 'V4-|--conformance-replay=\S+V4-)", result.stdout.str()
    )


def test_junit_carries_clause_and_level(kit_pytester):
    result = run(kit_pytester, f"--engine={GOOD}", QUICK, "-k", "A2", "--junitxml=out.xml")
    assert result.ret == 0
    xml = (kit_pytester.path / "out.xml").read_text()
    assert 'name="clause" value="A2"' in xml and 'name="level" value="MUST"' in xml
    assert 'name="since" value="1.0"' in xml and 'name="contract_version" value="1.1"' in xml


def test_json_verdict_shape(kit_pytester):
    result = run(kit_pytester, f"--engine={GOOD}", QUICK, "--conformance-json=verdict.json")
    assert result.ret == 0
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    assert data["engine"] == {"spec": GOOD, "kwargs": {}}
    assert list(data)[0] == "format_version" and data["format_version"] == 1
    assert set(data) == {
        "format_version",
        "engine",
        "profile",
        "kit_version",
        "contract_version",
        "host_abc",
        "host_profile",
        "verdict",
        "strict",
        "counts",
        "failures_by_level",
        "other_failures",
        "snapshot_mismatches",
        "snapshot_errors",
        "cases_run",
        "cases_total",
        "root_causes",
        "llm",
        "results",
        "partly_checked",
    }
    assert data["cases_run"] == data["cases_total"] == len(data["results"])
    assert data["llm"]["calls"] == data["llm"]["cost_usd"] == 0  # the engine calls no LLM
    assert all(r["llm"] == {} for r in data["results"])
    assert data["root_causes"] == []
    assert data["host_abc"].startswith("context-engine-kit")
    outcomes = {r["outcome"] for r in data["results"]}
    assert outcomes <= {"passed", "skipped"}
    assert data["verdict"] == "PASS" and data["failures_by_level"] == {"MUST": 0, "SHOULD": 0}
    assert (
        data["counts"]["total"]
        == len(data["results"])
        == data["counts"]["passed"] + data["counts"]["skipped"]
    )
    assert data["counts"]["passed"] == sum(r["outcome"] == "passed" for r in data["results"])
    assert {r["clause"] for r in data["results"]} >= {
        "A1",
        "A2",
        "A3",
        "A4",
        "A6",
        "V1",
        "V2",
        "V3",
        "V4",
    }


def test_xdist_gives_the_same_outcomes(kit_pytester, good_counts):
    pytest.importorskip("xdist")
    result = run(kit_pytester, f"--engine={GOOD}", QUICK, "-n", "2")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=good_counts[0], skipped=good_counts[1])
    assert "verdict: PASS" in result.stdout.str()


WORKER_TERMINAL_ON_STDERR = """
    import sys
    import pytest

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(config):
        # an xdist worker's terminal is /dev/null; point it at stderr so that anything a worker
        # prints shows up in this test's output
        if hasattr(config, "workerinput"):
            sys.stdout = sys.stderr
"""


def test_xdist_prints_the_verdict_once(kit_pytester):
    pytest.importorskip("xdist")
    kit_pytester.makeconftest(WORKER_TERMINAL_ON_STDERR)
    result = run(
        kit_pytester, f"--engine={GOOD}", QUICK, "-k", "A1", "-n", "2", "--conformance-json=v.json"
    )
    assert result.ret == 0
    both = result.stdout.str() + "\n" + result.stderr.str()
    assert both.count("conformance verdict by clause") == 1, both
    assert both.count("verdict: PASS") == 1, both
    # the controller collects nothing itself: the JSON still counts the cases the workers ran
    data = json.loads((kit_pytester.path / "v.json").read_text())
    assert data["cases_total"] == data["cases_run"] == data["counts"]["total"] > 0, data
    # (the workers' own pytest summaries, FAILURES included, are xdist's: on a real run they go
    # to /dev/null)


def test_collection_is_identical_under_xdist(kit_pytester):
    pytest.importorskip("xdist")
    plain = run(kit_pytester, f"--engine={GOOD}", "--collect-only", "-q")
    ids = sorted(line for line in plain.stdout.lines if "test_contract[" in line)
    assert len(ids) == len(set(ids)) > 50
    assert all(line.isascii() for line in ids)
    spread = run(kit_pytester, f"--engine={GOOD}", "--collect-only", "-q", "-n", "2")
    assert spread.ret == 0
    # every worker collected the same items (xdist errors out otherwise)
    assert "Different tests were collected" not in spread.stdout.str() + spread.stderr.str()


@pytest.mark.slow
def test_xfails_file_and_replay_file(kit_pytester):
    spec = "reference_engines.mutants.v4_drops_system:DropsSystemPrompt"
    (kit_pytester.path / "xfails.txt").write_text(
        "# known\nV4  # known: we drop the prompt\nZ9-nope\n"
    )
    result = run(
        kit_pytester,
        f"--engine={spec}",
        QUICK,
        "--conformance-xfails=xfails.txt",
        "-k",
        "V4",
        "--conformance-no-shrink",
    )
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "xfailed" in out and "'Z9-nope' matches no check" in out
    failing = run(
        kit_pytester, f"--engine={spec}", QUICK, "-k", "V4-system-prompt-first and compress"
    )
    assert failing.ret == 1
    replay_file = (
        kit_pytester.path
        / ".conformance"
        / "failures"
        / spec.replace(":", ".")
        / "V4-system-prompt-first_compress_.json"
    )
    assert replay_file.is_file()
    assert f"--conformance-replay={replay_file}" in failing.stdout.str()
    again = run(kit_pytester, f"--engine={spec}", QUICK, f"--conformance-replay={replay_file}")
    assert again.ret == 1
    again.assert_outcomes(failed=1)
    assert "[V4 MUST]" in again.stdout.str()
    # the file names its engine: replayed alone, it runs the same case on the same engine
    alone = run(kit_pytester, f"--conformance-replay={replay_file}")
    assert alone.ret == 1, alone.stdout.str()
    alone.assert_outcomes(failed=1)
    assert f"conformance: engine --engine={spec}" in alone.stdout.str()
    assert "the file was recorded on" not in again.stdout.str() + alone.stdout.str()
    # replayed on another engine (a fix, or a twin): the header says so, the run goes on
    fixed = run(kit_pytester, f"--engine={GOOD}", QUICK, f"--conformance-replay={replay_file}")
    assert fixed.ret == 0, fixed.stdout.str()
    fixed.stdout.fnmatch_lines(
        [f"conformance: replaying * the file was recorded on {spec}, and its draws are "
         f"replayed on {GOOD}, the engine given"]
    )  # fmt: skip


def test_no_scenarios_flag_leaves_the_scenario_library_out(kit_pytester):
    without = run(kit_pytester, f"--engine={GOOD}", "--collect-only", "-q")
    with_lib = run(kit_pytester, f"--engine={GOOD}", "--collect-only", "-q", scenarios=True)
    assert without.ret == 0 and with_lib.ret == 0
    assert not any("test_contract[scenario:" in line for line in without.stdout.lines)
    assert any("test_contract[scenario:" in line for line in with_lib.stdout.lines)


def test_constructor_that_raises_is_one_usage_error(kit_pytester):
    kit_pytester.makepyfile(
        broken_ctor="""
        from reference_engines.mutants._base import MinimalEngine
        class Broken(MinimalEngine):
            def __init__(self, db_path):
                super().__init__()
        def none_factory():
            return None
    """
    )
    result = run(kit_pytester, "--engine=broken_ctor:Broken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "constructing the engine raised TypeError" in err and "--engine-kwargs" in err
    result = run(kit_pytester, "--engine=broken_ctor:none_factory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the factory returned NoneType, not a context engine" in result.stderr.str()


def test_non_positive_timeout_is_a_usage_error(kit_pytester):
    result = run(kit_pytester, f"--engine={GOOD}", "--conformance-timeout=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "give a positive, finite number of seconds" in result.stderr.str()
    endless = run(kit_pytester, f"--engine={GOOD}", "--conformance-timeout=nan")
    assert endless.ret == pytest.ExitCode.USAGE_ERROR
    assert "give a positive, finite number of seconds" in endless.stderr.str()


def test_engine_module_in_the_current_folder_imports(kit_pytester):
    kit_pytester.makepyfile(
        here_engine="""
        from reference_engines.mutants._base import MinimalEngine
        class Here(MinimalEngine):
            pass
    """
    )
    result = run(
        kit_pytester, "--engine=here_engine:Here", QUICK, "-k", "A2", "--conformance-no-scenarios"
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()


HERMES_STYLE_ENGINE = """
    from agent.context_engine import ContextEngine
    from reference_engines.mutants._base import MinimalEngine

    class HermesStyle(MinimalEngine):
        assert issubclass(MinimalEngine, ContextEngine)
"""


@pytest.mark.parametrize("where", ["inside-fixture", "conftest-top"])
def test_fixture_route_resolves_agent_imports_and_names_the_abc(kit_pytester, where):
    # README's conftest route with an engine written for Hermes
    # (`from agent.context_engine import ...`), no --engine: the import hook must be in place
    # both when the engine is imported lazily and at conftest top.
    kit_pytester.makepyfile(myeng=HERMES_STYLE_ENGINE)
    top, inner = (
        ("from myeng import HermesStyle", "")
        if where == "conftest-top"
        else ("", "from myeng import HermesStyle")
    )
    kit_pytester.makeconftest(f"""
        import pytest
        {top}

        @pytest.fixture(scope="session")
        def conformance_engine_factory():
            {inner}
            return HermesStyle
    """)
    kit_pytester.makepyfile(
        test_suite="from conformance.suite.test_contract import test_contract  # noqa: F401\n"
    )
    result = run(kit_pytester, QUICK, "-k", "A2")
    out = result.stdout.str()
    assert result.ret == 0, out + result.stderr.str()
    result.assert_outcomes(passed=1, deselected=result.parseoutcomes()["deselected"])
    assert "No module named 'agent'" not in out
    assert "conformance: engine from the conformance_engine_factory fixture" in out
    assert "host ABC context-engine-kit" in out


def test_fixture_route_in_a_conftest_pytest_finds_late(kit_pytester):
    # tests/deep/conftest.py is not an initial conftest: the suite's import puts the hook in place
    kit_pytester.makepyfile(myeng=HERMES_STYLE_ENGINE)
    deep = kit_pytester.mkpydir("tests") / "deep"
    deep.mkdir()
    (deep / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef conformance_engine_factory():\n"
        "    from myeng import HermesStyle\n    return HermesStyle\n"
    )
    (deep / "test_suite.py").write_text(
        "from conformance.suite.test_contract import test_contract  # noqa: F401\n"
    )
    result = run(kit_pytester, QUICK, "-k", "A2")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1, deselected=result.parseoutcomes()["deselected"])


def test_import_hook_stays_out_of_runs_without_the_kit_in_use(kit_pytester):
    kit_pytester.makepyfile(
        test_mine="""
        import importlib.util, sys

        def test_no_agent_shim():
            assert importlib.util.find_spec("agent") is None
    """
    )
    result = run(kit_pytester)
    assert result.ret == 0, result.stdout.str()


def test_replay_file_for_an_unknown_check_or_without_an_engine_is_a_usage_error(kit_pytester):
    stale = kit_pytester.path / "stale.json"
    stale.write_text(json.dumps({"check": "Z9-renamed-long-ago", "example": {"draws": {}}}))
    result = run(kit_pytester, f"--engine={GOOD}", f"--conformance-replay={stale}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "the file is for check 'Z9-renamed-long-ago', which this kit does not have"
        in result.stderr.str()
    )
    good = kit_pytester.path / "good.json"
    good.write_text(json.dumps({"check": "A2-usage-updates-counters", "example": {"draws": {}}}))
    alone = run(kit_pytester, f"--conformance-replay={good}")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    assert "the replay file names no engine the kit can load" in alone.stderr.str()
    assert "Traceback" not in result.stderr.str() + alone.stderr.str()


def test_k_that_deselects_every_check_still_prints_a_verdict_line(kit_pytester):
    result = run(kit_pytester, f"--engine={GOOD}", QUICK, "-k", "no-check-is-called-this")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "verdict: NO CHECK RAN - every conformance check was deselected" in result.stdout.str()


def test_failure_file_of_a_check_that_passes_now_is_removed(kit_pytester):
    failures = kit_pytester.path / ".conformance" / "failures" / GOOD.replace(":", ".")
    failures.mkdir(parents=True)
    other = kit_pytester.path / ".conformance" / "failures" / "another.Engine"
    other.mkdir()
    others = other / "A2-usage-updates-counters.json"  # another engine's counterexample
    others.write_text(json.dumps({"check": "A2-usage-updates-counters", "example": {"draws": {}}}))
    stale = failures / "A2-usage-updates-counters.json"
    stale.write_text(json.dumps({"check": "A2-usage-updates-counters", "example": {"draws": {}}}))
    mine = (
        failures / "A3-should-compress-returns-bool.json"
    )  # not a file the kit wrote for that check
    mine.write_text("my notes\n")
    result = run(kit_pytester, f"--engine={GOOD}", QUICK, "-k", "A2 or A3")
    assert result.ret == 0, result.stdout.str()
    assert not stale.exists() and mine.read_text() == "my notes\n"
    assert others.is_file()  # a passing run of one engine never removes another's


HOST_DEPENDENT = """
from reference_engines.mutants._base import MinimalEngine

class NeedsSystem(MinimalEngine):
    '''Fails only where compress() is handed no system prompt (Hermes 0.19).'''

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        if len(messages) > 8 and messages[0]["role"] != "system":
            raise ValueError("expected the system prompt first")
        return super().compress(messages, current_tokens, focus_topic, **kwargs)
"""


def test_a_replayed_failure_runs_on_the_host_it_was_found_on(kit_pytester):
    """A failure found on hermes-0.19 only, replayed from its file alone, runs on hermes-0.19
    (the default hosts would pass it: a false green for an author checking a fix)."""
    kit_pytester.makepyfile(hostdep=HOST_DEPENDENT)
    case = "V2-tool-results-paired and compress"
    found = run(kit_pytester, "--engine=hostdep:NeedsSystem", QUICK, "--host-profile=hermes-0.19",
                "-k", case)  # fmt: skip
    assert found.ret == 1, found.stdout.str()[-2000:]
    [failure] = (kit_pytester.path / ".conformance" / "failures").rglob("V2-tool*.json")
    alone = run(kit_pytester, f"--conformance-replay={failure}")
    assert alone.ret == 1, alone.stdout.str()[-2000:]
    alone.stdout.fnmatch_lines(["conformance: engine *| host profile hermes-0.19 |*"])
    # the run may still name its own host (what the replayed draws do there is another matter:
    # replaying an example depends on the Hypothesis release)
    documented = run(kit_pytester, f"--conformance-replay={failure}", "--host-profile=documented")
    documented.stdout.fnmatch_lines(["conformance: engine *| host profile documented |*"])
