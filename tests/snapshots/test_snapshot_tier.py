"""The snapshot tier in a user's project (pytester subprocesses), issue 7 acceptance 1 and 4."""

from __future__ import annotations

import filecmp

COMPRESSOR = "reference_engines.compressor:ReferenceCompressor"
PLUGINS = ("-p", "conformance.plugin", "-p", "conformance.snapshots.plugin", "-p", "no:cacheprovider")
SNAPDIR = ".conformance/snapshots/reference_engines.compressor.ReferenceCompressor"


def run(pytester, *args):
    # -k keeps the (slow) contract checks out: the snapshot tier and the quick A1 checks run
    # (a conformance run in which no check ran exits 5).
    return pytester.runpytest_subprocess(*PLUGINS, "--rootdir", str(pytester.path), f"--engine={COMPRESSOR}",
                                         "-k", "test_compression_snapshot or A1", *args)


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


def test_changed_compaction_note_fails_with_a_diff_naming_the_line(kit_pytester):
    assert run(kit_pytester, "--snapshot-update").ret == 0
    kit_pytester.makeconftest("""
        from reference_engines._compressor import constants as C
        C.COMPACTION_NOTE = C.COMPACTION_NOTE.replace("handoff summary", "hand-over summary")
    """)
    result = run(kit_pytester, "--tb=short")
    out = result.stdout.str()
    assert result.ret == 1
    assert ('-             "[Note: Some earlier conversation turns have been compacted into a handoff summary '
            'to preserve context space.') in out
    assert ('+             "[Note: Some earlier conversation turns have been compacted into a hand-over summary '
            'to preserve context space.') in out
    assert "FAILED" in out and "test_compression_snapshot[long-chat]" in out


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
    result = kit_pytester.runpytest_subprocess(*PLUGINS, "--rootdir", str(kit_pytester.path),
                                               "--conformance-snapshots")
    result.assert_outcomes(passed=1)
    assert "snapshot" not in result.stdout.str()
