"""Run registered checks and turn each into a :class:`Result` (no pytest needed).

``run_conformance(engine_factory)`` is the no-pytest API; the pytest plugin calls
:func:`run_check` per item, so both give the same outcomes and messages.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from conformance import registry
from conformance.context import CheckContext, CheckSkipped, EngineUnavailable
from conformance.expect import ContractViolation, MUST, SHOULD
from conformance.netguard import block_network

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
    replay_file: Optional[str] = None

    def as_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k in ("check", "clause", "level", "outcome", "message")}


def expected_failures(engine: Any, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """Expected failures: ``conformance_expected_failures`` on the engine plus ``extra``.

    Keys are check ids, id prefixes or clause ids; values are reasons.
    """
    out = dict(getattr(engine, "conformance_expected_failures", None) or {})
    out.update(extra or {})
    return out


def _xfail_reason(chk: registry.Check, xfails: Mapping[str, str]) -> Optional[str]:
    for key, reason in xfails.items():
        if chk.id == key or chk.id.startswith(key) or chk.clause == key:
            return str(reason)
    return None


def applicability(chk: registry.Check, ctx: CheckContext) -> Optional[str]:
    """Why ``chk`` does not apply (a skip reason), or None when it applies."""
    if chk.abc_feature and ctx.abc.lacks(chk.abc_feature):
        return (f"the host ABC in use ({ctx.abc.label()}) has no {chk.abc_feature}; "
                f"clause {chk.clause} does not exist there")
    missing = sorted(chk.requires - ctx.capabilities)
    if missing:
        return f"engine lacks capability {', '.join(repr(m) for m in missing)} (conformance_capabilities)"
    return None


def write_replay(chk: registry.Check, violation: ContractViolation, failures_dir: Path, engine_spec: str) -> Optional[str]:
    """Write the shrunk example of a failure to ``failures_dir/<check>.json``; return the path."""
    if violation.example is None:
        return None
    failures_dir.mkdir(parents=True, exist_ok=True)
    path = failures_dir / (_SAFE_RE.sub("_", chk.id) + ".json")
    payload = {"check": chk.id, "clause": chk.clause, "level": chk.level, "engine": engine_spec,
               "message": violation.render(), "example": violation.example}
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False, default=repr), encoding="utf-8")
    return str(path)


def run_check(chk: registry.Check, ctx: CheckContext, *, repro: str = "", failures_dir: Optional[Path] = None,
              engine_spec: str = "", xfails: Optional[Mapping[str, str]] = None) -> Result:
    """Run one check with the network blocked; never raises except KeyboardInterrupt.

    ``repro`` is appended to failure messages; with ``failures_dir`` the shrunk example
    is written there for replay.
    """
    started = time.perf_counter()

    def result(outcome: str, message: str = "", replay: Optional[str] = None) -> Result:
        return Result(chk.id, chk.clause, chk.level, outcome, message, time.perf_counter() - started, replay)

    reason = None
    try:
        reason = applicability(chk, ctx)
    except Exception as exc:
        return result("error", f"[{chk.clause} {chk.level}] engine not available: constructing it raised "
                               f"{type(exc).__name__}: {exc}. {repro}".strip())
    if reason:
        return result("skipped", reason)
    xfail = _xfail_reason(chk, xfails or {})
    try:
        with block_network():
            chk.func(ctx, **dict(chk.params))
    except KeyboardInterrupt:
        raise
    except CheckSkipped as exc:
        return result("skipped", str(exc))
    except ContractViolation as exc:
        replay = write_replay(chk, exc, failures_dir, engine_spec) if failures_dir else None
        tail = f" Repro: {repro}" if repro else ""
        if replay:
            tail += f" (shrunk example: {replay})"
        if xfail is not None:
            return result("xfailed", f"{exc.render()} [expected failure: {xfail}]", replay)
        return result("failed", exc.render() + tail, replay)
    except EngineUnavailable as exc:
        return result("error", f"[{chk.clause} {chk.level}] engine not available: {exc}. {repro}".strip())
    except BaseException as exc:  # SystemExit from an engine, kit bugs, Hypothesis errors
        tb = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return result("error", f"[{chk.clause} {chk.level}] check could not complete: {tb[:500]}. {repro}".strip())
    if xfail is not None:
        return result("xpassed", f"expected failure did not happen ({xfail})")
    return result("passed")


def select(checks: Iterable[registry.Check], only: Optional[Iterable[str]] = None) -> List[registry.Check]:
    """Filter checks by id prefixes or clause ids (``None`` keeps all)."""
    keys = list(only or [])
    if not keys:
        return list(checks)
    return [c for c in checks if any(c.id.startswith(k) or c.clause == k for k in keys)]


def run_conformance(engine_factory: Callable[[], Any], *, profile: str = "default", only: Optional[Iterable[str]] = None,
                    failures_dir: Optional[Path] = None, derandomize: bool = True,
                    xfails: Optional[Mapping[str, str]] = None) -> List[Result]:
    """Run every registered check (or those matching ``only``) against ``engine_factory``.

    Args:
        engine_factory: zero-argument callable returning a fresh engine.
        profile: ``quick``, ``default`` or ``thorough``.
        only: check-id prefixes or clause ids to run.
        failures_dir: where shrunk failing examples are written (none if None).
    Returns:
        one :class:`Result` per check, in registry order.
    """
    ctx = CheckContext(engine_factory, profile=profile, derandomize=derandomize)
    spec = getattr(engine_factory, "spec", getattr(engine_factory, "__qualname__", repr(engine_factory)))
    try:
        engine_xfails = expected_failures(engine_factory(), xfails)
    except Exception:
        engine_xfails = dict(xfails or {})
    return [run_check(c, ctx, failures_dir=failures_dir, engine_spec=str(spec), xfails=engine_xfails)
            for c in select(registry.all_checks(), only)]


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


__all__ = ["OUTCOMES", "Result", "run_check", "run_conformance", "exit_code", "MUST", "SHOULD"]
