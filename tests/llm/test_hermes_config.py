"""Covers simulator.llm.hermes_config and simulator.llm.http: Hermes' configuration for the
served LLM, and the LLM over HTTP (no Hermes needed)."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest
import yaml

from simulator.llm import EngineLLM, LLMFault, collect_ledger, configure_hermes_home
from simulator.llm.http import LLMServer, serve_hermes_llm
from simulator.provider.http import NonLoopbackRefused


def test_writes_the_auxiliary_block_and_returns_the_env(tmp_path):
    env = configure_hermes_home(tmp_path / "home", "http://127.0.0.1:9/v1")
    config = yaml.safe_load((tmp_path / "home" / "config.yaml").read_text())
    assert config == {
        "auxiliary": {
            "compression": {
                "provider": "custom",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-kit-engine-llm",
                "model": "google/gemini-3-flash-preview",
            }
        }
    }
    assert env["HERMES_HOME"] == str(tmp_path / "home") and "127.0.0.1" in env["NO_PROXY"]


def test_keeps_other_keys_and_is_deterministic(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("context:\n  engine: mine\nauxiliary:\n  vision:\n    provider: auto\n")
    kwargs = dict(tasks=("compression", "title_generation"), timeout=5, transient_retries=0)
    configure_hermes_home(tmp_path, "http://127.0.0.1:9/v1", **kwargs)
    first = path.read_bytes()
    configure_hermes_home(tmp_path, "http://127.0.0.1:9/v1", **kwargs)
    config = yaml.safe_load(first)
    assert path.read_bytes() == first
    assert config["context"] == {"engine": "mine"} and config["auxiliary"]["vision"]
    assert config["auxiliary"]["transient_retries"] == 0
    assert config["auxiliary"]["title_generation"]["timeout"] == 5.0


def test_refuses_non_loopback_urls(tmp_path):
    with pytest.raises(NonLoopbackRefused):
        configure_hermes_home(tmp_path, "http://example.com/v1")
    with pytest.raises(ValueError):
        configure_hermes_home(tmp_path, "127.0.0.1:9")


def _post(url: str, body: dict, timeout: float = 10.0):
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read()), dict(answer.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


def test_server_answers_through_the_llm(tmp_path):
    """Chat completions get the LLM's summaries, faults and ledger; other routes the provider."""
    llm = EngineLLM(faults=[LLMFault("rate_limit", at=[1], retry_after=4)])
    body = {"model": llm.model, "messages": [{"role": "user", "content": "Goal: ship it."}]}
    with collect_ledger(llm) as ledger, serve_hermes_llm(tmp_path, llm) as (server, env):
        url = server.base_url + "/chat/completions"
        ok = _post(url, body)
        limited = _post(url, body)
        models = urllib.request.urlopen(server.base_url + "/models", timeout=10).status
    assert ok[0] == 200 and "## Goal" in ok[1]["choices"][0]["message"]["content"]
    assert limited[0] == 429 and limited[2]["retry-after"] == "4"
    assert models == 200 and env["HERMES_HOME"] == str(tmp_path)
    got = ledger.as_dict()
    assert (got["calls"], got["requests"], got["faults"]) == (2, 2, {"rate_limit": 1})


def test_timeout_fault_holds_the_request(tmp_path):
    """The client's own deadline fires; the held request is released when the server stops."""
    llm = EngineLLM(faults=[LLMFault("timeout", times=1)])
    body = {"messages": [{"role": "user", "content": "hello"}]}
    with LLMServer(llm) as server:
        with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
            _post(server.base_url + "/chat/completions", body, timeout=0.5)
        assert _post(server.base_url + "/chat/completions", body)[0] == 200
    assert llm.requests == 2 and len(llm.provider.journal) == 1
