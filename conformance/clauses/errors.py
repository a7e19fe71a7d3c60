"""Every exception of the kit, and the one renderer of ``[CLAUSE LEVEL]`` lines.

Every finding, failure and error the kit reports is one line in one grammar::

    [V2 MUST] compress() output: expected every tool call answered exactly once after it,
    got tool message at index 3 answers 'call_7', which no earlier assistant message calls
    (history of 14 messages). See docs/contract.md#v2 (context-engine-kit explain V2). Repro:
    pytest --engine=mypkg:Engine
    --conformance-replay=.conformance/failures/mypkg.Engine/V2-tool-results-paired_compress_.json

:func:`render` builds it (error outcomes included: ``[A4 MUST] engine not available: ...``);
the ``See`` target comes from the clause catalogue (:mod:`conformance.clauses.catalogue`),
followed by
the command that explains the clause where the user is (an installed kit has no docs/ folder).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any


def render(clause: str, level: str, detail: str, *, repro: str = "") -> str:
    """The kit's one-line grammar: ``[CLAUSE LEVEL] detail See <anchor> (context-engine-kit
    explain CLAUSE).`` then ``Repro: ...``.

    ``detail`` is the text after the prefix; a trailing period is not doubled. ``repro`` is a
    shell command that reruns the case (empty: no ``Repro:`` part). A clause the catalogue does
    not know points at the contract alone.
    """
    from conformance.clauses.catalogue import CLAUSES, anchor

    text = detail.rstrip()
    if text and not text.endswith((".", "!", "?")):
        text += "."
    explain = f" (context-engine-kit explain {clause})" if clause in CLAUSES else ""
    line = f"[{clause} {level}] {text} See {anchor(clause)}{explain}."
    return f"{line} Repro: {repro}" if repro else line


def pytest_command() -> str:
    """How this environment's pytest is run when typed at a shell in the working directory,
    the start of every ``Repro:`` command: ``pytest`` when the ``pytest`` on ``PATH`` is this
    interpreter's (an activated virtualenv), else ``<this python> -m pytest``, the python's
    path relative to the working directory when it is under it. After the README's own
    commands (a ``.venv`` made and used without activating it) that is
    ``.venv/bin/python -m pytest``, so a ``Repro:`` line runs as printed."""
    python = Path(sys.executable)
    found = shutil.which("pytest")
    if found and Path(found).parent.resolve() == python.parent.resolve():
        return "pytest"
    try:
        shown = os.path.relpath(python)
        shown = shown if not shown.startswith("..") else str(python)
    except ValueError:  # another drive
        shown = str(python)
    return f"{shlex.quote(shown)} -m pytest"


def exception_text(exc: BaseException, limit: int | None = None) -> str:
    """How a message names an exception: ``Type: message``, or ``Type`` alone when its message
    is empty (``KeyboardInterrupt``, not ``KeyboardInterrupt: .``), even when its ``__str__``
    raises. A final period is left off (the caller's sentence goes on: no ``..``). ``limit``: at
    most that many characters of the message (None: all of it)."""
    try:
        text = str(exc).strip().rstrip(".").rstrip()
    except Exception:
        text = "<its message could not be shown>"
    if limit is not None:
        text = text[:limit]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def with_article(noun: str) -> str:
    """``noun`` with its indefinite article, for messages that name a type: ``a list``,
    ``an int``."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def strip_repro(message: str) -> str:
    """``message`` without its ``Repro: ...`` tail (the part that names a front end's command)."""
    head, sep, _ = message.partition(" Repro: ")
    return head if sep else message


class ContractViolation(AssertionError):
    """An engine broke a contract clause.

    Attributes:
        clause: clause id, e.g. ``"V2"``.
        level: ``"MUST"`` or ``"SHOULD"``.
        detail: the human-readable part after the ``[CLAUSE LEVEL]`` prefix.
        example: the offending input (e.g. ``{"history": [...]}``), JSON-serialisable; the
            runner adds the drawn values under ``"draws"`` for the replay file.
    """

    #: The engine exception behind the violation, when there is one (the verdict lists a root
    #: cause once). D1 (snapshots): the snapshot was missing, and the diff shown after it.
    root_cause: str | None = None
    missing: bool = False
    appendix: str = ""

    def __init__(self, clause: str, level: str, detail: str, example: dict[str, Any] | None = None):
        self.clause = clause
        self.level = level
        self.detail = detail
        self.example = example
        super().__init__(self.render())

    def render(self) -> str:
        """The message without a ``Repro:`` part (:func:`render`)."""
        return render(self.clause, self.level, self.detail)

    def __reduce__(self) -> tuple:
        """Pickles (a supervised case's child hands its finding to the parent) without the
        engine's own exception object (``cause``), which need not pickle."""
        state = {k: v for k, v in self.__dict__.items() if k != "cause"}
        return (type(self), (self.clause, self.level, self.detail, self.example), state)

    def attach_draws(self, draws: dict[str, Any]) -> None:
        """Record the (shrunk) Hypothesis draws that produced this failure (for replay)."""
        example = dict(self.example or {})
        example["draws"] = dict(draws)
        self.example = example


class HostileEngine(BaseException):
    """An engine call misbehaved in a way that must stop the check at once, without shrinking.

    Raised for SystemExit from an engine method, oversized return values, leaked threads and
    calls that did not return in time. It derives from BaseException so Hypothesis does not
    retry or shrink it; the runner turns it into a failure of ``clause`` naming ``method``.
    """

    #: The key that groups this failure with the same cause in other cases (a hang of one
    #: method, a death, memory kept): the verdict counts one root cause once; "" for none.
    root_cause: str = ""

    def __init__(self, clause: str, level: str, method: str, detail: str):
        self.clause = clause
        self.level = level
        self.method = method
        self.detail = detail
        super().__init__(self.render())

    def render(self) -> str:
        """The message without a ``Repro:`` part: ``[C L] method(): detail See ...``."""
        call = f"{self.method}(): " if self.method else ""
        return render(self.clause, self.level, f"{call}{self.detail}")

    def __reduce__(self) -> tuple:
        """Pickles with its attributes (see :meth:`ContractViolation.__reduce__`)."""
        state = {k: v for k, v in self.__dict__.items() if k != "cause"}
        return (type(self), (self.clause, self.level, self.method, self.detail), state)


class CheckSkipped(Exception):
    """The case does not apply (capability missing, host lacks the clause); message = reason."""


class CaseError(Exception):
    """A case could not complete for a reason that is not a finding about the engine (a scenario
    run stopped by an exception at a step, a kit error); the message says where and why."""


class EngineUnavailable(Exception):
    """The engine could not be constructed or configured; the message says why."""


class EngineTimeout(Exception):
    """An engine call (its constructor, a probe) did not return within the limit; the message
    names it."""


class EngineSpecError(Exception):
    """The ``--engine`` value could not be turned into an engine; the message says why."""


class KitUsageError(ValueError):
    """A bad option value or input file (an unknown capability, a malformed replay file): the
    message says what was wrong and what to do. The pytest front end raises it as
    ``pytest.UsageError``; ``check`` and ``scenario`` exit 4."""


class ScenarioError(ValueError):
    """A scenario file is malformed; ``str()`` is one ``file:line: field: problem`` line per error.

    Attributes:
        problems: list of ``(line, field, message)``; ``line`` is 1-based (0 when unknown or the
            whole file: ``str()`` then gives ``file: problem``).
        path: the file.
    """

    def __init__(self, path: str, problems: list[tuple[int, str, str]]):
        self.path = path
        self.problems = sorted(problems, key=lambda p: (p[0], p[1]))
        super().__init__(
            "\n".join(
                f"{path}{f':{line}' if line else ''}: {field + ': ' if field else ''}{msg}"
                for line, field, msg in self.problems
            )
        )


class NetworkBlocked(OSError):
    """A connection outside loopback was attempted while a check ran (the kit has no network)."""


class ConformanceFailure(AssertionError):
    """pytest outcome of a failed case; the message is the kit's one line (no kit traceback)."""


class ConformanceError(Exception):
    """pytest outcome of a case that could not complete (engine unavailable, kit error)."""


__all__ = [
    "exception_text",
    "with_article",
    "CaseError",
    "CheckSkipped",
    "ConformanceError",
    "ConformanceFailure",
    "ContractViolation",
    "EngineSpecError",
    "EngineTimeout",
    "EngineUnavailable",
    "HostileEngine",
    "KitUsageError",
    "NetworkBlocked",
    "ScenarioError",
    "render",
    "strip_repro",
]
