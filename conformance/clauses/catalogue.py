"""The clause catalogue: one table of every contract and kit clause, and the declared capabilities.

Every other part of the kit reads clause facts from here: the registry validates a check's
clause, capabilities and host features against it; the session's skip rule reads a case's
host features from it (and the host's own :class:`~simulator.host.profiles.HostProfile`
fields); the scenario judge, the coverage document and the HTML report read titles, sides and
anchors from it. ``tests/docs/test_catalogue.py`` checks it against the anchors of
``docs/contract.md`` (the contract text itself stays in the docs; the catalogue is its index).

Fields of a :class:`Clause`: ``side`` is who keeps the clause (``engine``, ``host`` or
``kit``: host-side clauses are proven by the host, provider and store tests, kit clauses are
the kit's own, documented in ``docs/coverage.md``); ``host_feature`` is the host feature
without which the clause does not exist (hermes-agent 0.19.0 has no ``select_context``, ...);
``permission_only`` is set for clauses that only grant a permission (no engine can break
them); ``practice`` is ``"host"`` when the clause text comes from Hermes' code rather than its
documentation (failure messages then say "host practice").
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from simulator.contract import CONTRACT_DOC
from simulator.host.profiles import HOST_FEATURES

ENGINE, HOST, KIT = "engine", "host", "kit"
COVERAGE_DOC = "docs/coverage.md"


@dataclass(frozen=True)
class Clause:
    """One clause: id, short title, side, host feature, permission, practice (module doc)."""

    id: str
    title: str
    side: str = ENGINE
    host_feature: str | None = None
    permission_only: str | None = None
    practice: str | None = None

    @property
    def section(self) -> str:
        """The contract section: the id's letters (``"TS"`` for ``TS2``)."""
        found = re.match(r"[A-Z]+", self.id)
        return found.group(0) if found else ""

    @property
    def anchor(self) -> str:
        """Where messages point: ``docs/contract.md#v2``, or ``docs/coverage.md#s0`` for kit
        clauses."""
        doc = COVERAGE_DOC if self.side == KIT else CONTRACT_DOC
        return f"{doc}#{self.id.lower()}"


def _c(id: str, title: str, **kw: str) -> Clause:
    return Clause(id, title, **kw)


_SC, _TC, _CL, _MT, _UID = (
    "select_context",
    "on_turn_complete",
    "clone_for_agent",
    "model_thresholds",
    "message_uid",
)

