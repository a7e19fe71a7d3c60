"""Advice on the engine's behaviour in the host: its hooks (H), message identity (U), tools (T),
clones (C), lifecycle (L1), configuration (K), threads and timeouts (TS), the built-in compressor
(B), the rows it must not leak (V5, P5), and the invariants on realistic sessions (A8-A11, V6,
V7).

:data:`BEHAVIOUR_ADVICE` maps each of those clauses to its ``(cause, fix)`` texts: what usually
makes it fail, and how to fix it. :mod:`conformance.run.clause_advice` turns them into
:class:`~conformance.run.clause_advice.Advice` (its :data:`~conformance.run.clause_advice.ADVICE`).
"""

from __future__ import annotations

#: ``{clause: (cause, fix)}`` for contract chapters H, U, T, C, L, K, TS, B and P (P5), V5, and
#: the invariants every engine keeps on realistic sessions.
BEHAVIOUR_ADVICE: dict[str, tuple[str, str]] = {
    "H1": (
        "select_context() or on_turn_complete() raises, or returns an invalid value. The host "
        "fails open (the request goes out unchanged), but the engine's work is lost.",
        "Catch your own errors inside the hook and return None when you cannot select; never "
        "let an exception escape a hook.",
    ),
    "H3": (
        "select_context() mutates request_messages, conversation_messages or incoming_message "
        "(sorts them in place, edits a dict) instead of returning a new list, or its "
        "replacement does not end with the request's own current user message and this turn's "
        "assistant/tool rows (it rebuilds the live turn from conversation_messages, "
        "incoming_message or its own store, or trims it away).",
        "Treat the arguments as read-only: build a new list (copy a dict before changing it) and "
        "end it with the live turn copied from request_messages, unchanged.",
    ),
    "H5": (
        "on_turn_complete() changes the messages it observes (they are the host's own dicts "
        "in a shallow copy), so the history itself changes.",
        "Read the messages and copy what you keep; never modify them.",
    ),
    "H6": (
        "select_context() returns a different selection (another order, fresh dict copies "
        "with changed fields, a timestamp) on every turn although nothing changed, so the "
        "provider's prompt cache misses every turn.",
        "Return the same selection (an equal list in the same order) until your routing "
        "decision changes; append new messages at the end.",
    ),
    "U2": (
        "The engine requires message_uid on every message and raises (or drops the message) "
        "when an old row has none.",
        "Treat a missing message_uid as 'no identity yet': key such messages by position or "
        "content, never fail on them.",
    ),
    "U4": (
        "The engine caches content by message_uid and returns the stale copy, or raises, when "
        "content changes under a known uid.",
        "Treat (message_uid, content) as a version: when content differs, take the new content.",
    ),
    "U6": (
        "A message_uid the engine stamps on a row it creates (e.g. the summary) is not 32 "
        "lowercase hex characters, or is reused for different rows.",
        "Stamp uuid.uuid4().hex (or another 32-lowercase-hex value derived once per row).",
    ),
    "U7": (
        "The engine assumes uids are unique per row and raises, or drops one, when two live "
        "rows share a uid; or its store adds a second copy of a uid when a transcript is handed "
        "over again (or after a restart), or keys rows by list position and stops storing "
        "once a compaction made the transcript shorter.",
        "Key state and stored rows by uid (an upsert, not an append) and treat the later row with "
        "that uid as the current version; expose conformance_stored_uids(session_id) so the kit "
        "can check the store.",
    ),
    "U10": (
        "The engine requires a uid on the current turn's user message during a preflight "
        "compress() that runs before the host's turn-start flush.",
        "Accept the one message without a uid; it gets its uid at the flush (same dict).",
    ),
    "T1": (
        "A tool schema lacks name, description or parameters, or parameters is not a JSON "
        "Schema object ({'type': 'object', 'properties': {...}}).",
        "Return [{'name': ..., 'description': ..., 'parameters': {'type': 'object', "
        "'properties': {...}}}] for each tool.",
    ),
    "T2": (
        "handle_tool_call() returns a dict, a list or None for one of the declared tools, or "
        "raises on the arguments its own schema allows.",
        "Return json.dumps(result) for every tool; report errors as a JSON object with an "
        "'error' key.",
    ),
    "C1": (
        "clone_for_agent() returns self, or a copy that shares mutable budget fields "
        "(counters, thresholds, a list) with the original, so one agent's usage changes "
        "another's; or cloning raises (the agent then loses the engine).",
        "Return a new instance: share only the durable backend (a store, a connection pool) "
        "and copy the per-agent fields (counters, threshold, context_length).",
    ),
    "C2": (
        "A child's update_model() changes the parent's context_length or threshold_tokens: "
        "the two share a budget object, a class attribute or a module global.",
        "Keep the budget fields on the instance and copy them in clone_for_agent().",
    ),
    "L1": (
        "An engine call raises at some point of the lifecycle (after on_session_end, after "
        "/reset, on a new session, or when compress() runs before any usage), the engine hangs "
        "in it, or it resets its state (compression_count, its previous summary, its index) at "
        "the on_session_end/on_session_start pair the host sends after every compaction.",
        "Make every method safe to call in the documented order, again after "
        "on_session_end() and on_session_reset(); keep the engine's state when on_session_start "
        "comes with boundary_reason='compression' (reset only in on_session_reset); the message "
        "names the call that failed.",
    ),
    "K1": (
        "update_model() ignores engine.model_thresholds (set by the host before the first "
        "update_model()), or matches model names the wrong way (first match instead of the "
        "longest matching substring).",
        "Call super().update_model(...) (the base applies the map), or pick the longest key "
        "of model_thresholds found in the model name; without a match, use your threshold.",
    ),
    "K2": (
        "Nothing: K2 only permits engines that override update_model() to ignore "
        "model_thresholds. No check can fail it.",
        "Nothing to fix; document your own threshold policy.",
    ),
    "TS1": (
        "compress() works only on the thread that created the engine (threading.local state, "
        "a thread-bound connection such as sqlite3 with check_same_thread), or leaves threads "
        "running after it returns.",
        "Make compress() callable from any thread: open connections with "
        "check_same_thread=False (and a lock) or per call; join or pool your own threads.",
    ),
    "TS2": (
        "compress() writes files, rows or other external state during the pass; when the host "
        "times the pass out and discards it, those writes stay.",
        "Stage what a pass produces and publish it only once the host shows the pass was "
        "committed: when your stamped summary uid (U6) appears in messages the host hands you "
        "later.",
    ),
    "TS3": (
        "One engine instance shared by several sessions keeps per-session data in instance "
        "fields without a lock, so parallel passes mix their messages.",
        "Keep per-pass data in local variables, key shared state by session, and guard it "
        "with a lock.",
    ),
    "B1": (
        "The compressor's defaults differ from the documented ones (threshold 0.50 of the "
        "window, target_ratio 0.20, protect_last_n 20, protect_first_n 3).",
        "Use the documented defaults; or do not declare the 'compressor' capability if your "
        "engine is not the built-in algorithm.",
    ),
    "B2": (
        "Old tool results over 200 characters outside the protected tail are kept verbatim, "
        "or cleared with another placeholder text.",
        "Replace them with exactly '[Old tool output cleared to save context space]'.",
    ),
    "B3": (
        "The head (the first protect_first_n messages, the system prompt included) is dropped "
        "on a later compaction, the tail keeps fewer than protect_last_n messages, or a cut "
        "splits a tool group. Hermes main drops the head after the first compaction (head "
        "decay): that is host practice against the seeds.",
        "Keep the head on every compaction and walk the tail back by token budget with at "
        "least protect_last_n messages; if you follow Hermes' head decay, declare the "
        "'head-decay' capability.",
    ),
    "B4": (
        "The summary lacks headings of the structured template (Goal; Constraints & "
        "Preferences; Progress: Done / In Progress / Blocked; Key Decisions; Relevant Files; "
        "Next Steps; Critical Context), or is not one message; or (SHOULD) an ask that was "
        "answered in the summarised turns is listed under In Progress, Blocked or Next Steps, "
        "so the agent redoes it.",
        "Ask the summariser for the template and check its reply has every heading (fill in "
        "missing ones) before using it; when the summary call fails, decline the pass or use a "
        "deterministic fallback summary (A4); record answered asks under Done.",
    ),
    "B5": (
        "The compaction note is appended to the system prompt again on every compaction, the "
        "summary's role equals a neighbour's role, or orphan tool pairs are left after the cut.",
        "Append the note on the first compaction only, pick the summary role so no two "
        "same roles touch, and repair orphans (drop results of removed calls, stub results "
        "for calls whose results were removed).",
    ),
    "B7": (
        "Host-side, but its scenario watches the engine: the gateway's safety net fired and "
        "called compress(), and the history stayed above 85% of the window (compress() cut "
        "too little or returned its input), or should_compress() never let hygiene fire.",
        "Make compress() bring a history that is over the window well below threshold_tokens "
        "when the protected head and tail allow it (A4's budget SHOULD).",
    ),
    "V5": (
        "compress() output or a select_context() replacement carries keys of the engine's own "
        "(raw, dag_node, score, a store record) that the host does not know, so they ride into "
        "the provider request.",
        "Build output rows from the known message keys only (role, content, name, tool_calls, "
        "tool_call_id, the uid fields, the reasoning fields) and keep engine data in your own "
        "state, or under a _-prefixed key, which the host strips.",
    ),
    "P5": (
        "compress() output or a select_context() replacement carries cache_control, on a row or "
        "on a content part (copied from an Anthropic-style input, or added by the engine), so "
        "the request has five cache breakpoints and Anthropic answers 400.",
        "Leave cache markers to the host: strip cache_control from every row and content part "
        "the engine returns.",
    ),
    "U3": (
        "Host-side, but its scenario watches the engine: after restore, branch or rotation "
        "the kept messages came back without their message_uid, or with other uids, because "
        "compress() rebuilt message dicts from role and content only.",
        "Keep every key of a message you keep (copy it with dict(message)); only rows the "
        "engine creates may get a new uid (U6).",
    ),
    "B6": (
        "A later compaction summarises from scratch and loses what the previous summary held.",
        "Find the previous summary message and ask the summariser to update it with the new "
        "middle.",
    ),
    # Invariants for every engine on realistic sessions (conformance.checks.sessions).
    "A8": (
        "The tail is chosen by a token budget or a fixed row count, so a live ask that is a "
        "long paste, or a long tool loop after it, leaves the ask in the middle, where it "
        "is summarised away; or the summary is always an assistant row and no user row "
        "remains.",
        "Start the tail at the live ask at the latest (the last user message, when no plain "
        "assistant reply follows it), whatever its size; keep it byte for byte.",
    ),
    "A9": (
        "compress() adds a summary or a marker row when nothing (or less than the summary) "
        "was removed: a history shorter than head + tail, a middle of one short row.",
        "Return the input list when there is nothing worth summarising; write a summary only "
        "where it replaces more tokens than it costs.",
    ),
    "A10": (
        "The next summary is written from the rows after the previous summary only (the "
        "previous summary row is skipped, 'never summarise a summary'), so everything from "
        "before the last compaction is forgotten.",
        "Fold the previous summary into the next one (B6): pass it to the summariser as the "
        "summary to update, or carry its lines over.",
    ),
    "A11": (
        "Each summary is the previous one plus new lines, never capped; or a fallback "
        "stand-in copies the middle verbatim with no budget.",
        "Give the summary a token budget and keep it on every path (LLM, fallback): drop "
        "or condense the oldest items when it is full.",
    ),
    "V6": (
        "Text is cut in UTF-16 code units (code ported from JavaScript, "
        "encode('utf-16')[:n]), or by bytes with surrogatepass, or the serialised JSON is cut "
        "and parsed again: a cut inside an emoji or a CJK Extension B character leaves a "
        "lone surrogate, which providers reject with a 400 on every retry.",
        "Cut text by code points (text[:n]) or encode to UTF-8 and decode with "
        "errors='ignore'; never split a serialised JSON string.",
    ),
    "V7": (
        "Kept rows are rebuilt from the engine's own record (role and content only), their "
        "tool calls' arguments are parsed and written back as dicts, or list-of-parts "
        "content is joined into a string: reasoning_content / reasoning_details (which "
        "DeepSeek and Anthropic thinking need back), name, images are lost.",
        "Keep rows you do not summarise as the host gave them (dict(row) or the same object); "
        "parse arguments into your own index, never into the row.",
    ),
}

__all__ = ["BEHAVIOUR_ADVICE"]
