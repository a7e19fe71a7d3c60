"""Covers simulator.host.abc, simulator.host.redaction and the shim's served modules
(simulator.host.shim): the kit's ContextEngine ABC has Hermes 0.22.2's methods, signatures and
defaults (O12-O16, A4's ``force``/``memory_context``, no ``**kwargs`` on select_context and
update_model), and ``sanitize_memory_context`` redacts and elides as 0.22 does.

The expected texts below were produced by the real 0.22.2 ``sanitize_memory_context`` on the
same inputs; ``test_matches_the_real_0_22_abc`` re-derives them from a real 0.22 install when
``$HERMES022_VENV_PYTHON`` names one.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path

import pytest

from simulator.host import abc as kit_abc
from simulator.host.abc import ContextEngine, sanitize_memory_context
from simulator.host.redaction import elide_middle

#: Method -> 0.22.2's parameter list (names, kinds, defaults), ``self`` left out.
SIGNATURES_022 = {
    "compress": "messages, current_tokens=None, focus_topic=None, force=False, memory_context=''",
    "should_compress_info": "prompt_tokens=None",
    "prune_tool_results_only": "messages, current_tokens=None",
    "should_defer_preflight_to_real_usage": "rough_tokens",
    "has_content_to_compress": "messages",
    "get_automatic_compaction_status_message": "*, phase, default_message, **context",
    "select_context": "request_messages, *, conversation_messages=None, "
    "incoming_message=None, budget_tokens=0",
    "update_model": "model, context_length, base_url='', api_key='', provider='', api_mode=''",
    "on_turn_complete": "messages, usage=None, **kwargs",
}

#: (input, what 0.22.2's sanitize_memory_context returned for it).
SANITIZE_022 = [
    (
        "  OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123 and "
        "https://u:p@h.com/x?token=abc&q=1 password: hunter2secretvalue  ",
        "OPENAI_API_KEY=*** and https://***:***@h.com/x?token=***&q=1 password: hunter2secretvalue",
    ),
    (
        "my key is sk-proj-ABCDEFGHIJKLMNOPQRSTUV and ghp_abcdefghijklmnopqrstuvwxyz12",
        "my key is sk-pro...STUV and ghp_ab...yz12",
    ),
    (
        "password: hunter2secretvalue\napi_key: abcdefghijklmnopqrstuvwxyz",
        "password: hunter...alue\napi_key: abcdef...wxyz",
    ),
    (
        '{"api_key": "abcdefghijklmnopqrstuvwxyz", "name": "x"}',
        '{"api_key": "abcdef...wxyz", "name": "x"}',
    ),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123", "Authorization: Bearer abcdef...z123"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- tail",
        "[REDACTED PRIVATE KEY] tail",
    ),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdEFGH", "token eyJhbG...EFGH"),
    (
        "plain text about the weather. User likes tea.",
        "plain text about the weather. User likes tea.",
    ),
]


def _params(fn) -> str:
    parts = []
    star = False
    for p in list(inspect.signature(fn).parameters.values()):
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        elif p.default is p.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={p.default!r}")
    return ", ".join(parts)


@pytest.mark.parametrize("method", sorted(SIGNATURES_022))
def test_method_signatures_are_0_22s(method):
    """A4, O4, O9, O10, O12-O16: every method takes what 0.22.2's takes, nothing more."""
    assert _params(getattr(ContextEngine, method)) == SIGNATURES_022[method]


class _Engine(ContextEngine):
    name = "parity"

    def update_from_response(self, usage):
        self.last_prompt_tokens = usage["prompt_tokens"]

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or self.last_prompt_tokens) >= self.threshold_tokens > 0

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return list(messages)


def test_new_methods_have_0_22s_defaults():
    """O12-O16 defaults: info mirrors should_compress with no reason; the prune is the input
    object with 0; no deferral; content always there; the default status message."""
    e = _Engine()
    e.update_model("m", 1000)
    msgs = [{"role": "user", "content": "hi"}]
    assert e.should_compress_info(900) == (True, None)
    assert e.should_compress_info(10) == (False, None)
    out, n = e.prune_tool_results_only(msgs, current_tokens=5)
    assert out is msgs and n == 0
    assert e.should_defer_preflight_to_real_usage(10) is False
    assert e.has_content_to_compress(msgs) is True
    assert e.emit_automatic_compaction_status is True
    status = kit_abc.automatic_compaction_status_message
    assert status(e, phase="compress", default_message=" Compacting ", approx_tokens=1) == (
        "Compacting"
    )
    e.emit_automatic_compaction_status = False
    assert status(e, phase="compress", default_message="Compacting") is None


