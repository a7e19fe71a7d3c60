"""What usually makes a clause fail, and how to fix it: the advice ``context-engine-kit explain``
prints and the HTML report embeds.

:data:`ADVICE` has one :class:`Advice` per engine-facing clause and per kit clause of the
catalogue (:mod:`conformance.clauses.catalogue`); ``tests/docs/test_explain.py`` checks that none is
missing. Host-side clauses are kept by the host, so they share :data:`HOST_ADVICE` unless they
have an entry of their own. :data:`KIT_TEXTS` holds the text of the kit's own clauses (S0, D1),
which are not in ``docs/contract.md``.
"""

from __future__ import annotations

from dataclasses import dataclass


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

_HOOK_SIGNATURES = (
    "Compare your method with the ABC's signature (agent.context_engine.ContextEngine) and "
    "accept **kwargs, so that arguments newer hosts pass do not break the call."
)

#: One entry per engine-facing clause and per kit clause.
ADVICE: dict[str, Advice] = {
    "S0": Advice(
        "The engine misses a required method, declares name as a plain method or attribute "
        "instead of a property, or has a signature the host cannot call (no **kwargs on "
        "handle_tool_call, on_session_start, on_turn_complete or update_model; select_context "
        "without its keyword arguments); or it does not subclass ContextEngine.",
        "Subclass agent.context_engine.ContextEngine and keep the ABC's signatures; the S0 "
        "message lists every problem at once, each with the clause it belongs to.",
    ),
    "D1": Advice(
        "compress() or select_context() depends on something besides its input: the clock, "
        "random numbers, uuid4() in content, dict or set iteration order, a counter shared "
        "between instances, or a summariser that is not seeded. For a snapshot mismatch: the "
        "output changed since the snapshot was stored.",
        "Derive everything from the messages (seed any randomness from them, sort sets), keep "
        "state per instance. If the change of output is intended, store the new baseline with "
        "--snapshot-update.",
    ),
    "E1": Advice(
        "The engine opens a connection outside loopback (telemetry, a hosted summary model, a "
        "package check), starts a process (subprocess, os.system, os.fork) or writes a file "
        "outside its home (a path under the project, /tmp or ~ resolved before the kit set "
        "HOME), in its constructor or in any later call.",
        "Reach the summary model through the Hermes home the host gives you (its "
        "auxiliary.compression settings point at the kit's loopback simulator), resolve every "
        "path from HERMES_HOME or HOME at call time, and make network or process use optional "
        "so the engine copes when it is refused.",
    ),
    "R4": Advice(
        "The plugin folder has no __init__.py, its __init__.py raises on import or exports "
        "neither a ContextEngine subclass nor register(ctx), or plugin.yaml is missing, is not "
        "valid YAML, or lacks name, description or version.",
        "Lay the folder out as $HERMES_HOME/plugins/<name>/ with __init__.py (a ContextEngine "
        "subclass or register(ctx) calling ctx.register_context_engine(engine)) and plugin.yaml "
        "with name, description and version; check it with --engine-plugin DIR.",
    ),
    "R5": Advice(
        "register(ctx) registers more than one engine (two register_context_engine() calls, or "
        "one per import of the module).",
        "Register exactly one engine in register(ctx); build it once.",
    ),
    "R6": Advice(
        "engine.name differs from the folder name that context.engine configures, or from the "
        "name in plugin.yaml (case, dashes versus underscores, a version suffix).",
        "Return the configured name from the name property and use the same string as the "
        "folder name and in plugin.yaml.",
    ),
    "A1": Advice(
        "name is a method, a plain class attribute, returns something other than a str, or "
        "returns a long or empty string.",
        "Declare @property def name(self) -> str returning a short identifier such as 'lcm'.",
    ),
    "A2": Advice(
        "update_from_response(usage) ignores some keys, reads keys older hosts do not send "
        "(input_tokens, cache_read_tokens ...) without a default, or raises on a usage dict it "
        "does not expect.",
        "Set last_prompt_tokens, last_completion_tokens and last_total_tokens from "
        "prompt_tokens, completion_tokens and total_tokens (always present); read every other "
        "key with usage.get(key, 0).",
    ),
    "A3": Advice(
        "should_compress() returns a number, None or a truthy object instead of a bool; it "
        "ignores the prompt_tokens argument the host passes, or keeps comparing against the old "
        "model's threshold after update_model() switched the model; or (SHOULD) it keeps asking "
        "for compaction although compactions stopped reducing the history.",
        "Return a real bool (e.g. bool(tokens >= self.threshold_tokens)), where tokens is "
        "prompt_tokens when given and the last real usage otherwise, and threshold_tokens is "
        "the value update_model() set last; stop asking after two passes that did not shrink "
        "the history, as Hermes does.",
    ),
    "A4": Advice(
        "compress() writes its result into its input and returns it (messages[:] = out), "
        "returns a tuple or None, returns an invalid message sequence, raises on a short "
        "history, drops the middle with nothing in its place when the summary LLM fails, or "
        "(SHOULD) returns more tokens than threshold_tokens when it could have cut more.",
        "Build and return a new list of new dicts; when there is nothing to compact, or the "
        "summariser fails, return the input list itself (the host's no-op signal) or put a "
        "deterministic stand-in summary where the removed messages were; check the result "
        "against V1-V5 and aim below threshold_tokens.",
    ),
    "A5": Advice(
        "compress(focus_topic=...) ignores the focus topic, so facts about it are summarised "
        "away like everything else.",
        "Give the summariser the focus topic and keep what matches it first; or leave the "
        "'focus' capability undeclared if your engine does not support guided compaction.",
    ),
    "A6": Advice(
        "One of the six int attributes (last_prompt_tokens, last_completion_tokens, "
        "last_total_tokens, threshold_tokens, context_length, compression_count) is missing, "
        "a float or None, or compression_count is not increased by compress().",
        "Set all six as ints in __init__ (the ABC's defaults are fine) and add 1 to "
        "compression_count in every compress() call (the seeds count every call; MUST for a "
        "call that changed the history).",
    ),
    "A7": Advice(
        "should_compress() asks again while last_prompt_tokens is the -1 sentinel the host "
        "sets right after a compaction, or get_status() shows the -1.",
        "Treat last_prompt_tokens < 0 as 'no usage yet': should_compress() returns False and "
        "get_status() reports max(0, last_prompt_tokens).",
    ),
    "V1": Advice(
        "The output holds something that is not a dict, a dict without a role, or a role "
        "outside system/user/assistant/tool (e.g. 'summary' or 'developer').",
        "Emit only dicts with role system, user, assistant or tool; carry a summary as a user "
        "or assistant message.",
    ),
    "V2": Advice(
        "The cut between summarised and kept messages separates an assistant message with "
        "tool_calls from its tool results, drops a result whose call is kept (or keeps a result "
        "whose call was dropped), answers one call id twice, or gives a stub result to a call "
        "still in flight (the last assistant tool_calls whose results are not appended yet).",
        "Move cut points so that an assistant tool_calls message and all of its results stay "
        "on the same side; after cutting, drop orphan results and give calls without a result "
        "a stub result. Repeated ids need one result per occurrence. Keep the newest tool chain "
        "verbatim at the end of the output, with no stub for a call in flight.",
    ),
    "V3": Advice(
        "A message's content is a dict, a number or None where the role requires text "
        "(None is allowed only for an assistant message with tool_calls), or a content list "
        "holds something that is not a part dict.",
        "Keep content a str or a list of part dicts; set content to '' rather than None "
        "unless the message is an assistant message with tool_calls.",
    ),
    "V4": Advice(
        "The system prompt was summarised, shortened, moved after other messages, or dropped; "
        "or (SHOULD) a counter, a date or the summary is rendered into message 0 at every "
        "pass, so its prompt cache misses after each compaction.",
        "Keep the whole system message, if there is one, as the first message of the output "
        "(append a note at most); build message 0 only from what does not change between "
        "passes.",
    ),
    "O1": Advice(
        "on_session_start() does not accept the keyword arguments the host passes, or raises "
        "(e.g. while loading persisted state that does not exist yet).",
        "Define on_session_start(self, session_id, **kwargs) and treat missing state as a new "
        "session.",
    ),
    "O2": Advice(
        "on_session_end(session_id, messages) raises, requires arguments the host does not "
        "pass, or tears down state so that later calls fail.",
        "Accept (session_id, messages), flush what you need, and stay usable afterwards.",
    ),
    "O3": Advice(
        "on_session_reset() leaves last_prompt_tokens, last_completion_tokens, "
        "last_total_tokens or (host practice) compression_count non-zero.",
        "Set the three last_* counters and compression_count to 0 in on_session_reset(), or "
        "call super().on_session_reset().",
    ),
    "O4": Advice(
        "update_model() does not store the new context_length, or does not recompute "
        "threshold_tokens for the new window (it keeps the old threshold).",
        "Set context_length and threshold_tokens = int(context_length * threshold_percent) "
        "in update_model(), or call super().update_model(...).",
    ),
    "O5": Advice(
        "get_tool_schemas() returns None, a dict or a tuple.",
        "Return a list (the default [] when the engine has no tools).",
    ),
    "O6": Advice(
        "handle_tool_call() raises on an unknown tool name, returns a dict, or does not accept "
        "the messages= keyword the host passes.",
        "Define handle_tool_call(self, name, args, **kwargs) and answer an unknown name with "
        'json.dumps({"error": f"unknown tool {name}"}).',
    ),
    "O7": Advice(
        "should_compress_preflight(messages) returns None or a number, or raises.",
        "Return a bool from a cheap estimate (the default returns False).",
    ),
    "O8": Advice(
        "get_status() lacks one of last_prompt_tokens, threshold_tokens, context_length, "
        "usage_percent, compression_count; shows a negative last_prompt_tokens; or "
        "usage_percent is outside 0-100; or get_status() or should_compress() raises on a zero "
        "window (before any update_model(), or after update_model(context_length=0)).",
        "Return all five keys; clamp last_prompt_tokens at 0 and usage_percent to 0-100 "
        "(0 when context_length is 0); call super().get_status() and add your own keys.",
    ),
    "O9": Advice(
        "select_context() returns a tuple, a dict or another iterable instead of None or a list.",
        "Return None (no change to the request) or a list of message dicts.",
    ),
    "O10": Advice(
        "on_turn_complete() does not accept the usage argument or the keyword arguments "
        "(turn_id, task_id, api_call_count, interrupted, ...) the host passes.",
        "Define on_turn_complete(self, messages, usage=None, **kwargs). " + _HOOK_SIGNATURES,
    ),
    "O11": Advice(
        "clone_for_agent() returns None, an object that is not an engine, or an engine with "
        "another name.",
        "Return a new engine of the same kind and name (the default is copy.deepcopy(self)).",
    ),
    "O12": Advice(
        "should_compress_info() re-derives the compaction condition and gets it wrong (it "
        "ignores prompt_tokens, uses another threshold or comparison than should_compress()), "
        "or returns a bare bool or reason instead of a (bool, reason) pair.",
        "Compute the bool by calling self.should_compress(prompt_tokens) (or have "
        "should_compress() return should_compress_info(prompt_tokens)[0]) and add a reason str "
        "only when a guard blocks an over-threshold compaction.",
    ),
    "O13": Advice(
        "prune_tool_results_only() drops tool rows (their calls lose their results), touches "
        "the live turn or the system message, edits its input rows in place, or returns a "
        "bare list or a count that is not an int.",
        "Replace old tool-result contents in new dicts (row = {**row, 'content': marker}), keep "
        "every row, leave the tail from the last user message alone, and return "
        "(new_list, n) or (messages, 0) when nothing was pruned.",
    ),
    "O14": Advice(
        "has_content_to_compress() answers False from a rule of its own (a message count, a "
        "turn count) while compress() would compact the same history.",
        "Answer False only when compress() would keep every row (everything protected); "
        "derive it from the same head/tail sizes compress() uses, or return True.",
    ),
    "H1": Advice(
        "select_context() or on_turn_complete() raises, or returns an invalid value. The host "
        "fails open (the request goes out unchanged), but the engine's work is lost.",
        "Catch your own errors inside the hook and return None when you cannot select; never "
        "let an exception escape a hook.",
    ),
    "H3": Advice(
        "select_context() mutates request_messages, conversation_messages or incoming_message "
        "(sorts them in place, edits a dict) instead of returning a new list, or its "
        "replacement does not end with the request's own current user message and this turn's "
        "assistant/tool rows (it rebuilds the live turn from conversation_messages, "
        "incoming_message or its own store, or trims it away).",
        "Treat the arguments as read-only: build a new list (copy a dict before changing it) and "
        "end it with the live turn copied from request_messages, unchanged.",
    ),
    "H5": Advice(
        "on_turn_complete() changes the messages it observes (they are the host's own dicts "
        "in a shallow copy), so the history itself changes.",
        "Read the messages and copy what you keep; never modify them.",
    ),
    "H6": Advice(
        "select_context() returns a different selection (another order, fresh dict copies "
        "with changed fields, a timestamp) on every turn although nothing changed, so the "
        "provider's prompt cache misses every turn.",
        "Return the same selection (an equal list in the same order) until your routing "
        "decision changes; append new messages at the end.",
    ),
    "U2": Advice(
        "The engine requires message_uid on every message and raises (or drops the message) "
        "when an old row has none.",
        "Treat a missing message_uid as 'no identity yet': key such messages by position or "
        "content, never fail on them.",
    ),
    "U4": Advice(
        "The engine caches content by message_uid and returns the stale copy, or raises, when "
        "content changes under a known uid.",
        "Treat (message_uid, content) as a version: when content differs, take the new content.",
    ),
    "U6": Advice(
        "A message_uid the engine stamps on a row it creates (e.g. the summary) is not 32 "
        "lowercase hex characters, or is reused for different rows.",
        "Stamp uuid.uuid4().hex (or another 32-lowercase-hex value derived once per row).",
    ),
    "U7": Advice(
        "The engine assumes uids are unique per row and raises, or drops one, when two live "
        "rows share a uid; or its store adds a second copy of a uid when a transcript is handed "
        "over again (or after a restart), or keys rows by list position and stops storing "
        "once a compaction made the transcript shorter.",
        "Key state and stored rows by uid (an upsert, not an append) and treat the later row with "
        "that uid as the current version; expose conformance_stored_uids(session_id) so the kit "
        "can check the store.",
    ),
    "U10": Advice(
        "The engine requires a uid on the current turn's user message during a preflight "
        "compress() that runs before the host's turn-start flush.",
        "Accept the one message without a uid; it gets its uid at the flush (same dict).",
    ),
    "T1": Advice(
        "A tool schema lacks name, description or parameters, or parameters is not a JSON "
        "Schema object ({'type': 'object', 'properties': {...}}).",
        "Return [{'name': ..., 'description': ..., 'parameters': {'type': 'object', "
        "'properties': {...}}}] for each tool.",
    ),
    "T2": Advice(
        "handle_tool_call() returns a dict, a list or None for one of the declared tools, or "
        "raises on the arguments its own schema allows.",
        "Return json.dumps(result) for every tool; report errors as a JSON object with an "
        "'error' key.",
    ),
    "C1": Advice(
        "clone_for_agent() returns self, or a copy that shares mutable budget fields "
        "(counters, thresholds, a list) with the original, so one agent's usage changes "
        "another's; or cloning raises (the agent then loses the engine).",
        "Return a new instance: share only the durable backend (a store, a connection pool) "
        "and copy the per-agent fields (counters, threshold, context_length).",
    ),
    "C2": Advice(
        "A child's update_model() changes the parent's context_length or threshold_tokens: "
        "the two share a budget object, a class attribute or a module global.",
        "Keep the budget fields on the instance and copy them in clone_for_agent().",
    ),
    "L1": Advice(
        "An engine call raises at some point of the lifecycle (after on_session_end, after "
        "/reset, on a new session, or when compress() runs before any usage), the engine hangs "
        "in it, or it resets its state (compression_count, its previous summary, its index) at "
        "the on_session_end/on_session_start pair the host sends after every compaction.",
        "Make every method safe to call in the documented order, again after "
        "on_session_end() and on_session_reset(); keep the engine's state when on_session_start "
        "comes with boundary_reason='compression' (reset only in on_session_reset); the message "
        "names the call that failed.",
    ),
    "K1": Advice(
        "update_model() ignores engine.model_thresholds (set by the host before the first "
        "update_model()), or matches model names the wrong way (first match instead of the "
        "longest matching substring).",
        "Call super().update_model(...) (the base applies the map), or pick the longest key "
        "of model_thresholds found in the model name; without a match, use your threshold.",
    ),
    "K2": Advice(
        "Nothing: K2 only permits engines that override update_model() to ignore "
        "model_thresholds. No check can fail it.",
        "Nothing to fix; document your own threshold policy.",
    ),
    "TS1": Advice(
        "compress() works only on the thread that created the engine (threading.local state, "
        "a thread-bound connection such as sqlite3 with check_same_thread), or leaves threads "
        "running after it returns.",
        "Make compress() callable from any thread: open connections with "
        "check_same_thread=False (and a lock) or per call; join or pool your own threads.",
    ),
    "TS2": Advice(
        "compress() writes files, rows or other external state during the pass; when the host "
        "times the pass out and discards it, those writes stay.",
        "Stage what a pass produces and publish it only once the host shows the pass was "
        "committed: when your stamped summary uid (U6) appears in messages the host hands you "
        "later.",
    ),
    "TS3": Advice(
        "One engine instance shared by several sessions keeps per-session data in instance "
        "fields without a lock, so parallel passes mix their messages.",
        "Keep per-pass data in local variables, key shared state by session, and guard it "
        "with a lock.",
    ),
    "B1": Advice(
        "The compressor's defaults differ from the documented ones (threshold 0.50 of the "
        "window, target_ratio 0.20, protect_last_n 20, protect_first_n 3).",
        "Use the documented defaults; or do not declare the 'compressor' capability if your "
        "engine is not the built-in algorithm.",
    ),
    "B2": Advice(
        "Old tool results over 200 characters outside the protected tail are kept verbatim, "
        "or cleared with another placeholder text.",
        "Replace them with exactly '[Old tool output cleared to save context space]'.",
    ),
    "B3": Advice(
        "The head (the first protect_first_n messages, the system prompt included) is dropped "
        "on a later compaction, the tail keeps fewer than protect_last_n messages, or a cut "
        "splits a tool group. Hermes main drops the head after the first compaction (head "
        "decay): that is host practice against the seeds.",
        "Keep the head on every compaction and walk the tail back by token budget with at "
        "least protect_last_n messages; if you follow Hermes' head decay, declare the "
        "'head-decay' capability.",
    ),
    "B4": Advice(
        "The summary lacks headings of the structured template (Goal; Constraints & "
        "Preferences; Progress: Done / In Progress / Blocked; Key Decisions; Relevant Files; "
        "Next Steps; Critical Context), or is not one message; or (SHOULD) an ask that was "
        "answered in the summarised turns is listed under In Progress, Blocked or Next Steps, "
        "so the agent redoes it.",
        "Ask the summariser for the template and check its reply has every heading (fill in "
        "missing ones) before using it; when the summary call fails, decline the pass or use a "
        "deterministic fallback summary (A4); record answered asks under Done.",
    ),
    "B5": Advice(
        "The compaction note is appended to the system prompt again on every compaction, the "
        "summary's role equals a neighbour's role, or orphan tool pairs are left after the cut.",
        "Append the note on the first compaction only, pick the summary role so no two "
        "same roles touch, and repair orphans (drop results of removed calls, stub results "
        "for calls whose results were removed).",
    ),
    "B7": Advice(
        "Host-side, but its scenario watches the engine: the gateway's safety net fired and "
        "called compress(), and the history stayed above 85% of the window (compress() cut "
        "too little or returned its input), or should_compress() never let hygiene fire.",
        "Make compress() bring a history that is over the window well below threshold_tokens "
        "when the protected head and tail allow it (A4's budget SHOULD).",
    ),
    "V5": Advice(
        "compress() output or a select_context() replacement carries keys of the engine's own "
        "(raw, dag_node, score, a store record) that the host does not know, so they ride into "
        "the provider request.",
        "Build output rows from the known message keys only (role, content, name, tool_calls, "
        "tool_call_id, the uid fields, the reasoning fields) and keep engine data in your own "
        "state, or under a _-prefixed key, which the host strips.",
    ),
    "P5": Advice(
        "compress() output or a select_context() replacement carries cache_control, on a row or "
        "on a content part (copied from an Anthropic-style input, or added by the engine), so "
        "the request has five cache breakpoints and Anthropic answers 400.",
        "Leave cache markers to the host: strip cache_control from every row and content part "
        "the engine returns.",
    ),
    "U3": Advice(
        "Host-side, but its scenario watches the engine: after restore, branch or rotation "
        "the kept messages came back without their message_uid, or with other uids, because "
        "compress() rebuilt message dicts from role and content only.",
        "Keep every key of a message you keep (copy it with dict(message)); only rows the "
        "engine creates may get a new uid (U6).",
    ),
    "B6": Advice(
        "A later compaction summarises from scratch and loses what the previous summary held.",
        "Find the previous summary message and ask the summariser to update it with the new "
        "middle.",
    ),
}

