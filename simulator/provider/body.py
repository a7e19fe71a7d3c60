"""Request bodies of the loopback server: framing (Content-Length, chunked) and JSON.

:func:`read_body` reads exactly one body from a buffered socket file and never more than
the byte limit; every framing error is a :class:`BodyError` with the status to answer
(400 for a malformed body, 413 for a body over the limit), after which the connection
cannot be reused. The chunked grammar is RFC 9112 §7.1, strictly: a chunk size is 1–16
hex digits (no sign, ``0x``, ``_`` or spaces), optional extensions after ``;``, lines end
in CRLF, chunk data is followed by CRLF, trailer fields are ``name: value`` lines.

:func:`decode_json` parses a body as a provider would: UTF-8 JSON with finite numbers and
valid Unicode strings; a ``\\ud800`` escape without its pair (a lone surrogate) is an
error, not a string the simulator will fail on later.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, BinaryIO

#: Longest chunk-size or trailer line accepted (bytes, CRLF included).
MAX_LINE = 4096
#: Most trailer fields accepted after the last chunk.
MAX_TRAILERS = 64

_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(;[^\r\n]*)?\r\n\Z")
_DIGITS = re.compile(r"[0-9]{1,19}\Z")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class BodyError(Exception):
    """A request body that cannot be read; answer ``status`` and close the connection.

    Attributes:
        status: 400 (malformed framing) or 413 (over the limit).
        message: what was wrong, for the error body.
        anthropic_type: the Anthropic ``error.type`` for it.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.anthropic_type = "request_too_large" if status == 413 else "invalid_request_error"


def _too_large(limit: int) -> BodyError:
    return BodyError(413, f"Request exceeds the maximum allowed number of bytes ({limit}).")


def read_body(rfile: BinaryIO, headers: Any, limit: int) -> bytes:
    """Read one request body framed by ``headers`` from ``rfile`` (at most ``limit`` bytes).

    Args:
        rfile: the connection's buffered binary reader.
        headers: the request's ``email.message.Message`` headers (``get_all``).
        limit: the largest accepted body in bytes.

    Returns:
        The body (``b""`` when the request has none).

    Raises:
        BodyError: conflicting or invalid ``Content-Length`` / ``Transfer-Encoding``,
            malformed chunked framing, a body that ends early (400), or more than
            ``limit`` bytes (413). Read timeouts propagate as :class:`TimeoutError`.
    """
    te = headers.get_all("Transfer-Encoding") or []
    cl = headers.get_all("Content-Length") or []
    if te:
        if cl:
            raise BodyError(
                400, "A request must not carry both Transfer-Encoding and Content-Length."
            )
        codings = [c.strip().lower() for v in te for c in v.split(",")]
        if codings != ["chunked"]:
            raise BodyError(
                400,
                f"Unsupported Transfer-Encoding {', '.join(te)!r}; only 'chunked' is accepted.",
            )
        return _read_chunked(rfile, limit)
    if not cl:
        return b""
    values = {v.strip() for raw in cl for v in raw.split(",")}
    if len(values) != 1 or not _DIGITS.match(next(iter(values))):
        raise BodyError(
            400, f"Invalid Content-Length header {', '.join(cl)!r}; expected one decimal number."
        )
    length = int(values.pop())
    if length > limit:
        raise _too_large(limit)
    body = rfile.read(length)
    if len(body) < length:
        raise BodyError(400, f"The request body ended after {len(body)} of {length} bytes.")
    return body


def _read_chunked(rfile: BinaryIO, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        line = rfile.readline(MAX_LINE + 1)
        m = _CHUNK_SIZE.match(line)
        if m is None:
            if not line:
                raise BodyError(
                    400, "Malformed chunked request body: it ended before the last chunk."
                )
            shown = line[:40].decode("latin-1").rstrip("\r\n")
            raise BodyError(
                400,
                f"Malformed chunked request body: invalid chunk size line {shown!r}; expected 1-16 "
                "hexadecimal digits, optional ';' extensions, then CRLF.",
            )
        n = int(m.group(1), 16)
        if n == 0:
            break
        size += n
        if size > limit:
            raise _too_large(limit)
        data = rfile.read(n)
        if len(data) < n:
            raise BodyError(400, "Malformed chunked request body: a chunk ended early.")
        chunks.append(data)
        if rfile.read(2) != b"\r\n":
            raise BodyError(
                400, "Malformed chunked request body: chunk data must be followed by CRLF."
            )
    for _ in range(MAX_TRAILERS + 1):
        line = rfile.readline(MAX_LINE + 1)
        if line == b"\r\n":
            return b"".join(chunks)
        if not line.endswith(b"\r\n") or len(line) > MAX_LINE or b":" not in line:
            raise BodyError(
                400,
                "Malformed chunked request body: expected trailer fields ('name: value' lines) "
                "and a final CRLF after the last chunk.",
            )
    raise BodyError(
        400, f"Malformed chunked request body: more than {MAX_TRAILERS} trailer fields."
    )


class JSONBodyError(ValueError):
    """A body that is not a provider-acceptable JSON value.

    Attributes:
        detail: what was wrong (e.g. ``"messages[0].content contains a lone UTF-16
            surrogate (\\ud800), which is not valid Unicode"``), or None for plain
            invalid JSON.
    """

    def __init__(self, detail: str | None) -> None:
        super().__init__(detail or "invalid JSON")
        self.detail = detail


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_json(body: bytes) -> Any:
    """Parse ``body`` as UTF-8 JSON; no ``NaN``/``Infinity``, no lone surrogates.

    Raises:
        JSONBodyError: invalid UTF-8 or JSON, nesting too deep, a non-finite number
            (including literals that overflow a float, like ``1e400``), or a string or
            key holding a lone UTF-16 surrogate (``detail`` names where).
    """
    try:
        value = json.loads(body, parse_constant=_no_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        raise JSONBodyError(None) from None
    if _SURROGATE_ESCAPE.search(body):
        where = _lone_surrogate(value)
        if where is not None:
            raise JSONBodyError(where)
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is out of range")
    return value


_NOT_UNICODE = ", which is not valid Unicode"


def _lone_surrogate(value: Any) -> str | None:
    stack: list[tuple[Any, str]] = [(value, "body")]
    while stack:
        v, path = stack.pop()
        if isinstance(v, str):
            bad = _bad_char(v)
            if bad is not None:
                return f"{path} contains a lone UTF-16 surrogate (\\u{ord(bad):04x}){_NOT_UNICODE}"
        elif isinstance(v, Mapping):
            for k, sub in v.items():
                bad = _bad_char(k)
                if bad is not None:
                    return (
                        f"a key of {path} contains a lone UTF-16 surrogate (\\u{ord(bad):04x})"
                        + _NOT_UNICODE
                    )
                stack.append((sub, k if path == "body" else f"{path}.{k}"))
        elif isinstance(v, list):
            stack.extend((sub, f"{path}[{n}]") for n, sub in enumerate(v))
    return None


def _bad_char(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None
