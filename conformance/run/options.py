"""What a run is told and what the engine declares: :class:`RunOptions`, :class:`Declarations`
and the expected-failure rules.

:class:`RunOptions` holds every option of a run (the pytest options, the arguments of
:func:`conformance.run.entry.run_conformance`) and validates them; :class:`Declarations` is
what the engine declares about itself, probed once per run (:mod:`conformance.run.probe`).
Expected failures (``conformance_expected_failures``, ``--conformance-xfails``) are keyed by a
case id, an id prefix or a clause: :func:`xfail_reason` matches a case, :func:`xfail_for_clause`
a finding's own clause, :func:`unmatched_xfails` lists the keys no case matches, and
:func:`read_xfails_file` reads them from a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.authoring.budget import DEFAULT_BUDGET_S
from conformance.authoring.case import key_selects
from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S, PROFILES
from conformance.authoring.hosts import parse_hosts
from conformance.clauses import catalogue
from conformance.clauses.errors import KitUsageError
from conformance.runtime.supervisor import DEFAULT_MEMORY_LIMIT, ISOLATIONS
from conformance.runtime.timeouts import DEFAULT_MAX_TIMEOUTS

if TYPE_CHECKING:
    from conformance.authoring.case import Case


@dataclass
class RunOptions:
    """Everything a run is told (the pytest options, ``run_conformance`` arguments).

    Attributes:
        profile: ``quick``, ``default`` or ``thorough`` (Hypothesis budget).
        derandomize: a deterministic verdict (True unless ``--conformance-random``).
        seed: Hypothesis seed when random (drawn and recorded when None).
        timeout: the limit of one engine call in seconds (``--conformance-timeout``): a call
            longer than that is a hang.
        max_timeouts: hung cases after which the rest are not run (0: no cap).
        shrink: shrink counterexamples.
        strict: SHOULD failures and XPASS fail the run too.
        host_profile: the host profile played (``documented``, ``hermes-0.19``, ...); given
            as ``a,b`` or ``all`` (or "" for the default hosts, :func:`conformance.authoring.hosts.
            default_hosts`) it is parsed into ``host_profiles`` and becomes their first.
        host_profiles: every host the run checks the engine on (:mod:`conformance.authoring.hosts`;
            empty: parsed from ``host_profile``); set by :meth:`validate`.
        capabilities: capabilities added on the command line (validated).
        xfails: expected failures given by the user ``{id | prefix | clause: reason}``.
        replay: a failure file's content (``--conformance-replay``); only its case runs.
        replay_file: that file's absolute path (the ``Repro:`` command of a replayed failure
            names it again), or None.
        failures_dir: where failure files go (None: none written).
        scenarios: include the bundled scenario library.
        scenario_files: further scenario files.
        checks: include the registry's checks.
        snapshots_dir: the engine's snapshot folder when the tier is on (None: off).
        plugin_dir: an engine plugin folder for the R checks.
        window: the check window in tokens (None: the kit's default).
        only: case ids, id prefixes or clause ids to run (empty: all).
        budget: seconds the run's checks may spend drawing examples (``--conformance-budget``;
            0: no budget), shared out among the checks (:mod:`conformance.authoring.budget`).
        memory_limit: a case child's address-space cap in bytes (``--conformance-memory-limit``;
            None: none).
        isolation: ``fork`` (each case in a supervised child) or ``inprocess``.
    """

    profile: str = "default"
    derandomize: bool = True
    seed: int | None = None
    timeout: float = DEFAULT_CHECK_TIMEOUT_S
    max_timeouts: int = DEFAULT_MAX_TIMEOUTS
    shrink: bool = True
    strict: bool = False
    host_profile: str = ""
    host_profiles: tuple = ()
    capabilities: frozenset = frozenset()
    xfails: dict[str, str] = field(default_factory=dict)
    replay: dict[str, Any] | None = None
    replay_file: str | None = None
    failures_dir: Path | None = None
    scenarios: bool = True
    scenario_files: tuple = ()
    checks: bool = True
    snapshots_dir: Path | None = None
    plugin_dir: str | None = None
    window: int | None = None
    only: tuple = ()
    budget: float = DEFAULT_BUDGET_S
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    isolation: str = "fork"

    def validate(self) -> None:
        """Check every value.

        Raises:
            KitUsageError: a bad value; the message says which and what is accepted.
        """
        if self.profile not in PROFILES:
            raise KitUsageError(
                f"profile {self.profile!r}: use one of {', '.join(sorted(PROFILES))}"
            )
        try:
            self.host_profiles = parse_hosts(self.host_profiles or self.host_profile)
        except ValueError as exc:
            raise KitUsageError(str(exc)) from None
        self.host_profile = self.host_profiles[0]
        if not (isinstance(self.timeout, (int, float)) and 0 < self.timeout < float("inf")):
            raise KitUsageError(
                f"--conformance-timeout={self.timeout}: give a positive, finite number of seconds "
                f"(the limit of one engine call; default {DEFAULT_CHECK_TIMEOUT_S:g})"
            )
        if not (isinstance(self.budget, (int, float)) and 0 <= self.budget < float("inf")):
            raise KitUsageError(
                f"--conformance-budget={self.budget}: give a finite number of seconds, 0 or more "
                f"(the time the checks may spend drawing examples; 0: no budget; default "
                f"{DEFAULT_BUDGET_S:g})"
            )
        if self.memory_limit is not None and not (
            isinstance(self.memory_limit, int) and self.memory_limit >= 256 * 1024**2
        ):
            raise KitUsageError(
                f"--conformance-memory-limit: {self.memory_limit!r} bytes is too small or not a "
                "number; give at least 0.25 GiB (default 4 GiB), or 0 for no cap"
            )
        if self.isolation not in ISOLATIONS:
            raise KitUsageError(
                f"--conformance-isolation={self.isolation!r}: use one of {', '.join(ISOLATIONS)}"
            )
        if not isinstance(self.max_timeouts, int) or self.max_timeouts < 0:
            raise KitUsageError(
                f"--conformance-max-timeouts={self.max_timeouts}: give 0 (run every check) or a "
                f"positive number of timed-out checks (default {DEFAULT_MAX_TIMEOUTS})"
            )
        try:
            self.capabilities = catalogue.capabilities(
                self.capabilities, source="--conformance-capabilities"
            )
        except ValueError as exc:
            raise KitUsageError(str(exc)) from None


@dataclass
class Declarations:
    """What the engine declares, read once from one instance.

    Attributes:
        name: ``engine.name`` (or the class name when it cannot be read).
        capabilities: ``conformance_capabilities`` (validated) plus the command line's.
        expected_failures: ``conformance_expected_failures`` plus the user's.
        error: why no engine could be built (every case then errors), or None.
        reaches: what the constructor reached for outside its sandbox and was refused
            (:class:`~conformance.runtime.sandbox.Reach`): with ``error``, the engine cannot be
            built
            in the sandbox, a kit clause E1 finding about the engine, not a usage error.
    """

    name: str = ""
    capabilities: frozenset = frozenset()
    expected_failures: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    reaches: list = field(default_factory=list)


def xfail_reason(case: Case, xfails: Mapping[str, str]) -> str | None:
    """The reason of the expected failure that covers ``case`` (a key equal to its id, a prefix
    of its id that does not end inside a number, or its clause:
    :func:`conformance.authoring.case.key_selects`; the first such key of ``xfails`` wins), or
    None."""
    for key, reason in xfails.items():
        if key_selects(key, case.id, case.clause):
            return str(reason)
    return None


def xfail_for_clause(clause: str | None, xfails: Mapping[str, str]) -> str | None:
    """The reason of an expected failure keyed by ``clause`` itself (e.g. ``{"V2": why}``).

    A failure carries its own clause, which may differ from its case's (the L1 state machine
    reports a V2 break as ``[V2 MUST]``): expected failures by clause cover those too.
    """
    if not clause:
        return None
    return next((str(r) for k, r in xfails.items() if k == clause), None)


def unmatched_xfails(xfails: Mapping[str, str], cases: Iterable[Case]) -> list[str]:
    """Expected-failure keys that match no case (the user is warned about them)."""
    seen = list(cases)
    return sorted(k for k in xfails if not any(key_selects(k, c.id, c.clause) for c in seen))


def read_xfails_file(path: Path) -> dict[str, str]:
    """Expected failures from a file: one case id, id prefix or clause per line, then an
    optional reason after whitespace or ``#``; blank lines and ``#`` comments ignored.

    Raises:
        KitUsageError: the file cannot be read.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KitUsageError(f"--conformance-xfails {path}: cannot read it ({exc})") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, reason = line.partition("#")
        parts = key.split(None, 1)
        text = reason or (parts[1] if len(parts) > 1 else "") or f"listed in {path}"
        out[parts[0]] = text.strip()
    return out


__all__ = [
    "Declarations",
    "RunOptions",
    "read_xfails_file",
    "unmatched_xfails",
    "xfail_for_clause",
    "xfail_reason",
]