#: Every clause: the kit clauses S0, D1 and E1, then the contract's in document order.
CLAUSES: dict[str, Clause] = {
    c.id: c
    for c in (
        _c("S0", "structural gate: every signature problem of the engine in one message", side=KIT),
        _c("D1", "determinism: same input, same output once uids are masked", side=KIT),
        _c("E1", "sandbox: loopback only, no processes, writes only under its home", side=KIT),
        _c("R1", "exactly one engine is active; context.engine selects it", side=HOST),
        _c("R2", "a plugin engine is activated only by an explicit context.engine", side=HOST),
        _c("R3", "resolution order: bundled, user directory, general plugins, built-in", side=HOST),
        _c("R4", "a plugin folder exports a ContextEngine or register(ctx), with plugin.yaml"),
        _c("R5", "only one engine may be registered; a second is refused"),
        _c("R6", "engine.name equals the configured name and plugin.yaml's name"),
        _c("A1", "name is a property returning a short identifier string"),
        _c("A2", "update_from_response(usage) updates the last_* token counters"),
        _c(
            "A3",
            "should_compress(prompt_tokens=None): a bool, for the argument and today's threshold",
        ),
        _c(
            "A4",
            "compress(): a new valid list, never its edited input; failed summaries decline "
            "or stand in",
        ),
        _c("A5", "focus_topic: guided compaction keeps that topic first"),
        _c(
            "A6", "the six int attributes the host reads; compression_count counts compress() calls"
        ),
        _c("A7", "no compaction on the -1 sentinel right after one", practice="host"),
        _c("V1", "a list of dicts with a role in system/user/assistant/tool"),
        _c("V2", "every tool call answered once, no orphans; a call in flight is kept as is"),
        _c("V3", "content is a str, a list of parts, or None only where allowed"),
        _c("V4", "the whole system prompt stays first; later compactions leave it byte-identical"),
        _c("V5", "output and replacement rows carry only message keys the host knows"),
        _c("O1", "on_session_start(session_id, **kwargs)"),
        _c("O2", "on_session_end(session_id, messages) at a real boundary only"),
        _c("O3", "on_session_reset() zeroes the counters"),
        _c("O4", "update_model() sets context_length and recomputes threshold_tokens"),
        _c("O5", "get_tool_schemas() returns a list"),
        _c("O6", "handle_tool_call() answers an unknown tool with a JSON error"),
        _c("O7", "should_compress_preflight(messages) returns a bool"),
        _c("O8", "get_status() keys; never negative; no raise and 0% on a zero window"),
        _c("O9", "select_context() returns None or a list", host_feature=_SC),
        _c("O10", "on_turn_complete() accepts the host's kwargs", host_feature=_TC),
        _c("O11", "clone_for_agent() returns an engine", host_feature=_CL),
        _c(
            "O12",
            "should_compress_info(p) is (bool, reason) and agrees with should_compress(p)",
            practice="host",
        ),
        _c(
            "O13",
            "prune_tool_results_only() returns (messages, n); a committed prune keeps the "
            "history valid",
            practice="host",
        ),
        _c(
            "O14",
            "has_content_to_compress() is False only where compress() declines",
            practice="host",
        ),
        _c("H1", "fail-open hooks: a broken hook leaves the request untouched"),
        _c("H2", "identity skipping: default hooks are never called", side=HOST),
        _c(
            "H3",
            "select_context replaces one request, live turn kept; history never rewritten",
            host_feature=_SC,
        ),
        _c("H4", "request order: assemble, select_context, sanitizers, cache control", side=HOST),
        _c("H5", "on_turn_complete observes a read-only copy of the turn", host_feature=_TC),
        _c("H6", "a stable selection keeps the prompt cache warm", host_feature=_SC),
        _c("H7", "pre_llm_call may only append to the user message", side=HOST),
        _c("U1", "every persisted message has a 32-hex message_uid", side=HOST, host_feature=_UID),
        _c("U2", "uids on every engine surface; absence is not an error", host_feature=_UID),
        _c("U3", "uids kept across host copies of a message", side=HOST, host_feature=_UID),
        _c("U4", "uids kept across content rewrites", host_feature=_UID),
        _c("U5", "merges keep the first uid and record the others", side=HOST, host_feature=_UID),
        _c("U6", "rows the engine stamps keep the engine's uid", host_feature=_UID),
        _c("U7", "a uid names a logical message; a store holds it once", host_feature=_UID),
        _c(
            "U8",
            "tool-call identity: _tool_call_uids and _tool_call_uid",
            side=HOST,
            host_feature=_UID,
        ),
        _c("U9", "identity fields never reach the wire", side=HOST),
        _c("U10", "only the current turn's message may lack a uid", host_feature=_UID),
        _c("T1", "get_tool_schemas() returns {name, description, parameters} schemas"),
        _c("T2", "handle_tool_call() returns a JSON string"),
        _c("C1", "every agent gets its own engine via clone_for_agent()", host_feature=_CL),
        _c("C2", "a child's update_model() never changes the parent's budget"),
        _c("C3", "a clone that raises falls back to the built-in compressor", side=HOST),
        _c("L1", "the lifecycle order, compaction boundaries kept; no engine call raises"),
        _c(
            "K1",
            "compression.model_thresholds applied by the base update_model()",
            host_feature=_MT,
        ),
        _c(
            "K2",
            "engines that override update_model() own their policy",
            permission_only="engines that override update_model() may ignore model_thresholds",
        ),
        _c("TS1", "compaction runs on a pool thread under a host timeout"),
        _c("TS2", "no publishing outside the commit; timed-out work is discarded"),
        _c("TS3", "passes of different sessions may run in parallel"),
        _c("B1", "the built-in compressor's documented defaults"),
        _c("B2", "phase 1: old tool outputs cleared"),
        _c("B3", "phase 2: head and tail protected, boundaries never split a tool group"),
        _c("B4", "phase 3: the structured summary template"),
        _c("B5", "phase 4: note once, summary role alternates, orphans repaired"),
        _c("B6", "later compactions update the previous summary"),
        _c("B7", "gateway hygiene at 85% of the window", side=HOST),
        _c("P1", "system_and_3: at most 4 cache_control breakpoints", side=HOST),
        _c("P2", "cache marker placement by content shape", side=HOST),
        _c("P3", "a cache hit needs an exact prefix", side=HOST),
        _c("P4", "caching on for Claude models", side=HOST),
        _c("P5", "cache markers are the host's: engine rows carry no cache_control"),
    )
}

