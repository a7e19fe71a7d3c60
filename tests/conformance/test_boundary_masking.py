"""Covers conformance.checks.d_determinism (mask_uids, first_difference) and L1's boundary
check (conformance.checks.l_lifecycle): two correct engine shapes that were false alarms stay
clean, and a difference the checks do report is shown where it is.

- an engine that names its current session id in its summary differs, after a rotation, by
  exactly the new id (L1 MUST before the fix);
- an engine that keeps its summary row's own uid under a private ``_anchor_uid`` key differs
  between two fresh engines by that uid, which the kit masked under ``message_uid`` only (L1
  MUST and D1 SHOULD before the fix).
"""

from __future__ import annotations

import pytest

from conformance.checks.d_determinism import first_difference, mask_uids
from conformance.run.session import run_conformance
from conformance.runtime.engine_loading import load_engine_factory

M = "reference_engines.mutants.l1_boundary_reset:"
CHECKS = ["L1-compaction-boundary-keeps-state", "D1-same-input-same-output"]


@pytest.mark.parametrize("engine", ["NamesItsSession", "AnchorsItsSummary"])
def test_correct_engines_of_both_shapes_stay_clean(engine):
    results = run_conformance(load_engine_factory(M + engine), only=CHECKS, scenarios=False)
    assert sorted(r.check for r in results) == sorted(CHECKS)
    assert all(r.outcome == "passed" for r in results), [r.message for r in results]


def test_the_mutant_that_forgets_at_the_boundary_still_fails_l1():
    (result,) = run_conformance(
        load_engine_factory(M + "ResetsOnSessionStart"), only=CHECKS[:1], scenarios=False
    )
    assert result.outcome == "failed" and result.message.startswith("[L1 MUST]")


def test_a_uid_is_masked_under_any_key_and_inside_text():
    uid_a, uid_b = "a" * 32, "b" * 32
    one = [{"role": "user", "message_uid": uid_a, "_anchor_uid": uid_a, "content": f"see {uid_a}"}]
    two = [{"role": "user", "_anchor_uid": uid_b, "message_uid": uid_b, "content": f"see {uid_b}"}]
    assert mask_uids(one) == mask_uids(two)
    assert mask_uids(one)[0]["_anchor_uid"] == "<uid-1>"
    assert mask_uids([{"message_uid": "u1", "content": "u1 stays in prose"}])[0]["content"] == (
        "u1 stays in prose"
    )  # a short uid is masked as a value only


def test_the_first_difference_is_on_screen_wherever_it_is():
    """Two rows equal for 300 characters: the message names the row, the key and the
    character, and shows both texts around it (not both cut at the same point)."""
    same = "x" * 300
    a = [{"role": "system", "content": "s"}, {"role": "user", "content": same + " session-1 end"}]
    b = [{"role": "system", "content": "s"}, {"role": "user", "content": same + " session-2 end"}]
    text = first_difference(a, b)
    assert text.startswith("message 1, 'content' differs at character 309: "), text
    assert "session-1" in text and "session-2" in text
    assert first_difference(a, a[:1]) == "the output: 2 messages instead of 1"
    assert first_difference(a, a) == "no difference"


class _TagsTail:
    """Adds Hermes 0.22's ``_compaction_tail`` bookkeeping key to the rows it carries over."""

    def compress(self, messages, *args, **kwargs):
        out = super().compress(messages, *args, **kwargs)
        if out is messages:
            return out
        tagged = [dict(m) for m in out]
        for m in tagged[-6:]:
            if m.get("role") != "system":
                m["_compaction_tail"] = True
        return tagged


def test_a_tail_row_tagged_with_an_underscore_key_is_still_verbatim():
    """B3/B2: rows compared as the host sends them; a ``_`` key the engine adds (stripped
    before the wire) does not make a carried-over row "not verbatim" (Hermes 0.22's compressor
    got "verbatim tail: 0 messages"). A correct compressor that tags its tail stays clean."""
    from conformance.checks.b_compressor import as_sent, kept_tail
    from reference_engines.compressor import ReferenceCompressor

    rows = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    tagged = [dict(r, _compaction_tail=True) for r in rows]
    assert kept_tail(rows, tagged) == 2
    assert kept_tail(rows, [dict(rows[0]), {"role": "assistant", "content": "B"}]) == 0
    assert as_sent({"role": "user", "_x": 1, "message_uid": "u"}) == {
        "role": "user",
        "message_uid": "u",
    }

    class TaggingCompressor(_TagsTail, ReferenceCompressor):
        pass

    results = run_conformance(
        TaggingCompressor,
        only=["B3-head-and-tail-protected", "B2-old-tool-output-cleared"],
        scenarios=False,
        capabilities=["compressor"],
    )
    assert results and all(r.outcome == "passed" for r in results), [r.message for r in results]
