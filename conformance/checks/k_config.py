"""Checks of contract section K: configuration (K1; K2 is a permission, no check).

K1: the host assigns ``compression.model_thresholds`` to ``engine.model_thresholds``
before the first update_model(); the base update_model() applies it (longest matching
substring of the model name wins, else the configured threshold). Engines that override
update_model() own their policy and may ignore the map (K2): the map check skips them.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.authoring.expect import MUST, fail, short
from conformance.authoring.registry import check
from conformance.checks.engine_calls import overrides, update_model_like_host
from conformance.clauses.errors import CheckSkipped

MAP = {"sim": 0.6, "sim-large": 0.85, "other-vendor": 0.3}


@check(
    "K1",
    "model-thresholds-applied",
    level=MUST,
    title="engine.model_thresholds set before update_model() "
    "picks the threshold by longest matching key",
    examples=8,
)
def check_k1_model_thresholds_applied(ctx):
    """K1: with the map assigned before the first update_model(), ``threshold_tokens`` is
    ``int(context_length x percent)`` for the longest key contained in the model name (the
    int() formula: host practice), else for the configured percent."""
    probe = ctx.new_engine(configure=False)
    if overrides(probe, "update_model"):
        raise CheckSkipped(
            "engine overrides update_model() and owns its threshold policy (K2 permits ignoring "
            "compression.model_thresholds)"
        )

    def body(draw):
        model = draw(
            st.sampled_from(["sim-model", "sim-large-2", "gpt-x", "other-vendor-1"]), "model"
        )
        window = draw(st.integers(8_000, 300_000), "context_length")
        engine = ctx.new_engine(configure=False)
        configured = float(getattr(engine, "threshold_percent", 0.75))
        engine.model_thresholds = dict(MAP)  # what the host does before the first update_model()
        update_model_like_host("K1", MUST, engine, model, window)
        keys = [k for k in MAP if k in model]
        percent = MAP[max(keys, key=len)] if keys else configured
        want = int(window * percent)
        got = getattr(engine, "threshold_tokens", None)
        if got != want:
            fail(
                "K1",
                MUST,
                f"threshold_tokens after update_model({model!r}, {window}) with model_thresholds "
                f"{short(MAP, 80)}",
                expected=f"{want} (= int({window} x {percent}))",
                got=short(got),
                context="the int() formula: host practice",
            )

    ctx.examples(body)
