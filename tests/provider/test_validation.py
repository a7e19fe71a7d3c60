"""Provider-shaped validation errors and U9 leak recording."""

from __future__ import annotations

import pytest

from simulator.provider import tokens
from simulator.provider.core import Provider, ProviderError, U9LeakError
from tests.provider.conftest import NATIVE, SONNET, prose

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
}


def err(p, request, route="chat"):
    with pytest.raises(ProviderError) as exc:
        (p.chat_completions if route == "chat" else p.messages)(request)
    return exc.value


def test_orphan_tool_result_openai(provider):
    e = err(
        provider,
        {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "tool", "tool_call_id": "call_9", "content": "r"},
            ]
        },
    )
    assert e.status == 400
    assert e.body["error"]["message"] == (
        "Invalid parameter: messages with role 'tool' must be a response to a "
        "preceeding message with 'tool_calls'."
    )
    assert e.body["error"]["param"] == "messages.[1].role"
    assert e.body["error"]["type"] == "invalid_request_error"


def test_tool_result_with_unknown_id_openai(provider):
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_2", "content": "r"},
    ]
    assert "'call_2' not found" in err(provider, {"messages": msgs}).body["error"]["message"]


def test_tool_calls_without_results_openai(provider):
    msgs = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "user", "content": "next"},
    ]
    e = err(provider, {"messages": msgs})
    assert e.body["error"]["message"].endswith(
        "The following tool_call_ids did not have response messages: call_1"
    )
    assert e.body["error"]["param"] == "messages.[1].role"
    # also when the unanswered call is the last message
    assert "call_1" in err(provider, {"messages": msgs[:2]}).body["error"]["message"]
    ok = msgs[:2] + [{"role": "tool", "tool_call_id": "call_1", "content": "r"}, msgs[2]]
    provider.chat_completions({"messages": ok})


def test_anthropic_orphan_and_missing_tool_result(provider):
    use = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}
    orphan = {
        "model": NATIVE,
        "max_tokens": 10,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "r"}],
            }
        ],
    }
    e = err(provider, orphan, "messages")
    assert e.body["error"]["message"].startswith(
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9."
    )
    missing = {
        "model": NATIVE,
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": "hi"},
        ],
    }
    e = err(provider, missing, "messages")
    assert e.body["error"]["message"].startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1."
    )
    assert e.body["type"] == "error" and e.body["error"]["type"] == "invalid_request_error"
    assert e.headers["request-id"].startswith("req_")


def test_context_length_exceeded_uses_model_window(provider):
    provider.models.override("tiny-window-model", context_length=2000, max_output_tokens=1000)
    big = prose(2500)
    n = tokens.count_messages([{"role": "user", "content": big}])
    e = err(
        provider, {"model": "tiny-window-model", "messages": [{"role": "user", "content": big}]}
    )
    assert e.body["error"]["code"] == "context_length_exceeded"
    assert e.body["error"]["message"] == (
        f"This model's maximum context length is 2000 tokens. However, your messages "
        f"resulted in {n} tokens. Please reduce the length of the messages."
    )
    small = prose(500)
    m = tokens.count_messages([{"role": "user", "content": small}])
    e = err(
        provider,
        {
            "model": "tiny-window-model",
            "max_tokens": 1000,
            "messages": [{"role": "user", "content": small}],
        },
    )
    assert (
        f"you requested {m + 1000} tokens ({m} in the messages, 1000 in the completion)"
        in e.body["error"]["message"]
    )


def test_context_length_anthropic_wording(provider):
    provider.models.override(NATIVE, context_length=1500)
    e = err(
        provider,
        {"model": NATIVE, "max_tokens": 10, "messages": [{"role": "user", "content": prose(2000)}]},
        "messages",
    )
    assert e.body["error"]["message"].startswith("prompt is too long: ") and e.body["error"][
        "message"
    ].endswith("> 1500 maximum")
    e = err(
        provider,
        {
            "model": NATIVE,
            "max_tokens": 1000,
            "messages": [{"role": "user", "content": prose(300)}],
        },
        "messages",
    )
    assert "exceed context limit" in e.body["error"]["message"]


