"""A case's result and the exit rule: the rows every front end reports and the verdict counts.

:class:`Result` is one row (``check``, ``clause``, ``level``, ``outcome``, ``message``);
:func:`exit_code` is the rule every front end exits by (MUST failures fail; SHOULD only with
``strict``; no case ran = 5; nothing failed but the budget cut cases short = 6, ``PARTIAL``);
:func:`verdict_word` names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from conformance.authoring.expect import MUST

OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")


@dataclass
class Result:
    """The outcome of one case: ``{"check", "clause", "level", "outcome", "message"}`` (+ seconds).

    Attributes:
        check: the case id. clause, level: the finding's (or the case's). outcome: one of
            :data:`OUTCOMES`. message: the kit's one line ("" for a pass). seconds: wall time.
        replay_file: the failure file written, if any.
        example_messages: messages in the shrunk counterexample (the longest drawn transcript).
        kind: the case kind (``snapshot`` results weigh in the verdict word even as SHOULD).
        title: what the case checks (the registry's title; the HTML report shows it).
        root_cause: the key of a failure's root cause (the same engine exception from the same
            frame, :func:`conformance.authoring.engine_frames.root_cause`); "" when unknown.
        examples_run, examples_asked: a Hypothesis check's examples (None for the others).
        budget_reached: the check stopped drawing because its share of the budget ran out.
        llm: what the engine's own LLM calls (``call_llm``) cost during the case
            (:mod:`conformance.authoring.engine_llm`): ``calls``, ``requests``, ``failed_requests``,
            ``prompt_tokens``, ``completion_tokens``, ``cached_tokens``,
            ``cache_write_tokens`` (tokens), ``cost_usd`` (simulated USD), plus the ledger's
            ``faults``, ``errors`` and ``models`` maps; empty when the engine made no LLM
            call (a scenario file's cost is on one row only: its first expectation that ran).
        hosts: in a run of several hosts (:mod:`conformance.authoring.hosts`), the host profiles
        this
            row stands for (the host it was played on first); empty in a one-host run.
    """

    check: str
    clause: str
    level: str
    outcome: str
    message: str = ""
    seconds: float = 0.0
    replay_file: str | None = None
    example_messages: int | None = None
    kind: str = "contract"
    title: str = ""
    root_cause: str = ""
    examples_run: int | None = None
    examples_asked: int | None = None
    budget_reached: bool = False
    llm: dict = field(default_factory=dict)
    hosts: tuple = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON verdict row: check, clause, level, outcome, message, ``llm`` (the engine's
        own LLM calls, ``{}`` when none); plus ``examples`` (``{"run", "asked"}``) when the
        budget limited the check; plus ``hosts`` (the host profiles the row stands for) in a
        run of several hosts."""
        keep = ("check", "clause", "level", "outcome", "message", "llm")
        row = {k: v for k, v in asdict(self).items() if k in keep}
        if self.hosts:
            row["hosts"] = list(self.hosts)
        if self.budget_reached:
            row["examples"] = {"run": self.examples_run, "asked": self.examples_asked}
            row["partly_checked"] = partly_checked(self)
        return row

    def as_record(self) -> dict[str, Any]:
        """Every field, as plain JSON types (``hosts`` a list): what crosses a process boundary
        (pytest-xdist's report serialization); :meth:`from_record` makes the Result again."""
        record = asdict(self)
        record["hosts"] = list(self.hosts)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Result:
        """The Result an :meth:`as_record` dict stands for (keys it does not know are left out).

        Raises:
            TypeError: ``record`` lacks ``check``, ``clause``, ``level`` or ``outcome``.
        """
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in record.items() if k in known}
        values["hosts"] = tuple(values.get("hosts") or ())
        return cls(**values)


#: Exit status of a partly checked run: no blocking failure, but the drawing budget
#: (``--conformance-budget``) cut checks short or left scenario files unplayed, so not every
#: case was judged on all it asks for. Not 0: a CI gate never reads it as a pass.
PARTIAL_EXIT = 6


def partly_checked(result: Result) -> bool:
    """True for a case the drawing budget cut short and that found nothing: a check that ran
    fewer examples than its profile asks, or a scenario expectation whose file was not played.
    It is no pass (the clause table, the JSON verdict and the exit status say so) and no
    failure."""
    return result.budget_reached and result.outcome in ("passed", "skipped")


def exit_code(results: Iterable[Result], *, strict: bool = False) -> int:
    """0 unless a MUST case failed or errored (or, with ``strict``, any case did, or one
    xpassed); 5 if none ran; :data:`PARTIAL_EXIT` (6) when nothing failed but the drawing
    budget cut a case short (:func:`partly_checked`)."""
    results = list(results)
    ran = [r for r in results if r.outcome in ("passed", "failed", "error", "xfailed", "xpassed")]
    if not ran:
        return 5
    for r in results:
        if r.outcome in ("failed", "error") and (strict or r.level == MUST):
            return 1
        if strict and r.outcome == "xpassed":
            return 1
    if any(partly_checked(r) for r in results):
        return PARTIAL_EXIT
    return 0


def verdict_word(code: int) -> str:
    """The verdict word of an :func:`exit_code`: ``"PASS"`` (0), ``"NO CHECK RAN"`` (5),
    ``"PARTIAL"`` (6: nothing failed, the budget cut cases short), else ``"FAIL"``."""
    return {0: "PASS", 5: "NO CHECK RAN", PARTIAL_EXIT: "PARTIAL"}.get(code, "FAIL")


__all__ = ["OUTCOMES", "PARTIAL_EXIT", "Result", "exit_code", "partly_checked", "verdict_word"]
