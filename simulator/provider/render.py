"""Render a request into cacheable blocks, validating it in the same pass.

A request is flattened in the provider's render order, tools → system → messages
(P3), into *blocks*: each tool, each system block, each message content block or
tool call. For every block the renderer keeps

- ``cum[i]``: prompt tokens from the start of the request through block ``i``
  (cl100k, message framing charged to a message's first block), and
- ``chain[i]``: a 16-byte prefix hash ``H_i = blake2b(H_{i-1} || tag_i || digest_i)``
  naming the exact prefix through block ``i``; ``cache_control`` markers and the
  persistence-only fields of U9 are not part of it, so moving a marker never
  invalidates a prefix, and a string content equals a one-part text list (P2).

Per-block token counts and digests are memoised by text, so a growing conversation
encodes only its new text. :class:`Renderer` is
incremental: :class:`~simulator.provider.conversation.Conversation` keeps one alive
and appends messages, so a request costs O(new messages).

Validation raises :class:`~simulator.provider.errors.ValidationFailure` with the real
provider's wording: malformed messages, orphan tool
results, tool calls without results, bad ``cache_control`` markers, too many
breakpoints, TTL order.
"""

from __future__ import annotations

from collections.abc import Mapping
from hashlib import blake2b
from typing import Any

from simulator.provider import tokens
from simulator.provider.errors import ValidationFailure
from simulator.provider.fields import (
    Findings,
    scan_anthropic_message,
    scan_anthropic_system,
    scan_openai_message,
)

_MISSING = object()
#: At most this many ``cache_control`` breakpoints per request (Anthropic rule, P1).
MAX_BREAKPOINTS = 4
_TTLS = ("5m", "1h")

_OPENAI_ROLES = {
    "system": b"s",
    "developer": b"d",
    "user": b"u",
    "assistant": b"a",
    "tool": b"t",
    "function": b"f",
}
_ANTHROPIC_ROLES = {"user": b"u", "assistant": b"a"}
_OPENAI_PART_TYPES = ("text", "image_url", "input_audio", "refusal", "audio", "file")

_MEMO: dict[Any, tuple[int, bytes]] = {}
_MEMO_LIMIT = 400_000
#: The memo is cleared when the texts it keys by reach this many characters in total.
_MEMO_CHARS_LIMIT = 64 * 1024 * 1024
_memo_chars = 0


def _b2(data: bytes) -> bytes:
    return blake2b(data, digest_size=16).digest()


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise ValidationFailure(
            f"Invalid string: it contains a lone UTF-16 surrogate (\\u{ord(bad):04x}), "
            "which is not valid Unicode.",
            param="messages",
        ) from None


def text_info(text: str) -> tuple[int, bytes]:
    """``(tokens, digest)`` of a text block, memoised by the text (long texts by digest).

    Tokens come from :func:`tokens.count_text` (cl100k); the digest is a 16-byte
    blake2b of the UTF-8 text. Only unseen text reaches the encoder. Texts longer than
    :data:`tokens.MEMO_TEXT_CHARS` are memoised by their digest, so the memo keeps no
    large request text alive.

    Raises:
        ValidationFailure: ``text`` holds a lone UTF-16 surrogate (not valid Unicode).
    """
    global _memo_chars
    small = len(text) <= tokens.MEMO_TEXT_CHARS
    if small:
        v = _MEMO.get(text)
        if v is not None:
            return v
        digest = _b2(_utf8(text))
    else:
        digest = _b2(_utf8(text))
        v = _MEMO.get(digest)
        if v is not None:
            return v
    if len(_MEMO) >= _MEMO_LIMIT or _memo_chars >= _MEMO_CHARS_LIMIT:
        _MEMO.clear()
        _memo_chars = 0
    v = (tokens.count_text(text), digest)
    if small:
        _MEMO[text] = v
        _memo_chars += len(text)
    else:
        _MEMO[digest] = v
    return v


