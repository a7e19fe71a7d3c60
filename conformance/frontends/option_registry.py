"""The kit's pytest options and ini keys, registered once (:func:`add_options`).

One group, ``conformance``: the ``--engine`` options (each with a ``--conformance-`` spelling),
the ``--conformance-*`` options of the run, scenarios, snapshots and the report, and the ini
keys a project sets for profile, host profile and budget. Their values are parsed by
:mod:`conformance.frontends.option_types`, so pytest's own parser refuses a bad one, and read
into the run by :mod:`conformance.frontends.pytest_options`.
"""

from __future__ import annotations

import pytest

from conformance.authoring.budget import DEFAULT_BUDGET_S
from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
from conformance.authoring.hypothesis_profiles import PROFILES
from conformance.frontends import option_types
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
    add(
        "--engine",
        "--conformance-engine",
        default=None,
        type=option_types.given("the engine as MODULE:ATTR"),
        action=option_types.Once,
        metavar="MODULE:ATTR",
        help="engine under test: a ContextEngine subclass or factory (env CONFORMANCE_ENGINE).",
    )
    add(
        "--engine-kwargs",
        "--conformance-engine-kwargs",
        default=None,
        metavar="JSON",
        help="JSON object of keyword arguments for the engine (env CONFORMANCE_ENGINE_KWARGS).",
    )
    add(
        "--engine-plugin",
        "--conformance-engine-plugin",
        default=None,
        type=option_types.given("the plugin folder"),
        action=option_types.Once,
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
        default=None,
        type=option_types.host_profiles,
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
        default=None,
        type=option_types.choice(sorted(PROFILES)),
        metavar="{" + ",".join(sorted(PROFILES)) + "}",
        help="Hypothesis budget: quick, default or thorough, registered with Hypothesis as "
        "conformance-quick, conformance-default and conformance-thorough (so "
        "--hypothesis-profile=conformance-thorough works too). Default: the ini key "
        "conformance_profile, else default.",
    )
    add(
        "--conformance-strict",
        action="store_true",
        default=False,
        help="SHOULD failures and XPASS fail the run too.",
    )
    add(
        "--conformance-random",
        action="store_true",
        default=False,
        help="do not derandomize Hypothesis (explore new examples each run).",
    )
    add(
        "--conformance-seed",
        default=None,
        type=option_types.number(int, "", "--conformance-seed=1234"),
        metavar="N",
        help="Hypothesis seed with --conformance-random (recorded in failure files).",
    )
    add(
        "--conformance-json",
        default=None,
        type=option_types.file_name,
        action=option_types.Once,
        metavar="FILE",
        help="write the verdict as JSON to FILE.",
    )
    add(
        "--conformance-failures-dir",
        default=None,
        metavar="DIR",
        help="where shrunk failing examples are written (default .conformance/failures).",
    )
    add(
        "--conformance-xfails",
        default=None,
        metavar="FILE",
        help="expected failures: one case id, id prefix or clause per line, '# reason' optional "
        "(non-strict; --conformance-strict makes an XPASS fail).",
    )
    add(
        "--conformance-replay",
        default=None,
        metavar="FILE",
        help="rerun one failure file on its recorded (shrunk) draws; the engine comes from the "
        "file when none is given.",
    )
    add(
        "--conformance-timeout",
        default=None,
        type=option_types.number(float, " of seconds", "--conformance-timeout=30"),
        metavar="SECONDS",
        help=f"the limit of one engine call: a call longer than this is a hang and fails its "
        f"case (default {DEFAULT_CHECK_TIMEOUT_S:g}).",
    )
    add(
        "--conformance-budget",
        default=None,
        type=option_types.number(float, " of seconds", "--conformance-budget=60"),
        metavar="SECONDS",
        help=f"seconds the checks may spend inside the engine's calls while drawing examples, "
        f"shared out among them; a check whose share runs out is partly checked, not passed "
        f"(default: the ini key conformance_budget, else {DEFAULT_BUDGET_S:g}; 0: no budget).",
    )
    add(
        "--conformance-memory-limit",
        default=None,
        type=option_types.number(float, " of GiB", "--conformance-memory-limit=4"),
        metavar="GIB",
        help="address-space cap of each case's process, in GiB (default 4; 0: none); an engine "
        "that reaches it fails its case, the run goes on.",
    )
    add(
        "--conformance-isolation",
        default="fork",
        type=option_types.choice(("fork", "inprocess")),
        metavar="{fork,inprocess}",
        help="fork: each case in a supervised child process (an engine that exits, crashes or "
        "hangs ends that case only); inprocess: in this process (no fork).",
    )
    add(
        "--conformance-max-timeouts",
        default=None,
        type=option_types.number(int, "", "--conformance-max-timeouts=3"),
        metavar="N",
        help="after N cases have timed out (a hanging engine), the remaining cases are errors "
        f"without running (default {DEFAULT_MAX_TIMEOUTS}; 0 runs every case).",
    )
    add(
        "--conformance-no-shrink",
        action="store_true",
        default=False,
        help="do not shrink failing examples (faster failures, longer examples).",
    )
    add(
        "--conformance-no-scenarios",
        action="store_true",
        default=False,
        help="leave the bundled scenario library out of the run.",
    )
    add(
        "--conformance-snapshots",
        action="store_true",
        default=False,
        help="run the snapshot tier (compress/select_context output over the seeded corpus, "
        "diffed by syrupy; snapshots in .conformance/snapshots/<engine>/). On by default when "
        "that folder exists; create it with --snapshot-update.",
    )
    add(
        "--conformance-snapshots-dir",
        default=None,
        metavar="DIR",
        help="the folder holding the per-engine snapshot folders (default "
        "<rootdir>/.conformance/snapshots).",
    )
    add(
        "--conformance-report",
        default=None,
        type=option_types.file_name,
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
