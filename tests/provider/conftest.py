"""Shared helpers for the provider simulator tests."""

from __future__ import annotations

import pytest

from simulator.provider.core import Provider
from simulator.provider.http import start_server

SONNET = "anthropic/claude-sonnet-4"  # Anthropic rules, 1024-token minimum
NATIVE = "claude-sonnet-5"  # native Anthropic id, 1024-token minimum


def prose(n_words: int, tag: str = "") -> str:
    """Deterministic English-ish text of about ``n_words`` words (a few tokens more)."""
    words = (
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
    )
    return tag + " ".join(f"{words[i % 10]}{i % 7}" for i in range(n_words)) + "."


def marked(text: str, ttl: str | None = None) -> list:
    """One text part carrying a cache_control marker (P2 placement)."""
    cc = {"type": "ephemeral"}
    if ttl:
        cc["ttl"] = ttl
    return [{"type": "text", "text": text, "cache_control": cc}]


@pytest.fixture
def provider() -> Provider:
    """A fresh provider with seed 7."""
    return Provider(seed=7)


@pytest.fixture
def server():
    """A loopback server on an ephemeral port around a fresh provider; shut down after the test."""
    srv = start_server(Provider(seed=11))
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