# Invariants for every engine on realistic sessions (conformance.checks.sessions).
CLAUSES.update(
    {
        c.id: c
        for c in (
            _c("A8", "compress() keeps the live ask verbatim; a user message remains"),
            _c("A9", "a compaction never returns more tokens than it got"),
            _c("A10", "a fact the engine put in its summary survives later compactions"),
            _c("A11", "the summary stays bounded over many compactions"),
            _c("V6", "output text is valid Unicode and serialises as UTF-8 JSON"),
            _c("V7", "kept rows keep their provider fields, JSON-string arguments and parts"),
        )
    }
)

#: Engine method -> the clause whose checks cover that method raising (what the host does
#: about it: H1 hooks fail open; the lifecycle and optional methods are the engine's to get
#: right). ``clone_for_agent`` is C1: a clone that raises costs the agent its engine (C3).
METHOD_CLAUSES = {
    "select_context": "H1",
    "on_turn_complete": "H1",
    "on_session_start": "O1",
    "on_session_end": "O2",
    "on_session_reset": "O3",
    "update_model": "O4",
    "get_tool_schemas": "O5",
    "handle_tool_call": "O6",
    "should_compress_preflight": "O7",
    "get_status": "O8",
    "should_compress_info": "O12",
    "prune_tool_results_only": "O13",
    "has_content_to_compress": "O14",
    "clone_for_agent": "C1",
    "update_from_response": "A2",
    "should_compress": "A3",
    "compress": "A4",
}
#: Capabilities an engine may declare in ``conformance_capabilities`` (or the user adds with
#: ``--conformance-capabilities``), and what each turns on.
CAPABILITIES: dict[str, str] = {
    "compressor": "the built-in compressor's algorithm: the B clauses apply (B1-B6, REG-h MUST)",
    "focus": "guided compaction: A5's focus check applies",
    "head-decay": "Hermes main's head decay: REG-i instead of B3's head rule",
    "tools": "engine tools (T1, T2 with real schemas)",
}


def get(clause_id: str) -> Clause:
    """The clause ``clause_id``.

    Raises:
        KeyError: no such clause; the message lists the known ids.
    """
    try:
        return CLAUSES[clause_id]
    except KeyError:
        raise KeyError(f"no clause {clause_id!r}; known: {', '.join(CLAUSES)}") from None


def anchor(clause_id: str) -> str:
    """Where a message about ``clause_id`` points (``docs/contract.md#v2``); an unknown id points
    at the contract itself."""
    clause = CLAUSES.get(clause_id)
    return clause.anchor if clause is not None else CONTRACT_DOC


def sort_key(clause_or_check_id: str) -> tuple:
    """Sort key in contract order for a clause id or a check id (letters, then number, then id)."""
    m = re.match(r"^([A-Z]+)(\d*)", clause_or_check_id)
    letters, number = (m.group(1), int(m.group(2) or 0)) if m else (clause_or_check_id, 0)
    return (letters, number, clause_or_check_id)


def capabilities(names: Iterable[str], *, source: str) -> frozenset:
    """``names`` as a set of declared capabilities.

    Raises:
        ValueError: a name is not a capability; the message names ``source`` (where the name
            came from), the known capabilities and the closest match (the session raises it to
            the user as a :class:`~conformance.clauses.errors.KitUsageError`).
    """
    out = frozenset(str(n).strip() for n in names if str(n).strip())
    unknown = sorted(out - CAPABILITIES.keys())
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, CAPABILITIES, n=1)
            hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ValueError(
            f"{source}: unknown capability {', '.join(hints)}; the known capabilities are "
            + ", ".join(f"{k!r} ({v})" for k, v in CAPABILITIES.items())
        )
    return out


def host_features(names: Iterable[str], *, source: str) -> frozenset:
    """``names`` as a set of host features (:data:`~simulator.host.profiles.HOST_FEATURES`).

    Raises:
        ValueError: an unknown feature (a kit bug: features are declared in code).
    """
    out = frozenset(names)
    unknown = sorted(out - set(HOST_FEATURES))
    if unknown:
        raise ValueError(f"{source}: unknown host feature(s) {unknown}; known: {HOST_FEATURES}")
    return out


__all__ = [
    "CAPABILITIES",
    "METHOD_CLAUSES",
    "CLAUSES",
    "Clause",
    "anchor",
    "capabilities",
    "get",
    "host_features",
    "sort_key",
]
