"""Covers conformance.run.verdict: the overall word, counts and per-level failures follow the exit
rule of conformance.run.session.exit_code."""

from __future__ import annotations

from conformance.run.session import ConformanceSession, Result, RunOptions
from conformance.run.verdict import Verdict


def verdict_of(*outcomes, other_failures=0):
    v = Verdict(other_failures=other_failures)
    for i, (level, outcome) in enumerate(outcomes):
        v.add(
            Result(
                f"X{i}-check",
                f"X{i}",
                level,
                outcome,
                "[X SHOULD] msg" if outcome == "failed" else "",
            )
        )
    return v


def test_word_follows_the_exit_rule():
    assert verdict_of(("MUST", "passed"), ("SHOULD", "failed")).word() == "PASS"
    assert verdict_of(("MUST", "passed"), ("SHOULD", "failed")).word(strict=True) == "FAIL"
    assert verdict_of(("MUST", "passed"), ("SHOULD", "xpassed")).word(strict=True) == "FAIL"
    assert verdict_of(("MUST", "error"), ("SHOULD", "passed")).word() == "FAIL"
    assert verdict_of(("MUST", "skipped")).word() == "NO CHECK RAN"
    assert (
        verdict_of(("MUST", "passed"), other_failures=1).word() == "FAIL"
    )  # a failed non-conformance test


def test_counts_and_failures_by_level():
    v = verdict_of(
        ("MUST", "passed"),
        ("MUST", "failed"),
        ("SHOULD", "error"),
        ("SHOULD", "failed"),
        ("MUST", "skipped"),
        ("SHOULD", "xfailed"),
    )
    assert v.counts() == {
        "total": 6,
        "passed": 1,
        "failed": 2,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 0,
        "error": 1,
    }
    assert v.failures_by_level() == {"MUST": 1, "SHOULD": 2}


def test_json_has_the_overall_fields_and_keeps_the_old_ones():
    v = verdict_of(("MUST", "passed"), ("SHOULD", "failed"))
    from reference_engines.mutants._base import MinimalEngine

    session = ConformanceSession(RunOptions(), MinimalEngine)
    data = v.to_json(session=session, strict=True)
    assert {
        "engine",
        "kit_version",
        "contract_version",
        "host_abc",
        "host_profile",
        "results",
    } <= set(data)
    assert data["verdict"] == "FAIL" and data["strict"] is True
    assert data["counts"]["failed"] == 1 and data["failures_by_level"] == {"MUST": 0, "SHOULD": 1}
    assert data["other_failures"] == 0
    assert v.to_json(session=session)["verdict"] == "PASS"
    assert data["engine"] == {"spec": "reference_engines.mutants._base:MinimalEngine", "kwargs": {}}


def test_summary_line_says_why_a_run_without_check_failures_fails():
    lines = verdict_of(("MUST", "passed"), other_failures=2).summary_lines()
    assert lines[-1].startswith(
        "verdict: FAIL (2 non-conformance test(s) failed) - 1 cases: 1 passed"
    )


def test_the_summary_names_the_commonest_skip_reasons_and_where_every_reason_is():
    """Skips are no failure, but an author must see why cases did not apply without opening
    the JSON: the three commonest reasons (their gist, with counts) and where every one is."""
    skip = "engine keeps the ABC default select_context (returns None); the host never calls it"
    results = [Result(f"H{i}-x", "H1", "MUST", "skipped", skip) for i in range(3)]
    results.append(
        Result("R4-x", "R4", "MUST", "skipped", "no plugin folder given (--engine-plugin)")
    )
    results.append(Result("A1-x", "A1", "MUST", "passed"))
    (line,) = [x for x in Verdict(results).summary_lines() if x.startswith("skipped:")]
    assert line == (
        "skipped: 4 case(s) that do not apply to this engine or host, most often: engine keeps "
        "the ABC default select_context (3); no plugin folder given (1). Every reason: the JSON "
        "verdict's results, or -rs"
    )
    assert not [x for x in Verdict(results[-1:]).summary_lines() if x.startswith("skipped:")]


def test_a_clause_key_selects_its_clause_not_the_clauses_it_prefixes():
    """``only=["A1"]`` and an expected failure keyed ``A1`` cover A1's cases, not A10's or
    A11's (a plain string prefix took those too); an id prefix still selects (``V2-tool``)."""
    from conformance.authoring.case import key_selects

    assert key_selects("A1", "A1-name-is-property", "A1")
    assert not key_selects("A1", "A10-summary-survives-next-compaction", "A10")
    assert not key_selects("O1", "O13-prune-keeps-history-valid", "O13")
    assert key_selects("V2-tool", "V2-tool-results-paired[compress]", "V2")
    assert key_selects("V2", "REG-a-parallel-calls", "V2")  # by its clause
    assert key_selects("H1-hooks", "H1-hooks-do-not-raise[select_context]", "H1")
    assert not key_selects("", "A1-name-is-property", "A1")


def test_a_result_record_crosses_a_process_boundary_and_back():
    """``Result.as_record`` is plain JSON types (what pytest-xdist sends); ``from_record`` makes
    the same Result again, every field kept, unknown keys left out."""
    import json

    from conformance.run.results import Result

    result = Result(
        "V4-system-prompt-first", "V4", "MUST", "failed", "[V4 MUST] ...", seconds=1.5,
        replay_file="/x/f.json", example_messages=7, kind="contract", title="t",
        root_cause="k", examples_run=3, examples_asked=9, budget_reached=True,
        llm={"calls": 2}, hosts=("documented", "hermes-0.22"),
    )  # fmt: skip
    record = result.as_record()
    assert json.loads(json.dumps(record)) == record
    assert Result.from_record({**record, "added_later": 1}) == result
