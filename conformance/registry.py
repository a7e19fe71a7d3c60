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
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from conformance.expect import MUST, SHOULD

_ID_RE = re.compile(r"^[A-Z]{1,3}[0-9]*(-[a-z0-9]+)?-[a-z0-9-]+(\[[a-z0-9_-]+\])?$")
_CHECK_MODULES = (
    "conformance.checks.a_surface",
    "conformance.checks.v_messages",
)


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
    """

    id: str
    clause: str
    level: str
    since: str
    title: str
    func: Callable = field(compare=False, repr=False)
    requires: frozenset = frozenset()
    abc_feature: Optional[str] = None
    params: Tuple[Tuple[str, str], ...] = ()


_REGISTRY: Dict[str, Check] = {}


def check(
    clause: str,
    slug: str,
    *,
    level: str,
    title: str,
    since: str = "1.0",
    requires: Iterable[str] = (),
    abc_feature: Optional[str] = None,
    variants: Iterable[str] = (),
    variant_levels: Optional[Dict[str, str]] = None,
) -> Callable[[Callable], Callable]:
    """Register the decorated function as one check per variant (or one check).

    ``variant_levels`` overrides ``level`` for some variants (e.g. V checks are MUST on
    compress() output but SHOULD on select_context() replacements, which the host sanitises).
    """
    if level not in (MUST, SHOULD):
        raise ValueError(f"level must be MUST or SHOULD, got {level!r}")

    def decorate(func: Callable) -> Callable:
        for variant in tuple(variants) or (None,):
            cid = f"{clause}-{slug}" + (f"[{variant}]" if variant else "")
            if not _ID_RE.match(cid):
                raise ValueError(f"check id {cid!r} is not of the form CLAUSE-slug[variant]")
            if cid in _REGISTRY:
                raise ValueError(f"check id {cid!r} registered twice")
            feature = abc_feature
            if variant == "select_context" and feature is None:
                feature = "select_context"
            _REGISTRY[cid] = Check(
                id=cid, clause=clause, level=(variant_levels or {}).get(variant, level), since=since, title=title, func=func,
                requires=frozenset(requires), abc_feature=feature,
                params=(("variant", variant),) if variant else (),
            )
        return func

    return decorate


def load_checks() -> None:
    """Import every check module so its checks register (idempotent)."""
    import importlib

    for name in _CHECK_MODULES:
        importlib.import_module(name)


def all_checks() -> List[Check]:
    """Every registered check, sorted by id (clause order, then slug)."""
    load_checks()
    return [_REGISTRY[k] for k in sorted(_REGISTRY, key=_sort_key)]


def _sort_key(cid: str):
    m = re.match(r"^([A-Z]+)(\d*)", cid)
    letters, number = (m.group(1), int(m.group(2) or 0)) if m else (cid, 0)
    return (letters, number, cid)


def get(check_id: str) -> Check:
    """The check with id ``check_id``; KeyError with the known ids when absent."""
    load_checks()
    try:
        return _REGISTRY[check_id]
    except KeyError:
        raise KeyError(f"no check {check_id!r}; known: {', '.join(sorted(_REGISTRY))}") from None
