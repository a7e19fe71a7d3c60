"""Covers conformance.cli (``context-engine-kit check`` and the other subcommands): the same
cases as pytest, exit codes, the JSON verdict, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO_ROOT


def cli(*args, cwd, **env_vars):
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        **env_vars,
    )
    env.pop("CONFORMANCE_ENGINE", None)
    for name in [k for k in env if k.startswith("PYTEST_XDIST_")]:
        # under -n 2 the child would take itself for an xdist worker (syrupy then prints no report)
        env.pop(name)
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_check_passes_and_writes_json(tmp_path):
    out = tmp_path / "v.json"
    proc = cli(
        "check",
        "reference_engines.mutants._base:MinimalEngine",
        "--json",
        str(out),
        "--conformance-profile=quick",
        "--state-dir",
        str(tmp_path / "state"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["engine"] == {"spec": "reference_engines.mutants._base:MinimalEngine", "kwargs": {}}
    assert all(r["outcome"] in ("passed", "skipped") for r in data["results"])
    assert data["verdict"] == "PASS" and data["failures_by_level"] == {"MUST": 0, "SHOULD": 0}
    assert data["counts"]["total"] == len(data["results"])


def test_check_exits_nonzero_on_must_failure(tmp_path):
    out = tmp_path / "v.json"
    proc = cli(
        "check",
        "reference_engines.mutants.a6_never_counts:NeverCounts",
        "--json",
        str(out),
        "--conformance-profile=quick",
        "--state-dir",
        str(tmp_path / "state"),
        "-k",
        "A6 or A2",
        "--conformance-no-shrink",
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    data = json.loads(out.read_text())
    failed = [r for r in data["results"] if r["outcome"] == "failed"]
    assert {r["clause"] for r in failed} == {"A6"}
    assert data["verdict"] == "FAIL" and data["counts"]["failed"] == len(failed)
    assert data["failures_by_level"]["MUST"] == sum(r["level"] == "MUST" for r in failed) >= 1
    assert any(r["message"].startswith("[A6 MUST]") for r in failed)


def test_check_bad_engine_is_one_paragraph(tmp_path):
    proc = cli("check", "nope", cwd=tmp_path)
    assert proc.returncode == 4
    assert "is not of the form MODULE:ATTR" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_check_bad_engine_kwargs(tmp_path):
    proc = cli(
        "check",
        "reference_engines.mutants._base:MinimalEngine",
        "--engine-kwargs",
        "{nope",
        cwd=tmp_path,
    )
    assert proc.returncode == 4
    assert "--engine-kwargs='{nope' is not valid JSON" in proc.stderr


def test_install_plugin_copies_lcm(tmp_path):
    proc = cli("install-plugin", "lcm", "--hermes-home", str(tmp_path / "home"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    target = tmp_path / "home" / "plugins" / "lcm"
    assert proc.stdout.strip() == str(target.resolve())
    assert (target / "plugin.yaml").is_file() and (target / "__init__.py").is_file()


def test_unknown_subcommand_is_a_usage_error(tmp_path):
    proc = cli("frobnicate", cwd=tmp_path)
    assert proc.returncode == 2
    assert "usage: context-engine-kit" in proc.stderr


def test_scenario_subcommand_runs_a_bundled_scenario(tmp_path):
    from pathlib import Path

    library = sorted((REPO_ROOT / "conformance" / "scenarios" / "library").glob("*.scenario.yaml"))
    assert library, "the bundled scenario library is empty"
    proc = cli(
        "scenario",
        str(library[0]),
        "--engine",
        "reference_engines.mutants._base:MinimalEngine",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tmp_path / "bad.scenario.yaml"
    bad.write_text("name: x\nsteps: 3\n", encoding="utf-8")
    proc = cli(
        "scenario",
        str(bad),
        "--engine",
        "reference_engines.mutants._base:MinimalEngine",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert "bad.scenario.yaml:" in proc.stdout + proc.stderr
    assert Path(bad).name in proc.stdout + proc.stderr


def test_check_engine_plugin_in_place_of_module_attr(tmp_path):
    home = tmp_path / "home"
    assert cli("install-plugin", "lcm", "--hermes-home", str(home), cwd=tmp_path).returncode == 0
    out = tmp_path / "v.json"
    proc = cli(
        "check",
        "--engine-plugin",
        str(home / "plugins" / "lcm"),
        "--json",
        str(out),
        "--conformance-profile=quick",
        "--conformance-no-scenarios",
        "-k",
        "R4 or R5 or R6 or A1",
        "--state-dir",
        str(tmp_path / "state"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    results = json.loads(out.read_text())["results"]
    ran = {r["clause"] for r in results if r["outcome"] == "passed"}
    assert {"R4", "A1"} <= ran, results
    proc = cli("check", "--engine-plugin", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert proc.returncode == 4 and "not a folder" in proc.stderr
    proc = cli("check", cwd=tmp_path)
    assert proc.returncode == 4 and "--engine-plugin DIR" in proc.stderr


def test_every_subcommand_help_prints_usage_and_changes_nothing(tmp_path):
    """``--help`` on any subcommand prints its usage and exits 0 (coverage --help once rewrote
    docs/coverage.md)."""
    from conformance.devtools.coverage import COVERAGE

    before = COVERAGE.stat().st_mtime_ns
    for sub in ("check", "scenario", "mutants", "coverage", "serve", "install-plugin"):
        proc = cli(sub, "--help", cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith(
            f"usage: context-engine-kit {sub}"
        ), (sub, proc.stdout)
    assert COVERAGE.stat().st_mtime_ns == before
    bad = cli("coverage", "--bogus", cwd=tmp_path)
    assert bad.returncode == 2 and "unrecognized arguments: --bogus" in bad.stderr


def test_check_engine_plugin_runs_the_bundled_scenarios(tmp_path):
    folder = REPO_ROOT / "reference_engines" / "mutants" / "plugin_dirs" / "minimal"
    out = tmp_path / "v.json"
    proc = cli(
        "check",
        "--engine-plugin",
        str(folder),
        "--json",
        str(out),
        "-k",
        "c1-subagents",
        "--state-dir",
        str(tmp_path / "state"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    passed = {
        r["check"] for r in json.loads(out.read_text())["results"] if r["outcome"] == "passed"
    }
    assert "scenario:c1-subagents:parent-window-unchanged" in passed, passed


def test_check_uses_the_snapshots_of_the_folder_it_runs_from_and_leaves_no_temp_dir(tmp_path):
    # snapshots live in <cwd>/.conformance/snapshots/<engine>/ as with plain pytest; failure files
    # in a temp state dir that is removed again when the run left nothing in it
    spec = "reference_engines.mutants._base:MinimalEngine"
    tmp = tmp_path / "tmp"
    tmp.mkdir()

    def run(*extra):
        return cli(
            "check",
            spec,
            "--conformance-profile=quick",
            "-k",
            "test_compression_snapshot or A1",
            *extra,
            cwd=tmp_path,
            TMPDIR=str(tmp),
        )

    created = run("--snapshot-update")
    assert created.returncode == 0, created.stdout + created.stderr
    folder = (
        tmp_path / ".conformance" / "snapshots" / "reference_engines.mutants._base.MinimalEngine"
    )
    assert len(list(folder.glob("*.json"))) == 14
    assert not [p for p in tmp.iterdir() if p.name.startswith("context-engine-kit-")]
    assert "state kept in" not in created.stdout
    again = run()  # on because the folder exists; diffs against it
    assert again.returncode == 0, again.stdout
    assert (
        f"conformance snapshots: {folder}" in again.stdout
        and "14 snapshots passed." in again.stdout
    )
    assert not list(tmp.iterdir())  # neither the state dir nor the plugin's temp HERMES_HOME stays
    (folder / "short-chat.json").write_text('"changed"\n')
    changed = run()
    assert changed.returncode == 1
    assert (
        "expected the stored snapshot "
        ".conformance/snapshots/reference_engines.mutants._base.MinimalEngine/short-chat.json, "
        "got a different output"
    ) in changed.stdout


def test_check_keeps_a_state_dir_with_failure_files_and_says_where(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = cli(
        "check",
        "reference_engines.mutants.v4_drops_system:DropsSystemPrompt",
        "--conformance-profile=quick",
        "-k",
        "V4-system-prompt-first and compress",
        "--conformance-no-shrink",
        cwd=tmp_path,
        TMPDIR=str(tmp),
    )
    assert proc.returncode == 1
    kept = [p for p in tmp.iterdir() if p.name.startswith("context-engine-kit-")]
    assert len(kept) == 1 and list((kept[0] / "failures").glob("*/*.json"))
    assert f"context-engine-kit: state kept in {kept[0]}" in proc.stdout


def test_coverage_outside_a_source_checkout_is_a_clear_error(tmp_path, monkeypatch, capsys):
    from conformance.devtools import coverage

    monkeypatch.setattr(coverage, "CONTRACT", tmp_path / "site-packages" / "docs" / "contract.md")
    assert coverage.main(["--check"]) == 2
    err = capsys.readouterr().err
    assert (
        "coverage needs a source checkout of context-engine-kit" in err and "pip install -e" in err
    )


def test_engines_the_issue_names_are_must_clean_under_check(tmp_path):
    """The three engines a correct kit must not fail (conformance.cli ``check``, quick profile,
    bundled scenarios included): a select_context-only engine that never compacts, a
    fail-closed call_llm summariser and a trimming selector come out PASS with no MUST
    failure (and no SHOULD failure either)."""
    m = "reference_engines.mutants."
    for spec in (
        m + "h3_live_turn:KeepsLiveTurn",
        m + "a4_summary_failure:FailClosedSummariser",
        m + "h3_live_turn:TrimmingSelector",
    ):
        out = tmp_path / f"{spec.rpartition(':')[2]}.json"
        proc = cli(
            "check",
            spec,
            "--json",
            str(out),
            "--conformance-profile=quick",
            "--state-dir",
            str(tmp_path / "state"),
            cwd=tmp_path,
        )
        assert proc.returncode == 0, spec + "\n" + proc.stdout[-3000:] + proc.stderr[-2000:]
        data = json.loads(out.read_text())
        assert data["verdict"] == "PASS", spec
        assert data["failures_by_level"] == {"MUST": 0, "SHOULD": 0}, spec
