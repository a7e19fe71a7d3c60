"""Run registered checks and turn each into a :class:`Result` (no pytest needed).

``run_conformance(engine_factory)`` is the no-pytest API; the pytest plugin calls
:func:`run_check` per item, so both give the same outcomes and messages.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from conformance import registry
from conformance.context import CheckContext, CheckSkipped, EngineUnavailable
from conformance.expect import MUST, SHOULD, ContractViolation, HostileEngine
from conformance.hypothesis_pool import no_local_constants
from conformance.netguard import block_network
from conformance.timeouts import CURRENT_CALL, HangBudget, build_engine, run_with_timeout

OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "error")
_SAFE_RE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class Result:
    """The outcome of one check: ``{"check", "clause", "level", "outcome", "message"}`` (+ seconds)."""

    check: str
    clause: str
    level: str
    outcome: str
    message: str = ""
    seconds: float = 0.0
    replay_file: str | None = None
    example_messages: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON verdict row: check, clause, level, outcome, message."""
        return {
            k: v
            for k, v in asdict(self).items()
            if k in ("check", "clause", "level", "outcome", "message")
        }


def expected_failures(engine: Any, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Expected failures: ``conformance_expected_failures`` on the engine plus ``extra``.

    Keys are check ids, id prefixes or clause ids; values are reasons. A clause id also
    covers a failure labelled with that clause inside another check (:func:`xfail_for_clause`).
    """
    out = dict(getattr(engine, "conformance_expected_failures", None) or {})
    out.update(extra or {})
    return out


def _xfail_reason(chk: registry.Check, xfails: Mapping[str, str]) -> str | None:
    for key, reason in xfails.items():
        if chk.id == key or chk.id.startswith(key) or chk.clause == key:
            return str(reason)
    return None


def xfail_for_clause(clause: str | None, xfails: Mapping[str, str]) -> str | None:
    """The reason of an expected failure keyed by ``clause`` itself (e.g. ``{"V2": why}``), or None.

    A failure carries its own clause (``ContractViolation.clause``, the ``[V2 MUST]`` prefix),
    which may differ from its check's: the L1 state machine reports a V2 break in compress()
    output as ``[V2 MUST]``. Expected failures by clause cover such failures too.
    """
    if not clause:
        return None
    return next((str(reason) for key, reason in xfails.items() if key == clause), None)


#: The host feature each check needs (by check-id prefix). An ABC or a host profile that lacks
#: the feature (hermes-agent 0.19.0 has no select_context, on_turn_complete, clone_for_agent,
#: model_thresholds, nor message uids) turns the check into a skip naming that version.
CHECK_FEATURES = (
    ("H1-hooks-do-not-raise[select_context]", "select_context"),
    ("H1-hooks-do-not-raise[on_turn_complete]", "on_turn_complete"),
    ("H3-", "select_context"),
    ("H6-", "select_context"),
    ("O9-", "select_context"),
    ("H5-", "on_turn_complete"),
    ("O10-", "on_turn_complete"),
    ("O11-", "clone_for_agent"),
    ("REG-f-", "clone_for_agent"),  # C1/C2 deep-copy there instead
    ("K1-model-thresholds", "model_thresholds"),
    ("U2-", "message_uid"),
    ("U4-", "message_uid"),
    ("U6-", "message_uid"),
    ("U7-", "message_uid"),
    ("U10-", "message_uid"),
)

#: Host features by profile (simulator.host.profiles); the documented host has them all.
PROFILE_LACKS = {
    "documented": frozenset(),
    "hermes-0.19": frozenset(
        {"select_context", "on_turn_complete", "clone_for_agent", "model_thresholds", "message_uid"}
    ),
}


#: Clauses whose scenario expectations need a host feature (a whole clause, coarser than checks).
SCENARIO_CLAUSE_FEATURES = {
    "H3": "select_context",
    "H6": "select_context",
    "H5": "on_turn_complete",
    "C1": "clone_for_agent",
    "K1": "model_thresholds",
    **{u: "message_uid" for u in ("U1", "U2", "U3", "U4", "U5", "U6", "U7", "U8", "U10")},
}


def profile_skip_reason(clause: str, host_profile: str, abc: Any = None) -> str | None:
    """Why a scenario expectation of ``clause`` does not apply on ``host_profile`` or under the
    host ABC ``abc`` (an :class:`~simulator.host.shim.AbcInfo`), or None when it applies."""
    feature = SCENARIO_CLAUSE_FEATURES.get(clause)
    if feature and abc is not None and abc.lacks(feature):
        return f"the host ABC in use ({abc.label()}) has no {feature}; clause {clause} does not exist there"
    if feature and feature in PROFILE_LACKS.get(host_profile, frozenset()):
        return f"the host profile {host_profile!r} has no {feature}; clause {clause} does not exist on that host"
    return None


def feature_of(chk: registry.Check) -> str | None:
    """The host/ABC feature ``chk`` needs, or None."""
    if chk.abc_feature:
        return chk.abc_feature
    if chk.id.endswith("[select_context]"):
        return "select_context"
    return next((feature for prefix, feature in CHECK_FEATURES if chk.id.startswith(prefix)), None)


def applicability(chk: registry.Check, ctx: CheckContext) -> str | None:
    """Why ``chk`` does not apply (a skip reason), or None when it applies."""
    feature = feature_of(chk)
    if feature and ctx.abc.lacks(feature):
        return (
            f"the host ABC in use ({ctx.abc.label()}) has no {feature}; "
            f"clause {chk.clause} does not exist there"
        )
    if feature and feature in PROFILE_LACKS.get(ctx.host_profile, frozenset()):
        return (
            f"the host profile {ctx.host_profile!r} has no {feature}; "
            f"clause {chk.clause} does not exist on that host"
        )
    missing = sorted(chk.requires - ctx.capabilities)
    if missing:
        return f"engine lacks capability {', '.join(repr(m) for m in missing)} (conformance_capabilities)"
    present = sorted(chk.excludes & ctx.capabilities)
    if present:
        return (
            f"engine declares capability {', '.join(repr(m) for m in present)}; the "
            f"{'/'.join(sorted(chk.excludes))} variant of this case applies instead"
        )
    if chk.kind == "scenario" and not ctx.scenarios:
        return "bundled scenarios left out (--conformance-no-scenarios)"
    return None


def write_replay(
    chk: registry.Check,
    violation: Any,
    failures_dir: Path,
    engine_spec: str,
    ctx: CheckContext | None = None,
) -> str | None:
    """Write the shrunk example of a failure to ``failures_dir/<check>.json``; return the path.

    The file holds the check id, clause, level, engine, message, the shrunk draws (the
    transcript and every other drawn value, by label) and the Hypothesis seed/derandomize
    setting. Under the derandomized profile a seed alone does not reproduce a failure:
    rerun the file with ``--conformance-replay FILE``.
    """
    example = getattr(violation, "example", None)
    if example is None:
        return None
    failures_dir.mkdir(parents=True, exist_ok=True)
    path = replay_path(chk, failures_dir)
    payload = {
        "check": chk.id,
        "clause": chk.clause,
        "level": chk.level,
        "engine": engine_spec,
        "message": violation.render(),
        "example": example,
        "seed": getattr(ctx, "seed", None),
        "derandomize": getattr(ctx, "derandomize", True),
        "profile": getattr(ctx, "profile", None),
    }
    path.write_text(
        json.dumps(payload, indent=1, ensure_ascii=False, default=repr), encoding="utf-8"
    )
    return str(path)


def replay_path(chk: registry.Check, failures_dir: Path) -> Path:
    """``failures_dir/<check id, made file-safe>.json``: where :func:`write_replay` puts a check's failure."""
    return Path(failures_dir) / (_SAFE_RE.sub("_", chk.id) + ".json")


def clear_replay(chk: registry.Check, failures_dir: Path | None) -> bool:
    """Remove a stale failure file of ``chk`` (one a failing run wrote) now that the check passes.

    Only a file :func:`write_replay` wrote for this very check goes (JSON naming ``chk.id`` and holding
    an ``example``); anything else at that path is left alone. Returns True when a file was removed.
    """
    if failures_dir is None:
        return False
    path = replay_path(chk, failures_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("check") != chk.id or "example" not in data:
        return False
    path.unlink(missing_ok=True)
    return True


def load_replay(path: Path) -> dict[str, Any]:
    """Read a replay file written by :func:`write_replay`.

    Raises:
        ValueError: the file is not a kit replay file (the message says what is missing).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"--conformance-replay {path}: cannot read it ({exc}); give a file written to "
            ".conformance/failures/ by a failing run"
        ) from None
    if not isinstance(data, dict) or "check" not in data or "example" not in data:
        raise ValueError(
            f"--conformance-replay {path}: not a conformance replay file (needs 'check' and 'example')"
        )
    return data


def read_xfails_file(path: Path) -> dict[str, str]:
    """Expected failures from a file: one check id, id prefix or clause per line, then an
    optional reason after whitespace or ``#``; blank lines and ``#`` comments ignored.

    Raises:
        ValueError: the file cannot be read.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"--conformance-xfails {path}: cannot read it ({exc})") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, reason = line.partition("#")
        parts = key.split(None, 1)
        out[parts[0]] = (
            reason or (parts[1] if len(parts) > 1 else "") or f"listed in {path}"
        ).strip()
    return out


def unmatched_xfails(xfails: Mapping[str, str], checks: Iterable[registry.Check]) -> list[str]:
    """Expected-failure keys that match no registered check (the user is warned about them)."""
    checks = list(checks)
    return sorted(
        k
        for k in xfails
        if not any(c.id == k or c.id.startswith(k) or c.clause == k for c in checks)
    )


def run_check(
    chk: registry.Check,
    ctx: CheckContext,
    *,
    repro: str = "",
    failures_dir: Path | None = None,
    engine_spec: str = "",
    xfails: Mapping[str, str] | None = None,
) -> Result:
    """Run one check with the network blocked; never raises except KeyboardInterrupt.

    The check runs on a worker thread limited to ``ctx.timeout`` seconds: a hanging
    engine method becomes a failure naming the method. ``repro`` is appended to failure
    messages; with ``failures_dir`` the shrunk example is written there for replay, and
    the repro line names that file.
    """
    started = time.perf_counter()

    def result(
        outcome: str, message: str = "", replay: str | None = None, size: int | None = None
    ) -> Result:
        return Result(
            chk.id,
            chk.clause,
            chk.level,
            outcome,
            message,
            time.perf_counter() - started,
            replay,
            size,
        )

    reason = None
    try:
        reason = applicability(chk, ctx)
    except EngineUnavailable as exc:
        return result(
            "error", f"[{chk.clause} {chk.level}] engine not available: {exc}. {repro}".strip()
        )
    except Exception as exc:
        return result(
            "error",
            f"[{chk.clause} {chk.level}] engine not available: constructing it raised "
            f"{type(exc).__name__}: {exc}. {repro}".strip(),
        )
    if reason:
        return result("skipped", reason)
    if ctx.hangs.exhausted():
        return result(
            "error",
            f"[{chk.clause} {chk.level}] {ctx.hangs.reason()}."
            + (f" Repro: {repro}" if repro else ""),
        )
    xfail = _xfail_reason(chk, xfails or {})

    def body() -> None:
        with block_network():
            chk.func(ctx, **dict(chk.params))

    def failed(exc: Any) -> Result:
        replay = write_replay(chk, exc, failures_dir, engine_spec, ctx) if failures_dir else None
        text = exc.render()
        tail = ""
        if replay:
            tail = f" Repro: {_replay_repro(repro, replay)}"
        elif repro:
            tail = f" Repro: {repro}"
        size = example_messages(getattr(exc, "example", None))
        why = (
            xfail
            if xfail is not None
            else xfail_for_clause(getattr(exc, "clause", None), xfails or {})
        )
        if why is not None:
            return result("xfailed", f"{text} [expected failure: {why}]", replay, size)
        return result("failed", text + tail, replay, size)

    before = dict(CURRENT_CALL)  # calls abandoned by earlier checks (still hung there)
    try:
        with (
            no_local_constants()
        ):  # the draws depend on the seed alone, not on what else was loaded
            hung = run_with_timeout(body, ctx.timeout)
    except KeyboardInterrupt:
        raise
    except CheckSkipped as exc:
        return result("skipped", str(exc))
    except (ContractViolation, HostileEngine) as exc:
        return failed(exc)
    except EngineUnavailable as exc:
        return result(
            "error", f"[{chk.clause} {chk.level}] engine not available: {exc}. {repro}".strip()
        )
    except BaseException as exc:  # kit bugs, Hypothesis errors
        tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return result(
            "error",
            f"[{chk.clause} {chk.level}] check could not complete: {tb[:500]}. {repro}".strip(),
        )
    if hung is not None:
        clause, level, method = in_flight(hung.ident, before) or (None, None, "")
        ctx.hangs.record(method or None)
        exc = HostileEngine(
            clause or chk.clause,
            level or chk.level,
            method,
            f"{'' if method else 'the check '}did not return within {ctx.timeout:g} s (check {chk.id} "
            "timed out; the call was abandoned on a daemon thread and the run continued)",
        )
        return failed(exc)
    if xfail is not None:
        return result("xpassed", f"expected failure did not happen ({xfail})")
    return result("passed")


def in_flight(worker_ident: int | None, before: Mapping[int, Any]) -> Any | None:
    """The ``(clause, level, method)`` of the engine call a timed-out check is stuck in, or None.

    The check's worker thread first; else a call started during the check on a thread the
    check spawned (the L1 machine's parallel session, TS2's pool thread, TS3's sessions):
    an entry of :data:`~conformance.timeouts.CURRENT_CALL` that was not there in ``before``
    (calls abandoned by earlier checks stay there, unchanged). Ties go to the method name
    first in sort order, so the message is the same every run.
    """
    current = dict(CURRENT_CALL)
    if worker_ident in current:
        return current[worker_ident]
    started = sorted(
        (v for k, v in current.items() if before.get(k) != v), key=lambda v: (v[2], str(v[0]))
    )
    return started[0] if started else None


def example_messages(example: Any) -> int | None:
    """Messages in a failure's shrunk example: the longest drawn transcript (None if none)."""
    if not isinstance(example, dict):
        return None
    best = None
    stack = [example]
    while stack:
        v = stack.pop()
        if isinstance(v, list) and v and all(isinstance(m, dict) and "role" in m for m in v):
            best = max(best or 0, len(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
    return best


def _replay_repro(repro: str, replay_file: str) -> str:
    base = repro.split(" -k ")[0] if repro else "pytest"
    return f"{base} --conformance-replay {replay_file}"


def select(
    checks: Iterable[registry.Check], only: Iterable[str] | None = None
) -> list[registry.Check]:
    """Filter checks by id prefixes or clause ids (``None`` keeps all)."""
    keys = list(only or [])
    if not keys:
        return list(checks)
    return [c for c in checks if any(c.id.startswith(k) or c.clause == k for k in keys)]


def run_conformance(
    engine_factory: Callable[[], Any],
    *,
    profile: str = "default",
    only: Iterable[str] | None = None,
    failures_dir: Path | None = None,
    derandomize: bool = True,
    xfails: Mapping[str, str] | None = None,
    timeout: float | None = None,
    replay: Path | None = None,
    plugin_dir: str | None = None,
    scenarios: bool = True,
    seed: int | None = None,
    window: int | None = None,
    shrink: bool = True,
    host_profile: str = "documented",
    max_timeouts: int | None = None,
) -> list[Result]:
    """Run every registered check (or those matching ``only``) against ``engine_factory``.

    Args:
        engine_factory: zero-argument callable returning a fresh engine.
        profile: ``quick``, ``default`` or ``thorough``.
        only: check-id prefixes or clause ids to run.
        failures_dir: where shrunk failing examples are written (none if None).
        xfails: expected failures ``{check id | prefix | clause: reason}`` (non-strict).
        timeout: per-check limit in seconds (default 120).
        replay: a replay file; runs only its check, once, on the recorded draws.
        plugin_dir: engine plugin folder for the R4-R6 checks.
        scenarios: False leaves bundled scenario checks out.
        shrink: False skips Hypothesis shrinking (faster, longer counterexamples).
        host_profile: ``documented`` or ``hermes-0.19``; clauses that host lacks are skipped.
        max_timeouts: after this many timed-out checks the rest are errors, not run
            (default :data:`~conformance.timeouts.DEFAULT_MAX_TIMEOUTS`; 0 runs every check).
    Returns:
        one :class:`Result` per check, in registry order.
    """
    ctx = CheckContext(
        engine_factory,
        profile=profile,
        derandomize=derandomize,
        plugin_dir=plugin_dir,
        scenarios=scenarios,
        seed=seed,
        shrink=shrink,
        host_profile=host_profile,
    )
    if timeout is not None:
        ctx.timeout = float(timeout)
    if window is not None:
        ctx.window = int(window)
    if max_timeouts is not None:
        ctx.hangs = HangBudget(max_timeouts)
    checks = registry.all_checks()
    if replay is not None:
        data = load_replay(Path(replay))
        ctx.replay = dict(data["example"].get("draws") or {})
        only = [data["check"]]
        checks = [c for c in checks if c.id == data["check"]]
    spec = getattr(
        engine_factory, "spec", getattr(engine_factory, "__qualname__", repr(engine_factory))
    )
    try:
        engine_xfails = expected_failures(build_engine(engine_factory, ctx.timeout), xfails)
    except Exception:  # the checks report a constructor that raises or hangs
        engine_xfails = dict(xfails or {})
    return [
        run_check(c, ctx, failures_dir=failures_dir, engine_spec=str(spec), xfails=engine_xfails)
        for c in select(checks, only)
    ]


def exit_code(results: Iterable[Result], *, strict: bool = False) -> int:
    """0 unless a MUST check failed or errored (or, with ``strict``, any check did); 5 if none ran."""
    results = list(results)
    ran = [r for r in results if r.outcome in ("passed", "failed", "error", "xfailed", "xpassed")]
    if not ran:
        return 5
    for r in results:
        if r.outcome in ("failed", "error") and (strict or r.level == MUST):
            return 1
        if strict and r.outcome == "xpassed":
            return 1
    return 0


def verdict_word(code: int) -> str:
    """The verdict word of an :func:`exit_code`: ``"PASS"`` (0), ``"NO CHECK RAN"`` (5), else ``"FAIL"``."""
    return {0: "PASS", 5: "NO CHECK RAN"}.get(code, "FAIL")


__all__ = [
    "OUTCOMES",
    "Result",
    "run_check",
    "run_conformance",
    "exit_code",
    "verdict_word",
    "xfail_for_clause",
    "MUST",
    "SHOULD",
]
