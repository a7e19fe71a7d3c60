"""Deterministic fault schedule, in process."""

from __future__ import annotations

import pytest

from simulator.provider.core import Provider, ProviderError
from simulator.provider.exchange import CHAT, MESSAGES
from simulator.provider.faults import Fault, FaultSchedule
from tests.provider.conftest import NATIVE

REQ = {"messages": [{"role": "user", "content": "hello"}]}
AREQ = {"model": NATIVE, "max_tokens": 20, "messages": [{"role": "user", "content": "hello"}]}


def test_rate_limit_by_index_with_headers_and_virtual_clock():
    p = Provider(faults=[Fault("rate_limit", at=[1], retry_after=2.5, retry_after_ms=40)])
    p.chat_completions(REQ)
    with pytest.raises(ProviderError) as exc:
        p.chat_completions(REQ)
    e = exc.value
    assert e.status == 429
    assert e.headers["retry-after"] == "3" and e.headers["retry-after-ms"] == "40"
    assert (
        e.body["error"]["code"] == "rate_limit_exceeded"
        and "try again in 2.5s" in e.body["error"]["message"]
    )
    assert p.clock.now() == 0.0
    p.chat_completions(REQ)  # the retry: clock moves to the end of the window first
    assert p.clock.now() == 2.5
    assert [j.status for j in p.journal] == [200, 429, 200]
    assert p.journal[1].fault == "rate_limit"


@pytest.mark.parametrize(
    "kind,status,otype,atype",
    [
        ("server_error", 500, "server_error", "api_error"),
        ("unavailable", 503, "service_unavailable_error", "api_error"),
        ("overloaded", 529, "overloaded_error", "overloaded_error"),
    ],
)
def test_server_errors_both_shapes(kind, status, otype, atype):
    p = Provider(faults=[Fault(kind, at=[0, 1])])
    with pytest.raises(ProviderError) as exc:
        p.chat_completions(REQ)
    assert exc.value.status == status and exc.value.body["error"]["type"] == otype
    with pytest.raises(ProviderError) as exc:
        p.messages(AREQ)
    assert exc.value.status == status and exc.value.body["error"]["type"] == atype
    assert exc.value.body["type"] == "error"
    p.chat_completions(REQ)


def test_content_filter_refusal():
    p = Provider(faults=[Fault("content_filter", at=[0, 1])])
    r = p.chat_completions(REQ)
    assert (
        r["choices"][0]["finish_reason"] == "content_filter"
        and r["choices"][0]["message"]["content"] is None
    )
    a = p.messages(AREQ)
    assert a["stop_reason"] == "refusal"


def test_terminal_failure_is_sticky_and_not_retryable():
    p = Provider(faults=[Fault("terminal", at=[1], status=500)])
    p.chat_completions(REQ)
    for _ in range(3):
        with pytest.raises(ProviderError) as exc:
            p.chat_completions(REQ)
        assert exc.value.status == 500 and exc.value.headers["x-should-retry"] == "false"
    p.faults.clear()
    p.chat_completions(REQ)


def test_condition_fault_with_times():
    p = Provider(faults=[Fault("overloaded", when={"contains": "boom"}, times=2)])
    p.chat_completions(REQ)
    boom = {"messages": [{"role": "user", "content": "boom now"}]}
    for _ in range(2):
        with pytest.raises(ProviderError):
            p.chat_completions(boom)
    p.chat_completions(boom)  # times exhausted


def test_stream_cut_and_stream_error_only_on_streams():
    p = Provider(faults=[Fault("stream_cut", at=[0, 1], after_events=2)])
    p.chat_completions(REQ)  # index 0 not streamed: the stream fault is skipped
    out = p.handle(CHAT, dict(REQ, stream=True))
    assert out.status == 200 and out.cut and len(out.events) == 2
    assert all(b"[DONE]" not in e for e in out.events)
    p = Provider(faults=[Fault("stream_error", at=[0], after_events=1)])
    out = p.handle(MESSAGES, dict(AREQ, stream=True))
    assert (
        out.cut
        and out.events[-1].startswith(b"event: error\n")
        and b"overloaded_error" in out.events[-1]
    )


def test_schedule_from_json_and_errors():
    s = FaultSchedule.from_json([{"kind": "rate_limit", "at": [0], "retry_after": 0.1}])
    assert s.to_json() == [{"kind": "rate_limit", "at": [0], "retry_after": 0.1, "after_events": 2}]
    with pytest.raises(ValueError, match="unknown"):
        FaultSchedule.from_json([{"kind": "meteor", "at": [0]}])
    with pytest.raises(ValueError, match="at="):
        Fault("rate_limit")
    with pytest.raises(ValueError, match="unknown keys"):
        Fault("rate_limit", when={"weather": "rain"})
    with pytest.raises(ValueError, match="array"):
        FaultSchedule.from_json({"kind": "rate_limit"})
