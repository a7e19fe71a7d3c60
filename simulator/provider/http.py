"""HTTP face of the provider simulator, on loopback (issue 3, "HTTP on loopback").

Standard-library ``ThreadingHTTPServer``, HTTP/1.1 keep-alive, Nagle disabled
(research/simulator.md §6). Routes:

- ``POST /v1/chat/completions`` (also ``/chat/completions``): OpenAI-compatible, SSE
  streaming with the final usage chunk under ``stream_options.include_usage``.
- ``POST /v1/messages`` (streaming too) and ``POST /v1/messages/count_tokens``: Anthropic.
- ``GET /v1/models`` (``/models``, ``/v1/models/{id}``): each model's ``context_length``,
  ``top_provider.max_completion_tokens`` and per-token ``pricing`` (OpenRouter style), or
  the Anthropic list shape when the request carries ``anthropic-version``.
- Admin: ``POST /_sim/reset``; ``GET|POST /_sim/clock`` (``{"advance": s}`` or
  ``{"set": t}``); ``GET|POST /_sim/faults`` (``{"faults": [...], "append": false}``);
  ``POST /_sim/cache`` (``{"hold": true|false}``); ``POST /_sim/models``
  (``{"name"|"family": ..., field: value}``); ``POST /_sim/replies``
  (``{"mode": "echo"|"summariser"|"scripted"|"tool_script", ...}``);
  ``GET /_sim/journal?since=N&full=1``; ``GET /_sim/u9``; ``GET /_sim/health``.

Malformed JSON, an oversized body or an unknown route get the provider's error shape,
never a crash; unexpected exceptions answer 500 in the provider's shape and are counted
in ``server.internal_errors`` (``/_sim/health``). The server binds 127.0.0.1 by default
and refuses a non-loopback address unless ``allow_non_loopback`` is set. The cache
namespace is the request's API key (``Authorization: Bearer`` or ``x-api-key``).

Run: ``python -m simulator.provider.http serve --port 8765 --seed 1`` (or
``context-engine-kit serve``); it prints ``listening on http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from simulator.provider.clock import EPOCH
from simulator.provider.core import CHAT, MESSAGES, Outcome, Provider
from simulator.provider.errors import ProviderError, anthropic_error, openai_error
from simulator.provider.faults import FaultSchedule
from simulator.provider.replies import (
    EchoReplies,
    ScriptedReplies,
    SummariserReplies,
    ToolScriptReplies,
)
from simulator.provider.responses import dumps

#: Default largest accepted request body (bytes); Anthropic's documented limit is 32 MB.
MAX_BODY_BYTES = 32 * 1024 * 1024
_STATUS_TEXT = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Request Entity Too Large",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Site Overloaded",
}
_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions", "/api/v1/chat/completions")
_MODELS_PATHS = ("/v1/models", "/models", "/api/v1/models/list")


class NonLoopbackRefused(ValueError):
    """Binding a non-loopback address was asked without ``allow_non_loopback``."""


def ensure_loopback(host: str, allow_non_loopback: bool = False) -> None:
    """Raise :class:`NonLoopbackRefused` unless ``host`` is a loopback address (or allowed).

    ``localhost``, 127.0.0.0/8 and ``::1`` are loopback; anything else needs the flag.
    """
    if allow_non_loopback:
        return
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise NonLoopbackRefused(
        f"refusing to bind {host!r}: the simulator serves loopback only "
        "(127.0.0.1, ::1); pass --allow-non-loopback to bind another address"
    )


class SimServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` holding the :class:`Provider` and its counters.

    Attributes:
        provider: the simulated provider answering requests.
        max_body_bytes: bodies larger than this are refused with 413 (bytes).
        internal_errors: unexpected exceptions caught in handlers (should stay 0).
        requests_served: HTTP requests answered (all routes).
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        provider: Provider,
        *,
        max_body_bytes: int = MAX_BODY_BYTES,
        allow_non_loopback: bool = False,
    ) -> None:
        ensure_loopback(address[0], allow_non_loopback)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, SimHandler)
        self.provider = provider
        self.max_body_bytes = max_body_bytes
        self.internal_errors = 0
        self.requests_served = 0
        self.last_internal_error = ""
        self._count_lock = threading.Lock()

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8765`` (append ``/v1`` for SDK ``base_url``)."""
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"