def test_default_window_comes_from_model_table(provider):
    assert provider.models.resolve(SONNET).context_length == 200_000
    assert provider.models.resolve("gpt-4o").context_length == 128_000


@pytest.mark.parametrize(
    "request_,needle",
    [
        ({"messages": []}, "too short"),
        ({"messages": "hi"}, "expected an array"),
        ({}, "Missing required parameter: 'messages'"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "Invalid value: 'robot'"),
        ({"messages": [{"content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user"}]}, "Missing required parameter: 'messages.[0].content'"),
        (
            {"messages": [{"role": "user", "content": 5}]},
            "expected one of a string or array of objects, but got an integer",
        ),
        ({"messages": [{"role": "user", "content": []}]}, "empty array"),
        (
            {"messages": [{"role": "user", "content": [{"type": "sound"}]}]},
            "Invalid value: 'sound'",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]},
            "content[0].text",
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, "must have a 'tool_call_id'"),
        ({"messages": [{"role": "assistant", "content": None}]}, "got null"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"type": "function", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    }
                ]
            },
            "tool_calls[0].id",
        ),
        ({"messages": ["hello"]}, "expected an object"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, "below minimum"),
        (
            {"messages": [{"role": "user", "content": "x"}], "max_tokens": 10**7},
            "max_tokens is too large",
        ),
        ({"messages": [{"role": "user", "content": "x"}], "stream": "yes"}, "'stream'"),
        (
            {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
            "tools[0].function.name",
        ),
    ],
)
def test_malformed_openai_requests(provider, request_, needle):
    e = err(provider, request_)
    assert e.status == 400 and needle in e.body["error"]["message"]
    assert provider.journal[-1].status == 400


@pytest.mark.parametrize(
    "request_,needle",
    [
        (
            {"model": NATIVE, "messages": [{"role": "user", "content": "x"}]},
            "max_tokens: Field required",
        ),
        (
            {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            "model: Field required",
        ),
        (
            {"model": NATIVE, "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]},
            'Unexpected role "system"',
        ),
        (
            {"model": NATIVE, "max_tokens": 5, "messages": [{"role": "user", "content": ""}]},
            "non-empty content",
        ),
        (
            {
                "model": NATIVE,
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [{"type": "bogus"}]}],
            },
            "Input tag 'bogus'",
        ),
        (
            {"model": NATIVE, "max_tokens": 10**6, "messages": [{"role": "user", "content": "x"}]},
            "maximum allowed number of output tokens",
        ),
    ],
)
def test_malformed_anthropic_requests(provider, request_, needle):
    e = err(provider, request_, "messages")
    assert e.status == 400 and needle in e.body["error"]["message"] and e.body["type"] == "error"


def test_final_assistant_prefill_may_be_empty(provider):
    provider.messages(
        {
            "model": NATIVE,
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": ""}],
        }
    )


def test_u9_leak_recorded_not_counted_not_in_prefix(provider):
    clean = [{"role": "user", "content": "hello"}]
    leaky = [
        {"role": "user", "content": "hello", "message_uid": "a" * 32, "_absorbed_message_uids": []}
    ]
    r_clean = provider.chat_completions({"messages": clean})
    r_leaky = provider.chat_completions({"messages": leaky})
    assert r_clean["usage"]["prompt_tokens"] == r_leaky["usage"]["prompt_tokens"]
    assert len(provider.u9_leaks) == 1
    assert (
        "message_uid" in provider.u9_leaks[0]
        and "messages[0]" in provider.u9_leaks[0]
        and "U9" in provider.u9_leaks[0]
    )
    provider.messages(
        {
            "model": NATIVE,
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "x", "_tool_call_uid": "u"}],
        }
    )
    assert len(provider.u9_leaks) == 2


def test_u9_strict_mode_raises_at_once():
    p = Provider(strict_u9=True)
    with pytest.raises(U9LeakError, match="_tool_call_uids"):
        p.chat_completions({"messages": [{"role": "user", "content": "x", "_tool_call_uids": {}}]})
    assert p.u9_leaks and p.journal[-1].status == 400
