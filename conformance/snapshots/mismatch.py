"""A snapshot mismatch as a kit failure: clause D1, the kit's message grammar, syrupy's diff kept.

The snapshot tier serves kit clause D1 (determinism, SHOULD, kit practice: same input, same
output once uids are masked; see docs/coverage.md#d1). :func:`assert_snapshot` compares like
``assert snapshot == text`` and, on a mismatch, raises
:class:`~conformance.outcome.ConformanceFailure` whose message is one grammar line::

    [D1 SHOULD] compress()/select_context() output of snapshot case 'long-chat': expected ...,
    got ... See docs/coverage.md#d1. Repro: pytest --engine=... -k '...'; if the change is
    intended, accept it: pytest --engine=... -k '...' --snapshot-update

followed by syrupy's diff exactly as pytest would show it (``pytest_assertrepr_compare``, so
``--color`` and ``--snapshot-diff-mode`` apply). :func:`item_properties` gives the snapshot
items the ``user_properties`` the verdict reads, so they count under D1 in the summary by
clause and the JSON verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.expect import SHOULD, link
from conformance.outcome import ConformanceFailure

#: The clause and level the snapshot tier serves (the registry's D1 check has the same).
CLAUSE = "D1"
LEVEL = SHOULD
TEST_NAME = "test_compression_snapshot"


def check_id(case_id: str) -> str:
    """The verdict id of a snapshot item: ``D1-snapshot[<case id>]``."""
    return f"{CLAUSE}-snapshot[{case_id}]"


def item_properties(case_id: str) -> list[tuple[str, str]]:
    """``user_properties`` of the item for ``case_id``: check id, clause D1, level SHOULD, kind snapshot."""
    return [
        ("conformance_check", check_id(case_id)),
        ("clause", CLAUSE),
        ("level", LEVEL),
        ("kind", "snapshot"),
    ]


def repro_command(engine_args: str, case_id: str) -> str:
    """``pytest <engine args> -k '<test>[<case>]'``: reruns this one snapshot case."""
    return f"pytest {engine_args} -k '{TEST_NAME}[{case_id}]'"


def mismatch_message(case_id: str, location: str, missing: bool, engine_args: str) -> str:
    """The grammar line of a failed snapshot case (no diff).

    Args:
        case_id: the corpus case id.
        location: the snapshot file (shown relative when the caller made it so).
        missing: no snapshot file (or no snapshot in it) exists yet.
        engine_args: the command-line options that select the engine (``EngineFactory.repro_args()``).
    """
    repro = repro_command(engine_args, case_id)
    got = (
        "no stored snapshot"
        if missing
        else "a different output (diff below: '-' stored snapshot, '+' this run)"
    )
    advice = (
        "create it: " if missing else "if the change is intended, accept it: "
    ) + f"{repro} --snapshot-update"
    return (
        f"[{CLAUSE} {LEVEL}] compress()/select_context() output of snapshot case '{case_id}': expected the "
        f"stored snapshot {location}, got {got} (kit practice: same engine, same input, same output). "
        f"See {link(CLAUSE)}. Repro: {repro}; {advice}"
    )


def _diff_lines(config: Any, snapshot: Any, received: str) -> list[str]:
    """syrupy's explanation of ``snapshot == received``, as pytest prints it for a failed assert."""
    for lines in config.hook.pytest_assertrepr_compare(
        config=config, op="==", left=snapshot, right=received
    ):
        if lines:
            return [str(line) for line in lines]
    return []


def assert_snapshot(
    config: Any, snapshot: Any, case_id: str, received: str, engine_args: str
) -> None:
    """``snapshot == received`` or :class:`ConformanceFailure` (grammar line, newline, syrupy's diff).

    Args:
        config: the pytest config (for the assertrepr hook, the rootdir and the folder pytest was started from).
        snapshot: syrupy's ``SnapshotAssertion`` bound to the case's file (``conformance_snapshot``).
        case_id: the corpus case id.
        received: this run's snapshot text.
        engine_args: the engine's command-line options, for the repro line.
    """
    __tracebackhide__ = True
    if snapshot == received:
        return
    result = snapshot.executions[
        snapshot.num_executions - 1
    ]  # syrupy's record of the comparison just made
    location = Path(str(result.snapshot_location))
    shown = str(location)
    for base in (
        Path(str(config.rootpath)),
        Path(str(config.invocation_params.dir)),
    ):  # check: rootdir is a temp dir
        if location.is_relative_to(base):
            shown = str(location.relative_to(base))
            break
    text = mismatch_message(case_id, shown, result.recalled_data is None, engine_args)
    raise ConformanceFailure("\n".join([text] + _diff_lines(config, snapshot, received)))


def engine_args(factory: Any, spec: str) -> str:
    """The options that select the engine again: ``factory.repro_args()`` (an
    :class:`~conformance.engine_loading.EngineFactory`), else ``--engine=<spec>``."""
    repro = getattr(factory, "repro_args", None)
    return repro() if callable(repro) else f"--engine={spec}"


__all__ = [
    "CLAUSE",
    "LEVEL",
    "check_id",
    "item_properties",
    "mismatch_message",
    "assert_snapshot",
    "engine_args",
]
