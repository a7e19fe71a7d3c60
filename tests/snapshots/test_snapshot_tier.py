"""Covers conformance.snapshots (plugin, mismatch), conformance.run.cases.SnapshotCase and the
suite's ``test_compression_snapshot``: the snapshot tier in a user's project (pytester
subprocesses)."""

from __future__ import annotations

import filecmp
import json
import re

import pytest

COMPRESSOR = "reference_engines.compressor:ReferenceCompressor"
PLUGINS = ("-p", "conformance.plugin", "-p", "no:cacheprovider")  # it registers the snapshot one
SNAPDIR = ".conformance/snapshots/reference_engines.compressor.ReferenceCompressor"


def run(pytester, *args):
    # -k keeps the (slow) contract checks out: the snapshot tier and the quick A1 checks run
    # (a conformance run in which no check ran exits 5).
    return pytester.runpytest_subprocess(
        *PLUGINS,
        "--rootdir",
        str(pytester.path),
        f"--engine={COMPRESSOR}",
        "-k",
        "test_compression_snapshot or A1-",
        *args,
    )


def test_tier_is_off_without_snapshots_then_update_creates_them_in_the_project(kit_pytester):
    off = run(kit_pytester, "--collect-only", "-q")
    assert "test_compression_snapshot" not in off.stdout.str()
    created = run(kit_pytester, "--snapshot-update")
    assert created.ret == 0, created.stdout.str()
    files = sorted(p.name for p in (kit_pytester.path / SNAPDIR).iterdir())
    assert len(files) >= 12 and "tool-output-40kb.json" in files and "recompress.json" in files
    again = run(kit_pytester)  # on: the folder exists now
    again.assert_outcomes(passed=len(files) + 2)
    assert "warnings" not in again.stdout.str()
    assert "conformance snapshots: " in again.stdout.str()


@pytest.mark.slow
def test_changed_compaction_note_fails_d1_with_the_grammar_line_and_the_diff(kit_pytester):
    assert run(kit_pytester, "--snapshot-update").ret == 0
    kit_pytester.makeconftest("""
        from reference_engines._compressor import constants as C
        C.COMPACTION_NOTE = C.COMPACTION_NOTE.replace("handoff summary", "hand-over summary")
    """)
    result = run(kit_pytester, "--tb=short", "--conformance-json=verdict.json")
    out = result.stdout.str()
    assert result.ret == 1, (
        out
    )  # a stored snapshot is the author's baseline: a mismatch fails the run
    repro = f"pytest --engine={COMPRESSOR} -k 'test_compression_snapshot[long-chat]'"
    assert (
        "[D1 SHOULD] compress()/select_context() output of snapshot case 'long-chat': "
        f"expected the stored snapshot {SNAPDIR}/long-chat.json, got a different output"
    ) in out
    assert (
        f"See docs/coverage.md#d1 (context-engine-kit explain D1). Repro: {repro}; if the change "
        f"is intended, accept it: {repro} --snapshot-update"
    ) in out
    # syrupy's diff follows the grammar line
    assert (
        '-             "[Note: Some earlier conversation '
        "turns have been compacted into a handoff summary "
        "to preserve context space."
    ) in out
    assert (
        '+             "[Note: Some earlier conversation '
        "turns have been compacted into a hand-over summary "
        "to preserve context space."
    ) in out
    assert "FAILED" in out and "test_compression_snapshot[long-chat]" in out
    # counted under D1 in the summary by clause and in the JSON verdict
    row = next(line.split() for line in result.stdout.lines if line.startswith("D1 "))
    failed = int(row[2])
    assert failed >= 1 and int(row[1]) + failed == 14, row
    assert (
        "verdict: FAIL" in out
        and f"({failed} snapshot mismatch(es)" in out
        and "--snapshot-update)" in out
    )
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    mine = {r["check"]: r for r in data["results"] if r["clause"] == "D1"}
    assert len(mine) == 14 and mine["D1-snapshot[long-chat]"]["outcome"] == "failed"
    assert mine["D1-snapshot[long-chat]"]["level"] == "SHOULD"
    assert mine["D1-snapshot[long-chat]"]["message"].startswith(
        "[D1 SHOULD] compress()/select_context() output"
    )
    assert data["failures_by_level"] == {"MUST": 0, "SHOULD": failed} and data["verdict"] == "FAIL"
    assert data["snapshot_mismatches"] == failed
    accepted = run(kit_pytester, "--snapshot-update", "-k", "test_compression_snapshot")
    assert accepted.ret == 0, accepted.stdout.str()
    assert (
        run(kit_pytester, "-k", "test_compression_snapshot and long-chat").ret == 0
    )  # accepted: passes again


