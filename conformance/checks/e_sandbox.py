"""The check of kit clause E1 (the sandbox): an engine's whole lifecycle stays in its home.

Every case runs each engine in a sandbox of its own (:mod:`conformance.runtime.sandbox`): a
connection
outside loopback, a process spawn or a write outside the engine's home is blocked and turns the
case into an E1 failure, whichever check it happened in. This check walks one engine through
its whole lifecycle (constructor, session start, usage, the compaction decision, compress, the
hooks, a clone, the session end) so that E1 has a case of its own in the verdict and in the
kill matrix: it fails exactly when the engine reaches outside during one of those calls.
"""

from __future__ import annotations

import copy

from conformance.authoring.expect import MUST
from conformance.authoring.registry import check
from conformance.authoring.strategies import filler_block
from conformance.checks.engine_calls import (
    RAISED,
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    turn_complete_like_host,
    usage,
)
from conformance.clauses.errors import ContractViolation
from simulator.provider.tokens import count_messages


@check(
    "E1",
    "engine-stays-in-its-sandbox",
    level=MUST,
    practice="kit",
    title="a whole lifecycle reaches no network but loopback, starts no process, writes only "
    "under the engine's home",
)
def check_e1_engine_stays_in_its_sandbox(ctx):
    """E1 (kit practice): one lifecycle; the sandbox reports what the engine reached for."""
    engine = ctx.new_engine()
    history = [{"role": "system", "content": "You are the sandbox test assistant."}]
    for k in range(5):
        history += filler_block(300, 4_000, k)
    history.append({"role": "user", "content": "go on"})
    for method, args in (
        ("on_session_start", ("session-e1",)),
        ("update_from_response", (usage(count_messages(history)),)),
        ("should_compress", (count_messages(history),)),
    ):
        try:
            invoke("E1", MUST, engine, method, *args)
        except ContractViolation:
            pass  # a raise is the method's own clause's finding
    try:
        compress_like_host("E1", MUST, engine, history)
    except ContractViolation:
        pass
    if overrides(engine, "select_context"):
        fail_open(select_like_host, "E1", MUST, engine, history)
    if overrides(engine, "on_turn_complete"):
        fail_open(turn_complete_like_host, "E1", MUST, engine, copy.deepcopy(history), usage(100))
    clone = fail_open(invoke, "E1", MUST, engine, "clone_for_agent")
    if clone is not RAISED and clone is not None:
        fail_open(invoke, "E1", MUST, clone, "get_status")
    fail_open(invoke, "E1", MUST, engine, "on_session_end", "session-e1", copy.deepcopy(history))
