"""Covers conformance.frontends.scenario_cli (``context-engine-kit scenario FILE... --engine
MODULE:ATTR``): progress lines, exit statuses, and the pytest ``Repro:`` command its failures end
with."""

from __future__ import annotations

import pytest
from packaging.version import Version

from conformance.frontends.scenario_cli import main
from conformance.scenarios import LIBRARY_DIR

C1 = str(LIBRARY_DIR / "c1_subagents.scenario.yaml")


def test_passing_scenario_exits_zero_with_a_progress_line_and_verdict(capsys):
    assert main([C1, "--engine", "reference_engines.router:ReferenceRouter"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] c1-subagents: 5/5 expectations hold (" in out
    assert "verdict: PASS" in out


def test_must_failure_exits_one_and_prints_the_message(capsys):
    assert (
        main([C1, "--engine", "reference_engines.mutants.scn_shared_clone:SharedClone", "-q"]) == 1
    )
    out = capsys.readouterr().out
    assert "FAILED   scenario:c1-subagents:parent-window-unchanged" in out
    assert (
        "[C2 MUST] scenario 'c1-subagents', expectation 'parent-window-unchanged' at steps[3] check"
        in out
    )


def test_malformed_scenario_exits_two_with_file_line(tmp_path, capsys):
    bad = tmp_path / "bad.scenario.yaml"
    bad.write_text("name: bad\nsteps:\n  - user: {words: x}\nexpect: []\n", encoding="utf-8")
    assert main([str(bad), "--engine", "reference_engines.router:ReferenceRouter"]) == 2
    assert f"{bad}:3: steps[0].user.words: expected integer, got string" in capsys.readouterr().err


def test_bad_engine_exits_four(capsys):
    assert main([C1, "--engine", "no_colon"]) == 4
    assert "is not of the form MODULE:ATTR" in capsys.readouterr().err


def test_engine_plugin_folder(tmp_path, capsys):
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
    assert main([C1, "--engine-plugin", str(plugin)]) == 0, capsys.readouterr()
    assert "c1-subagents: 5/5 expectations hold" in capsys.readouterr().out


def test_a_failure_ends_with_a_repro_command_that_reruns_just_that_scenario(capsys, kit_pytester):
    import shlex

    spec = "reference_engines.mutants.scn_shared_clone:SharedClone"
    assert main([C1, str(LIBRARY_DIR / "l1_lifecycle.scenario.yaml"), "--engine", spec, "-q"]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "expectation 'parent-window-unchanged'" in x)
    repro = line.split(" Repro: ", 1)[1]
    assert repro == f"pytest --engine={spec} {C1} -k 'parent-window-unchanged'"
    args = shlex.split(repro)
    assert args[0] == "pytest"
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


def test_no_file_runs_the_bundled_library_and_says_so(capsys):
    from conformance.scenarios import library_paths

    assert main(["--engine", "reference_engines.router:ReferenceRouter", "-q"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        f"context-engine-kit scenario: no FILE given: running the {len(library_paths())} bundled "
        f"scenarios from {LIBRARY_DIR}"
    )
    assert main([C1, "--engine", "reference_engines.router:ReferenceRouter", "-q"]) == 0
    assert "no FILE given" not in capsys.readouterr().out


def test_help_says_what_no_file_does(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "scenario files; with none, the bundled library" in help_text


def test_report_shows_every_scenario_played_and_no_made_up_call_count(tmp_path, capsys):
    report = tmp_path / "r.html"
    spec = "reference_engines.router:ReferenceRouter"
    assert main([C1, "--engine", spec, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "0 provider calls" not in out  # the run was played in a child: no count is shown
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
        [sys.executable, "-m", "conformance.frontends.scenario_cli", C1, "--engine"]
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
