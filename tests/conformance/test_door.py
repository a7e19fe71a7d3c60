"""Covers conformance.runtime.supervisor, conformance.runtime.sandbox,
conformance.authoring.budget, conformance.run.execution
and their use by conformance.run.session and the CLI: whatever the engine does by accident (exit,
crash, hang, block in C, leak a thread, blow up memory or its output, reach the network, start
a process, write outside its home), the run ends in a complete verdict that names the right
clause, in a bounded time; slow correct engines are clean (the budget, not a timeout, limits
their examples); a finding made before a hang or a death is kept; engines sharing a store by
default path do not see each other; an engine whose update_model() rejects a keyword still
gets its other findings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conformance import run_conformance
from conformance.clauses.errors import KitUsageError
from conformance.run.cases import cases
from conformance.run.session import ConformanceSession, RunOptions

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]

HOSTILE = """
import ctypes, os, signal, socket, subprocess, threading, time
from pathlib import Path
from reference_engines.mutants._base import HookedEngine, MinimalEngine

REAL_HOME = Path(os.path.expanduser("~"))  # taken at import: not the engine's sandbox home
STARTED_IN = Path(os.getcwd())


class ExitsZero(MinimalEngine):
    def compress(self, messages, *a, **k):
        os._exit(0)


class ExitsOne(MinimalEngine):
    def compress(self, messages, *a, **k):
        os._exit(1)


class Segfaults(MinimalEngine):
    def compress(self, messages, *a, **k):
        ctypes.string_at(0)


class InterruptsInAHook(HookedEngine):
    def select_context(self, request_messages, **kwargs):
        raise KeyboardInterrupt


class HugeOutput(MinimalEngine):
    def compress(self, messages, *a, **k):
        return [{"role": "user", "content": "x" * 500_000_000}]


class PastTheMemoryCap(MinimalEngine):
    def compress(self, messages, *a, **k):
        block = bytearray(8 * 1024**3)
        return super().compress(messages) if block else messages


class NonDaemonThread(MinimalEngine):
    def __init__(self):
        super().__init__()
        threading.Thread(target=threading.Event().wait, name="never-ends").start()


class HangsInCompress(MinimalEngine):
    def compress(self, messages, *a, **k):
        time.sleep(3600)


class BlocksInC(MinimalEngine):
    def compress(self, messages, *a, **k):
        signal.pause()


class SwallowedConnect(MinimalEngine):
    def compress(self, messages, *a, **k):
        try:
            socket.create_connection(("203.0.113.5", 443), timeout=0.2)
        except OSError:
            pass
        return super().compress(messages)


class SpawnsAProcess(MinimalEngine):
    def compress(self, messages, *a, **k):
        try:
            subprocess.run(["true"], check=False, timeout=2)
        except OSError:
            pass
        return super().compress(messages)


class WritesToTheCwd(MinimalEngine):
    def compress(self, messages, *a, **k):
        try:
            (STARTED_IN / "engine-cache.txt").write_text("x")
        except OSError:
            pass
        return super().compress(messages)


class WritesToTheRealHome(MinimalEngine):
    def compress(self, messages, *a, **k):
        try:
            (REAL_HOME / ".engine-cache").write_text("x")
        except OSError:
            pass
        return super().compress(messages)
