"""One run, several hosts: which host profiles a run plays, and which cases depend on the host.

``--host-profile=documented,hermes-0.19`` (or ``all``, every profile of
:data:`simulator.host.profiles.PROFILES`) checks an engine on several hosts in one run. A case
runs once per distinct **host view**: the values of the :class:`~simulator.host.profiles.
HostProfile` fields the case reads. Hosts that show a case the same view share one run of it,
and its result stands for all of them; hosts where the case does not apply (a host feature it
needs is missing, :meth:`HostProfile.has`) get no run of it. So:

- a case that reads no host field (a surface attribute, a plugin folder, a snapshot) runs
  once, keeps its plain id, and its row stands for every host of the run;
- a case whose hosts differ in what it reads runs once per view; its id gets the name of the
  host it is played on as a suffix, ``V2-tool-results-paired[compress][hermes-0.19]``, and
  its row says which hosts it stands for (``hermes-0.19`` and ``hermes-0.22`` send compress()
  the same history without the system row, so one run covers both).

What a case reads (:func:`fields_read`):

- a scenario expectation reads every field: a scenario file is played on the reference host
  of that profile (unless the file names its own ``host.profile``: then it reads none);
- a snapshot case reads none (the corpus is fixed; no host call shapes it);
- a check reads the fields listed for its id in :data:`READS` (longest id prefix wins),
  else none. A check reads the profile only through :func:`host_field` (and the helpers
  :func:`as_sent` and :func:`request_as_sent`), which refuses, in a run of several hosts, a
  field the check does not declare: a check that reads more than it declares would give
  one host's verdict for another, so that is a kit fault, never a silent merge.

docs/multihost.md says, check family by check family, what the host changes for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulator.host.profiles import DOCUMENTED, PROFILES, HostProfile, get_profile

if TYPE_CHECKING:
    from conformance.authoring.case import Case

#: ``--host-profile=all``: every host profile the kit knows, in :data:`PROFILES` order.
ALL = "all"

#: The default host set of every front end (README, "Host profiles"): ``documented`` alone.
#: (See :func:`default_hosts`: with a real Hermes installed its matching profile is added.)
DEFAULT = DOCUMENTED

#: The profile fields that shape what the host sends to each engine method.
SYSTEM_ROW = {
    "compress": "compress_with_system",
    "select_context": "hooks_with_system",
    "on_turn_complete": "hooks_with_system",
    "on_session_end": "hooks_with_system",
}
#: The profile field that strips ``request_messages`` of the persistence-only fields.
STRIPS_REQUEST = "request_strips_persistence_fields"
#: Fields whose presence says how the host makes a per-agent copy (C1).
CLONE_FIELDS = ("clone_for_agent",)

#: Profile fields each check reads, by check id prefix (the longest matching prefix wins).
#: Every entry names the helper through which the check reads them.
READS: dict[str, tuple[str, ...]] = {
    # V1-V4 on drawn histories (v_messages._outputs): what compress() gets, and select_context's
    # request_messages (stripped on 0.22) and conversation_messages (no system row on Hermes)
    "V1-list-of-role-dicts[compress]": ("compress_with_system",),
    "V2-tool-results-paired[compress]": ("compress_with_system",),
    "V3-content-types[compress]": ("compress_with_system",),
    "V4-system-prompt-first[compress]": ("compress_with_system",),
    "V1-list-of-role-dicts[select_context]": ("hooks_with_system", STRIPS_REQUEST),
    "V2-tool-results-paired[select_context]": ("hooks_with_system", STRIPS_REQUEST),
    "V3-content-types[select_context]": ("hooks_with_system", STRIPS_REQUEST),
    "V4-system-prompt-first[select_context]": ("hooks_with_system", STRIPS_REQUEST),
    # H6's stable selection on drawn histories (h_hooks): what select_context() gets
    "H6-stable-selection": ("hooks_with_system", STRIPS_REQUEST),
    # V4 on a system prompt the check hands compress(): skipped where the host sends none
    # (select_context's request_messages carry the system row on every host)
    "V4-whole-system-prompt-kept[compress]": ("compress_with_system",),
    "V4-system-prompt-stable": ("compress_with_system",),
    # the per-agent copy (c_clones.per_agent_copy): clone_for_agent or copy.deepcopy
    "C1-": CLONE_FIELDS,
    "C2-": CLONE_FIELDS,
    "L1-lifecycle-state-machine": CLONE_FIELDS,
    "REG-e-shared-registered-instance": CLONE_FIELDS,  # c_clones.clone_or_skip
}

#: What :func:`fields_read` returns for a case that reads every field (a scenario).
EVERY_FIELD: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(HostProfile))


class UndeclaredHostField(BaseException):
    """A check read a host profile field it does not declare in :data:`READS` (a kit fault).

    A BaseException, so that no check's ``except Exception`` can turn the kit fault into a
    skip or a finding: the case ends as an error naming the check and the field."""


def known_hosts() -> tuple[str, ...]:
    """Every host profile name, in :data:`PROFILES` order."""
    return tuple(PROFILES)


def parse_hosts(spec: str | Iterable[str] | None) -> tuple[str, ...]:
    """The hosts of ``--host-profile=SPEC``: one name, a comma-separated list, or ``all``.

    Args:
        spec: ``"documented"``, ``"documented,hermes-0.19"``, ``"all"``, a sequence of names,
            or None / "" (:func:`default_hosts`).
    Returns:
        the host names, in the order given (duplicates dropped), at least one.
    Raises:
        ValueError: an unknown or empty name; the message lists the known ones and ``all``.
    """
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        return default_hosts()
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for raw in items:
        name = str(raw).strip()
        if name == ALL:
            out += [h for h in known_hosts() if h not in out]
            continue
        if name not in PROFILES:
            raise ValueError(
                f"host profile {name!r}: use one of {', '.join(known_hosts())}, a "
                f"comma-separated list of them, or {ALL!r}"
            )
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"no host profile given: use one of {', '.join(known_hosts())} or 'all'")
    return tuple(out)


def default_hosts() -> tuple[str, ...]:
    """The hosts a run plays when none is given: ``documented``, plus the profile of the real
    Hermes installed next to the kit (:func:`simulator.host.shim.abc_info`'s ``profile``),
    so the host an author deploys on is in every run."""
    from simulator.host.shim import abc_info

    out = [DEFAULT]
    matching = getattr(abc_info(), "profile", None)
    if matching and matching in PROFILES and matching not in out:
        out.append(matching)
    return tuple(out)


def spec_text(hosts: Sequence[str]) -> str:
    """``--host-profile`` text for ``hosts`` (``all`` when it is every known host)."""
    if tuple(hosts) == known_hosts() and len(hosts) > 1:
        return ALL
    return ",".join(hosts)


def fields_read(case: Case) -> tuple[str, ...]:
    """The host profile fields ``case`` reads (module doc)."""
    case = getattr(case, "base", case)
    kind = getattr(case, "kind", "contract")
    if kind == "snapshot":
        return ()
    if kind == "scenario":
        pinned = (getattr(getattr(case, "scenario", None), "host", None) or {}).get("profile")
        return () if pinned else EVERY_FIELD
    cid = case.id
    best = max((p for p in READS if cid.startswith(p)), key=len, default=None)
    return READS[best] if best is not None else ()


def applies(case: Case, profile: HostProfile) -> str | None:
    """Why ``case`` does not exist on ``profile`` (a host feature it needs is missing), or None."""
    for feature in sorted(getattr(case, "needs", ()) or ()):
        if not profile.has(feature):
            return (
                f"the host profile {profile.name!r} has no {feature}; clause {case.clause} "
                "does not exist on that host"
            )
    return None


def view(case: Case, profile: HostProfile) -> tuple:
    """The host view of ``case`` on ``profile``: the values of the fields it reads."""
    return tuple((f, repr(getattr(profile, f, None))) for f in fields_read(case))


@dataclass(frozen=True)
class HostCase:
    """One case of the stream played on one host, standing for every host with its view.

    Attributes:
        base: the case (a registry :class:`~conformance.authoring.registry.Check`, a
            :class:`~conformance.run.cases.ScenarioCase`, ...).
        host: the profile name it is played on.
        hosts: every host its result stands for (``host`` first).
        suffixed: its id carries ``[host]`` (the case has several views in this run).
        not_on: ``((host, reason), ...)``: the run's hosts where the case does not exist.

    Every other attribute (``clause``, ``level``, ``kind``, ``needs``, ``path``, ...) is the
    base case's.
    """

    base: Case
    host: str
    hosts: tuple[str, ...]
    suffixed: bool = False
    not_on: tuple = ()

    @property
    def id(self) -> str:
        """The base id, with ``[host]`` when the case has several views in this run."""
        return f"{self.base.id}[{self.host}]" if self.suffixed else self.base.id

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("base", "host", "hosts", "suffixed", "not_on"):
            raise AttributeError(name)
        return getattr(self.base, name)

    def execute(self, session: Any, ctx: Any) -> None:
        """Run the base case with the context of this host (``ctx.host_profile``)."""
        self.base.execute(session, dataclasses.replace(ctx, host_profile=self.host))

    def capture(self, ctx: Any) -> Any:
        """A snapshot case's capture (snapshots read no host field)."""
        return self.base.capture(dataclasses.replace(ctx, host_profile=self.host))

    def repro(self, base: str, violation: Any = None) -> str:
        """The base case's rerun command (``base`` already names this host)."""
        if hasattr(self.base, "repro"):
            return self.base.repro(base, violation)
        return f"{base} -k '{self.base.id}'"


def expand(cases: Iterable[Case], hosts: Sequence[str]) -> list[Case]:
    """The stream of a run over ``hosts``: each case once per distinct host view (module doc),
    in stream order, a case's views in ``hosts`` order. With one host the cases are returned
    unchanged (ids, time and behaviour of a one-host run do not change)."""
    cases = list(cases)
    if len(hosts) < 2:
        return cases
    profiles = [get_profile(h) for h in hosts]
    out: list[Case] = []
    for case in cases:
        groups: dict[tuple, list[str]] = {}
        not_on = []
        for p in profiles:
            why = applies(case, p)
            if why is not None:
                not_on.append((p.name, why))
                continue
            groups.setdefault(view(case, p), []).append(p.name)
        if not groups:  # applies nowhere: one row, skipped by the first host's reason
            out.append(HostCase(case, hosts[0], tuple(hosts), False, tuple(not_on)))
            continue
        several = len(groups) > 1
        for names in groups.values():
            out.append(HostCase(case, names[0], tuple(names), several, tuple(not_on)))
    return out


def host_of(case: Case) -> str | None:
    """The host a case of the stream is played on (None: the run's one host)."""
    return case.host if isinstance(case, HostCase) else None


def host_field(ctx: Any, name: str) -> Any:
    """``ctx``'s host profile's field ``name`` (None when the profile has no such field), read
    the way checks must read it: in a run of several hosts, a field the check being run does
    not declare (:data:`READS`) is refused.

    Raises:
        UndeclaredHostField: the check does not declare ``name`` (a kit fault).
    """
    check = getattr(ctx, "check", None)
    if isinstance(check, HostCase) and name not in fields_read(check):
        raise UndeclaredHostField(
            f"kit fault: check {check.base.id} reads the host profile field {name!r}, which "
            "conformance.authoring.hosts.READS does not list for it (its verdict would be "
            "shared by hosts that differ there); please report it"
        )
    return getattr(get_profile(ctx.host_profile), name, None)


def as_sent(ctx: Any, messages: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """``messages`` as the host of ``ctx`` hands them to ``method`` (``compress``,
    ``select_context``, ``on_turn_complete``, ``on_session_end``): without the leading system
    row when that host keeps the system prompt to itself (real Hermes hosts:
    ``compress_with_system`` / ``hooks_with_system`` False), else unchanged. The list returned
    is new; its rows are the same objects.

    Raises:
        UndeclaredHostField: as :func:`host_field`.
    """
    if host_field(ctx, SYSTEM_ROW[method]):
        return list(messages)
    rows = list(messages)
    while rows and isinstance(rows[0], dict) and rows[0].get("role") == "system":
        rows.pop(0)
    return rows


def skip_unless_system_sent(ctx: Any, method: str, clause: str) -> None:
    """Skip a check about the system row in ``method``'s input on a host that never sends one
    there (real Hermes hosts keep the system prompt to themselves and put it back on the
    request: an engine cannot drop or change what it never sees).

    Raises:
        CheckSkipped: the host of ``ctx`` sends ``method`` no system row.
        UndeclaredHostField: as :func:`host_field`.
    """
    from conformance.clauses.errors import CheckSkipped

    if not host_field(ctx, SYSTEM_ROW[method]):
        raise CheckSkipped(
            f"the host profile {ctx.host_profile!r} hands {method}() the history without the "
            f"system row (it keeps the system prompt itself): clause {clause}'s system-prompt "
            "rule has nothing to hold on that host"
        )


def request_as_sent(ctx: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """select_context's ``request_messages`` as the host of ``ctx`` hands them: copies of
    the rows without the persistence-only fields (U9's ``message_uid``, ``timestamp``, ...,
    and the profile's own ``persistence_fields``, if it has them) when the host strips them
    (``request_strips_persistence_fields``, real Hermes 0.22), else the rows unchanged.

    Raises:
        UndeclaredHostField: as :func:`host_field`.
    """
    if not host_field(ctx, STRIPS_REQUEST):
        return messages
    from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS

    extra = getattr(get_profile(ctx.host_profile), "persistence_fields", frozenset()) or ()
    drop = set(PERSISTENCE_ONLY_FIELDS) | set(extra)
    return [
        {k: v for k, v in m.items() if k not in drop} if isinstance(m, dict) else m
        for m in messages
    ]


__all__ = [
    "ALL",
    "DEFAULT",
    "READS",
    "HostCase",
    "UndeclaredHostField",
    "applies",
    "as_sent",
    "default_hosts",
    "expand",
    "fields_read",
    "host_field",
    "host_of",
    "known_hosts",
    "parse_hosts",
    "request_as_sent",
    "skip_unless_system_sent",
    "spec_text",
    "view",
]
