"""Advice on the engine's surface: the kit's own clauses (S0, D1, E1), the plugin folder (R4-R6),
the required surface (A1-A7), the messages compress() returns (V1-V4) and the optional methods
(O1-O14).

:data:`SURFACE_ADVICE` maps each of those clauses to its ``(cause, fix)`` texts: what usually
makes it fail, and how to fix it. :mod:`conformance.run.clause_advice` turns them into
:class:`~conformance.run.clause_advice.Advice` (its :data:`~conformance.run.clause_advice.ADVICE`).
"""

from __future__ import annotations

_HOOK_SIGNATURES = (
    "Compare your method with the ABC's signature (agent.context_engine.ContextEngine) and "
    "accept **kwargs, so that arguments newer hosts pass do not break the call."
)

#: ``{clause: (cause, fix)}`` for the kit clauses and contract chapters R, A, V (V1-V4) and O.
SURFACE_ADVICE: dict[str, tuple[str, str]] = {
    "S0": (
        "The engine misses a required method, declares name as a plain method or attribute "
        "instead of a property, or has a signature the host cannot call (no **kwargs on "
        "handle_tool_call, on_session_start, on_turn_complete or update_model; select_context "
        "without its keyword arguments); or it does not subclass ContextEngine.",
        "Subclass agent.context_engine.ContextEngine and keep the ABC's signatures; the S0 "
        "message lists every problem at once, each with the clause it belongs to.",
    ),
    "D1": (
        "compress() or select_context() depends on something besides its input: the clock, "
        "random numbers, uuid4() in content, dict or set iteration order, a counter shared "
        "between instances, or a summariser that is not seeded. For a snapshot mismatch: the "
        "output changed since the snapshot was stored.",
        "Derive everything from the messages (seed any randomness from them, sort sets), keep "
        "state per instance. If the change of output is intended, store the new baseline with "
        "--snapshot-update.",
    ),
    "E1": (
        "The engine opens a connection outside loopback (telemetry, a hosted summary model, a "
        "package check), starts a process (subprocess, os.system, os.fork) or writes a file "
        "outside its home (a path under the project, /tmp or ~ resolved before the kit set "
        "HOME), in its constructor or in any later call.",
        "Reach the summary model through the Hermes home the host gives you (its "
        "auxiliary.compression settings point at the kit's loopback simulator), resolve every "
        "path from HERMES_HOME or HOME at call time, and make network or process use optional "
        "so the engine copes when it is refused.",
    ),
    "R4": (
        "The plugin folder has no __init__.py, its __init__.py raises on import or exports "
        "neither a ContextEngine subclass nor register(ctx), or plugin.yaml is missing, is not "
        "valid YAML, or lacks name, description or version.",
        "Lay the folder out as $HERMES_HOME/plugins/<name>/ with __init__.py (a ContextEngine "
        "subclass or register(ctx) calling ctx.register_context_engine(engine)) and plugin.yaml "
        "with name, description and version; check it with --engine-plugin DIR.",
    ),
    "R5": (
        "register(ctx) registers more than one engine (two register_context_engine() calls, or "
        "one per import of the module).",
        "Register exactly one engine in register(ctx); build it once.",
    ),
    "R6": (
        "engine.name differs from the folder name that context.engine configures, or from the "
        "name in plugin.yaml (case, dashes versus underscores, a version suffix).",
        "Return the configured name from the name property and use the same string as the "
        "folder name and in plugin.yaml.",
    ),
    "A1": (
        "name is a method, a plain class attribute, returns something other than a str, or "
        "returns a long or empty string.",
        "Declare @property def name(self) -> str returning a short identifier such as 'lcm'.",
    ),
    "A2": (
        "update_from_response(usage) ignores some keys, reads keys older hosts do not send "
        "(input_tokens, cache_read_tokens ...) without a default, or raises on a usage dict it "
        "does not expect.",
        "Set last_prompt_tokens, last_completion_tokens and last_total_tokens from "
        "prompt_tokens, completion_tokens and total_tokens (always present); read every other "
        "key with usage.get(key, 0).",
    ),
    "A3": (
        "should_compress() returns a number, None or a truthy object instead of a bool; it "
        "ignores the prompt_tokens argument the host passes, or keeps comparing against the old "
        "model's threshold after update_model() switched the model; or (SHOULD) it keeps asking "
        "for compaction although compactions stopped reducing the history.",
        "Return a real bool (e.g. bool(tokens >= self.threshold_tokens)), where tokens is "
        "prompt_tokens when given and the last real usage otherwise, and threshold_tokens is "
        "the value update_model() set last; stop asking after two passes that did not shrink "
        "the history, as Hermes does.",
    ),
    "A4": (
        "compress() writes its result into its input and returns it (messages[:] = out), "
        "returns a tuple or None, returns an invalid message sequence, raises on a short "
        "history, drops the middle with nothing in its place when the summary LLM fails, or "
        "(SHOULD) returns more tokens than threshold_tokens when it could have cut more.",
        "Build and return a new list of new dicts; when there is nothing to compact, or the "
        "summariser fails, return the input list itself (the host's no-op signal) or put a "
        "deterministic stand-in summary where the removed messages were; check the result "
        "against V1-V5 and aim below threshold_tokens.",
    ),
    "A5": (
        "compress(focus_topic=...) ignores the focus topic, so facts about it are summarised "
        "away like everything else.",
        "Give the summariser the focus topic and keep what matches it first; or leave the "
        "'focus' capability undeclared if your engine does not support guided compaction.",
    ),
    "A6": (
        "One of the six int attributes (last_prompt_tokens, last_completion_tokens, "
        "last_total_tokens, threshold_tokens, context_length, compression_count) is missing, "
        "a float or None, or compression_count is not increased by compress().",
        "Set all six as ints in __init__ (the ABC's defaults are fine) and add 1 to "
        "compression_count in every compress() call (the seeds count every call; MUST for a "
        "call that changed the history).",
    ),
    "A7": (
        "should_compress() asks again while last_prompt_tokens is the -1 sentinel the host "
        "sets right after a compaction, or get_status() shows the -1.",
        "Treat last_prompt_tokens < 0 as 'no usage yet': should_compress() returns False and "
        "get_status() reports max(0, last_prompt_tokens).",
    ),
    "V1": (
        "The output holds something that is not a dict, a dict without a role, or a role "
        "outside system/user/assistant/tool (e.g. 'summary' or 'developer').",
        "Emit only dicts with role system, user, assistant or tool; carry a summary as a user "
        "or assistant message.",
    ),
    "V2": (
        "The cut between summarised and kept messages separates an assistant message with "
        "tool_calls from its tool results, drops a result whose call is kept (or keeps a result "
        "whose call was dropped), answers one call id twice, or gives a stub result to a call "
        "still in flight (the last assistant tool_calls whose results are not appended yet).",
        "Move cut points so that an assistant tool_calls message and all of its results stay "
        "on the same side; after cutting, drop orphan results and give calls without a result "
        "a stub result. Repeated ids need one result per occurrence. Keep the newest tool chain "
        "verbatim at the end of the output, with no stub for a call in flight.",
    ),
    "V3": (
        "A message's content is a dict, a number or None where the role requires text "
        "(None is allowed only for an assistant message with tool_calls), or a content list "
        "holds something that is not a part dict.",
        "Keep content a str or a list of part dicts; set content to '' rather than None "
        "unless the message is an assistant message with tool_calls.",
    ),
    "V4": (
        "The system prompt was summarised, shortened, moved after other messages, or dropped; "
        "or (SHOULD) a counter, a date or the summary is rendered into message 0 at every "
        "pass, so its prompt cache misses after each compaction.",
        "Keep the whole system message, if there is one, as the first message of the output "
        "(append a note at most); build message 0 only from what does not change between "
        "passes.",
    ),
    "O1": (
        "on_session_start() does not accept the keyword arguments the host passes, or raises "
        "(e.g. while loading persisted state that does not exist yet).",
        "Define on_session_start(self, session_id, **kwargs) and treat missing state as a new "
        "session.",
    ),
    "O2": (
        "on_session_end(session_id, messages) raises, requires arguments the host does not "
        "pass, or tears down state so that later calls fail.",
        "Accept (session_id, messages), flush what you need, and stay usable afterwards.",
    ),
    "O3": (
        "on_session_reset() leaves last_prompt_tokens, last_completion_tokens, "
        "last_total_tokens or (host practice) compression_count non-zero.",
        "Set the three last_* counters and compression_count to 0 in on_session_reset(), or "
        "call super().on_session_reset().",
    ),
    "O4": (
        "update_model() does not store the new context_length, or does not recompute "
        "threshold_tokens for the new window (it keeps the old threshold).",
        "Set context_length and threshold_tokens = int(context_length * threshold_percent) "
        "in update_model(), or call super().update_model(...).",
    ),
    "O5": (
        "get_tool_schemas() returns None, a dict or a tuple.",
        "Return a list (the default [] when the engine has no tools).",
    ),
    "O6": (
        "handle_tool_call() raises on an unknown tool name, returns a dict, or does not accept "
        "the messages= keyword the host passes.",
        "Define handle_tool_call(self, name, args, **kwargs) and answer an unknown name with "
        'json.dumps({"error": f"unknown tool {name}"}).',
    ),
    "O7": (
        "should_compress_preflight(messages) returns None or a number, or raises.",
        "Return a bool from a cheap estimate (the default returns False).",
    ),
    "O8": (
        "get_status() lacks one of last_prompt_tokens, threshold_tokens, context_length, "
        "usage_percent, compression_count; shows a negative last_prompt_tokens; or "
        "usage_percent is outside 0-100; or get_status() or should_compress() raises on a zero "
        "window (before any update_model(), or after update_model(context_length=0)).",
        "Return all five keys; clamp last_prompt_tokens at 0 and usage_percent to 0-100 "
        "(0 when context_length is 0); call super().get_status() and add your own keys.",
    ),
    "O9": (
        "select_context() returns a tuple, a dict or another iterable instead of None or a list.",
        "Return None (no change to the request) or a list of message dicts.",
    ),
    "O10": (
        "on_turn_complete() does not accept the usage argument or the keyword arguments "
        "(turn_id, task_id, api_call_count, interrupted, ...) the host passes.",
        "Define on_turn_complete(self, messages, usage=None, **kwargs). " + _HOOK_SIGNATURES,
    ),
    "O11": (
        "clone_for_agent() returns None, an object that is not an engine, or an engine with "
        "another name.",
        "Return a new engine of the same kind and name (the default is copy.deepcopy(self)).",
    ),
    "O12": (
        "should_compress_info() re-derives the compaction condition and gets it wrong (it "
        "ignores prompt_tokens, uses another threshold or comparison than should_compress()), "
        "or returns a bare bool or reason instead of a (bool, reason) pair.",
        "Compute the bool by calling self.should_compress(prompt_tokens) (or have "
        "should_compress() return should_compress_info(prompt_tokens)[0]) and add a reason str "
        "only when a guard blocks an over-threshold compaction.",
    ),
    "O13": (
        "prune_tool_results_only() drops tool rows (their calls lose their results), touches "
        "the live turn or the system message, edits its input rows in place, or returns a "
        "bare list or a count that is not an int.",
        "Replace old tool-result contents in new dicts (row = {**row, 'content': marker}), keep "
        "every row, leave the tail from the last user message alone, and return "
        "(new_list, n) or (messages, 0) when nothing was pruned.",
    ),
    "O14": (
        "has_content_to_compress() answers False from a rule of its own (a message count, a "
        "turn count) while compress() would compact the same history.",
        "Answer False only when compress() would keep every row (everything protected); "
        "derive it from the same head/tail sizes compress() uses, or return True.",
    ),
}

__all__ = ["SURFACE_ADVICE"]