"""

#: engine -> (clause of the finding, regex its message matches)
MATRIX = {
    "ExitsZero": ("A4", r"compress\(\) ended the case's process: it exited with code 0"),
    "ExitsOne": ("A4", r"compress\(\) ended the case's process: it exited with code 1"),
    "Segfaults": ("A4", r"compress\(\) ended the case's process: it was killed by signal 11"),
    "InterruptsInAHook": ("H1", r"raised KeyboardInterrupt\(\).*must not end the host process"),
    "HugeOutput": ("A4", r"compress\(\): returned a list of more than 32 MB"),
    "PastTheMemoryCap": ("A4", r"compress\(\) raised: .*MemoryError|memory cap"),
    "NonDaemonThread": ("TS1", r"never-ends \(daemon=False\).*keeps the agent's process"),
    "HangsInCompress": ("A4", r"compress\(\): did not return within 3 s"),
    "BlocksInC": ("A4", r"compress\(\): did not return within 3 s"),
    "SwallowedConnect": ("E1", r"compress\(\) tried to (look up '|connect to )203\.0\.113\.5"),
    "SpawnsAProcess": ("E1", r"compress\(\) tried to start a process"),
    "WritesToTheCwd": ("E1", r"compress\(\) tried to write \S*engine-cache\.txt"),
    "WritesToTheRealHome": ("E1", r"compress\(\) tried to write \S*realhome/\.engine-cache"),
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CONFORMANCE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    env["HOME"] = str(tmp_path / "realhome")  # "the real home" of this run: must stay untouched
    (tmp_path / "realhome").mkdir(exist_ok=True)
    return env


def _check(tmp_path: Path, engine: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / f"{engine.replace(':', '_')}.json"
    proc = subprocess.run(
        [str(BIN / "context-engine-kit"), "check", engine, "--json", str(out), *extra],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    data = json.loads(out.read_text()) if out.is_file() else {}
    return proc, data


@pytest.mark.slow
@pytest.mark.parametrize("engine", sorted(MATRIX))
def test_a_hostile_engine_ends_in_a_complete_verdict_naming_its_clause(engine, tmp_path):
    import re

    (tmp_path / "hostile.py").write_text(HOSTILE)
    started = time.monotonic()
    proc, data = _check(
        tmp_path,
        f"hostile:{engine}",
        "--conformance-profile=quick",
        "--conformance-timeout=3",
        "--conformance-max-timeouts=2",
        "--conformance-memory-limit=2",
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert data["verdict"] == "FAIL", data.get("verdict")
    assert data["cases_run"] == data["cases_total"] == len(cases()), data["counts"]
    clause, pattern = MATRIX[engine]
    hits = [
        r
        for r in data["results"]
        if r["outcome"] in ("failed", "error")
        and r["clause"] == clause
        and re.search(pattern, r["message"])
    ]
    assert hits, (engine, [r["message"][:200] for r in data["results"] if r["outcome"] != "passed"])
    assert elapsed < 600, f"{engine}: the run took {elapsed:.0f} s"
    assert not (tmp_path / "engine-cache.txt").exists()  # blocked, not just reported
    assert not (tmp_path / "realhome" / ".engine-cache").exists()


def test_an_engine_module_that_exits_at_import_is_a_usage_error(tmp_path):
    (tmp_path / "exits_at_import.py").write_text("raise SystemExit(0)\n")
    (tmp_path / "interrupts_at_import.py").write_text("raise KeyboardInterrupt\n")
    for module, name in (
        ("exits_at_import", "SystemExit"),
        ("interrupts_at_import", "KeyboardInterrupt"),
    ):
        proc, _ = _check(tmp_path, f"{module}:Engine")
        assert proc.returncode != 0 and proc.returncode != 1, proc.returncode
        assert f"raised {name}" in proc.stderr and "Traceback" not in proc.stderr


SLOW = '''
import time
from reference_engines.mutants._base import MinimalEngine


class OneSecondCompress(MinimalEngine):
    """A correct engine whose compress() takes a second (a fast summary-LLM call)."""

    def compress(self, messages, *a, **k):
        time.sleep(1.0)
        return super().compress(messages, *a, **k)


class SlowEverything(MinimalEngine):
    """A correct engine with a 1.3 s constructor and a 2.8 s compress()."""

    def __init__(self):
        time.sleep(1.3)
        super().__init__()

    def compress(self, messages, *a, **k):
        time.sleep(2.8)
        return super().compress(messages, *a, **k)


class DropsSystemPastForty(OneSecondCompress):
    """A slow buggy engine: past 40 messages the system prompt is dropped (V4)."""

    def compress(self, messages, *a, **k):
        out = super().compress(messages, *a, **k)
        if len(messages) > 40 and out and out[0].get("role") == "system":
            return out[1:]
        return out
'''


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["OneSecondCompress", "SlowEverything"])
def test_a_slow_correct_engine_is_clean_and_partly_checked_where_the_budget_limited(
    engine, tmp_path
):
    (tmp_path / "slow.py").write_text(SLOW)
    proc, data = _check(
        tmp_path,
        f"slow:{engine}",
        "--conformance-profile=quick",
        "--conformance-budget=20",
        "-k",
        "V or A4 or O8 or scenario:l1-lifecycle",
    )
    # no failure, and checks the budget cut short: partly checked (exit 6), never a pass
    assert proc.returncode == 6, proc.stdout[-3000:]
    assert data["verdict"] == "PARTIAL" and data["partly_checked"] > 0, data["verdict"]
    assert "verdict: PARTIAL (no failure;" in proc.stdout
    assert data["failures_by_level"]["MUST"] == 0, [
        r["message"][:200] for r in data["results"] if r["outcome"] in ("failed", "error")
    ]
    assert "did not return within" not in proc.stdout  # no timeout decides a verdict
    limited = [r for r in data["results"] if "examples" in r]
    assert limited, "no check says the budget limited it"
    assert all("budget reached" in r["message"] and r["partly_checked"] for r in limited)
    assert "ran fewer examples than the profile asks" in proc.stdout


@pytest.mark.slow
def test_a_slow_buggy_engine_gets_its_v4_failure_with_a_counterexample(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    proc, data = _check(
        tmp_path,
        "slow:DropsSystemPastForty",
        "--conformance-budget=1",  # as if the machine were loaded: one example per check
        "--state-dir",
        str(tmp_path / "state"),
        "-k",
        "V4-system-prompt-first",
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    (v4,) = [r for r in data["results"] if r["check"] == "V4-system-prompt-first[compress]"]
    assert v4["outcome"] == "failed" and "expected the system prompt to stay first" in v4["message"]
    files = list((tmp_path / "state" / "failures").glob("*/V4-system-prompt-first_compress_.json"))
    assert files, "no failure file"
    assert len(json.loads(files[0].read_text())["example"]["draws"]["history"]) > 40


SHARED = '''
import sqlite3
from pathlib import Path
from reference_engines.mutants._base import MinimalEngine


class _SharedStore(MinimalEngine):
    """Keeps every message it compacts in ~/.shared-engine/store.db (a default path)."""

    table = "rows"

    def __init__(self):
        super().__init__()
        folder = Path.home() / ".shared-engine"
        folder.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(folder / "store.db", check_same_thread=False)
        self.db.execute(f"create table if not exists {self.table} (text)")

    def __deepcopy__(self, memo):
        return type(self)()

    def compress(self, messages, *a, **k):
        out = super().compress(messages, *a, **k)
        self.db.executemany(
            f"insert into {self.table} values (?)", [(str(m.get("content")),) for m in messages]
        )
        self.db.commit()
        (seen,) = self.db.execute(f"select count(*) from {self.table}").fetchone()
        if len(out) > 1 and out[1].get("role") in ("user", "assistant"):
            out[1] = dict(out[1], content=f"{out[1]['content']} [store holds {seen} rows]")
        return out


class First(_SharedStore):
    pass


class Second(_SharedStore):
    pass
'''


def test_engines_sharing_a_store_by_default_path_get_the_verdict_they_get_alone(
    tmp_path, monkeypatch
):
    (tmp_path / "shared.py").write_text(SHARED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "realhome"))
    import shared

    only = ["D1", "A4-compress-returns-list", "C1"]

    def verdict(engine):
        return sorted(
            (r.check, r.outcome, r.message)
            for r in run_conformance(engine, profile="quick", only=only, scenarios=False)
        )

    alone = verdict(shared.First)
    verdict(shared.Second)
    assert verdict(shared.First) == alone
    assert all(outcome in ("passed", "skipped") for _, outcome, _ in alone), alone
    assert {c for c, outcome, _ in alone if outcome == "passed"} >= {
        "A4-compress-returns-list",
        "C1-clone-distinct-usable-isolated",
    }, alone
    assert not (tmp_path / "realhome" / ".shared-engine").exists()


NO_API_MODE = '''
from reference_engines.mutants._base import MinimalEngine


class OldUpdateModel(MinimalEngine):
    """update_model() without the api_mode= keyword the host passes, and two planted faults:
    an orphan tool result (V2) and the system prompt dropped (V4)."""

    def update_model(self, model, context_length, base_url="", api_key="", provider=""):
        super().update_model(model, context_length, base_url, api_key, provider)

    def compress(self, messages, *a, **k):
        out = super().compress(messages, *a, **k)
        out = [m for m in out if m.get("role") != "system"]
        out.append({"role": "tool", "tool_call_id": "call_never_made", "content": "stale"})
        return out
'''


@pytest.mark.slow
def test_an_update_model_without_api_mode_still_gets_its_other_findings(tmp_path, monkeypatch):
    (tmp_path / "no_api_mode.py").write_text(NO_API_MODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import no_api_mode

    results = run_conformance(
        no_api_mode.OldUpdateModel, profile="quick", only=["V2", "V4", "O4", "S0"], scenarios=False
    )
    by_clause = {}
    for r in results:
        by_clause.setdefault(r.clause, []).append(r)
    assert not [r for r in results if r.outcome == "error"], [r.message[:200] for r in results]
    assert any(r.outcome == "failed" for r in by_clause["V2"]), by_clause["V2"]
    assert any(r.outcome == "failed" for r in by_clause["V4"]), by_clause["V4"]
    assert any("api_mode" in r.message for r in by_clause.get("O4", []) + by_clause.get("S0", []))


TYPE_ERROR = """
from reference_engines.mutants._base import MinimalEngine