def test_missing_snapshot_says_how_to_create_it(kit_pytester):
    result = run(
        kit_pytester, "--conformance-snapshots", "-k", "test_compression_snapshot and short-chat"
    )
    out = result.stdout.str()
    repro = f"pytest --engine={COMPRESSOR} -k 'test_compression_snapshot[short-chat]'"
    assert f"snapshot {SNAPDIR}/short-chat.json, got no stored snapshot" in out
    assert f"Repro: {repro}; create it: {repro} --snapshot-update" in out
    assert "Snapshot 'short-chat' does not exist!" in out  # syrupy's explanation kept


@pytest.mark.slow
def test_snapshots_are_identical_under_xdist(kit_pytester):
    assert run(kit_pytester, "--snapshot-update").ret == 0
    serial = kit_pytester.path / SNAPDIR
    saved = kit_pytester.path / "serial"
    serial.rename(saved)
    parallel = run(kit_pytester, "--snapshot-update", "-n", "2")
    assert parallel.ret == 0, parallel.stdout.str()
    names = sorted(p.name for p in saved.iterdir())
    match, mismatch, errors = filecmp.cmpfiles(saved, serial, names, shallow=False)
    assert match == names and not mismatch and not errors
    checked = run(kit_pytester, "-n", "2")  # and a parallel run compares equal to them
    assert checked.ret == 0, checked.stdout.str()


def test_inert_without_an_engine_even_with_the_flag(kit_pytester):
    (kit_pytester.path / SNAPDIR).mkdir(parents=True)
    kit_pytester.makepyfile(test_mine="def test_one():\n    assert True\n")
    result = kit_pytester.runpytest_subprocess(
        *PLUGINS, "--rootdir", str(kit_pytester.path), "--conformance-snapshots"
    )
    result.assert_outcomes(passed=1)
    assert "snapshot" not in result.stdout.str()


def test_a_hanging_engine_is_bounded_in_the_snapshot_tier(kit_pytester):
    kit_pytester.makepyfile(
        hangs="""
import time
from reference_engines.compressor import ReferenceCompressor

class Hangs(ReferenceCompressor):
    def compress(self, messages, *args, **kwargs):
        time.sleep(3600)
"""
    )
    result = kit_pytester.runpytest_subprocess(
        *PLUGINS,
        "--rootdir",
        str(kit_pytester.path),
        "--engine=hangs:Hangs",
        "-k",
        "test_compression_snapshot",
        "--snapshot-update",
        "--conformance-timeout=1",
        "--conformance-max-timeouts=2",
    )
    out = result.stdout.str()
    # distinct cases (pytest repeats a message in its short summary, untruncated when CI is set)
    hung = set(
        re.findall(
            r"_ test_compression_snapshot\[([\w-]+)\] _+\n\[D1 SHOULD\] compress\(\): did not "
            r"return within 1 s \(--conformance-timeout, the limit of one engine call",
            out,
        )
    )
    assert len(hung) == 2, out
    for case in hung:  # each rerun on its own
        repro = (
            "Repro: pytest --engine=hangs:Hangs --conformance-timeout=1 "
            f"-k 'test_compression_snapshot[{case}]'"
        )
        assert repro in out
    # the cases the cap kept from running: one line, not one block each
    assert re.search(
        r"^not run: \d+ case\(s\), shown as N above and counted as errors below: the engine "
        r"hung in 2 cases \(compress\(\) x2\)",
        out,
        re.M,
    ), out
    assert "snapshot case(s) could not run)" in out
    assert "snapshot mismatch" not in out  # a hang is no mismatch
    assert result.ret == 1
