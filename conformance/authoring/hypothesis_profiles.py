"""The kit's three budgets as registered Hypothesis profiles, and Hypothesis' own CI detection.

``quick``, ``default`` and ``thorough`` (``--conformance-profile``) are registered with
Hypothesis as ``conformance-quick``, ``conformance-default`` and ``conformance-thorough``, so
Hypothesis' own ``--hypothesis-profile=conformance-thorough`` selects the same budget, and
``settings.get_profile("conformance-default")`` shows what a check runs with. Each check's
settings are built on its profile (:func:`check_settings`): its registered example budget
replaces ``max_examples``, nothing else changes.

Three health checks are suppressed, each because it would blame the engine for the kit's own
drawing, never to hide a kit fault:

- ``too_slow``: it times data generation in wall-clock seconds; the realistic sessions (base64
  images of hundreds of KB, pastes, twelve-pass sessions) are large on purpose, and a loaded
  CI machine would make the same draws fail one run and pass the next;
- ``data_too_large``: those sessions can pass Hypothesis' buffer size; the example is then
  discarded, and enough discards are a health-check failure with no bearing on the engine;
- ``large_base_example``: the smallest session some checks draw is still over the threshold of
  the check window (16 000 tokens), large by design.

``filter_too_much``, ``function_scoped_fixture``, ``differing_executors`` and ``nested_given``
stay on: each would show a fault of the kit, and the kit wants to hear of it.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Verbosity, settings

#: max_examples of a check without its own budget, per profile.
PROFILES: dict[str, int] = {"quick": 6, "default": 40, "thorough": 200}
#: stateful_step_count per profile (lifecycle state machine).
STATEFUL_STEPS: dict[str, int] = {"quick": 12, "default": 25, "thorough": 60}
#: The prefix of the kit's Hypothesis profile names (``conformance-default``).
PREFIX = "conformance-"
#: The health checks the kit suppresses (see the module docstring for why each).
SUPPRESSED_HEALTH_CHECKS = (
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
)


def hypothesis_name(profile: str) -> str:
    """``default`` -> ``conformance-default``: the Hypothesis profile of a kit profile."""
    return PREFIX + profile


def kit_profile(hypothesis_profile: str | None) -> str | None:
    """``conformance-thorough`` -> ``thorough``; None for any other Hypothesis profile name."""
    if hypothesis_profile and hypothesis_profile.startswith(PREFIX):
        name = hypothesis_profile[len(PREFIX) :]
        return name if name in PROFILES else None
    return None


def register() -> None:
    """Register the three profiles with Hypothesis (idempotent; called on import).

    Each has no deadline (engine calls are timed by the kit, not by Hypothesis), no example
    database (a verdict depends on the engine and the seed, never on an earlier run), quiet
    output, and the suppressed health checks above.
    """
    for name, examples in PROFILES.items():
        settings.register_profile(
            hypothesis_name(name),
            max_examples=examples,
            stateful_step_count=STATEFUL_STEPS[name],
            deadline=None,
            database=None,
            print_blob=False,
            verbosity=Verbosity.quiet,
            suppress_health_check=list(SUPPRESSED_HEALTH_CHECKS),
        )


def check_settings(profile: str, **changes: Any) -> settings:
    """The settings of one check: the profile's (``default`` for an unknown name) with
    ``changes`` applied (``max_examples``, ``derandomize``, ``phases``...)."""
    name = hypothesis_name(profile if profile in PROFILES else "default")
    return settings(settings.get_profile(name), **changes)


def in_ci() -> bool:
    """True when Hypothesis itself judges the run to be on CI (its own list of CI variables;
    the run is then derandomized). Hypothesis versions without the detection function fall
    back on its older rule: ``CI`` or ``TF_BUILD`` set."""
    try:
        from hypothesis._settings import is_in_ci
    except ImportError:  # pragma: no cover - every supported Hypothesis has it
        return "CI" in os.environ or "TF_BUILD" in os.environ
    return bool(is_in_ci())


register()
