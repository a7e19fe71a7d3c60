"""Invariants that hold for every engine, checked on sessions shaped like real agent sessions
(:func:`conformance.authoring.strategies.realistic_sessions`; docs/strategies.md says where each
shape comes
from, docs/contract-notes.md section 8 argues each level).

- A8 (MUST) the live ask survives compress() verbatim in a user row (so a user row remains);
- A9 (MUST) a compaction never returns more tokens than it got;
- A10 (SHOULD) a fact the engine put in its summary is still there after the next compaction;
- A11 (SHOULD) the summary stays bounded over many passes (twelve);
- V2 (MUST, extended) no input row and no tool chain comes out twice (head and tail overlap);
- V6 (MUST) every string of the output is valid Unicode and the output serialises as UTF-8 JSON;
- V7 (MUST) a kept row keeps its provider fields and JSON-string arguments; (SHOULD) its
  list-of-parts content is not flattened and keeps its images;
- H5 (MUST, extended) dicts the engine got in on_turn_complete are not edited at a later call;
- O7 (SHOULD, extended) should_compress_preflight() does not read image bytes as text;
- U6 (SHOULD, extended) a summary row does not take the message_uid of a row it summarised.

Each compaction check skips engines that never compact (:func:`skip_unless_compacts`).

The package: ``rows`` (what the invariants judge rows by), ``one_pass`` (A8, A9, V2, V6, V7:
one compaction) and ``many_passes`` (A10, A11, H5, O7, U6: across calls). Importing it
registers every check of both.
"""

from __future__ import annotations

# the checks register on import
from conformance.checks.sessions import many_passes, one_pass  # noqa: F401
from conformance.checks.sessions.one_pass import bulk_in_tail_history, late_arguments_history
from conformance.checks.sessions.rows import (
    PASSES,
    duplicated_rows,
    flat_text,
    kept_pairs,
    new_rows,
    text_parts,
    wire_key,
)

__all__ = [
    "PASSES",
    "bulk_in_tail_history",
    "duplicated_rows",
    "flat_text",
    "kept_pairs",
    "late_arguments_history",
    "new_rows",
    "text_parts",
    "wire_key",
]