# Invariants for every engine on realistic sessions (conformance.checks.sessions).
ADVICE.update(
    {
        "A8": Advice(
            "The tail is chosen by a token budget or a fixed row count, so a live ask that is a "
            "long paste, or a long tool loop after it, leaves the ask in the middle, where it "
            "is summarised away; or the summary is always an assistant row and no user row "
            "remains.",
            "Start the tail at the live ask at the latest (the last user message, when no plain "
            "assistant reply follows it), whatever its size; keep it byte for byte.",
        ),
        "A9": Advice(
            "compress() adds a summary or a marker row when nothing (or less than the summary) "
            "was removed: a history shorter than head + tail, a middle of one short row.",
            "Return the input list when there is nothing worth summarising; write a summary only "
            "where it replaces more tokens than it costs.",
        ),
        "A10": Advice(
            "The next summary is written from the rows after the previous summary only (the "
            "previous summary row is skipped, 'never summarise a summary'), so everything from "
            "before the last compaction is forgotten.",
            "Fold the previous summary into the next one (B6): pass it to the summariser as the "
            "summary to update, or carry its lines over.",
        ),
        "A11": Advice(
            "Each summary is the previous one plus new lines, never capped; or a fallback "
            "stand-in copies the middle verbatim with no budget.",
            "Give the summary a token budget and keep it on every path (LLM, fallback): drop "
            "or condense the oldest items when it is full.",
        ),
        "V6": Advice(
            "Text is cut in UTF-16 code units (code ported from JavaScript, "
            "encode('utf-16')[:n]), or by bytes with surrogatepass, or the serialised JSON is cut "
            "and parsed again: a cut inside an emoji or a CJK Extension B character leaves a "
            "lone surrogate, which providers reject with a 400 on every retry.",
            "Cut text by code points (text[:n]) or encode to UTF-8 and decode with "
            "errors='ignore'; never split a serialised JSON string.",
        ),
        "V7": Advice(
            "Kept rows are rebuilt from the engine's own record (role and content only), their "
            "tool calls' arguments are parsed and written back as dicts, or list-of-parts "
            "content is joined into a string: reasoning_content / reasoning_details (which "
            "DeepSeek and Anthropic thinking need back), name, images are lost.",
            "Keep rows you do not summarise as the host gave them (dict(row) or the same object); "
            "parse arguments into your own index, never into the row.",
        ),
    }
)


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