class BrokenCompress(MinimalEngine):
    def compress(self, messages, *a, **k):
        return self._helper(messages)

    def _helper(self, messages):
        raise TypeError("summary() takes 1 positional argument")
"""


def test_one_exception_in_compress_is_one_root_cause_with_the_engines_frames(tmp_path, monkeypatch):
    (tmp_path / "type_error.py").write_text(TYPE_ERROR)
    monkeypatch.syspath_prepend(str(tmp_path))
    import type_error

    from conformance.run.verdict import Verdict

    session = ConformanceSession(
        RunOptions(profile="quick", scenarios=False), type_error.BrokenCompress
    )
    results = session.run_all()
    failed = [r for r in results if r.outcome == "failed"]
    assert len(failed) > 5
    assert all(
        "type_error.py:" in r.message and "in _helper" in r.message
        for r in failed
        if "raised" in r.message
    )
    verdict = Verdict(results)
    (group,) = [g for g in verdict.root_causes() if "TypeError" in g["key"]]
    assert group["first"].startswith("A4-") and len(group["cases"]) > 5
    counted = verdict.failures_by_level()["MUST"] + verdict.failures_by_level()["SHOULD"]
    assert counted == len(failed) - len(group["cases"]) + 1
    rows = Verdict(results).to_json(session=session)["results"]
    assert sum(r.get("root_cause") == group["first"] for r in rows) == len(group["cases"]) - 1


def test_the_same_exception_in_a_scenario_is_the_checks_root_cause(tmp_path, monkeypatch):
    """A compress() TypeError seen by a check and by a scenario's no-engine-errors is one root
    cause: counted once, under the first case."""
    (tmp_path / "type_error.py").write_text(TYPE_ERROR)
    monkeypatch.syspath_prepend(str(tmp_path))
    import type_error

    from conformance.run.verdict import Verdict

    only = ["A4-compress-returns-list", "scenario:l1-lifecycle:no-engine-errors"]
    session = ConformanceSession(RunOptions(profile="quick", only=only), type_error.BrokenCompress)
    results = [r for r in session.run_all() if r.outcome == "failed"]
    assert {r.check for r in results} == set(only), [r.message[:200] for r in results]
    (group,) = Verdict(results).root_causes()
    assert group["key"].startswith("compress|TypeError|") and "type_error.py:" in group["key"]
    assert sorted(group["cases"]) == sorted(only)
    assert sum(Verdict(results).failures_by_level().values()) == 1


def test_a_finding_before_a_hang_is_reported_never_the_timeout(tmp_path, monkeypatch):
    (tmp_path / "finds_then_hangs.py").write_text(
        textwrap.dedent("""
        import time
        from reference_engines.mutants._base import MinimalEngine

        class FindsThenHangs(MinimalEngine):
            calls = 0

            def compress(self, messages, *a, **k):
                FindsThenHangs.calls += 1
                if FindsThenHangs.calls > 1:
                    time.sleep(3600)  # hangs while Hypothesis shrinks
                out = super().compress(messages, *a, **k)
                return [m for m in out if m.get("role") != "system"]
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import finds_then_hangs

    (r,) = run_conformance(
        finds_then_hangs.FindsThenHangs,
        only=["V4-system-prompt-first[compress]"],
        timeout=2,
        failures_dir=tmp_path / "failures",
    )
    assert r.outcome == "failed" and "expected the system prompt to stay first" in r.message, r
    assert "did not return" not in r.message
    assert list((tmp_path / "failures").glob("*/*.json"))


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"timeout": float("nan")}, "--conformance-timeout=nan"),
        ({"timeout": 0}, "--conformance-timeout=0"),
        ({"budget": float("inf")}, "--conformance-budget=inf"),
        ({"budget": -1}, "--conformance-budget=-1"),
        ({"memory_limit": 12}, "--conformance-memory-limit"),
        ({"isolation": "threads"}, "--conformance-isolation='threads'"),
    ],
)
def test_non_finite_or_non_positive_limits_are_usage_errors(options, needle):
    with pytest.raises(KitUsageError, match=needle.replace("(", r"\(")):
        RunOptions(**options).validate()


