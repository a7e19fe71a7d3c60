"""Covers conformance.authoring.hypothesis_profiles: the three budgets registered as Hypothesis
profiles,
the health checks the kit suppresses (and the ones it keeps: a kit fault must show), and CI
detection by Hypothesis' own rule."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.errors import FailedHealthCheck

from conformance.authoring import hypothesis_profiles as hp
from conformance.authoring.context import CheckContext


@pytest.mark.parametrize(
    "profile, examples, steps", [("quick", 6, 12), ("default", 40, 25), ("thorough", 200, 60)]
)
def test_each_budget_is_a_registered_hypothesis_profile(profile, examples, steps):
    got = settings.get_profile(f"conformance-{profile}")
    assert got.max_examples == examples and got.stateful_step_count == steps
    assert got.deadline is None and got.database is None
    assert set(got.suppress_health_check) == {
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    }


def test_kit_profile_reads_only_the_kit_names():
    assert hp.kit_profile("conformance-thorough") == "thorough"
    assert hp.kit_profile("conformance-fast") is None
    assert hp.kit_profile("ci") is None and hp.kit_profile(None) is None


def test_a_check_runs_with_its_profile_and_its_own_budget():
    ctx = CheckContext(engine_factory=object, profile="quick", derandomize=True)
    got = ctx.settings()
    assert got.max_examples == 6 and got.derandomize
    assert set(got.suppress_health_check) == set(hp.SUPPRESSED_HEALTH_CHECKS)
    assert CheckContext(engine_factory=object, profile="nonesuch").settings().max_examples == 40


def test_a_kit_fault_still_fails_its_health_check():
    """A check that filters away every draw is a kit fault: Hypothesis' filter_too_much health
    check must say so rather than the check passing on no example."""
    ctx = CheckContext(engine_factory=object, profile="quick", derandomize=True)

    def body(draw):
        draw(st.integers().filter(lambda _: False), "never")

    with pytest.raises(FailedHealthCheck, match="filter"):
        ctx.examples(body)


@pytest.mark.parametrize(
    "env",
    [
        {"CI": "true"},
        {"TF_BUILD": "true"},
        {"CIRRUS_CI": "true"},  # counted by recent Hypothesis; the kit's own list did not
        {"JENKINS_URL": "http://ci"},  # counted by the kit's own list; not by Hypothesis
        {},
    ],
)
def test_ci_is_detected_by_hypothesis_rule(monkeypatch, env):
    from hypothesis._settings import is_in_ci

    for name in (
        "CI",
        "CIRRUS_CI",
        "GITHUB_ACTIONS",
        "JENKINS_URL",
        "TF_BUILD",
        "GITLAB_CI",
        "BUILDKITE",
        "CIRCLECI",
        "CODEBUILD_BUILD_ID",
        "HEROKU_TEST_RUN_ID",
        "TEAMCITY_VERSION",
        "bamboo.buildKey",
        "__TOX_ENVIRONMENT_VARIABLE_ORIGINAL_CI",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    expected = is_in_ci()
    if not env or "CI" in env:  # the same under every supported Hypothesis
        assert expected is bool(env)
    assert hp.in_ci() is expected
    assert CheckContext(engine_factory=object, derandomize=False).derandomize is expected