def test_update_model_as_0_22_does_it():
    """O4/K1: the window stored as given, ``_base_threshold_percent`` set, and a class-level
    ``_config_threshold_percent`` honoured (0.22's ``hasattr`` guard); no extra keywords."""
    e = _Engine()
    e.model_thresholds = {"big": 0.5}
    e.update_model("big-model", 10_000)
    assert (e.threshold_tokens, e._base_threshold_percent, e._config_threshold_percent) == (
        5000,
        0.5,
        0.75,
    )
    e.update_model("other", 10_000)
    assert e.threshold_tokens == 7500  # the configured percent, not the last override

    class Pinned(_Engine):
        _config_threshold_percent = 0.6

    p = Pinned()
    p.update_model("other", 10_000)
    assert p.threshold_tokens == 6000
    with pytest.raises(TypeError):
        e.update_model("m", 1000, extra=1)
    with pytest.raises(TypeError):
        ContextEngine.select_context(e, [], budget_tokens=1, extra=1)


@pytest.mark.parametrize("text, expected", SANITIZE_022)
def test_sanitize_memory_context_redacts_as_0_22(text, expected):
    """sanitize_memory_context: 0.22.2's output for the same input (redaction shapes)."""
    assert sanitize_memory_context(text) == expected


def test_sanitize_memory_context_elides_with_hermes_marker():
    """Over 6000 characters: first 4000, Hermes' marker with the counts, last 1500."""
    text = "a" * 4000 + "b" * 1500 + "c" * 1500
    out = sanitize_memory_context(text)
    marker = (
        "⟪HERMES-CONTEXT-COMPRESSION: 1,500 of 7,000 chars omitted here by "
        "Hermes's context compressor.⟫"
    )
    assert out == "a" * 4000 + marker + "c" * 1500
    assert sanitize_memory_context("x" * 6000) == "x" * 6000
    assert elide_middle("short", 3, 2) == "short"
    with pytest.raises(AttributeError):
        sanitize_memory_context(None)


def test_shim_serves_the_0_22_modules():
    """The shim's agent.context_engine has 0.22's module function; agent.compression_marker and
    agent.redact are served too (only when no real hermes-agent is installed)."""
    from simulator.host import shim

    if not shim.install():
        pytest.skip("a real hermes-agent is installed; the shim is not used")
    import agent.compression_marker
    import agent.context_engine
    import agent.redact

    assert agent.context_engine.ContextEngine is ContextEngine
    assert agent.context_engine.automatic_compaction_status_message is (
        kit_abc.automatic_compaction_status_message
    )
    assert agent.compression_marker.elide_middle is elide_middle
    assert agent.redact.redact_sensitive_text("sk-" + "a" * 20) == "sk-aaa...aaaa"


_PROBE = """
import inspect, json, sys
from agent.context_engine import ContextEngine, sanitize_memory_context
texts = json.loads(sys.stdin.read())
out = {"sigs": {}, "sanitized": [sanitize_memory_context(t) for t in texts]}
for name in %r:
    params = inspect.signature(getattr(ContextEngine, name)).parameters.values()
    out["sigs"][name] = [[p.name, p.kind.name, repr(p.default)] for p in params]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_matches_the_real_0_22_abc():
    """The kit's ABC against a real Hermes 0.22 install: the same signatures (parameter
    names, kinds and defaults) and the same sanitize_memory_context output."""
    python = os.environ.get("HERMES022_VENV_PYTHON", "")
    if not python or not Path(python).is_file():
        pytest.skip("no Hermes 0.22 venv (set HERMES022_VENV_PYTHON)")
    texts = [t for t, _ in SANITIZE_022] + ["x" * 7000, "  " + "y" * 6001 + "\n"]
    proc = subprocess.run(
        [python, "-c", _PROBE % (sorted(SIGNATURES_022),)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd="/",
    )
    real = json.loads(proc.stdout)
    assert real["sanitized"] == [sanitize_memory_context(t) for t in texts]
    for name, params in real["sigs"].items():
        kit = inspect.signature(getattr(ContextEngine, name)).parameters.values()
        assert [[p.name, p.kind.name, repr(p.default)] for p in kit] == params, name