class SimHandler(BaseHTTPRequestHandler):
    """Request handler: routes to the provider, always answers in a provider's shape."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "context-engine-kit-sim/0.1"
    sys_version = ""
    server: SimServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet server
        """Silence the per-request access log."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol-level errors (bad request line, headers too long...) as an OpenAI-shaped JSON body."""
        self.close_connection = True
        text = message or _STATUS_TEXT.get(code, "Error")
        try:
            self._send(
                code, dumps(openai_error(f"{text}: {explain}" if explain else text)).encode()
            )
        except OSError:
            pass

    # -- plumbing ---------------------------------------------------------------------------
    def _send(
        self,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        head = [
            f"HTTP/1.1 {status} {_STATUS_TEXT.get(status, 'Error')}\r\n",
            f"Server: {self.server_version}\r\nDate: {self.date_time_string()}\r\n",
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n",
        ]
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}\r\n")
        if self.close_connection:
            head.append("Connection: close\r\n")
        head.append("\r\n")
        self.wfile.write("".join(head).encode("latin-1") + body)

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, dumps(obj).encode(), headers)

    def _send_stream(self, events: list[bytes], headers: dict[str, str], cut: bool) -> None:
        head = [
            "HTTP/1.1 200 OK\r\n",
            f"Server: {self.server_version}\r\nDate: {self.date_time_string()}\r\n",
            "Content-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n",
        ]
        for k, v in headers.items():
            head.append(f"{k}: {v}\r\n")
        head.append("\r\n")
        parts = ["".join(head).encode("latin-1")]
        for e in events:
            parts.append(b"%x\r\n%s\r\n" % (len(e), e))
        if not cut:
            parts.append(b"0\r\n\r\n")
        self.wfile.write(b"".join(parts))
        if cut:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _anthropic_flavour(self, path: str) -> bool:
        return path.startswith("/v1/messages") or "anthropic-version" in self.headers

    def _error(
        self,
        status: int,
        path: str,
        message: str,
        type_: str = "invalid_request_error",
        anthropic_type: str | None = None,
    ) -> None:
        if self._anthropic_flavour(path):
            self._send_json(
                status,
                anthropic_error(message, anthropic_type or type_, "req_sim"),
                {"request-id": "req_sim"},
            )
        else:
            self._send_json(status, openai_error(message, type_), {"x-request-id": "req_sim"})

    def _read_body(self, path: str) -> bytes | None:
        """The request body, or None after an error answer was sent."""
        limit = self.server.max_body_bytes
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            chunks, size = [], 0
            while True:
                line = self.rfile.readline(65537)
                try:
                    n = int(line.split(b";", 1)[0].strip() or b"x", 16)
                except ValueError:
                    self.close_connection = True
                    self._error(400, path, "Malformed chunked request body.")
                    return None
                if n == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                size += n
                if size > limit:
                    self.close_connection = True
                    self._error(
                        413,
                        path,
                        f"Request exceeds the maximum allowed number of bytes ({limit}).",
                        "invalid_request_error",
                        "request_too_large",
                    )
                    return None
                chunks.append(self.rfile.read(n))
                self.rfile.readline(3)
            return b"".join(chunks)
        raw_len = self.headers.get("Content-Length")
        if raw_len is None:
            return b""
        try:
            length = int(raw_len)
            if length < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            self._error(400, path, f"Invalid Content-Length header: {raw_len!r}.")
            return None
        if length > limit:
            self.close_connection = True
            self._error(
                413,
                path,
                f"Request exceeds the maximum allowed number of bytes ({limit}).",
                "invalid_request_error",
                "request_too_large",
            )
            return None
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return None
        return body

    def _json_body(self, path: str) -> tuple[bool, Any]:
        body = self._body
        try:
            return True, json.loads(body)
        except (ValueError, RecursionError) as exc:
            if self._anthropic_flavour(path):
                msg = f"There was an issue with your request body: it is not valid JSON ({type(exc).__name__})."
            else:
                msg = (
                    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
                    "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
                )
            self._error(400, path, msg)
            return False, None

    def _namespace(self) -> str:
        auth = self.headers.get("Authorization") or ""
        key = auth[7:] if auth[:7].lower() == "bearer " else (self.headers.get("x-api-key") or "")
        return "key:" + key if key else self.server.provider.namespace

    # -- dispatch ------------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        path = urlsplit(self.path).path
        try:
            with self.server._count_lock:
                self.server.requests_served += 1
            body = self._read_body(path)  # always drained, so keep-alive stays in sync
            if body is None:
                return
            self._body = body
            if method == "POST" and path in _CHAT_PATHS:
                self._model_route(CHAT, path)
            elif method == "POST" and path == "/v1/messages":
                self._model_route(MESSAGES, path)
            elif method == "POST" and path == "/v1/messages/count_tokens":
                ok, req = self._json_body(path)
                if ok:
                    try:
                        self._send_json(
                            200,
                            self.server.provider.count_tokens(req if isinstance(req, dict) else {}),
                        )
                    except ProviderError as exc:
                        self._send_json(exc.status, exc.body)
            elif method == "GET" and (path in _MODELS_PATHS or path.startswith("/v1/models/")):
                self._models(path)
            elif path.startswith("/_sim/"):
                self._admin(method, path)
            else:
                self._error(
                    404,
                    path,
                    f"Invalid URL ({method} {path})",
                    "invalid_request_error",
                    "not_found_error",
                )
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # never crash: answer in the provider's shape, count it
            with self.server._count_lock:
                self.server.internal_errors += 1
                self.server.last_internal_error = f"{type(exc).__name__}: {exc}"
            self.close_connection = True
            try:
                self._error(
                    500,
                    path,
                    "The server had an error while processing your request. Sorry about that!",
                    "server_error",
                    "api_error",
                )
            except OSError:
                pass

    def do_GET(self) -> None:  # noqa: N802
        """GET routes (models, admin reads)."""
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        """POST routes (completions, messages, admin)."""
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        """Unsupported method: provider-shaped 404."""
        self._dispatch("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        """Unsupported method: provider-shaped 404."""
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:  # noqa: N802
        """Unsupported method: provider-shaped 404."""
        self._dispatch("PATCH")

    # -- routes ---------------------------------------------------------------------------------
    def _model_route(self, route: str, path: str) -> None:
        ok, req = self._json_body(path)
        if not ok:
            return
        outcome: Outcome = self.server.provider.handle(route, req, namespace=self._namespace())
        if outcome.events is not None and outcome.status == 200:
            self._send_stream(outcome.events, outcome.headers, outcome.cut)
        else:
            self._send_json(outcome.status, outcome.body, outcome.headers)

    def _models(self, path: str) -> None:
        provider = self.server.provider
        specs = provider.models.listing()
        if path.startswith("/v1/models/"):
            name = path[len("/v1/models/") :]
            specs = [provider.models.resolve(name)]
        anthropic = "anthropic-version" in self.headers
        data = []
        for s in specs:
            if anthropic:
                data.append(
                    {
                        "type": "model",
                        "id": s.name,
                        "display_name": s.name,
                        "created_at": "2025-01-01T00:00:00Z",
                    }
                )
            else:
                data.append(
                    {
                        "id": s.name,
                        "object": "model",
                        "created": EPOCH,
                        "owned_by": s.family,
                        "context_length": s.context_length,
                        "top_provider": {
                            "context_length": s.context_length,
                            "max_completion_tokens": s.max_output_tokens,
                            "is_moderated": False,
                        },
                        "pricing": _pricing(s),
                    }
                )
        if path.startswith("/v1/models/"):
            self._send_json(200, data[0])
        elif anthropic:
            self._send_json(
                200,
                {
                    "data": data,
                    "has_more": False,
                    "first_id": data[0]["id"],
                    "last_id": data[-1]["id"],
                },
            )
        else:
            self._send_json(200, {"object": "list", "data": data})

    def _admin(self, method: str, path: str) -> None:
        provider = self.server.provider
        query = parse_qs(urlsplit(self.path).query)
        payload: Any = {}
        if method == "POST":
            ok, payload = self._json_body(path)
            if not ok:
                return
            payload = payload if payload is not None else {}
        try:
            if path == "/_sim/reset" and method == "POST":
                provider.reset()
                self._send_json(200, {"ok": True, "clock": provider.clock.now()})
            elif path == "/_sim/clock":
                if method == "POST":
                    if not isinstance(payload, dict) or not ({"advance", "set"} & set(payload)):
                        raise ValueError(
                            'POST /_sim/clock takes {"advance": seconds} or {"set": seconds}'
                        )
                    if "advance" in payload:
                        provider.clock.advance(payload["advance"])
                    else:
                        provider.clock.set(payload["set"])
                self._send_json(200, {"now": provider.clock.now()})
            elif path == "/_sim/faults":
                if method == "POST":
                    items = payload.get("faults") if isinstance(payload, dict) else payload
                    schedule = FaultSchedule.from_json(items)
                    if not (isinstance(payload, dict) and payload.get("append")):
                        provider.faults.clear()
                    for f in schedule._faults:
                        provider.faults.add(f)
                self._send_json(200, {"faults": provider.faults.to_json()})
            elif path == "/_sim/cache" and method == "POST":
                if not isinstance(payload, dict) or not isinstance(payload.get("hold"), bool):
                    raise ValueError('POST /_sim/cache takes {"hold": true|false}')
                (provider.hold_cache_writes if payload["hold"] else provider.release_cache_writes)()
                self._send_json(200, {"hold": payload["hold"]})
            elif path == "/_sim/models" and method == "POST":
                if not isinstance(payload, dict):
                    raise ValueError(
                        'POST /_sim/models takes {"name"|"family": ..., "<field>": value}'
                    )
                fields = {k: v for k, v in payload.items() if k not in ("name", "family")}
                provider.models.override(
                    payload.get("name"), family=payload.get("family"), **fields
                )
                self._send_json(200, {"ok": True})
            elif path == "/_sim/replies" and method == "POST":
                provider.replies = _replies_from_json(payload)
                self._send_json(200, {"ok": True})
            elif path == "/_sim/journal" and method == "GET":
                since = int((query.get("since") or ["0"])[0])
                full = (query.get("full") or ["0"])[0] == "1"
                self._send_json(
                    200,
                    {
                        "entries": [
                            _entry_json(e, full) for e in provider.journal if e.index >= since
                        ]
                    },
                )
            elif path == "/_sim/u9" and method == "GET":
                self._send_json(200, {"u9_leaks": provider.u9_leaks})
            elif path == "/_sim/health" and method == "GET":
                self._send_json(
                    200,
                    {
                        "ok": True,
                        "internal_errors": self.server.internal_errors,
                        "last_internal_error": self.server.last_internal_error,
                        "requests_served": self.server.requests_served,
                    },
                )
            else:
                self._error(404, path, f"Invalid URL ({method} {path})")
        except (ValueError, TypeError) as exc:
            self._error(400, path, f"{path}: {exc}")


def _pricing(spec: Any) -> dict[str, str]:
    p, q = spec.price_input / 1e6, spec.price_output / 1e6
    read = p * (0.1 if spec.anthropic_rules else spec.openai_cached_multiplier)
    out = {
        "prompt": f"{p:.10f}".rstrip("0"),
        "completion": f"{q:.10f}".rstrip("0"),
        "input_cache_read": f"{read:.10f}".rstrip("0"),
    }
    if spec.anthropic_rules:
        out["input_cache_write"] = f"{p * 1.25:.10f}".rstrip("0")
    return out


def _usage_json(u: Any) -> dict[str, int] | None:
    if u is None:
        return None
    return {
        "total": u.total,
        "input": u.input,
        "read": u.read,
        "write_5m": u.write_5m,
        "write_1h": u.write_1h,
    }


def _entry_json(e: Any, full: bool) -> dict[str, Any]:
    out = {
        "index": e.index,
        "route": e.route,
        "status": e.status,
        "stream": e.stream,
        "fault": e.fault,
        "usage": _usage_json(e.usage),
        "cost": e.cost,
        "clock": e.clock,
    }
    if full:
        out["request"] = e.request
        out["response"] = e.response
    return out


def _replies_from_json(payload: Any) -> Any:
    if not isinstance(payload, dict):
        raise ValueError(
            'POST /_sim/replies takes {"mode": "echo"|"summariser"|"scripted"|"tool_script", ...}'
        )
    mode = payload.get("mode")
    if mode == "echo":
        return EchoReplies()
    if mode == "summariser":
        return SummariserReplies(int(payload.get("max_chars", 4000)))
    if mode == "scripted":
        return ScriptedReplies(list(payload.get("replies") or []))
    if mode == "tool_script":
        return ToolScriptReplies(payload.get("rounds") or [], str(payload.get("final", "Done.")))
    raise ValueError(f"unknown reply mode {mode!r}; use echo, summariser, scripted or tool_script")


def start_server(
    provider: Provider | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allow_non_loopback: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> SimServer:
    """Start a :class:`SimServer` in a daemon thread; returns it (``.url``, ``.shutdown()``).

    Raises:
        NonLoopbackRefused: ``host`` is not loopback and ``allow_non_loopback`` is False.
        OSError: the port cannot be bound.
    """
    server = SimServer(
        (host, port),
        provider or Provider(),
        max_body_bytes=max_body_bytes,
        allow_non_loopback=allow_non_loopback,
    )
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name="provider-sim-http",
        daemon=True,
    )
    thread.start()
    return server


def build_parser() -> argparse.ArgumentParser:
    """The ``serve`` command line (``--host``, ``--port``, ``--seed``, ``--allow-non-loopback``...)."""
    ap = argparse.ArgumentParser(
        prog="context-engine-kit serve",
        description="Serve the deterministic provider simulator on loopback.",
    )
    ap.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (loopback only unless --allow-non-loopback)",
    )
    ap.add_argument("--port", type=int, default=8765, help="port (0 = any free port); default 8765")
    ap.add_argument(
        "--seed", type=int, default=0, help="reply seed (same seed + same requests = same bytes)"
    )
    ap.add_argument(
        "--allow-non-loopback", action="store_true", help="allow binding a non-loopback address"
    )
    ap.add_argument("--model", default=None, help="model used when a request names none")
    ap.add_argument("--replies", choices=("echo", "summariser"), default="echo", help="reply mode")
    ap.add_argument(
        "--strict-u9",
        action="store_true",
        help="answer 400 when a persistence-only field (U9) is sent",
    )
    ap.add_argument(
        "--max-body-bytes",
        type=int,
        default=MAX_BODY_BYTES,
        help="largest accepted request body (bytes)",
    )
    ap.add_argument(
        "--journal-limit", type=int, default=10_000, help="journal entries kept (oldest dropped)"
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``serve [--host H] [--port N] [--seed S] [--allow-non-loopback] ...`` until SIGINT/SIGTERM.

    A leading ``serve`` word is accepted and ignored. Prints ``listening on <url>``.
    Returns the process exit code (2 for a refused address or bad arguments).
    """
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["serve"]:
        args_in = args_in[1:]
    args = build_parser().parse_args(args_in)
    kwargs: dict[str, Any] = {
        "seed": args.seed,
        "strict_u9": args.strict_u9,
        "journal_limit": args.journal_limit,
        "replies": SummariserReplies() if args.replies == "summariser" else EchoReplies(),
    }
    if args.model:
        kwargs["model"] = args.model
    try:
        server = SimServer(
            (args.host, args.port),
            Provider(**kwargs),
            max_body_bytes=args.max_body_bytes,
            allow_non_loopback=args.allow_non_loopback,
        )
    except NonLoopbackRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def _stop(*_: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
    )
    thread.start()
    print(f"listening on {server.url}", flush=True)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