def clear_memo() -> None:
    """Forget every memoised ``(tokens, digest)`` (and the token counts behind them)."""
    global _memo_chars
    _MEMO.clear()
    _memo_chars = 0
    tokens.clear_memos()


_canonical = tokens.canonical
_strip_marker = tokens.strip_marker


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


class Renderer:
    """Incremental, validating renderer of one request (or one growing conversation).

    Args:
        namespace: cache namespace (organisation / API key); prefixes never match across it.
        model: model id; caches are per model.
        anthropic_rules: collect and check ``cache_control`` markers (P1–P2).
        salt: canonical text of parameters that invalidate the messages cache
            (``tool_choice``, ``thinking``), mixed in at the first non-system message.

    Attributes:
        chain: prefix hash per block (bytes, 16).
        cum: cumulative prompt tokens through each block.
        markers: ``(block index, ttl, where)`` per explicit breakpoint, in render order.
        u9: ``(path, [field names])`` for every object carrying persistence-only fields
            (U9), at any depth (:mod:`simulator.provider.fields`), e.g.
            ``("messages[2].content[0]", ["message_uid"])``.
        unknown: ``path.key`` for every key outside the message schema (e.g.
            ``"messages[0].timestamp"``).
        n_messages: messages rendered so far.

    Raises:
        ValidationFailure: from ``add_*`` and :meth:`breakpoints`, with the provider's wording.

    Serves: P1 (breakpoint limit, TTLs), P2 (marker placement is not identity), P3 (exact
    prefix), U9 (persistence-only fields recorded, never counted or hashed).
    """

    def __init__(self, namespace: str, model: str, anthropic_rules: bool, salt: str = "") -> None:
        self.chain: list[bytes] = []
        self.cum: list[int] = []
        self.markers: list[tuple[int, str, str]] = []
        self.findings = Findings()
        self.u9: list[tuple[str, list[str]]] = self.findings.u9
        self.unknown: list[str] = self.findings.unknown
        self.n_messages = 0
        self.anthropic_rules = anthropic_rules
        self._total = 0
        self._h = _b2(f"{namespace}\0{model}".encode("utf-8", "surrogatepass"))
        self._salt = _b2(salt.encode()) if salt else b""
        self._salted = False
        # OpenAI tool pairing: (assistant index, call ids in order, ids still unanswered) or None.
        self._calls: tuple[int, list[str], set] | None = None
        # Anthropic tool pairing: (message index, ids) of the previous assistant's tool_use blocks.
        self._tool_use: tuple[int, list[str]] | None = None
        self._last_text_empty: list[bool] = []

    # -- blocks ------------------------------------------------------------------------
    def _block(self, tag: bytes, ntokens: int, digest: bytes, empty_text: bool = False) -> int:
        self._h = _b2(self._h + tag + digest)
        self._total += ntokens
        self.chain.append(self._h)
        self.cum.append(self._total)
        self._last_text_empty.append(empty_text)
        return len(self.chain) - 1

    def _mix_salt(self) -> None:
        if not self._salted:
            self._salted = True
            if self._salt:
                self._h = _b2(self._h + b"salt" + self._salt)

    def _marker(self, block: int, cc: Any, where: str, empty_text: bool = False) -> None:
        if not self.anthropic_rules:
            return
        if not isinstance(cc, Mapping):
            raise ValidationFailure(
                f"{where}.cache_control: Input should be a valid dictionary",
                param=f"{where}.cache_control",
            )
        if cc.get("type") != "ephemeral":
            raise ValidationFailure(
                f"{where}.cache_control.type: Input should be 'ephemeral'",
                param=f"{where}.cache_control",
            )
        ttl = cc.get("ttl", "5m")
        if ttl is None:
            ttl = "5m"
        if ttl not in _TTLS:
            raise ValidationFailure(
                f"{where}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'",
                param=f"{where}.cache_control",
            )
        if empty_text:
            raise ValidationFailure(
                f"{where}.text: cache_control cannot be set for empty text blocks",
                param=f"{where}.cache_control",
            )
        self.markers.append((block, ttl, where))

    # -- tools -----------------------------------------------------------------------------
    def add_tools(self, tools: Any, anthropic_shape: bool) -> None:
        """Render ``tools`` (a list of tool definitions), one block each, first in render order."""
        if tools is None:
            return
        if not isinstance(tools, list):
            raise ValidationFailure(
                "Invalid type for 'tools': expected an array, but got "
                f"{_type_name(tools)} instead.",
                param="tools",
                code="invalid_type",
            )
        for j, tool in enumerate(tools):
            where = f"tools.{j}"
            if not isinstance(tool, Mapping):
                raise ValidationFailure(
                    f"Invalid type for 'tools[{j}]': expected an object, but got "
                    f"{_type_name(tool)} instead.",
                    param=f"tools[{j}]",
                    code="invalid_type",
                )
            if anthropic_shape:
                if not isinstance(tool.get("name"), str) or not tool.get("name"):
                    raise ValidationFailure(
                        f"tools.{j}.name: Field required", param=f"tools[{j}].name"
                    )
            else:
                fn = tool.get("function")
                if (
                    tool.get("type") != "function"
                    or not isinstance(fn, Mapping)
                    or not isinstance(fn.get("name"), str)
                ):
                    raise ValidationFailure(
                        f"Missing required parameter: 'tools[{j}].function.name'.",
                        param=f"tools[{j}].function.name",
                        code="missing_required_parameter",
                    )
            ntok, digest = text_info(_canonical(_strip_marker(tool)))
            b = self._block(b"T", ntok, digest)
            cc = tool.get("cache_control")
            if cc is not None:
                self._marker(b, cc, where)

    # -- OpenAI messages -------------------------------------------------------------------
    def add_openai_message(self, m: Any, i: int) -> None:
        """Render and validate OpenAI-format message ``m`` at index ``i`` of ``messages``."""
        if type(m) is not dict and not isinstance(m, Mapping):
            raise ValidationFailure(
                f"Invalid type for 'messages[{i}]': expected an object, but got {_type_name(m)} "
                "instead.",
                param=f"messages[{i}]",
                code="invalid_type",
            )
        role = m.get("role")
        rc = _OPENAI_ROLES.get(role) if isinstance(role, str) else None
        if rc is None:
            if role is None:
                raise ValidationFailure(
                    f"Missing required parameter: 'messages[{i}].role'.",
                    param=f"messages[{i}].role",
                    code="missing_required_parameter",
                )
            raise ValidationFailure(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                "'tool', and 'function'.",
                param=f"messages[{i}].role",
                code="invalid_value",
            )
        scan_openai_message(m, i, self.findings)
        self.n_messages = i + 1
        if rc != b"s" and rc != b"d":
            self._mix_salt()
        extra = b""
        framing = tokens.TOKENS_PER_MESSAGE
        name = m.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise ValidationFailure(
                    f"Invalid type for 'messages[{i}].name': expected a string, but got "
                    f"{_type_name(name)} instead.",
                    param=f"messages[{i}].name",
                    code="invalid_type",
                )
            if name:
                framing += 1 + tokens.count_text(name)
                extra += b"n" + name.encode("utf-8", "surrogatepass")
        # tool pairing (OpenAI wording, typo "preceeding" is the API's own)
        if rc == b"t":
            tcid = m.get("tool_call_id")
            if not isinstance(tcid, str):
                raise ValidationFailure(
                    "Missing parameter 'tool_call_id': messages with role 'tool' must have a "
                    "'tool_call_id'.",
                    param=f"messages.[{i}].tool_call_id",
                    code="missing_required_parameter",
                )
            if self._calls is None:
                raise ValidationFailure(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param=f"messages.[{i}].role",
                )
            if tcid not in self._calls[1]:
                raise ValidationFailure(
                    f"Invalid parameter: 'tool_call_id' of '{tcid}' not found in 'tool_calls' of "
                    "previous message.",
                    param=f"messages.[{i}].tool_call_id",
                )
            self._calls[2].discard(tcid)
            framing += tokens.count_text(tcid)
            extra += b"i" + tcid.encode("utf-8", "surrogatepass")
        elif self._calls is not None:
            self._check_calls_answered()
        content = m.get("content", _MISSING)
        tool_calls = m.get("tool_calls") if rc == b"a" else None
        if tool_calls is not None and (not isinstance(tool_calls, list) or not tool_calls):
            if tool_calls == []:
                raise ValidationFailure(
                    f"Invalid 'messages[{i}].tool_calls': empty array. Expected an array with "
                    "minimum length 1, but got an empty array instead.",
                    param=f"messages[{i}].tool_calls",
                    code="empty_array",
                )
            raise ValidationFailure(
                f"Invalid type for 'messages[{i}].tool_calls': expected an array, but got "
                f"{_type_name(tool_calls)} instead.",
                param=f"messages[{i}].tool_calls",
                code="invalid_type",
            )
        first = len(self.chain)
        tag0 = rc + b"1" + extra
        if content is _MISSING or content is None:
            if rc == b"a" and (tool_calls or m.get("function_call")):
                pass
            elif rc == b"a" and content is None:
                raise ValidationFailure(
                    "Invalid value for 'content': expected a string, got null.",
                    param=f"messages.[{i}].content",
                )
            else:
                raise ValidationFailure(
                    f"Missing required parameter: 'messages.[{i}].content'.",
                    param=f"messages.[{i}].content",
                    code="missing_required_parameter",
                )
        elif type(content) is str:
            ntok, digest = text_info(content)
            self._block(tag0 + b"x", framing + ntok, digest, not content)
            framing = 0
        elif type(content) is list or isinstance(content, list):
            if not content:
                raise ValidationFailure(
                    f"Invalid 'messages[{i}].content': empty array. Expected an array with minimum "
                    "length 1, but got an empty array instead.",
                    param=f"messages[{i}].content",
                    code="empty_array",
                )
            for k, part in enumerate(content):
                if type(part) is not dict and not isinstance(part, Mapping):
                    raise ValidationFailure(
                        f"Invalid type for 'messages[{i}].content[{k}]': expected an object, but "
                        f"got {_type_name(part)} instead.",
                        param=f"messages[{i}].content[{k}]",
                        code="invalid_type",
                    )
                ptype = part.get("type")
                tag = tag0 if k == 0 else rc + b"0"
                empty = False
                if ptype == "text":
                    text = part.get("text")
                    if type(text) is not str:
                        raise ValidationFailure(
                            f"Invalid type for 'messages[{i}].content[{k}].text': expected a "
                            f"string, but got {_type_name(text)} instead.",
                            param=f"messages[{i}].content[{k}].text",
                            code="invalid_type",
                        )
                    ntok, digest = text_info(text)
                    empty = not text
                    b = self._block(tag + b"x", framing + ntok, digest, empty)
                elif ptype == "image_url":
                    iu = part.get("image_url")
                    if not isinstance(iu, Mapping) or not isinstance(iu.get("url"), str):
                        raise ValidationFailure(
                            "Missing required parameter: "
                            f"'messages[{i}].content[{k}].image_url.url'.",
                            param=f"messages[{i}].content[{k}].image_url.url",
                            code="missing_required_parameter",
                        )
                    _, digest = text_info(_canonical(_strip_marker(part)))
                    b = self._block(tag + b"i", framing + tokens.TOKENS_PER_IMAGE, digest)
                elif ptype in _OPENAI_PART_TYPES:
                    ntok, digest = text_info(_canonical(_strip_marker(part)))
                    b = self._block(tag + b"o", framing + ntok, digest)
                else:
                    shown = ptype if isinstance(ptype, str) else _canonical(ptype)
                    raise ValidationFailure(
                        f"Invalid value: '{shown}'. Supported values are: 'text', 'image_url', "
                        "'input_audio', 'refusal', 'audio', and 'file'.",
                        param=f"messages[{i}].content[{k}].type",
                        code="invalid_value",
                    )
                framing = 0
                cc = part.get("cache_control")
                if cc is not None:
                    self._marker(b, cc, f"messages.{i}.content.{k}", empty)
        else:
            raise ValidationFailure(
                f"Invalid type for 'messages[{i}].content': expected one of a string or array of "
                f"objects, but got {_type_name(content)} instead.",
                param=f"messages[{i}].content",
                code="invalid_type",
            )
        if tool_calls:
            ids: list[str] = []
            for j, call in enumerate(tool_calls):
                fn = call.get("function") if isinstance(call, Mapping) else None
                cid = call.get("id") if isinstance(call, Mapping) else None
                if not isinstance(cid, str) or not cid:
                    raise ValidationFailure(
                        f"Missing required parameter: 'messages[{i}].tool_calls[{j}].id'.",
                        param=f"messages[{i}].tool_calls[{j}].id",
                        code="missing_required_parameter",
                    )
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    raise ValidationFailure(
                        "Missing required parameter: "
                        f"'messages[{i}].tool_calls[{j}].function.name'.",
                        param=f"messages[{i}].tool_calls[{j}].function.name",
                        code="missing_required_parameter",
                    )
                args = fn.get("arguments")
                if not isinstance(args, str):
                    raise ValidationFailure(
                        f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': "
                        f"expected a string, but got {_type_name(args)} instead.",
                        param=f"messages[{i}].tool_calls[{j}].function.arguments",
                        code="invalid_type",
                    )
                fname = fn["name"]
                ntok = (
                    tokens.count_text(fname) + tokens.count_text(args) + tokens.TOKENS_PER_MESSAGE
                )
                _, digest = text_info(f"{cid}\0{fname}\0{args}")
                tag = tag0 if len(self.chain) == first else rc + b"0"
                self._block(tag + b"c", framing + ntok, digest)
                framing = 0
                ids.append(cid)
            self._calls = (i, ids, set(ids))
        elif rc != b"t":
            self._calls = None
        if len(self.chain) == first:
            self._block(tag0 + b"e", framing, b"", True)
        cc = m.get("cache_control")
        if cc is not None:
            self._marker(
                len(self.chain) - 1, cc, f"messages.{i}", self._last_text_empty[-1] and rc != b"t"
            )

    def _check_calls_answered(self) -> None:
        idx, ids, left = self._calls  # type: ignore[misc]
        if left:
            missing = ", ".join(c for c in ids if c in left)
            raise ValidationFailure(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each "
                "'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{missing}",
                param=f"messages.[{idx}].role",
            )
        self._calls = None

    # -- Anthropic messages ----------------------------------------------------------------
    def add_anthropic_system(self, system: Any) -> None:
        """Render Anthropic ``system`` (a string or a list of text blocks)."""
        if system is None:
            return
        if isinstance(system, str):
            if system:
                ntok, digest = text_info(system)
                self._block(b"S1x", ntok, digest)
            return
        if not isinstance(system, list):
            raise ValidationFailure(
                "system: Input should be a valid string or a list of text blocks", param="system"
            )
        scan_anthropic_system(system, self.findings)
        for k, blk in enumerate(system):
            if (
                not isinstance(blk, Mapping)
                or blk.get("type") != "text"
                or not isinstance(blk.get("text"), str)
            ):
                raise ValidationFailure(
                    f"system.{k}: Input should be a text block with a string 'text'", param="system"
                )
            ntok, digest = text_info(blk["text"])
            b = self._block(b"S0x", ntok, digest, not blk["text"])
            cc = blk.get("cache_control")
            if cc is not None:
                self._marker(b, cc, f"system.{k}", not blk["text"])

    def add_anthropic_message(self, m: Any, i: int, is_last: bool) -> None:
        """Render and validate Anthropic-format message ``m`` at index ``i``."""
        if not isinstance(m, Mapping):
            raise ValidationFailure(
                f"messages.{i}: Input should be a valid dictionary", param=f"messages.{i}"
            )
        role = m.get("role")
        rc = _ANTHROPIC_ROLES.get(role) if isinstance(role, str) else None
        if rc is None:
            if role == "system":
                raise ValidationFailure(
                    'messages: Unexpected role "system". The Messages API accepts a top-level '
                    "`system` "
                    'parameter, not "system" as an input message role.',
                    param="messages",
                )
            raise ValidationFailure(
                f"messages.{i}.role: Input should be 'user' or 'assistant'",
                param=f"messages.{i}.role",
            )
        scan_anthropic_message(m, i, self.findings)
        self.n_messages = i + 1
        self._mix_salt()
        content = m.get("content", _MISSING)
        prev_tool_use = self._tool_use
        self._tool_use = None
        framing = tokens.TOKENS_PER_MESSAGE
        first = len(self.chain)
        tag0 = rc + b"1"
        answered: set = set()
        if isinstance(content, str):
            if not content and not (is_last and rc == b"a"):
                raise ValidationFailure(
                    f"messages.{i}: all messages must have non-empty content except for the "
                    "optional final assistant message",
                    param=f"messages.{i}",
                )
            ntok, digest = text_info(content)
            self._block(tag0 + b"x", framing + ntok, digest, not content)
        elif isinstance(content, list):
            if not content and not (is_last and rc == b"a"):
                raise ValidationFailure(
                    f"messages.{i}: all messages must have non-empty content except for the "
                    "optional final assistant message",
                    param=f"messages.{i}",
                )
            uses: list[str] = []
            for k, blk in enumerate(content):
                where = f"messages.{i}.content.{k}"
                if not isinstance(blk, Mapping):
                    raise ValidationFailure(
                        f"{where}: Input should be a valid dictionary", param=where
                    )
                btype = blk.get("type")
                tag = tag0 if k == 0 else rc + b"0"
                empty = False
                if btype == "text":
                    text = blk.get("text")
                    if not isinstance(text, str):
                        raise ValidationFailure(f"{where}.text: Field required", param=where)
                    ntok, digest = text_info(text)
                    empty = not text
                    b = self._block(tag + b"x", framing + ntok, digest, empty)
                elif btype == "tool_use":
                    if rc != b"a":
                        raise ValidationFailure(
                            f"{where}: tool_use blocks are only allowed in assistant messages",
                            param=where,
                        )
                    tid, name = blk.get("id"), blk.get("name")
                    if not isinstance(tid, str) or not isinstance(name, str):
                        raise ValidationFailure(f"{where}.id: Field required", param=where)
                    args = _canonical(blk.get("input", {}))
                    ntok = (
                        tokens.count_text(name)
                        + tokens.count_text(args)
                        + tokens.TOKENS_PER_MESSAGE
                    )
                    _, digest = text_info(f"{tid}\0{name}\0{args}")
                    b = self._block(tag + b"c", framing + ntok, digest)
                    uses.append(tid)
                elif btype == "tool_result":
                    tid = blk.get("tool_use_id")
                    if not isinstance(tid, str):
                        raise ValidationFailure(f"{where}.tool_use_id: Field required", param=where)
                    if prev_tool_use is None or tid not in prev_tool_use[1]:
                        raise ValidationFailure(
                            f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{tid}. Each `tool_result` "
                            "block must have a corresponding `tool_use` block in the previous "
                            "message.",
                            param=where,
                        )
                    answered.add(tid)
                    rcontent = blk.get("content", "")
                    ntok = (
                        tokens.TOKENS_PER_MESSAGE
                        + tokens.count_text(tid)
                        + tokens.count_content(rcontent)
                    )
                    _, digest = text_info(_canonical(_strip_marker(blk)))
                    b = self._block(tag + b"r", framing + ntok, digest)
                elif btype in ("image", "document"):
                    _, digest = text_info(_canonical(_strip_marker(blk)))
                    b = self._block(tag + b"i", framing + tokens.TOKENS_PER_IMAGE, digest)
                elif btype in ("thinking", "redacted_thinking"):
                    text = blk.get("thinking") or blk.get("data") or ""
                    ntok, digest = text_info(str(text))
                    b = self._block(tag + b"k", framing + ntok, digest)
                    if blk.get("cache_control") is not None and self.anthropic_rules:
                        raise ValidationFailure(
                            f"{where}.cache_control: thinking blocks cannot be marked with "
                            "cache_control",
                            param=where,
                        )
                else:
                    raise ValidationFailure(
                        f"{where}.type: Input tag '{btype}' found using 'type' does not match any "
                        "of the expected tags: "
                        "'text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', "
                        "'redacted_thinking'",
                        param=where,
                    )
                framing = 0
                cc = blk.get("cache_control")
                if cc is not None:
                    self._marker(b, cc, where, empty)
            if uses:
                self._tool_use = (i, uses)
        else:
            if content is _MISSING:
                raise ValidationFailure(
                    f"messages.{i}.content: Field required", param=f"messages.{i}.content"
                )
            raise ValidationFailure(
                f"messages.{i}.content: Input should be a valid list", param=f"messages.{i}.content"
            )
        if prev_tool_use is not None:
            missing = [t for t in prev_tool_use[1] if t not in answered]
            if missing:
                raise ValidationFailure(
                    f"messages.{prev_tool_use[0]}: `tool_use` ids were found without `tool_result` "
                    "blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message.",
                    param=f"messages.{prev_tool_use[0]}",
                )
        if len(self.chain) == first:
            self._block(tag0 + b"e", framing, b"", True)

    # -- finish ------------------------------------------------------------------------------
    def pending_tool_calls(self) -> ValidationFailure | None:
        """The error a request ending now gets for unanswered OpenAI ``tool_calls``, or None."""
        if self._calls is not None and self._calls[2]:
            try:
                saved = self._calls
                self._check_calls_answered()
            except ValidationFailure as exc:
                self._calls = saved
                return exc
        return None

    @property
    def total(self) -> int:
        """Prompt tokens of the blocks so far plus reply priming (tokens)."""
        return self._total + tokens.TOKENS_REPLY_PRIMING

    def breakpoints(
        self, auto: Any = None, extra: list[tuple[int, str, str]] | None = None
    ) -> list[tuple[int, str, str]]:
        """All breakpoints of the request in render order, checked against P1's limits.

        Args:
            auto: the request's top-level ``cache_control`` (automatic caching): one more
                breakpoint on the last non-empty block.
            extra: breakpoints added by a :class:`Conversation` cache strategy.

        Raises:
            ValidationFailure: more than :data:`MAX_BREAKPOINTS`, or a 1h breakpoint after a 5m one.
        """
        marks = list(self.markers)
        if extra:
            marks.extend(extra)
        if auto is not None and self.anthropic_rules:
            last = len(self.chain) - 1
            while last > 0 and self._last_text_empty[last]:
                last -= 1
            before = len(marks)
            self._marker(last, auto, "cache_control")
            marks.append(self.markers.pop())
            assert len(marks) == before + 1
        if not self.anthropic_rules:
            return []
        if len(marks) > MAX_BREAKPOINTS:
            raise ValidationFailure(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found "
                f"{len(marks)}.",
                param="cache_control",
            )
        marks.sort(key=lambda t: t[0])
        seen_5m = None
        for _, ttl, where in marks:
            if ttl == "5m":
                seen_5m = seen_5m or where
            elif seen_5m is not None:
                raise ValidationFailure(
                    f"{where}.cache_control.ttl: a ttl='1h' cache_control block must not come "
                    "after a ttl='5m' "
                    f"cache_control block (found after {seen_5m}). Note that blocks are processed "
                    "in the following order: "
                    "`tools`, `system`, `messages`.",
                    param=f"{where}.cache_control",
                )
        return marks
