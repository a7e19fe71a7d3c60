"""Covers conformance.run.session, conformance.plugin, conformance.cli and the conftest fixture
route
together: the four front ends run the same stream of cases through the same session, so they give
the same result set, the same outcomes and the same messages; and every ``Repro:`` line any of
them prints runs as printed and fails the same case.

Messages are compared without their ``Repro:`` tail: that part names each front end's own command
(the test files of the fixture route, the failure file a pytest run wrote), and the second test
runs those commands.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import run_conformance
from conformance.clauses.errors import strip_repro
from conformance.runtime.engine_loading import load_engine_factory

GOOD = "reference_engines.mutants._base:MinimalEngine"
V4 = "reference_engines.mutants.v4_drops_system:DropsSystemPrompt"
V2 = "reference_engines.mutants.v2_orphan_result:OrphanToolResult"
#: A slice of the stream with checks that pass, fail and skip, and scenario expectations.
CASES = (
    "A2-usage-updates-counters",
    "V2-tool-results-paired[compress]",
    "V4-system-prompt-first[compress]",
    "H6-stable-selection",
    "REG-a-parallel-calls",
    "scenario:v2-tool-heavy:",
)
K = " or ".join(CASES)
QUICK = "--conformance-profile=quick"
BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "CONFORMANCE_"))
    }
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600, check=False
    )


def _rows(data: dict) -> dict[str, tuple]:
    return {
        r["check"]: (r["outcome"], strip_repro(r["message"]))
        + ((tuple(r["hosts"]),) if "hosts" in r else ())
        for r in data["results"]
    }


def front_ends(spec: str, tmp: Path, hosts: str | None = None) -> dict[str, tuple[dict, str]]:
    """``{front end: (rows by case id, printed output)}`` for one engine (``hosts``: a
    ``--host-profile`` list; None: the default)."""
    out: dict[str, tuple[dict, str]] = {}
    extra = [f"--host-profile={hosts}"] if hosts else []
    direct = tmp / "pytest"
    direct.mkdir()
    proc = _run(
        [str(BIN / "pytest"), f"--engine={spec}", QUICK, "-k", K, "--conformance-json=v.json"]
        + extra,
        direct,
    )
    out["pytest --engine"] = (_rows(json.loads((direct / "v.json").read_text())), proc.stdout)
    cli = tmp / "check"
    cli.mkdir()
    proc = _run(
        [str(BIN / "context-engine-kit"), "check", spec, "--json", "v.json", QUICK, "-k", K]
        + extra,
        cli,
    )
    out["context-engine-kit check"] = (_rows(json.loads((cli / "v.json").read_text())), proc.stdout)
    results = run_conformance(
        load_engine_factory(spec), profile="quick", only=CASES, host_profile=hosts
    )
    api = {
        r.check: (r.outcome, strip_repro(r.message)) + ((r.hosts,) if r.hosts else ())
        for r in results
    }
    out["run_conformance"] = (api, "\n".join(r.message for r in results))
    route = tmp / "fixture"
    route.mkdir()
    module, _, attr = spec.partition(":")
    (route / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(scope='session')\ndef conformance_engine_factory():\n"
        f"    from {module} import {attr}\n    return {attr}\n"
    )
    (route / "test_suite.py").write_text(
        "from conformance.suite.test_contract import test_contract  # noqa: F401\n"
    )
    proc = _run([str(BIN / "pytest"), QUICK, "-k", K, "--conformance-json=v.json"] + extra, route)
    out["conftest fixture route"] = (_rows(json.loads((route / "v.json").read_text())), proc.stdout)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("spec", [GOOD, V4, V2])
def test_four_front_ends_give_the_same_results_and_messages(spec, tmp_path):
    runs = front_ends(spec, tmp_path)
    reference = runs["run_conformance"][0]
    assert len(reference) >= 8 and any(c.startswith("scenario:") for c in reference)
    for name, (rows, _printed) in runs.items():
        assert rows == reference, (name, sorted(set(rows.items()) ^ set(reference.items())))
    outcomes = {o for o, _ in reference.values()}
    assert ("failed" in outcomes) == (spec != GOOD), outcomes


@pytest.mark.slow
def test_four_front_ends_agree_on_several_hosts(tmp_path):
    """--host-profile=documented,hermes-0.19: the same rows, the same hosts per row and the
    same per-host verdict from every front end (V4's system-prompt rule fails on documented
    only: hermes-0.19 hands compress() no system row)."""
    runs = front_ends(V4, tmp_path, hosts="documented,hermes-0.19")
    reference = runs["run_conformance"][0]
    for name, (rows, _printed) in runs.items():
        assert rows == reference, (name, sorted(set(rows.items()) ^ set(reference.items())))
    assert reference["V4-system-prompt-first[compress][documented]"][0] == "failed"
    assert reference["V4-system-prompt-first[compress][hermes-0.19]"][0] == "skipped"
    assert reference["A2-usage-updates-counters"][2] == ("documented", "hermes-0.19")
    lines = {
        name: json.loads((tmp_path / folder / "v.json").read_text())["by_host_line"]
        for name, folder in (("pytest", "pytest"), ("check", "check"), ("fixture", "fixture"))
    }
    assert set(lines.values()) == {"V4 MUST on documented; clean on hermes-0.19"}, lines


def _repro_lines(text: str) -> list[str]:
    return [
        line.split(" Repro: ", 1)[1].strip() for line in text.splitlines() if " Repro: " in line
    ]


@pytest.mark.slow
def test_every_front_ends_repro_line_runs_as_printed_and_fails_the_same_case(tmp_path):
    runs = front_ends(V4, tmp_path)
    cwd = {
        "pytest --engine": tmp_path / "pytest",
        "context-engine-kit check": tmp_path / "check",
        "run_conformance": Path.cwd(),
        "conftest fixture route": tmp_path / "fixture",
    }
    for name, (rows, printed) in runs.items():
        failed = sorted(c for c, (outcome, _) in rows.items() if outcome == "failed")
        assert failed, name
        lines = _repro_lines(printed)
        assert lines, (name, printed[-2000:])
        for case in failed[:2]:
            command = next((c for c in lines if case in c or _replay_names(c, case)), None)
            assert command, (name, case, lines)
            argv = shlex.split(command)
            assert argv[0] == "pytest", command
            proc = _run([str(BIN / "pytest"), *argv[1:]], cwd[name])
            assert proc.returncode == 1, (name, command, proc.stdout[-3000:])
            assert re.search(rf"FAILED \S*test_contract\[{re.escape(case)}\]", proc.stdout), (
                name,
                command,
                proc.stdout[-3000:],
            )


def _replay_names(command: str, case: str) -> bool:
    """True when ``command`` replays a failure file written for ``case``."""
    match = re.search(r"--conformance-replay[= ](\S+)", command)
    if not match or not Path(match.group(1)).is_file():
        return False
    return json.loads(Path(match.group(1)).read_text())["check"] == case
