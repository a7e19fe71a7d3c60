"""Hypothesis strategies for OpenAI-format transcripts, valid by construction.

``transcripts()`` draws whole histories: an optional system prompt, then turns of a user
message, optionally an assistant ``tool_calls`` message (parallel calls, reused provider
ids) with its ``tool`` results (in any order), and an assistant reply. Text comes from
Faker locales (Latin, CJK, RTL, Cyrillic) plus emoji, seeded by a drawn integer; long
tool outputs are built from a drawn seed, never drawn character by character. Every draw
is labelled so a failure's shrunk example reads clearly.

Knobs: ``min_turns``/``max_turns``, ``min_tokens`` (forces threshold-crossing histories by
appending filler tool turns), ``tool_calls``, ``multipart``, ``long_outputs``,
``uids`` (``"none"``, ``"all"``, ``"some"``, ``"duplicates"``, ``"any"``).

``compactable_histories()`` draws histories over a token figure with their bulk in the
compressible middle (optionally a focus fact deep in a long message, an answered ask, a given
system prompt); ``long_system_prompts()`` system messages of 2,000+ characters ending on a
unique token; ``tool_chains()`` / ``in_flight_histories()`` histories that end mid tool chain
(on a tool result, on a pending call, part-way through parallel results);
``content_part_rows()`` the same rows with list-of-parts content; ``grow_history()`` the
history a later compaction sees.

The package: ``seeded`` (text, tool outputs, uids, astral text, screenshots, pastes and
provider fields built from a seed and a size), ``blocks`` (deterministic message blocks: filler
turns, probe histories, file writes, parallel batches, tool loops), ``transcripts``
(``transcripts()`` and its turns, ``usage_dicts()``) and ``histories`` (compactable, in-flight and
realistic histories). Every public name is importable from here.
"""

from __future__ import annotations

from conformance.authoring.strategies.blocks import (
    add_filler,
    argument_heavy_turn,
    deep_tool_loop,
    filler_block,
    grow_history,
    head_exchange,
    live_ask_index,
    parallel_batch,
    plain_filler_block,
    probe_history,
)
from conformance.authoring.strategies.histories import (
    ANSWERED_ASKS,
    CHAIN_ENDINGS,
    CHAIN_OUTPUT_CHARS,
    SYSTEM_END_TOKEN,
    answered_asks,
    compactable_histories,
    content_part_rows,
    in_flight_histories,
    long_system_prompts,
    realistic_sessions,
    tool_chains,
)
from conformance.authoring.strategies.seeded import (
    ASTRAL,
    EMOJI,
    IMAGE_KB,
    LOCALES,
    LONG_OUTPUT_CHARS,
    PASTE_CHARS,
    PROVIDER_FIELD_KINDS,
    REASONING_FIELDS,
    TOOL_NAMES,
    astral_text,
    blob_from_seed,
    image_data_url,
    paste_text,
    reasoning_fields,
    text_from_seed,
    uid_from_seed,
)
from conformance.authoring.strategies.transcripts import (
    _stamp_uids,
    _turn,
    texts,
    tool_turn,
    transcripts,
    usage_dicts,
    user_content,
)

__all__ = [
    "ANSWERED_ASKS",
    "ASTRAL",
    "CHAIN_ENDINGS",
    "CHAIN_OUTPUT_CHARS",
    "EMOJI",
    "IMAGE_KB",
    "LOCALES",
    "LONG_OUTPUT_CHARS",
    "PASTE_CHARS",
    "PROVIDER_FIELD_KINDS",
    "REASONING_FIELDS",
    "SYSTEM_END_TOKEN",
    "TOOL_NAMES",
    "_stamp_uids",
    "_turn",
    "add_filler",
    "answered_asks",
    "argument_heavy_turn",
    "astral_text",
    "blob_from_seed",
    "compactable_histories",
    "content_part_rows",
    "deep_tool_loop",
    "filler_block",
    "grow_history",
    "head_exchange",
    "image_data_url",
    "in_flight_histories",
    "live_ask_index",
    "long_system_prompts",
    "parallel_batch",
    "paste_text",
    "plain_filler_block",
    "probe_history",
    "realistic_sessions",
    "reasoning_fields",
    "text_from_seed",
    "texts",
    "tool_chains",
    "tool_turn",
    "transcripts",
    "uid_from_seed",
    "usage_dicts",
    "user_content",
]
