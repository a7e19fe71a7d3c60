"""The check registry: every check is one function registered with its clause id.

Usage::

    @check("V2", "tool-results-paired", level=MUST, title="no orphan tool calls or results",
           variants=("compress", "select_context"))
    def check_v2_tool_results_paired(ctx, variant):
        ...

registers ``V2-tool-results-paired[compress]`` and ``...[select_context]``. Ids are ASCII,
deterministic and sorted. Every declaration is validated when the module is imported: the
clause against the catalogue (:mod:`conformance.clauses.catalogue`), capabilities against its
declared set, host features against the host's (:data:`~simulator.host.profiles.HOST_FEATURES`),
and the function's name against the id (``check_<id in snake case>``). The registry feeds the
one stream of cases (:mod:`conformance.run.cases`) that every front end runs.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.authoring.expect import MUST, SHOULD
from conformance.clauses import catalogue

_ID_RE = re.compile(r"^[A-Z]{1,3}[0-9]*(-[a-z0-9]+)?-[a-z0-9-]+(\[[a-z0-9_-]+\])?$")
_CHECK_MODULES = (
    "conformance.checks.s_structure",
    "conformance.checks.a_surface",
    "conformance.checks.a_compaction",
    "conformance.checks.v_messages",
    "conformance.checks.v_system_prompt",
    "conformance.checks.p_caching",
    "conformance.checks.o_optional",
    "conformance.checks.o_consistency",
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
    "conformance.checks.e_sandbox",
    "conformance.checks.reg_cases",
    "conformance.checks.reg_passes",
    "conformance.checks.sessions",
)
#: Kinds of case (tiers): the structural gate, Hypothesis contract checks, the lifecycle state
#: machine, determinism, regression cases from public reports, scenario expectations, snapshots.
KINDS = ("structural", "contract", "stateful", "determinism", "regression", "scenario", "snapshot")
#: Variants that are themselves host features (``H1-hooks-do-not-raise[select_context]`` needs
#: a host that calls select_context).
_FEATURE_VARIANTS = ("select_context", "on_turn_complete")
#: A marker for "the clause's own host feature" (the default of ``needs``).
CLAUSE_FEATURE = object()


@dataclass(frozen=True)
class Check:
    """One registered check (a case of the stream, see :mod:`conformance.run.cases`).

    Attributes:
        id: e.g. ``"V2-tool-results-paired[compress]"``.
        clause: contract clause id, e.g. ``"V2"``.
        level: ``"MUST"`` or ``"SHOULD"``.
        since: contract version that introduced the check.
        title: one line saying what is checked (HTML report, coverage doc, ``--collect-only``).
        func: ``func(ctx, **params)``; raises ContractViolation on failure.
        requires: engine capabilities the check needs (else skipped).
        needs: host features the check needs (else skipped on a host without them).
        params: variant parameters passed to ``func``.
        excludes: capabilities that make the check not apply (e.g. the SHOULD twin of a
            check that is MUST for ``compressor`` engines).
        kind: one of :data:`KINDS`.
        practice: ``"host"`` when the check's rule comes from Hermes' code rather than its
            docs (its failures say "host practice"), ``"kit"`` for the kit's own practice.
        examples: Hypothesis examples drawn under the default profile (None: the profile's
            full count); the profile scales it
            (:meth:`conformance.authoring.context.CheckContext.budget`).
    """

    id: str
    clause: str
    level: str
    since: str
    title: str
    func: Callable = field(compare=False, repr=False)
    requires: frozenset = frozenset()
    needs: frozenset = frozenset()
    params: tuple[tuple[str, str], ...] = ()
    excludes: frozenset = frozenset()
    kind: str = "contract"
    practice: str | None = None
    examples: int | None = None

    def execute(self, session: Any, ctx: Any) -> None:
        """Run the check body on ``ctx`` (a :class:`~conformance.authoring.context.CheckContext`;
        the
        session is not needed by checks).

        Raises:
            ContractViolation, HostileEngine, CheckSkipped, EngineUnavailable: as the body does.
        """
        self.func(ctx, **dict(self.params))

    def repro(self, base: str, violation: Any = None) -> str:
        """The command rerunning this check by id (a failure file, when written, wins)."""
        return f"{base} -k '{self.id}'"


_REGISTRY: dict[str, Check] = {}


def function_name(check_id: str) -> str:
    """The name a check function must have: ``V2-tool-results-paired[compress]`` ->
    ``check_v2_tool_results_paired`` (the variant is a parameter, not part of the name)."""
    base = check_id.split("[", 1)[0]
    return "check_" + re.sub(r"[^a-z0-9]+", "_", base.lower()).strip("_")


def check(
    clause: str,
    slug: str,
    *,
    level: str,
    title: str,
    since: str = "1.0",
    requires: Iterable[str] = (),
    needs: Any = CLAUSE_FEATURE,
    variants: Iterable[str] = (),
    variant_levels: dict[str, str] | None = None,
    reg: str | None = None,
    excludes: Iterable[str] = (),
    kind: str = "contract",
    practice: str | None = None,
    examples: int | None = None,
) -> Callable[[Callable], Callable]:
    """Register the decorated function as one check per variant (or one check).

    ``variant_levels`` overrides ``level`` for some variants (e.g. V checks are MUST on
    compress() output but SHOULD on select_context() replacements, which the host sanitises).
    ``reg`` ("a".."j") makes a regression case: id ``REG-<reg>-<slug>``, still serving
    ``clause``. ``needs`` defaults to the clause's host feature (catalogue); a variant named
    after a host feature needs it too. ``examples``: see :class:`Check`.

    Raises:
        ValueError: an unknown clause, capability, host feature, level or kind, a malformed or
            duplicate id, or a function not named after its id.
    """
    if level not in (MUST, SHOULD):
        raise ValueError(f"level must be MUST or SHOULD, got {level!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if examples is not None and (not isinstance(examples, int) or examples < 1):
        raise ValueError(f"examples must be a positive int, got {examples!r}")
    entry = catalogue.get(clause)
    if reg is not None:
        kind = "regression" if kind == "contract" else kind
    where = f"check {clause}-{slug}"
    required = catalogue.capabilities(requires, source=where)
    excluded = catalogue.capabilities(excludes, source=where)
    if needs is CLAUSE_FEATURE:
        base_needs = frozenset([entry.host_feature]) if entry.host_feature else frozenset()
    else:
        base_needs = catalogue.host_features(needs, source=where)

    def decorate(func: Callable) -> Callable:
        for variant in tuple(variants) or (None,):
            prefix = f"REG-{reg}" if reg else clause
            cid = f"{prefix}-{slug}" + (f"[{variant}]" if variant else "")
            if not _ID_RE.match(cid):
                raise ValueError(f"check id {cid!r} is not of the form CLAUSE-slug[variant]")
            if cid in _REGISTRY:
                raise ValueError(f"check id {cid!r} registered twice")
            if func.__name__ != function_name(cid):
                raise ValueError(
                    f"check {cid!r} is implemented by {func.__name__}; name it {function_name(cid)}"
                )
            feature = {variant} if variant in _FEATURE_VARIANTS else set()
            _REGISTRY[cid] = Check(
                id=cid,
                clause=clause,
                level=(variant_levels or {}).get(variant, level) if variant else level,
                since=since,
                title=title,
                func=func,
                requires=required,
                needs=base_needs | frozenset(feature),
                params=(("variant", variant),) if variant else (),
                excludes=excluded,
                kind=kind,
                practice=practice,
                examples=examples,
            )
        return func

    return decorate


def load_checks() -> None:
    """Import every check module so its checks register (idempotent)."""
    for name in _CHECK_MODULES:
        importlib.import_module(name)


def all_checks() -> list[Check]:
    """Every registered check, sorted by id (clause order, then slug)."""
    load_checks()
    return [_REGISTRY[k] for k in sorted(_REGISTRY, key=catalogue.sort_key)]


def get(check_id: str) -> Check:
    """The check with id ``check_id``.

    Raises:
        KeyError: no such check; the message lists the known ids.
    """
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
