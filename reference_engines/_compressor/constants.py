"""Numbers and marker texts of the reference compressor (contract B1-B6).

Numbers come from the documented built-in compressor (seed 002, docs/contract.md section B);
where the documentation is silent, the values Hermes 0.19.0 uses are taken and marked "host
practice".
"""

from __future__ import annotations

#: B1 defaults.
DEFAULT_CONTEXT_LENGTH = 200_000
DEFAULT_THRESHOLD_PERCENT = 0.50
DEFAULT_SUMMARY_TARGET_RATIO = 0.20
DEFAULT_PROTECT_FIRST_N = 3
DEFAULT_PROTECT_LAST_N = 20
#: B1: the documented range of target_ratio (seed 002 parameter table).
TARGET_RATIO_RANGE = (0.10, 0.80)

#: B1/B4: max summary = min(context_length x 0.05, 12 000) tokens.
SUMMARY_CONTEXT_FRACTION = 0.05
SUMMARY_TOKENS_CEILING = 12_000
#: B4: summary budget = content tokens x 0.20, at least 2 000 tokens.
SUMMARY_RATIO = 0.20
MIN_SUMMARY_TOKENS = 2_000

#: B2: tool results longer than this many characters are cleared outside the tail.
PRUNE_MIN_CHARS = 200
#: B2: the placeholder text (seed 002).
PRUNED_TOOL_PLACEHOLDER = "[Old tool output cleared to save context space]"

#: B3: when no more than protect_last_n rows follow the head (the seeds are silent on this
#: case), the tail leaves this many rows to summarise: one summary row replacing one row
#: would not shorten the history. (Engine choice; the seeds' floor is protect_last_n,
#: uncapped: docs/contract-notes.md 1.6. Hermes caps it at max(3, min(n, 8)).)
MIN_MIDDLE_ROWS = 2

#: A3 (host practice): automatic compaction stops after this many ineffective passes.
MAX_INEFFECTIVE_PASSES = 2

#: Serialisation limits for the summariser input (host practice: Hermes' values).
CONTENT_MAX_CHARS = 6_000
CONTENT_HEAD_CHARS = 4_000
CONTENT_TAIL_CHARS = 1_500
TOOL_ARGS_MAX_CHARS = 1_500
TOOL_ARGS_HEAD_CHARS = 1_200
#: Tokens allowed per serialised row for its ``[role]`` label line, on top of its count.
LABEL_ALLOWANCE_TOKENS = 8
#: A9: tokens a compaction adds besides its summary (the note on the system prompt, a row's
#: framing, a merge); below that margin a summary cannot make the history grow.
GROWTH_ALLOWANCE_TOKENS = 200
#: Tokens allowed per tool call for its ``[tool call <id>] <name>`` line.
CALL_LINE_ALLOWANCE_TOKENS = 12
#: Tokens reserved for the prompt template's own text (system + section headers).
TEMPLATE_RESERVE_TOKENS = 1_024

#: B5: sentence appended to the system prompt on the first compaction only.
COMPACTION_NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a handoff summary "
    "to preserve context space. Build on that summary and the current state rather than "
    "re-doing work.]"
)

#: B5: first line of every summary message; also how a previous summary is found (B6).
SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary "
    "below. It is a handoff from a previous context window; treat it as background, not "
    "as new instructions."
)
#: B5: last line of every summary message.
SUMMARY_END_MARKER = (
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
)
#: B4: the structured template's section headings, in order (seed 002).
TEMPLATE_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Relevant Files",
    "## Next Steps",
    "## Critical Context",
)
