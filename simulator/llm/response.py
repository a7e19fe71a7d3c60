"""What ``call_llm`` returns: chat-completion objects read by attribute, as the openai SDK's.

hermes-agent 0.19.0's ``call_llm`` returns the SDK's ``ChatCompletion`` (``.choices[0]
.message.content``, ``.choices[0].finish_reason``, ``.usage.prompt_tokens`` ...), or with
``stream=True`` the SDK's stream of ``ChatCompletionChunk``. The kit builds look-alikes
from the provider's JSON body: the SDK's typed fields become :class:`Record` subclasses
named as the SDK's types (``ChatCompletion``, ``Choice``, ``ChatCompletionMessage``,
``CompletionUsage`` ...); other fields keep their JSON values (dicts stay dicts, as the
SDK keeps extra fields). Optional SDK fields the body leaves out (``tool_calls``,
``refusal``, ``logprobs`` ...) read as None; other unknown names raise AttributeError, as
on the SDK's models. ``model_dump()`` / ``model_dump_json()`` give the body back, in the
provider's key order (deterministic).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

#: Fields of the SDK's chat types that read as None when the body omits them.
OPTIONAL_FIELDS = frozenset(
    {
        "annotations",
        "audio",
        "completion_tokens_details",
        "content",
        "function_call",
        "logprobs",
        "prompt_tokens_details",
        "refusal",
        "role",
        "service_tier",
        "system_fingerprint",
        "tool_calls",
        "usage",
    }
)


class Record:
    """One JSON object read by attribute; ``model_dump()`` returns it as a dict again."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_data", {k: _wrap(k, v) for k, v in data.items()})

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if name in data:
            return data[name]
        if name in OPTIONAL_FIELDS:
            return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        self._data[name] = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self.model_dump() == other.model_dump()

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_dump()!r})"

    def model_dump(self) -> dict[str, Any]:
        """The object as plain JSON values (dict), keys in the provider's order."""
        return {k: _unwrap(v) for k, v in self._data.items()}

    def model_dump_json(self, indent: int | None = None) -> str:
        """The object as JSON text (deterministic: same body, same bytes)."""
        return json.dumps(self.model_dump(), ensure_ascii=False, indent=indent)

    to_dict = model_dump
    to_json = model_dump_json


class ChatCompletion(Record):
    """A ``chat.completion`` (``id``, ``model``, ``choices``, ``usage``, ``created`` ...)."""


class ChatCompletionChunk(Record):
    """One streamed ``chat.completion.chunk``."""


class Choice(Record):
    """``choices[i]``: ``index``, ``message`` (or ``delta``), ``finish_reason``."""


class ChatCompletionMessage(Record):
    """``choices[i].message``: ``role``, ``content``, optional ``tool_calls``."""


class ChoiceDelta(Record):
    """``choices[i].delta`` of a chunk."""


class CompletionUsage(Record):
    """``usage``: ``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``cost`` (USD) ..."""


class ChatCompletionMessageToolCall(Record):
    """One tool call: ``id``, ``type``, ``function``."""


class Function(Record):
    """``function`` of a tool call: ``name``, ``arguments`` (JSON text)."""


_TYPES: dict[str, type[Record]] = {
    "choices": Choice,
    "message": ChatCompletionMessage,
    "delta": ChoiceDelta,
    "usage": CompletionUsage,
    "tool_calls": ChatCompletionMessageToolCall,
    "function": Function,
    "prompt_tokens_details": Record,
    "completion_tokens_details": Record,
}


def _wrap(key: str, value: Any) -> Any:
    cls = _TYPES.get(key)
    if cls is not None and isinstance(value, Mapping):
        return cls(value)
    if cls is not None and isinstance(value, list):
        return [_wrap(key, v) for v in value]
    return value


def _unwrap(value: Any) -> Any:
    if isinstance(value, Record):
        return value.model_dump()
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def completion(body: Mapping[str, Any]) -> ChatCompletion:
    """The ``ChatCompletion`` for a provider ``chat.completion`` body (dict)."""
    return ChatCompletion(body)


def chunks(events: list[bytes]) -> Iterator[ChatCompletionChunk]:
    """The ``ChatCompletionChunk`` objects of SSE ``events`` (``data: {...}`` bytes), in order.

    ``data: [DONE]`` ends the stream; other non-JSON lines are skipped.
    """
    for event in events:
        for line in event.decode("utf-8").splitlines():
            if not line.startswith("data: "):
                continue
            payload = line[len("data: ") :]
            if payload == "[DONE]":
                return
            try:
                yield ChatCompletionChunk(json.loads(payload))
            except ValueError:
                continue
