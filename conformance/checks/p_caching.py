"""Checks of contract section P that engines keep: cache markers are the host's (P5).

P1-P4 are host and provider behaviour (the host's system_and_3, marker placement, prefix
caching), proven by the host and provider tests listed in docs/coverage.md. P5 is the
engine's side of it: compress() output and select_context() replacements carry no
``cache_control`` of their own. The host then places its four breakpoints (P1); one more from
the engine makes five, which Anthropic answers with a 400 (the provider simulator does too).
Unlike V1-V4, P5 is MUST on replacements as well: no sanitizer strips a marker.
"""

from __future__ import annotations

from conformance.authoring.expect import MUST, cache_marker_problems
from conformance.authoring.registry import check
from conformance.checks.v_messages import SURFACES, check_surface_rows


@check(
    "P5",
    "no-engine-cache-markers",
    level=MUST,
    variants=SURFACES,
    title="compress() output and select_context() replacements carry no cache_control",
    examples=4,
)
def check_p5_no_engine_cache_markers(ctx, variant):
    """P5: no returned row carries ``cache_control``, on the row or on a content part (a marker
    on an input row passed through unchanged excepted). Inputs: compactable histories over the
    threshold and plain transcripts, drawn rows as content parts (P2's shape)."""
    check_surface_rows(
        ctx,
        "P5",
        MUST,
        variant,
        cache_marker_problems,
        expected="no cache_control markers (the host places its 4 breakpoints, P1; one more and "
        "Anthropic answers 400 'A maximum of 4 blocks with cache_control may be provided')",
    )
