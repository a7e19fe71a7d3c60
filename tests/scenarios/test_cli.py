"""Covers ``context-engine-kit scenario FILE... MODULE:ATTR`` (:mod:`conformance.cli`): the
``check`` run with the scenario expectations selected
(:class:`conformance.frontends.check_run.CheckRun` deselects the rest), of the files given or of
the bundled library; its opening line, exit statuses, and the pytest ``Repro:`` command its
failures end with."""

from __future__ import annotations

import pytest
from packaging.version import Version

from conformance.scenarios import LIBRARY_DIR
from tests.conformance.test_cli import cli

C1 = str(LIBRARY_DIR / "c1_subagents.scenario.yaml")
ROUTER = "reference_engines.router:ReferenceRouter"


def scenario(*args, cwd):
    """``context-engine-kit scenario ARGS`` in ``cwd``: (exit status, stdout, stderr)."""
    proc = cli("scenario", *args, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def test_passing_scenario_exits_zero_with_its_expectations_and_verdict(tmp_path):
    code, out, err = scenario(C1, "--engine", ROUTER, cwd=tmp_path)
    assert code == 0, out[-3000:] + err
    assert "collected 5 items" in out and "5 passed" in out
    assert "verdict: PASS - 5 cases: 5 passed" in out


def test_must_failure_exits_one_and_prints_the_message(tmp_path):
    code, out, _ = scenario(
        C1, "--engine", "reference_engines.mutants.scn_shared_clone:SharedClone", "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert code == 1, out[-3000:]
    assert "c1_subagents.scenario.yaml::parent-window-unchanged" in out
    assert (
        "[C2 MUST] scenario 'c1-subagents', expectation 'parent-window-unchanged' at steps[3] check"
        in out
    )


def test_malformed_scenario_exits_two_with_file_line(tmp_path):
    bad = tmp_path / "bad.scenario.yaml"
    bad.write_text("name: bad\nsteps:\n  - user: {words: x}\nexpect: []\n", encoding="utf-8")
    code, out, _ = scenario(str(bad), "--engine", ROUTER, cwd=tmp_path)
    assert code == 2  # pytest's collection error
    assert "bad.scenario.yaml:3: steps[0].user.words: expected integer, got string" in out
    assert "verdict: NO CHECK RAN - collection stopped at 1 error(s)" in out


def test_bad_engine_exits_four(tmp_path):
    code, out, err = scenario(C1, "--engine", "no_colon", cwd=tmp_path)
    assert code == 4
    assert "is not of the form MODULE:ATTR" in out + err


def test_engine_plugin_folder(tmp_path):
    plugin = tmp_path / "minimal"
    plugin.mkdir()
    (plugin / "plugin.yaml").write_text(
        "name: minimal\ndescription: test engine\nversion: 0.1.0\n", encoding="utf-8"
    )
    (plugin / "__init__.py").write_text(
        "from agent.context_engine import ContextEngine\n"
        "from reference_engines.mutants._base import MinimalEngine\n\n"
        "class Engine(MinimalEngine):\n    pass\n",
        encoding="utf-8",
    )
    code, out, err = scenario(C1, "--engine-plugin", str(plugin), cwd=tmp_path)
    assert code == 0, out[-3000:] + err
    assert "verdict: PASS - 5 cases: 5 passed" in out


def test_a_failure_ends_with_a_repro_command_that_reruns_just_that_scenario(tmp_path, kit_pytester):
    import shlex

    spec = "reference_engines.mutants.scn_shared_clone:SharedClone"
    l1 = str(LIBRARY_DIR / "l1_lifecycle.scenario.yaml")
    code, out, _ = scenario(C1, l1, "--engine", spec, "-q", cwd=tmp_path)
    assert code == 1, out[-3000:]
    line = next(x for x in out.splitlines() if "expectation 'parent-window-unchanged'" in x)
    repro = line.split(" Repro: ", 1)[1]
    assert repro.endswith(f" --engine={spec} {C1} -k 'parent-window-unchanged'"), repro
    args = shlex.split(repro)  # pytest, or this python -m pytest when PATH has another
    if args[0] != "pytest":
        assert args[1:3] == ["-m", "pytest"], repro
        args = ["pytest", *args[3:]]
    again = kit_pytester.runpytest_subprocess(
        *args[1:], "-p", "no:cacheprovider", "--rootdir", str(kit_pytester.path)
    )
    text = again.stdout.str()
    again.assert_outcomes(failed=1)  # that expectation alone, the same failure
    assert line.strip() in text, text
    summary = next(x for x in text.splitlines() if x.startswith("FAILED "))
    # pytest puts a failure's text (the kit's one line) after the short summary's node id from
    # pytest 9 on; before, the line ends at the node id.
    if Version(pytest.__version__) >= Version("9"):
        assert "::parent-window-unchanged - [C2 MUST]" in summary, summary
    else:
        assert summary.endswith("::parent-window-unchanged"), summary


def test_no_file_runs_the_bundled_library_and_only_its_expectations(tmp_path):
    """No FILE: the bundled library, every expectation of it and nothing else (the checks are
    deselected), and the first line says so; a FILE replaces the library, --library adds it."""
    from conformance.scenarios import library_paths

    code, out, err = scenario(ROUTER, "-q", "--json", "v.json", cwd=tmp_path)
    assert code == 0, out[-3000:] + err
    assert out.splitlines()[0].startswith(
        f"context-engine-kit scenario: no FILE given: running the {len(library_paths())} bundled "
        f"scenarios from {LIBRARY_DIR} against --engine={ROUTER}, run by pytest"
    )
    import json

    data = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    files = {r["check"].split(":")[1] for r in data["results"]}
    assert all(r["check"].startswith("scenario:") for r in data["results"])
    assert len(files) == len(library_paths()) and data["cases_total"] == len(data["results"])
    code, out, _ = scenario(C1, ROUTER, "-q", cwd=tmp_path)
    assert code == 0 and "no FILE given" not in out and "5 passed" in out
    mine = tmp_path / "mine.scenario.yaml"
    mine.write_text((LIBRARY_DIR / "c1_subagents.scenario.yaml").read_text().replace(
        "name: c1-subagents", "name: mine"), encoding="utf-8")  # fmt: skip
    code, out, _ = scenario(str(mine), ROUTER, "-q", "--library", cwd=tmp_path)
    assert code == 0 and "the scenario files given and the" in out.splitlines()[0]
    assert f"{len(data['results']) + 5} passed" in out  # each case once


def test_help_says_what_no_file_does(tmp_path):
    code, out, _ = scenario("--help", cwd=tmp_path)
    assert code == 0
    help_text = " ".join(out.split())
    assert "scenario files; with none, the bundled library runs" in help_text
    assert "--timeout SECONDS short for --conformance-timeout" in help_text


def test_report_shows_every_scenario_played(tmp_path):
    report = tmp_path / "r.html"
    code, out, err = scenario(C1, "--engine", ROUTER, "--report", str(report), cwd=tmp_path)
    assert code == 0, out[-3000:] + err
    html = report.read_text(encoding="utf-8")
    assert "Scenarios (1)" in html and "c1-subagents" in html and "No scenario ran" not in html


def test_a_scenario_run_leaves_no_temp_folder_behind(tmp_path):
    """The supervised child's temp folder between cases (conformance-idle-*) goes with the run."""
    import os
    import subprocess
    import sys

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "scenario", C1, "--engine"]
        + ["reference_engines.router:ReferenceRouter", "-q"],
        cwd=tmp_path,
        env=dict(os.environ, TMPDIR=str(tmp)),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_each_scenario_name_is_one_file_of_the_run(tmp_path):
    """Case ids are scenario:NAME:EXPECTATION, so two files of one name would judge each
    other's expectations (a false PASS once): a second file of a name already in the run is a
    collection error naming both; a bundled file given again with --library runs once; a copy
    of a bundled file runs alone, where the library is not in the run."""
    strict = tmp_path / "a.scenario.yaml"
    strict.write_text((LIBRARY_DIR / "c1_subagents.scenario.yaml").read_text(), encoding="utf-8")
    twin = tmp_path / "b.scenario.yaml"
    twin.write_text(strict.read_text(), encoding="utf-8")
    code, out, _ = scenario(str(strict), str(twin), ROUTER, "-q", cwd=tmp_path)
    assert code == 2, out[-3000:]
    assert f"{twin}: scenario name 'c1-subagents' is also the name of {strict}, in this run" in out
    code, out, _ = scenario(str(strict), ROUTER, "-q", "--library", cwd=tmp_path)
    assert code == 2 and "is also the name of " in out and "c1_subagents.scenario.yaml" in out
    code, out, _ = scenario(C1, ROUTER, "-q", "--library", "--json", "v.json", cwd=tmp_path)
    assert code == 0, out[-3000:]
    import json

    checks = [r["check"] for r in json.loads((tmp_path / "v.json").read_text())["results"]]
    assert len(checks) == len(set(checks)) and "scenario:c1-subagents:parent-window-unchanged" in (
        checks
    )
    code, out, _ = scenario(str(strict), ROUTER, "-q", cwd=tmp_path)
    assert code == 0 and "5 passed" in out


def test_the_scenario_selection_leaves_the_users_own_options_alone(tmp_path):
    """The command deselects what is not a scenario expectation itself: a -m of the user's is
    pytest's as typed (its error quotes it), and a file without expectations says so."""
    code, _, err = scenario(C1, ROUTER, "-m", "conformance(", cwd=tmp_path)
    assert code == 4 and "Wrong expression passed to '-m': conformance(:" in err, err
    code, out, _ = scenario(C1, ROUTER, "-q", "-m", "conformance(clause='C2')", cwd=tmp_path)
    assert code == 0 and "2 passed, 3 deselected" in out, out[-2000:]
    empty = tmp_path / "empty.scenario.yaml"
    empty.write_text("name: empty\nsteps:\n  - user: hi\nexpect: []\n", encoding="utf-8")
    code, out, _ = scenario(str(empty), ROUTER, "-q", cwd=tmp_path)
    assert code == 5
    assert f"verdict: NO CHECK RAN - the scenario files given ({empty}) hold no expectation" in out
    # --collect-only runs nothing; the verdict file is still written and says so
    code, out, _ = scenario(C1, ROUTER, "--collect-only", "-q", "--json", "c.json", cwd=tmp_path)
    import json

    data = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert code == 0 and data["verdict"] == "NO CHECK RAN" and data["cases_total"] == 5, data
