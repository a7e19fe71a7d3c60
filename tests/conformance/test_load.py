"""Covers conformance.runtime.engine_clock and the budget's outcome rules (conformance.run.results,
conformance.run.verdict): the same engine gets the same outcomes check for check on a machine
played many times slower (a clock injected into the budget accounting, never real load and
never a timed assert), and a check the budget cut short is ``PARTIAL``, never a pass, in the
clause table, the JSON verdict and the exit status.
"""

from __future__ import annotations

import textwrap

import pytest

from conformance import run_conformance
from conformance.run.results import PARTIAL_EXIT, Result, exit_code, verdict_word
from conformance.run.verdict import Verdict
from conformance.runtime import engine_clock

ENGINE = textwrap.dedent('''
    import time
    from reference_engines.mutants._base import MinimalEngine


    class TenMillisecondCompress(MinimalEngine):
        """A correct engine whose compress() waits 10 ms (a fast store, a small model)."""

        def compress(self, messages, *a, **k):
            time.sleep(0.01)
            return super().compress(messages, *a, **k)
''')

ONLY = ["A4-compress-returns-list", "A4-returns-new-list", "V4-system-prompt-first[compress]"]
#: How many times slower the played machine is. Big on purpose: with the wall time charged, a
#: machine this slow would cut every check short; charged demand time, it changes nothing.
FACTOR = 60.0


def _outcomes(engine, clock, monkeypatch) -> list[tuple]:
    monkeypatch.setattr(engine_clock, "CLOCK", clock)  # before the case's child is forked
    results = run_conformance(engine, profile="quick", only=ONLY, scenarios=False, budget=3.0)
    return [(r.check, r.outcome, r.examples_run, r.budget_reached) for r in results]


def test_the_same_engine_gets_the_same_outcomes_on_a_machine_many_times_slower(
    tmp_path, monkeypatch
):
    (tmp_path / "tenms.py").write_text(ENGINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import tenms

    idle = _outcomes(tenms.TenMillisecondCompress, engine_clock.EngineClock(), monkeypatch)
    assert len(idle) == len(ONLY) and all(o == "passed" for _, o, _, _ in idle), idle
    assert not any(reached for *_, reached in idle), idle
    loaded = _outcomes(tenms.TenMillisecondCompress, engine_clock.LoadedClock(FACTOR), monkeypatch)
    assert loaded == idle
    # the played load is real enough to matter: charged wall time (no run-queue statistics),
    # the same machine cuts checks short, and says so: partly checked, not passed
    blind = _outcomes(
        tenms.TenMillisecondCompress, engine_clock.LoadedClock(FACTOR, correct=False), monkeypatch
    )
    assert any(reached for *_, reached in blind), blind


def test_demand_time_leaves_out_the_wait_for_a_cpu():
    start = (10.0, 2.0)

    class Fixed(engine_clock.EngineClock):
        def wall(self):
            return 13.0  # 3 s of wall time ...

        def waited(self):
            return 4.5  # ... of which 2.5 s waiting for a CPU

    old = engine_clock.CLOCK
    engine_clock.CLOCK = Fixed()
    try:
        assert engine_clock.demand_since(start) == pytest.approx(0.5)
    finally:
        engine_clock.CLOCK = old
    assert engine_clock.run_queue_seconds() >= 0.0


def _row(check: str, outcome: str, *, reached: bool = False, level: str = "MUST") -> Result:
    return Result(
        check,
        check.split("-")[0],
        level,
        outcome,
        examples_run=2 if reached else None,
        examples_asked=6 if reached else None,
        budget_reached=reached,
    )


def test_a_check_cut_short_is_partial_never_a_pass():
    full = [_row("A4-x", "passed"), _row("V4-y", "passed")]
    cut = [_row("A4-x", "passed"), _row("V4-y", "passed", reached=True)]
    assert exit_code(full) == 0 and verdict_word(0) == "PASS"
    assert exit_code(cut) == PARTIAL_EXIT and verdict_word(PARTIAL_EXIT) == "PARTIAL"
    verdict = Verdict(cut)
    assert verdict.word() == "PARTIAL" and verdict.partly_checked() == 1
    assert verdict.per_clause()["V4"]["partial"] == 1 and verdict.per_clause()["V4"]["passed"] == 0
    lines = verdict.summary_lines()
    assert any(
        ln.startswith("verdict: PARTIAL (no failure; 1 case(s) partly checked") for ln in lines
    )
    # a failure is a failure, cut short or not; a scenario file left unplayed is partial too
    assert exit_code(cut + [_row("V2-z", "failed")]) == 1
    assert exit_code([_row("A4-x", "passed"), _row("scenario:s:e", "skipped", reached=True)]) == 6
    row = cut[1].as_dict()
    assert row["partly_checked"] is True and row["examples"] == {"run": 2, "asked": 6}
