"""A snapshot mismatch as a kit failure: clause D1, the kit's message grammar, syrupy's diff kept.

The snapshot tier serves kit clause D1 (determinism, SHOULD, kit practice: same input, same
output once uids are masked; see docs/coverage.md#d1). :func:`compare_with_syrupy` compares like
``assert snapshot == text`` and, on a mismatch, raises a D1 finding; the session renders it as
one grammar line, then syrupy's diff exactly as pytest would show it
(``pytest_assertrepr_compare``, so ``--color`` and ``--snapshot-diff-mode`` apply)::

    [D1 SHOULD] compress()/select_context() output of snapshot case 'long-chat': expected ...,
    got ... See docs/coverage.md#d1. Repro: pytest --engine=... -k '...'; if the change is
    intended, accept it: pytest --engine=... -k '...' --snapshot-update
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.authoring.expect import SHOULD
from conformance.clauses.errors import ContractViolation

#: The clause and level the snapshot tier serves (the registry's D1 check has the same).
CLAUSE = "D1"
LEVEL = SHOULD


def mismatch_detail(case_id: str, location: str, missing: bool) -> str:
    """The text of a failed snapshot case after ``[D1 SHOULD]`` (no diff, no ``See``/``Repro``).

    Args:
        case_id: the corpus case id.
        location: the snapshot file (shown relative when the caller made it so).
        missing: no snapshot file (or no snapshot in it) exists yet.
    """
    got = (
        "no stored snapshot"
        if missing
        else "a different output (diff below: '-' stored snapshot, '+' this run)"
    )
    return (
        f"compress()/select_context() output of snapshot case '{case_id}': expected the stored "
        f"snapshot {location}, got {got} (kit practice: same engine, same input, same output)."
    )


def _diff_lines(config: Any, snapshot: Any, received: str) -> list[str]:
    """syrupy's explanation of ``snapshot == received``, as pytest prints it for a failed assert."""
    for lines in config.hook.pytest_assertrepr_compare(
        config=config, op="==", left=snapshot, right=received
    ):
        if lines:
            return [str(line) for line in lines]
    return []


def compare_with_syrupy(config: Any, snapshot: Any, case_id: str) -> Callable[[str], None]:
    """A ``compare(text)`` for :class:`conformance.run.cases.SnapshotCase`: ``snapshot == text``
    through syrupy (so ``--snapshot-update`` writes it), else a D1 finding.

    Args:
        config: the pytest config (assertrepr hook, rootdir, invocation folder).
        snapshot: syrupy's ``SnapshotAssertion`` bound to the engine's folder.
        case_id: the corpus case id.
    Returns:
        ``compare(received)``, raising :class:`~conformance.clauses.errors.ContractViolation` (D1
        SHOULD) whose ``appendix`` is syrupy's diff and ``missing`` says whether no snapshot
        existed yet.
    """

    def compare(received: str) -> None:
        if snapshot == received:
            return
        result = snapshot.executions[snapshot.num_executions - 1]  # the comparison just made
        location = Path(str(result.snapshot_location))
        shown = str(location)
        for base in (Path(str(config.rootpath)), Path(str(config.invocation_params.dir))):
            if location.is_relative_to(base):
                shown = str(location.relative_to(base))
                break
        missing = result.recalled_data is None
        violation = ContractViolation(CLAUSE, LEVEL, mismatch_detail(case_id, shown, missing))
        violation.missing = missing
        violation.appendix = "\n".join(_diff_lines(config, snapshot, received))
        raise violation

    return compare


__all__ = ["CLAUSE", "LEVEL", "compare_with_syrupy", "mismatch_detail"]