@pytest.mark.slow
def test_an_interrupted_run_says_interrupted_and_how_far_it_got(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW)
    out = tmp_path / "v.json"
    proc = subprocess.Popen(
        [
            str(BIN / "pytest"),
            "--engine=slow:OneSecondCompress",
            "--conformance-profile=quick",
            f"--conformance-json={out}",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(12)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, stdout[-2000:]
    data = json.loads(out.read_text())
    assert data["verdict"] == "INTERRUPTED" and 0 < data["cases_run"] < data["cases_total"]
    assert "verdict: INTERRUPTED" in stdout and "verdict: PASS" not in stdout


def test_scenario_files_past_the_budget_are_skipped_with_a_note_never_failed(tmp_path, monkeypatch):
    (tmp_path / "slowish.py").write_text(
        textwrap.dedent("""
        import time
        from reference_engines.mutants._base import MinimalEngine


        class SlowCompress(MinimalEngine):
            def compress(self, messages, *a, **k):
                time.sleep(0.4)
                return super().compress(messages, *a, **k)
        """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import slowish

    from conformance.run.verdict import Verdict

    only = ["scenario:l1-lifecycle", "scenario:v2-tool-heavy", "scenario:l1-reset-new"]
    session = ConformanceSession(
        RunOptions(profile="quick", budget=1.0, only=only), slowish.SlowCompress
    )
    results = session.run_all()
    assert results and all(r.outcome in ("passed", "skipped") for r in results), [
        r.message[:200] for r in results if r.outcome not in ("passed", "skipped")
    ]
    played = {r.check.split(":")[1] for r in results if r.outcome == "passed"}
    unplayed = {r.check.split(":")[1] for r in results if r.budget_reached}
    assert played and unplayed and not played & unplayed, (played, unplayed)
    for r in results:
        if r.budget_reached:
            assert r.outcome == "skipped" and "used the scenario budget" in r.message
            assert f"-k 'scenario:{r.check.split(':')[1]}'" in r.message
    assert session.scenario_budget.spent >= 1.0  # engine time, charged from the child
    lines = Verdict(results).summary_lines()
    assert any("scenario file(s) not played" in ln for ln in lines), lines
    unbounded = ConformanceSession(
        RunOptions(profile="quick", budget=0, only=only[:2]), slowish.SlowCompress
    ).run_all()
    assert not any(r.budget_reached for r in unbounded)


KEEPS_MEMORY = '''
from reference_engines.mutants._base import MinimalEngine


class KeepsWhatItGot(MinimalEngine):
    """Allocates up to the memory cap and keeps what it got (no MemoryError handling)."""

    def __init__(self):
        super().__init__()
        self.blocks = []

    def compress(self, messages, *a, **k):
        while True:
            self.blocks.append(bytearray(16 * 1024**2))
'''


def _processes_naming(word: str) -> list[str]:
    """Command lines of the live processes whose command line holds ``word``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if word in cmd:
                out.append(f"{entry.name}: {cmd}")
    return out


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="the memory rule reads /proc")
def test_an_engine_that_keeps_memory_up_to_the_cap_ends_in_a_complete_true_verdict(tmp_path):
    (tmp_path / "keeps_memory.py").write_text(KEEPS_MEMORY)
    proc, data = _check(
        tmp_path,
        "keeps_memory:KeepsWhatItGot",
        "--conformance-profile=quick",
        "--conformance-timeout=5",
        "--conformance-memory-limit=1",
        "-k",
        "A4-compress-returns-list or A4-returns-new-list or C1 or O3 or scenario:l1-lifecycle",
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert data["verdict"] == "FAIL" and data["cases_run"] == data["cases_total"] > 0
    # every row is a judgement about the engine: no "check could not complete" kit error
    assert not [r for r in data["results"] if r["outcome"] == "error"], [
        r["message"][:200] for r in data["results"] if r["outcome"] == "error"
    ]
    messages = [r["message"] for r in data["results"] if r["outcome"] == "failed"]
    assert any("[A4 MUST] compress() raised" in m and "MemoryError" in m for m in messages), (
        messages
    )
    kept = [m for m in messages if "the engine kept memory up to the case's memory cap" in m]
    assert all("compress()" in m for m in kept), kept
    assert not _processes_naming("keeps_memory:KeepsWhatItGot")


def _hoards_then_waits(task):
    """A child's task: allocate up to the cap, keep it, then wait forever (no call in flight)."""
    import threading

    kept = []
    try:
        while True:
            kept.append(bytearray(16 * 1024**2))
    except MemoryError:
        pass
    _hoards_then_waits.kept = kept
    threading.Event().wait()


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="the memory rule reads /proc")
def test_a_child_that_sits_still_at_its_memory_cap_is_ended_and_reported():
    from conformance.runtime.supervisor import Hung, Worker, fork_available

    if not fork_available():
        pytest.skip("no fork")
    worker = Worker(_hoards_then_waits, memory_limit=1024**3)
    outcome = worker.call("task", call_limit=2.0, case_limit=600.0)
    assert isinstance(outcome, Hung) and outcome.stalled and not outcome.case_limit, outcome
    assert outcome.memory >= 0.9 * 1024**3
    assert worker.pid is None  # killed and reaped, nothing left behind


FORGERS = '''
import os

import conformance.run.results
import conformance.run.verdict
from reference_engines.mutants._base import MinimalEngine


def _forge():
    conformance.run.verdict.Verdict.word = lambda self, strict=False: "PASS"
    conformance.run.results.exit_code = lambda results, strict=False: 0


_forge()  # at import: the module must not run in the process that writes the verdict


class ForgesThePass(MinimalEngine):
    """Drops the system prompt (a V4 MUST failure) and patches the kit's verdict, at import
    and in its constructor."""

    def __init__(self):
        super().__init__()
        _forge()

    def compress(self, messages, *a, **k):
        out = super().compress(messages, *a, **k)
        return [m for m in out if m.get("role") != "system"]


class ForksInItsConstructor(MinimalEngine):
    """Starts a process when it is built (a worker pool, say); the sandbox refuses it."""

    def __init__(self):
        super().__init__()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
'''


@pytest.mark.slow
def test_an_engine_that_patches_the_kit_cannot_forge_the_verdict(tmp_path):
    (tmp_path / "forgers.py").write_text(FORGERS)
    proc, data = _check(
        tmp_path,
        "forgers:ForgesThePass",
        "--conformance-profile=quick",
        "-k",
        "V4-system-prompt-first or A1",
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert data["verdict"] == "FAIL" and data["failures_by_level"]["MUST"] >= 1, data
    assert "verdict: FAIL" in proc.stdout and "verdict: PASS" not in proc.stdout
    (v4,) = [r for r in data["results"] if r["check"] == "V4-system-prompt-first[compress]"]
    assert v4["outcome"] == "failed"


@pytest.mark.slow
def test_an_engine_that_forks_in_its_constructor_gets_an_e1_finding_not_a_usage_error(tmp_path):
    (tmp_path / "forgers.py").write_text(FORGERS.replace("_forge()  # at import", "# _forge()"))
    proc, data = _check(
        tmp_path,
        "forgers:ForksInItsConstructor",
        "--conformance-profile=quick",
        "-k",
        "A1 or A4-compress-returns-list or scenario:l1-lifecycle",
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert data["verdict"] == "FAIL" and data["cases_run"] == data["cases_total"] > 0
    assert data["failures_by_level"] == {"MUST": 1, "SHOULD": 0}, data["failures_by_level"]
    rows = [r for r in data["results"] if r["outcome"] == "failed"]
    assert rows and all(r["clause"] == "E1" for r in rows), [r["message"][:200] for r in rows]
    assert all("cannot be built in its sandbox" in r["message"] for r in rows)
    assert "os.fork" in rows[0]["message"] and "forgers.py:" in rows[0]["message"]


MARKS_THE_KIT = """
import conformance.run.verdict
from reference_engines.mutants._base import MinimalEngine

conformance.run.verdict.Verdict.marked_at_import = True


class MarksTheKit(MinimalEngine):
    conformance_capabilities = frozenset({"compressor"})

    def __init__(self):
        super().__init__()
        conformance.run.verdict.Verdict.marked_by_constructor = True
"""


def test_the_kits_process_never_imports_builds_or_probes_the_engine(tmp_path, monkeypatch):
    import sys

    from conformance.run.verdict import Verdict
    from conformance.runtime.engine_loading import deferred_engine_factory

    (tmp_path / "marks_the_kit.py").write_text(MARKS_THE_KIT)
    monkeypatch.syspath_prepend(str(tmp_path))
    factory = deferred_engine_factory("marks_the_kit:MarksTheKit")
    assert factory.target is None and factory.cli_args() == "--engine=marks_the_kit:MarksTheKit"
    session = ConformanceSession(RunOptions(profile="quick", scenarios=False), factory)
    declared = session.declarations  # probed in a child, handed back as plain data
    assert declared.error is None and "compressor" in declared.capabilities, declared
    (result,) = [session.run_case(session.case("A2-usage-updates-counters"))]
    session.close()
    assert result.outcome == "passed", result.message
    assert "marks_the_kit" not in sys.modules
    assert not hasattr(Verdict, "marked_at_import")
    assert not hasattr(Verdict, "marked_by_constructor")


WRITES_TO_THE_PIPE = '''
import pickle

from conformance.runtime import child_reports
from reference_engines.mutants._base import MinimalEngine


class _Patch:
    def __reduce__(self):
        return (
            exec,
            ("import conformance.run.verdict; conformance.run.verdict.Verdict.hacked = True",),
        )


class WritesToThePipe(MinimalEngine):
    """Writes its own 'answer' to the pipe its case's child reports on."""

    def compress(self, messages, *a, **k):
        monitor = child_reports._MONITOR
        if monitor is not None:
            monitor.send(b"P", pickle.dumps(_Patch()))
            monitor.send(b"A", pickle.dumps(_Patch()))
        return super().compress(messages, *a, **k)
'''


def test_what_a_child_hands_back_is_loaded_as_data_never_as_code(tmp_path, monkeypatch):
    from conformance.run.verdict import Verdict

    (tmp_path / "writes_to_the_pipe.py").write_text(WRITES_TO_THE_PIPE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import writes_to_the_pipe

    (result,) = run_conformance(
        writes_to_the_pipe.WritesToThePipe,
        profile="quick",
        only=["A4-compress-returns-list"],
        scenarios=False,
    )
    assert not hasattr(Verdict, "hacked")
    assert result.outcome == "error" and "the case's answer was refused" in result.message
    assert "builtins.exec" in result.message
