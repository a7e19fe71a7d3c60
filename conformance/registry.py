"""The check registry: every check is one function registered with its clause id.

Usage::

    @check("V2", "tool-results-paired", level=MUST, variants=("compress", "select_context"))
    def check_tool_results_paired(ctx, variant):
        ...

registers ``V2-tool-results-paired[compress]`` and ``...[select_context]``. Ids are
ASCII, deterministic and sorted; the same registry drives the pytest plugin and
:func:`conformance.runner.run_conformance`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from conformance.expect import MUST, SHOULD

_ID_RE = re.compile(r"^[A-Z]{1,3}[0-9]*(-[a-z0-9]+)?-[a-z0-9-]+(\[[a-z0-9_-]+\])?$")
_CHECK_MODULES = (
    "conformance.checks.s_structure",
    "conformance.checks.a_surface",
    "conformance.checks.v_messages",
    "conformance.checks.o_optional",
    "conformance.checks.h_hooks",
    "conformance.checks.u_identity",
    "conformance.checks.t_tools",
    "conformance.checks.c_clones",
    "conformance.checks.l_lifecycle",
    "conformance.checks.k_config",
    "conformance.checks.ts_threads",
    "conformance.checks.b_compressor",
    "conformance.checks.r_plugin",
    "conformance.checks.d_determinism",
    "conformance.checks.reg_cases",
)
#: Kinds of check (tiers): the structural gate, Hypothesis contract checks, the lifecycle
#: state machine, determinism, regression cases from public reports, bundled scenarios.
KINDS = ("structural", "contract", "stateful", "determinism", "regression", "scenario")


@dataclass(frozen=True)
class Check:
    """One registered check.

    Attributes:
        id: e.g. ``"V2-tool-results-paired[compress]"``.
        clause: contract clause id, e.g. ``"V2"``.
        level: ``"MUST"`` or ``"SHOULD"``.
        since: contract version that introduced the check.
        title: one line saying what is checked.
        func: ``func(ctx, **params)``; raises ContractViolation on failure.
        requires: engine capabilities the check needs (else skipped).
        abc_feature: ABC feature the clause needs (e.g. ``"select_context"``); the check is
            skipped under an ABC that lacks it (hermes-agent 0.19.0).
        params: variant parameters passed to ``func``.
        excludes: capabilities that make the check not apply (e.g. the SHOULD twin of a
            check that is MUST for ``compressor`` engines).
        kind: one of :data:`KINDS`.
        practice: ``"host"`` or ``"kit"`` when the clause text comes from Hermes' code or
            the kit rather than the seeds (failure messages then say so).
        owner: the issue that owns the clause (docs/coverage.md).
    """

    id: str
    clause: str
    level: str
    since: str
    title: str
    func: Callable = field(compare=False, repr=False)
    requires: frozenset = frozenset()
    abc_feature: str | None = None
    params: tuple[tuple[str, str], ...] = ()
    excludes: frozenset = frozenset()
    kind: str = "contract"
    practice: str | None = None
    owner: str = "issue 6"


_REGISTRY: dict[str, Check] = {}


def check(
    clause: str,
    slug: str,
    *,
    level: str,
    title: str,
    since: str = "1.0",
    requires: Iterable[str] = (),
    abc_feature: str | None = None,
    variants: Iterable[str] = (),
    variant_levels: dict[str, str] | None = None,
    reg: str | None = None,
    excludes: Iterable[str] = (),
    kind: str = "contract",
    practice: str | None = None,
    owner: str = "issue 6",
) -> Callable[[Callable], Callable]:
    """Register the decorated function as one check per variant (or one check).

    ``variant_levels`` overrides ``level`` for some variants (e.g. V checks are MUST on
    compress() output but SHOULD on select_context() replacements, which the host sanitises).
    ``reg`` ("a".."j") makes a regression case: id ``REG-<reg>-<slug>``, still serving
    ``clause``.
    """
    if level not in (MUST, SHOULD):
        raise ValueError(f"level must be MUST or SHOULD, got {level!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if reg is not None:
        kind = "regression" if kind == "contract" else kind

    def decorate(func: Callable) -> Callable:
        for variant in tuple(variants) or (None,):
            prefix = f"REG-{reg}" if reg else clause
            cid = f"{prefix}-{slug}" + (f"[{variant}]" if variant else "")
            if not _ID_RE.match(cid):
                raise ValueError(f"check id {cid!r} is not of the form CLAUSE-slug[variant]")
            if cid in _REGISTRY:
                raise ValueError(f"check id {cid!r} registered twice")
            feature = abc_feature
            if variant == "select_context" and feature is None:
                feature = "select_context"
            _REGISTRY[cid] = Check(
                id=cid,
                clause=clause,
                level=(variant_levels or {}).get(variant, level),
                since=since,
                title=title,
                func=func,
                requires=frozenset(requires),
                abc_feature=feature,
                params=(("variant", variant),) if variant else (),
                excludes=frozenset(excludes),
                kind=kind,
                practice=practice,
                owner=owner,
            )
        return func

    return decorate


def load_checks() -> None:
    """Import every check module so its checks register (idempotent)."""
    import importlib

    for name in _CHECK_MODULES:
        importlib.import_module(name)


def all_checks() -> list[Check]:
    """Every registered check, sorted by id (clause order, then slug)."""
    load_checks()
    return [_REGISTRY[k] for k in sorted(_REGISTRY, key=_sort_key)]


def _sort_key(cid: str):
    m = re.match(r"^([A-Z]+)(\d*)", cid)
    letters, number = (m.group(1), int(m.group(2) or 0)) if m else (cid, 0)
    return (letters, number, cid)


def clause_key(clause: str):
    """Sort key of a clause id in contract order (letters, then number)."""
    return _sort_key(clause)


def get(check_id: str) -> Check:
    """The check with id ``check_id``; KeyError with the known ids when absent."""
    load_checks()
    try:
        return _REGISTRY[check_id]
    except KeyError:
        raise KeyError(f"no check {check_id!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def clause_level(clause: str) -> str | None:
    """The registry's level for ``clause``: ``"MUST"`` when any of its checks is MUST,
    ``"SHOULD"`` when all are SHOULD, None when no check serves it (a host-side clause).

    Scenario expectations use it so that what a scenario observes weighs no more than the
    checks of the same clause (see :mod:`conformance.scenarios.expectations`).
    """
    levels = {c.level for c in all_checks() if c.clause == clause}
    return (MUST if MUST in levels else SHOULD) if levels else None
