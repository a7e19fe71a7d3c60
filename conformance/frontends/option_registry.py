"""The kit's pytest options and ini keys, registered once (:func:`add_options`): the
``--engine`` options (each with a ``--conformance-`` spelling), the ``--conformance-*`` options
and the ini keys; their values are parsed by :mod:`conformance.frontends.option_types`.
"""

from __future__ import annotations

import pytest

from conformance.authoring.budget import DEFAULT_BUDGET_S
from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
from conformance.authoring.hypothesis_profiles import PROFILES
from conformance.frontends.option_types import Once, choice, file_name, given, host_profiles, number
from conformance.runtime.timeouts import DEFAULT_MAX_TIMEOUTS

ENV_ENGINE = "CONFORMANCE_ENGINE"
ENV_ENGINE_KWARGS = "CONFORMANCE_ENGINE_KWARGS"
#: Ini keys read when their command-line option is not given (the command line wins).
INI_PROFILE = "conformance_profile"
INI_HOST_PROFILE = "conformance_host_profile"
INI_BUDGET = "conformance_budget"


def add_options(parser: pytest.Parser) -> None:
    """Register every option of the kit's pytest front end (one group, ``conformance``)."""
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    add = group.addoption

    def flag(name: str, help: str) -> None:
        add(name, action="store_true", help=help)

    add(
        "--engine",
        "--conformance-engine",
        type=given("the engine as MODULE:ATTR"),
        action=Once,
        metavar="MODULE:ATTR",
        help="engine under test: a ContextEngine subclass or factory (env CONFORMANCE_ENGINE).",
    )
    add(
        "--engine-kwargs",
        "--conformance-engine-kwargs",
        metavar="JSON",
        help="JSON object of keyword arguments for the engine (env CONFORMANCE_ENGINE_KWARGS).",
    )
    add(
        "--engine-plugin",
        "--conformance-engine-plugin",
        type=given("the plugin folder"),
        action=Once,
        metavar="DIR",
        help="a plugin folder ($HERMES_HOME/plugins/<name>/) to check for R4-R6; without "
        "--engine its engine is also the engine under test.",
    )
    add(
        "--conformance-capabilities",
        default="",
        metavar="LIST",
        help="comma-separated capabilities to add to the engine's conformance_capabilities "
        "(e.g. compressor,focus for an engine you cannot edit).",
    )
    add(
        "--host-profile",
        "--conformance-host-profile",
        type=host_profiles,
        metavar="HOSTS",
        help="the host(s) the kit plays: a profile (documented, hermes-0.19, hermes-0.22, ...), "
        "a comma-separated list, or all (every profile); a case that depends on the host runs "
        "once per host that shows it a different input, and the verdict says per host which "
        "clauses fail. Default: the ini key conformance_host_profile, else documented plus the "
        "profile of a real Hermes installed next to the kit. Cases of clauses a host lacks are "
        "skipped there.",
    )
    add(
        "--conformance-profile",
        type=choice(sorted(PROFILES)),
        metavar="{" + ",".join(sorted(PROFILES)) + "}",
        help="Hypothesis budget: quick, default or thorough, registered with Hypothesis as "
        "conformance-quick, conformance-default and conformance-thorough (so "
        "--hypothesis-profile=conformance-thorough works too). Default: the ini key "
        "conformance_profile, else default.",
    )
    flag("--conformance-strict", "SHOULD failures and XPASS fail the run too.")
    flag("--conformance-random", "do not derandomize Hypothesis (explore new examples each run).")
    add(
        "--conformance-seed",
        type=number(int, "", "--conformance-seed=1234"),
        metavar="N",
        help="Hypothesis seed with --conformance-random (recorded in failure files).",
    )
    add(
        "--conformance-json",
        type=file_name,
        action=Once,
        metavar="FILE",
        help="write the verdict as JSON to FILE.",
    )
    add(
        "--conformance-failures-dir",
        metavar="DIR",
        help="where shrunk failing examples are written (default .conformance/failures).",
    )
    add(
        "--conformance-xfails",
        metavar="FILE",
        help="expected failures: one case id, id prefix or clause per line, '# reason' optional "
        "(non-strict; --conformance-strict makes an XPASS fail).",
    )
    add(
        "--conformance-replay",
        metavar="FILE",
        help="rerun one failure file on its recorded (shrunk) draws; the engine comes from the "
        "file when none is given.",
    )
    add(
        "--conformance-timeout",
        type=number(float, " of seconds", "--conformance-timeout=30"),
        metavar="SECONDS",
        help=f"the limit of one engine call: a call longer than this is a hang and fails its "
        f"case (default {DEFAULT_CHECK_TIMEOUT_S:g}).",
    )
    add(
        "--conformance-budget",
        type=number(float, " of seconds", "--conformance-budget=60"),
        metavar="SECONDS",
        help=f"seconds the checks may spend inside the engine's calls while drawing examples, "
        f"shared out among them; a check whose share runs out is partly checked, not passed "
        f"(default: the ini key conformance_budget, else {DEFAULT_BUDGET_S:g}; 0: no budget).",
    )
    add(
        "--conformance-memory-limit",
        type=number(float, " of GiB", "--conformance-memory-limit=4"),
        metavar="GIB",
        help="address-space cap of each case's process, in GiB (default 4; 0: none); an engine "
        "that reaches it fails its case, the run goes on.",
    )
    add(
        "--conformance-isolation",
        default="fork",
        type=choice(("fork", "inprocess")),
        metavar="{fork,inprocess}",
        help="fork: each case in a supervised child process (an engine that exits, crashes or "
        "hangs ends that case only); inprocess: in this process (no fork).",
    )
    add(
        "--conformance-max-timeouts",
        type=number(int, "", "--conformance-max-timeouts=3"),
        metavar="N",
        help="after N cases have timed out (a hanging engine), the remaining cases are errors "
        f"without running (default {DEFAULT_MAX_TIMEOUTS}; 0 runs every case).",
    )
    flag(
        "--conformance-no-shrink",
        "do not shrink failing examples (faster failures, longer examples).",
    )
    flag("--conformance-no-scenarios", "leave the bundled scenario library out of the run.")
    flag(
        "--conformance-snapshots",
        "run the snapshot tier (compress/select_context output over the seeded corpus, "
        "diffed by syrupy; snapshots in .conformance/snapshots/<engine>/). On by default when "
        "that folder exists; create it with --snapshot-update.",
    )
    add(
        "--conformance-snapshots-dir",
        metavar="DIR",
        help="the folder holding the per-engine snapshot folders (default "
        "<rootdir>/.conformance/snapshots).",
    )
    add(
        "--conformance-report",
        type=file_name,
        metavar="FILE",
        help="write a self-contained HTML report (verdict by clause, one token plot per "
        "scenario; plots need the 'report' extra: matplotlib).",
    )
    parser.addini("conformance_engine", "engine under test, MODULE:ATTR", default="")
    parser.addini("conformance_engine_kwargs", "JSON keyword arguments for the engine", default="")
    parser.addini(
        INI_PROFILE,
        "Hypothesis budget when --conformance-profile is not given: quick, default or thorough",
        default="",
    )
    parser.addini(
        INI_HOST_PROFILE,
        "host(s) the kit plays when --host-profile is not given: a profile, a comma-separated "
        "list, or all",
        default="",
    )
    parser.addini(
        INI_BUDGET,
        "seconds of engine calls the checks may spend drawing examples when "
        "--conformance-budget is not given (0: no budget)",
        default="",
    )
