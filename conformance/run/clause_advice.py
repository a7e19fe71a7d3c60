"""What usually makes a clause fail, and how to fix it: the advice ``context-engine-kit explain``
prints and the HTML report embeds.

:data:`ADVICE` has one :class:`Advice` per engine-facing clause and per kit clause of the
catalogue (:mod:`conformance.clauses.catalogue`); ``tests/docs/test_explain.py`` checks that none is
missing. Host-side clauses are kept by the host, so they share :data:`HOST_ADVICE` unless they
have an entry of their own. :data:`KIT_TEXTS` holds the text of the kit's own clauses (S0, D1,
E1), which are not in ``docs/contract.md``.

The texts of the entries live in two tables of ``(cause, fix)`` pairs:
:mod:`conformance.run.clause_advice_surface` (the kit clauses, the plugin folder, the required
surface, the messages, the optional methods) and :mod:`conformance.run.clause_advice_behaviour`
(hooks, identity, tools, clones, lifecycle, configuration, threads, the built-in compressor,
caching, the invariants on realistic sessions).
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.run.clause_advice_behaviour import BEHAVIOUR_ADVICE
from conformance.run.clause_advice_surface import SURFACE_ADVICE


@dataclass(frozen=True)
class Advice:
    """What usually causes a failure of a clause (``cause``) and how to fix it (``fix``)."""

    cause: str
    fix: str


#: The text of the kit's own clauses (they are not contract clauses; docs/coverage.md#s0).
KIT_TEXTS = {
    "S0": "S0 (kit clause) Structural gate: before any other check the kit inspects the engine "
    "once: the required methods (update_from_response, should_compress, compress) exist, name is a "
    "property, every method the host calls accepts the arguments the host passes (**kwargs where "
    "the ABC has them, the keyword arguments of select_context), and the engine subclasses "
    "ContextEngine. Every problem is reported together, in one message.",
    "D1": "D1 (kit clause, SHOULD) Determinism: two fresh engines given the same input return the "
    "same compress() and select_context() output once message uids are masked by first appearance "
    "(<uid-1>, <uid-2>, ...). A stored snapshot (--snapshot-update) is the engine's own baseline: "
    "a changed output is a D1 mismatch, and it fails the run.",
    "E1": "E1 (kit clause, MUST) Sandbox: every engine the kit builds has its own HOME, "
    "HERMES_HOME, TMPDIR and working directory; a connection or datagram to a non-loopback "
    "address, a process spawn, or a write outside that home is blocked (the engine gets an "
    "OSError) and reported, even when the engine swallows the error. A summary LLM is offered on "
    "loopback, configured in the engine's Hermes home (auxiliary.compression).",
}

#: Advice for a host-side clause without an entry of its own.
HOST_ADVICE = Advice(
    cause="This clause is kept by the host (the kit's reference host, or Hermes), not by the "
    "engine: no check of the engine serves it. The kit proves it with its own host, provider and "
    "store tests (docs/coverage.md lists them).",
    fix="Nothing to fix in your engine. If a scenario or a check seems to blame your engine for "
    "it, rerun the Repro command and report the case to the kit with the failure file.",
)

#: One entry per engine-facing clause and per kit clause: the surface's
#: (:mod:`conformance.run.clause_advice_surface`), then the behaviour's
#: (:mod:`conformance.run.clause_advice_behaviour`), each in its table's order.
ADVICE: dict[str, Advice] = {
    clause: Advice(cause, fix)
    for table in (SURFACE_ADVICE, BEHAVIOUR_ADVICE)
    for clause, (cause, fix) in table.items()
}


def advice(clause_id: str, side: str) -> Advice:
    """The advice for ``clause_id``: its own entry, or :data:`HOST_ADVICE` for a host-side
    clause without one.

    Raises:
        KeyError: an engine-facing or kit clause without an entry (a kit bug; the test catches
            it).
    """
    if clause_id in ADVICE:
        return ADVICE[clause_id]
    if side == "host":
        return HOST_ADVICE
    raise KeyError(f"no advice for clause {clause_id!r}")


__all__ = ["ADVICE", "Advice", "HOST_ADVICE", "KIT_TEXTS", "advice"]
