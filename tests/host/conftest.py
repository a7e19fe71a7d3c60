"""Fixtures for the reference-host tests."""

from __future__ import annotations

import logging

import pytest

from simulator.host import shim

shim.install()  # agent.* for the engines when hermes-agent is not installed


@pytest.fixture
def host_log(caplog):
    """caplog at INFO for the host's logger; returns the caplog fixture."""
    caplog.set_level(logging.INFO, logger="simulator.host")
    return caplog


def warnings_of(caplog) -> list:
    """The host's WARNING messages captured so far."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "simulator.host" and r.levelno >= logging.WARNING
    ]
