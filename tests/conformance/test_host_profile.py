"""Covers the skip rule of conformance.run.session and the per-agent copy of
conformance.checks.c_clones: --host-profile and the host ABC decide which clauses exist."""

from __future__ import annotations

from conformance.authoring import registry
from conformance.authoring.context import CheckContext
from conformance.run.cases import cases
from conformance.run.session import ConformanceSession, RunOptions, run_conformance
from reference_engines.router import ReferenceRouter
from simulator.host.shim import AbcInfo


def test_hermes_019_profile_skips_the_clauses_that_host_lacks():
    results = {
        r.check: r
        for r in run_conformance(
            ReferenceRouter,
            profile="quick",
            host_profile="hermes-0.19",
            scenarios=False,
            only=["H3", "H5", "C1", "U2", "A2"],
        )
    }
    for check, r in results.items():
        if check.startswith(
            ("A2", "C1")
        ):  # C1: that host deep-copies instead (ReferenceRouter defines __deepcopy__)
            assert r.outcome == "passed", (check, r.message)
        else:
            assert r.outcome == "skipped", (check, r.outcome)
            assert "host profile 'hermes-0.19'" in r.message


def test_documented_profile_runs_them():
    results = [
        r
        for r in run_conformance(
            ReferenceRouter, profile="quick", scenarios=False, only=["H3", "H5", "C1"]
        )
        if not r.check.startswith("REG-f")
    ]  # REG-f needs an engine deepcopy cannot copy
    assert len(results) == 5 and all(r.outcome == "passed" for r in results), [
        (r.check, r.outcome) for r in results
    ]


def test_an_abc_without_the_hooks_skips_with_its_version():
    abc = AbcInfo("hermes-agent", "0.19.0", frozenset())
    session = ConformanceSession(RunOptions(), ReferenceRouter, abc=abc)
    absent = [chk for chk in registry.all_checks() if chk.needs]
    assert {"H3", "H5", "H6", "O9", "O10", "O11", "K1", "U2", "U10"} <= {c.clause for c in absent}
    for chk in absent:
        reason = session.skip_reason(chk)
        assert reason and "hermes-agent 0.19.0" in reason, chk.id
    assert session.skip_reason(registry.get("A2-usage-updates-counters")) is None


def test_scenario_expectations_follow_the_profile():
    scenario_cases = cases(checks=False)
    k1 = next(c for c in scenario_cases if c.clause == "K1")
    l1 = next(c for c in scenario_cases if c.clause == "L1")
    old = ConformanceSession(RunOptions(host_profile="hermes-0.19"), ReferenceRouter)
    documented = ConformanceSession(RunOptions(), ReferenceRouter)
    assert "host profile 'hermes-0.19' has no model_thresholds" in old.skip_reason(k1)
    assert documented.skip_reason(k1) is None
    assert old.skip_reason(l1) is None


def test_capabilities_from_the_command_line_add_to_the_engines():
    from reference_engines.mutants._base import MinimalEngine

    plain = ConformanceSession(RunOptions(), MinimalEngine)
    extra = ConformanceSession(RunOptions(capabilities=frozenset({"compressor"})), MinimalEngine)
    chk = next(c for c in registry.all_checks() if "compressor" in c.requires)
    assert "lacks capability 'compressor'" in plain.skip_reason(chk)
    assert extra.skip_reason(chk) is None


class _Counted:
    """Records which per-agent copy path the check took."""

    def __init__(self):
        from reference_engines.mutants._base import MinimalEngine

        self.engine = MinimalEngine()
        self.calls = []

    def factory(self):
        from reference_engines.mutants._base import MinimalEngine

        calls = self.calls

        class Engine(MinimalEngine):
            def clone_for_agent(self):
                calls.append("clone_for_agent")
                return type(self)()

            def __deepcopy__(self, memo):
                calls.append("deepcopy")
                return type(self)()

        return Engine()


def test_c1_copies_the_way_the_profile_host_does():
    """C1 on hermes-0.19 deep-copies (that host never calls clone_for_agent); documented calls the
    hook."""
    from conformance.checks.c_clones import per_agent_copy

    for host_profile, path in (("documented", "clone_for_agent"), ("hermes-0.19", "deepcopy")):
        counted = _Counted()
        ctx = CheckContext(counted.factory, host_profile=host_profile)
        clone, how = per_agent_copy(ctx, counted.factory(), "C1")
        assert counted.calls == [path] and path.split("_")[0] in how


def test_c1_reports_a_failing_deepcopy_only_where_the_host_deep_copies():
    from reference_engines.mutants.c_clones import DeepcopyRaises

    for host_profile, outcome in (("documented", "passed"), ("hermes-0.19", "failed")):
        (r,) = run_conformance(
            DeepcopyRaises,
            profile="quick",
            host_profile=host_profile,
            scenarios=False,
            only=["C1-clone-distinct"],
        )
        assert r.outcome == outcome, (host_profile, r.message)
    assert (
        "copy.deepcopy(engine) (the host profile 'hermes-0.19' never calls clone_for_agent"
        in r.message
    )
    assert "the engine's own __deepcopy__ raised" in r.message  # DeepcopyRaises defines one
    assert "__deepcopy__" in r.message


def test_c1_skips_plugin_folder_engines_on_hermes_019():
    """0.19.0 loads a directory engine afresh for each agent and copies nothing."""
    from reference_engines.mutants import REFERENCE_PLUGIN_DIR
    from reference_engines.mutants.c_clones import DeepcopyRaises

    (r,) = run_conformance(
        DeepcopyRaises,
        profile="quick",
        host_profile="hermes-0.19",
        scenarios=False,
        plugin_dir=str(REFERENCE_PLUGIN_DIR),
        only=["C1-clone-distinct"],
    )
    assert r.outcome == "skipped" and "copies nothing" in r.message
