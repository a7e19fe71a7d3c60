"""Mutant engines: each breaks exactly one clause, proving that its checks can fail.

Every mutant class has ``mutant_of`` (the clause it breaks). :data:`KILLS` lists them with
the regex their failure message must match (the kill matrix pins it) and, for R4-R6, the
plugin folder to check. :data:`MUTANTS` maps ``module:Class`` specs to their clause.
The H6 reshuffling router (``h6_reshuffle``) comes from the host work and joins when present.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from simulator.host import shim as _shim

_shim.install()  # kit-internal: the mutants load the engines, which import agent.*

PLUGIN_DIRS = Path(__file__).parent / "plugin_dirs"
REFERENCE_PLUGIN_DIR = PLUGIN_DIRS / "minimal"
#: Engines that must fail nothing (with the folder the R checks load for them).
REFERENCES = {
    "reference_engines.mutants._base:MinimalEngine": REFERENCE_PLUGIN_DIR,
    "reference_engines.mutants._base:HookedEngine": None,
    "reference_engines.mutants._compressor_base:MiniCompressor": None,
}
_OPTIONAL_REFERENCES = (
    "reference_engines.compressor:ReferenceCompressor",
    "reference_engines.lcm:LCMEngine",
    "reference_engines.router:ReferenceRouter",
)
#: Findings of the kit's checks on reference engines of other parts of the kit, reported to
#: their owners; run as expected failures (strict in the tests, so a fix shows up as XPASS).
KNOWN_FINDINGS: dict[str, dict[str, str]] = {}


@dataclass(frozen=True)
class Kill:
    """What killing a mutant looks like.

    Attributes:
        clause: the clause it breaks.
        pattern: regex the failure message must match (after the ``[CLAUSE LEVEL]`` prefix).
        plugin_dir: plugin folder for the R checks (its engine factory is MinimalEngine).
        xfails: findings the mutant inherits from its base engine (see KNOWN_FINDINGS).
        host_profile: the host profile it is run under (``--host-profile``).
    """

    clause: str
    pattern: str
    plugin_dir: Path | None = None
    xfails: Mapping[str, str] | None = None
    host_profile: str = "documented"


M = "reference_engines.mutants."
KILLS: dict[str, Kill] = {
    M + "s_structure:QuacksLikeAnEngine": Kill(
        "S0", r"does not subclass agent\.context_engine\.ContextEngine"
    ),
    M + "a1_name_method:NameIsMethod": Kill(
        "A1", r"engine\.name: expected a short identifier string"
    ),
    M + "a_surface:DropsCompletionTokens": Kill(
        "A2", r"engine\.last_completion_tokens after update_from_response"
    ),
    M + "a_surface:ShouldCompressReturnsInt": Kill(
        "A3", r"should_compress\(.*\): expected a bool, got int"
    ),
    M + "a_surface:ThrashesWhenIneffective": Kill(
        "A3", r"compress\(\) attempts over 20 turns .*host practice"
    ),
    M + "a_surface:CompressReturnsTuple": Kill(
        "A4", r"expected a list(| of dicts with a role), got (a )?tuple"
    ),
    M + "a_surface:TypeErrorOnFocus": Kill(
        "A4", r"compress\(\) raised: .*TypeError: \"?compress\(\) got an unexpected focus_topic"
    ),
    M + "a_surface:IgnoresFocus": Kill("A5", r"to keep the planted fact 'QUARTZ-HERON-417'"),
    M + "a6_never_counts:NeverCounts": Kill("A6", r"compression_count after"),
    M + "a_surface:CompressesOnSentinel": Kill(
        "A7", r"right after a compaction \(last_prompt_tokens == -1"
    ),
    M + "v_messages:DeveloperRoleSummary": Kill("V1", r"has role \"developer\""),
    M + "v2_orphan_result:OrphanToolResult": Kill(
        "V2", r"which no earlier assistant message calls|has no tool result after it"
    ),
    M + "v2_own_thresholds:LeafCutSplitsToolTurn": Kill(
        "V2", r"which no earlier assistant message calls"
    ),
    M + "v_messages:DictContentSummary": Kill("V3", r"has content of type dict"),
    M + "v4_drops_system:DropsSystemPrompt": Kill(
        "V4", r"expected the system prompt to stay first"
    ),
    M + "o_optional:StrictSessionStart": Kill(
        "O1", r"on_session_start\(\) raised: .*unexpected session keys"
    ),
    M + "o_optional:EndWithoutStart": Kill("O2", r"on_session_end\(\) raised: .*was never started"),
    M + "o_optional:ResetKeepsCompletion": Kill(
        "O3", r"engine\.last_completion_tokens after on_session_reset\(\)"
    ),
    M + "o_optional:StaleThreshold": Kill(
        "O4", r"threshold_tokens|\(context_length, threshold_tokens\)"
    ),
    M + "o_optional:StaleSessionWindow": Kill(
        "O4", r"on_session_start\(\) carrying stale model metadata"
    ),
    M + "o_optional:SchemasAsDict": Kill("O5", r"get_tool_schemas\(\): expected a list of dicts"),
    M + "o_optional:PlainTextUnknownTool": Kill("O6", r"expected a JSON string like"),
    M + "o_optional:PreflightReturnsNone": Kill(
        "O7", r"should_compress_preflight\(.*\): expected a bool, got NoneType"
    ),
    M + "o_optional:StatusWithoutPercent": Kill("O8", r"missing usage_percent"),
    M + "o_optional:SelectReturnsTuple": Kill(
        "O9", r"expected None or a list of messages, got tuple"
    ),
    M + "o_optional:TurnCompleteNoKwargs": Kill("O10", r"on_turn_complete|\[O10\]"),
    M + "o_optional:CloneRenamed": Kill(
        "O11", r"expected an engine named 'minimal', got _Renamed named \"minimal-clone\""
    ),
    M + "h_hooks:SelectRaises": Kill("H1", r"select_context\(\): expected a normal return"),
    M + "h_hooks:SelectMutatesHistory": Kill(
        "H3", r"argument conversation_messages: expected left unchanged"
    ),
    M + "h_hooks:TurnCompleteStripsUids": Kill(
        "H5", r"on_turn_complete\(\) on the host's message \d+ .*changed keys"
    ),
    M + "h_hooks:RotatingSelection": Kill(
        "H6", r"select_context\(\) call \d with inputs identical to call 1"
    ),
    M + "u_identity:RequiresUidOnOldRows": Kill("U2", r"compress\(\) raised: .*KeyError"),
    M + "u_identity:StaleContentByUid": Kill("U4", r"the stale content from the previous call"),
    M + "u_identity:BadSummaryUid": Kill(
        "U6", r"message_uid stamped by compress\(\) .*'summary-\d+'"
    ),
    M + "u_identity:RejectsDuplicateUids": Kill(
        "U7", r"compress\(\) raised: .*duplicate message_uid"
    ),
    M + "u_identity:RequiresUidOnCurrentTurn": Kill("U10", r"raised: .*KeyError"),
    M + "t_tools:InvalidToolSchema": Kill(
        "T1", r"expected a valid JSON Schema, got 'strin' is not valid"
    ),
    M + "t_tools:ToolReturnsDict": Kill(
        "T2", r"handle_tool_call\('context_recall'.*expected a JSON string, got dict"
    ),
    M + "c_clones:SharedCounters": Kill(
        "C1", r"state shared between agents|the clone's last_prompt_tokens"
    ),
    M + "c_clones:UnpicklableDefaultClone": Kill(
        "C1", r"clone_for_agent\(\) raised|the ABC default \(copy\.deepcopy\)"
    ),
    M + "c_clones:DeepcopyRaises": Kill(
        "C1",
        r"copy\.deepcopy\(engine\) \(the host profile .hermes-0\.19. never calls clone_for_agent",
        host_profile="hermes-0.19",
    ),
    M + "c_clones:SharedBudget": Kill(
        "C2", r"after (the child's|a sibling child's|a child's) update_model"
    ),
    M + "l_lifecycle:ClosedAfterSessionEnd": Kill(
        "L1", r"compress\(\) raised: .*RuntimeError: \"?engine closed"
    ),
    M + "k_config:DropsModelThresholds": Kill(
        "K1", r"threshold_tokens after update_model\(.*with model_thresholds"
    ),
    M + "ts_threads:ThreadAffine": Kill(
        "TS1", r"compress\(\) on a pool thread: expected the same output"
    ),
    M + "ts_threads:LeaksThreads": Kill(
        "TS1", r"compress\(\): expected no threads left running.*leaky-indexer"
    ),
    M + "ts_threads:WritesDuringPass": Kill(
        "TS2", r"files under \$HERMES_HOME after a compress\(\) pass the host timed out"
    ),
    M + "ts_threads:RacyInstance": Kill("TS3", r"message\(s\) of another session"),
    M + "ts3_shared_connection:SharedConnectionUnlocked": Kill(
        "TS3", r"message\(s\) of another session|OperationalError: \"cannot commit"
    ),
    M + "b_compressor:ThresholdSeventyFive": Kill(
        "B1", r"threshold_tokens on a 200000-token window: expected 100000"
    ),
    M + "b_compressor:KeepsOldToolOutput": Kill(
        "B2", r"outside the protected tail .*characters kept"
    ),
    M + "b_compressor:HeadDecays": Kill("B3", r"head message \d of the first history verbatim"),
    M + "b_compressor:DeclaresHeadDecayButKeepsHead": Kill(
        "B3", r"no verbatim first user message \(head decay\)"
    ),
    M + "b_compressor:PlainSummary": Kill("B4", r"expected the template headings"),
    M + "b_compressor:NoteEveryTime": Kill("B5", r"exactly once, got 2 times"),
    M + "b_compressor:SummaryAlwaysUser": Kill(
        "B5", r"no two same-role messages touching around the summary"
    ),
    M + "b_compressor:StartsOver": Kill("B6", r"a summary that shares nothing with the first one"),
    # faults plugin authors shipped (each with its correct twin in TWINS)
    M + "v_messages:KeepsCompleteTurnsOnly": Kill(
        "V2", r"calls .* of the newest assistant tool_calls message are gone from the output"
    ),
    M + "v_messages:StripsPendingCall": Kill(
        "V2", r"calls .* of the newest assistant tool_calls message are gone from the output"
    ),
    M + "v_messages:TruncatesSystemPrompt": Kill(
        "V4", r"does not start with the whole original system prompt \(the first 600 of"
    ),
    M + "v_messages:CounterInSystemPrompt": Kill(
        "V4", r"expected message 0 byte-identical to the one compaction \d left"
    ),
    M + "v_messages:StoreRecordRows": Kill("V5", r"carries 'dag_node', 'raw'"),
    M + "p_caching:CacheMarkedSummary": Kill("P5", r"carries cache_control on content part 0"),
    M + "o_optional:PercentOfZeroWindow": Kill("O8", r"get_status\(\) raised: .*ZeroDivisionError"),
    M + "a_surface:EditsInputInPlace": Kill(
        "A4", r"got the input list itself, edited in place .* the engine never compacts"
    ),
    M + "a_surface:KeepsMessageOpenings": Kill(
        "A5", r"to keep the planted fact 'QUARTZ-HERON-417'"
    ),
    M + "a5_llm_focus:ForgetsFocusInPrompt": Kill(
        "A5", r"to keep the planted fact 'QUARTZ-HERON-417'"
    ),
    M + "b5_user_summary:UserSummaryAfterSystem": Kill(
        "B5", r"no two same-role messages touching around the summary, got two user messages"
    ),
    M + "b_compressor:FallbackReopensAnsweredAsks": Kill(
        "B4", r"recorded as done, not as open work, got it under the heading 'Next Steps'"
    ),
    M + "d_determinism:NumberedSummaries": Kill("D1", r"two fresh engines on the same input"),
    M + "a4_summary_failure:DropsMiddleOnFailure": Kill(
        "A4", r"while the summariser failed .*removed with nothing in their place"
    ),
    M + "a4_summary_failure:EmptySummaryOnFailure": Kill(
        "A4", r"while the summariser failed .*removed with only a heading in their place"
    ),
    M + "h3_live_turn:RebuildsFromStore": Kill(
        "H3",
        r"the (last user message of|rows after the current user message in) the "
        r"select_context\(\) replacement",
    ),
    M + "h3_live_turn:WindowsConversation": Kill(
        "H3", r"last user message of the select_context\(\) replacement: expected the request's own"
    ),
    M + "o_new_methods:InfoIgnoresPromptTokens": Kill(
        "O12",
        r"should_compress_info\(\d+\) with the last usage at \d+ tokens: expected (True|False)",
    ),
    M + "o_new_methods:DropsOldToolRows": Kill(
        "O13", r"the pruned history of prune_tool_results_only\(.*has no tool result after it"
    ),
    M + "o_new_methods:CountsExchanges": Kill(
        "O14", r"has_content_to_compress\(<\d+ messages, over threshold_tokens>\): expected True"
    ),
    M + "l1_boundary_reset:ResetsOnSessionStart": Kill(
        "L1", r"(compression_count|the next compaction) after the compaction boundary"
    ),
    M + "a3_threshold:CachesFirstThreshold": Kill(
        "A3", r"should_compress\(\d*\) .*(new threshold|131 072-token window)"
    ),
    M + "a3_threshold:IgnoresPromptTokens": Kill(
        "A3", r"should_compress\(\d+\) with the last usage at \d+ tokens"
    ),
    M + "u7_store_identity:PositionKeyedStore": Kill(
        "U7", r"the \d+ new [a-z/]+ row\(s\) stored|held more than once"
    ),
    M + "_base:MinimalEngine[r4]": Kill("R4", r"version", PLUGIN_DIRS / "r4_no_version"),
    M + "_base:MinimalEngine[r5]": Kill(
        "R5", r"register_context_engine 2 times", PLUGIN_DIRS / "r5_registers_twice"
    ),
    M + "_base:MinimalEngine[r6]": Kill(
        "R6", r"expected 'r6_wrong_name'", PLUGIN_DIRS / "r6_wrong_name"
    ),
    M + "e1_sandbox:PhonesHome": Kill(
        "E1", r"compress\(\) tried to (look up '|connect to )198\.51\.100\.7"
    ),
    M + "e1_sandbox:ShellsOut": Kill("E1", r"compress\(\) tried to start a process"),
    M + "e1_sandbox:WritesBesideTheProject": Kill(
        "E1", r"compress\(\) tried to write \S*\.minimal-engine-cache \(outside its home\)"
    ),
}

if importlib.util.find_spec("reference_engines.router") is not None:  # from the host work (H6)
    KILLS[M + "h6_reshuffle:ReshufflingRouter"] = Kill(
        "H6",
        r"select_context\(\) call \d|prompt-cache reads",
        xfails=KNOWN_FINDINGS.get("reference_engines.router:ReferenceRouter"),
    )

#: Correct twins: for a mutant that reproduces a fault authors really ship, the engine with that
#: fault fixed the way the fix was shipped. A twin must pass clean on the whole case stream
#: (checks and bundled scenarios): it guards the check that kills the mutant against false
#: alarms. ``twin spec -> mutant spec`` (the mutant it is the fixed twin of).
TWINS: dict[str, str] = {
    "reference_engines.mutants.e1_sandbox:KeepsItsOwnHome": (
        "reference_engines.mutants.e1_sandbox:PhonesHome"
    ),
    M + "a4_summary_failure:FailClosedSummariser": M + "a4_summary_failure:DropsMiddleOnFailure",
    M + "a4_summary_failure:StandInOnFailure": M + "a4_summary_failure:EmptySummaryOnFailure",
    M + "h3_live_turn:KeepsLiveTurn": M + "h3_live_turn:RebuildsFromStore",
    M + "h3_live_turn:TrimmingSelector": M + "h3_live_turn:WindowsConversation",
    M + "l1_boundary_reset:KeepsStateAcrossBoundary": M + "l1_boundary_reset:ResetsOnSessionStart",
    M + "o_new_methods:InfoWithBlockReason": M + "o_new_methods:InfoIgnoresPromptTokens",
    M + "o_new_methods:PrunesOldToolOutputs": M + "o_new_methods:DropsOldToolRows",
    M + "o_new_methods:KnowsWhenNothingToCompress": M + "o_new_methods:CountsExchanges",
    M + "l1_boundary_reset:NamesItsSession": M + "l1_boundary_reset:ResetsOnSessionStart",
    M + "l1_boundary_reset:AnchorsItsSummary": M + "l1_boundary_reset:ResetsOnSessionStart",
    M + "a3_threshold:ThresholdFromUpdateModel": M + "a3_threshold:CachesFirstThreshold",
    M + "a3_threshold:HonoursPromptTokens": M + "a3_threshold:IgnoresPromptTokens",
    M + "u7_store_identity:UidKeyedStore": M + "u7_store_identity:PositionKeyedStore",
    M + "v_messages:KeepsCurrentTurnWhole": M + "v_messages:KeepsCompleteTurnsOnly",
    M + "v_messages:StripsOrphansNotInFlight": M + "v_messages:StripsPendingCall",
    M + "v_messages:TrimsSummaryNotSystemPrompt": M + "v_messages:TruncatesSystemPrompt",
    M + "v_messages:NoteInSystemPromptOnce": M + "v_messages:CounterInSystemPrompt",
    M + "v_messages:StoreFieldsStayInStore": M + "v_messages:StoreRecordRows",
    M + "p_caching:UnmarkedSummary": M + "p_caching:CacheMarkedSummary",
    M + "o_optional:GuardsZeroWindow": M + "o_optional:PercentOfZeroWindow",
    M + "a_surface:ReturnsNewList": M + "a_surface:EditsInputInPlace",
    M + "a_surface:KeepsOpeningsAndTopic": M + "a_surface:KeepsMessageOpenings",
    M + "a5_llm_focus:FocusInPrompt": M + "a5_llm_focus:ForgetsFocusInPrompt",
    M + "b5_user_summary:UserSummaryMergedIntoUser": M + "b5_user_summary:UserSummaryAfterSystem",
    M + "b_compressor:FallbackRecordsAnsweredAsks": M + "b_compressor:FallbackReopensAnsweredAsks",
    M + "v2_own_thresholds:LeafTailEngine": M + "v2_own_thresholds:LeafCutSplitsToolTurn",
    M + "ts3_shared_connection:SharedConnectionLocked": (
        M + "ts3_shared_connection:SharedConnectionUnlocked"
    ),
}

# Invariants for every engine on realistic sessions (conformance.checks.sessions), each mutant
# with its correct twin (reference_engines/mutants/sessions.py).
_S = M + "sessions:"
KILLS.update(
    {
        _S + "PasteTailByTokens": Kill("A8", r"the live ask .* got no user row holding it"),
        _S + "LastRowsInToolLoop": Kill("A8", r"no user message at all|got no user row holding it"),
        _S + "NoteWhenNothingDropped": Kill("A9", r"tokens of the compress\(\) output"),
        _S + "OverlappingHeadTail": Kill("V2", r"it comes out 2 times"),
        _S + "CapsInUtf16Units": Kill("V6", r"a lone surrogate U\+D[89AB]"),
        _S + "RebuildsKeptRows": Kill("V7", r"has its '(reasoning_content|reasoning|name)"),
        _S + "ArgumentsAsDict": Kill("V7", r"arguments of type dict, not the JSON string"),
        _S + "CutsLongArguments": Kill("V7", r"arguments that no longer parse as JSON"),
        _S + "FlattensKeptParts": Kill("V7", r"content parts flattened to str"),
        _S + "ForgetsOldSummary": Kill("A10", r"the fact 'FACT-[0-9a-f]+' the engine's summary"),
        _S + "GrowingSummary": Kill("A11", r"the summary written by compaction \d+"),
        _S + "EditsEarlierTurns": Kill("H5", r"handed to on_turn_complete\(\) of turn 1"),
        _S + "PreflightCountsJson": Kill("O7", r"KB screenshot>\): expected False"),
        _S + "SummaryTakesFirstUid": Kill("U6", r"the message_uid of input message \d+"),
    }
)
TWINS.update(
    {
        _S + "TokenTailKeepsAsk": _S + "PasteTailByTokens",
        _S + "LastRowsKeepAsk": _S + "LastRowsInToolLoop",
        _S + "NoNoteWhenNothingDropped": _S + "NoteWhenNothingDropped",
        _S + "HeadTailNoOverlap": _S + "OverlappingHeadTail",
        _S + "CapsInCodePoints": _S + "CapsInUtf16Units",
        _S + "CopiesKeptRows": _S + "RebuildsKeptRows",
        _S + "ParsesArgumentsAside": _S + "ArgumentsAsDict",
        _S + "ShrinksArgumentsInJson": _S + "CutsLongArguments",
        _S + "KeepsKeptParts": _S + "FlattensKeptParts",
        _S + "FoldsOldSummary": _S + "ForgetsOldSummary",
        _S + "BudgetedSummary": _S + "GrowingSummary",
        _S + "TrimsOwnCopies": _S + "EditsEarlierTurns",
        _S + "PreflightCountsText": _S + "PreflightCountsJson",
        _S + "SummaryDerivedUid": _S + "SummaryTakesFirstUid",
    }
)

#: ``module:Class`` (or ``module:Class[variant]``) -> clause, for every mutant.
MUTANTS: dict[str, str] = {spec: kill.clause for spec, kill in KILLS.items()}


def engine_spec(spec: str) -> str:
    """The loadable ``module:Class`` part of a mutant key (drops a ``[variant]`` suffix)."""
    return spec.split("[", 1)[0]


def optional_references():
    """Reference engines from other parts of the kit that are present in this tree."""
    out = []
    for spec in _OPTIONAL_REFERENCES:
        module = spec.split(":", 1)[0]
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            out.append(spec)
    return out
