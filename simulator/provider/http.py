"""HTTP face of the provider simulator, on loopback.

Standard-library ``ThreadingHTTPServer``, HTTP/1.1 keep-alive, Nagle disabled
. Routes:

- ``POST /v1/chat/completions`` (also ``/chat/completions``): OpenAI-compatible, SSE
  streaming with the final usage chunk under ``stream_options.include_usage``.
- ``POST /v1/messages`` (streaming too) and ``POST /v1/messages/count_tokens``: Anthropic.
- ``GET /v1/models`` (``/models``, ``/v1/models/{id}``): each model's ``context_length``,
  ``top_provider.max_completion_tokens`` and per-token ``pricing`` (OpenRouter style), or
  the Anthropic list shape when the request carries ``anthropic-version``.
- Admin routes under ``/_sim/`` (reset, clock, faults, cache, models, replies, journal,
  u9, health): :mod:`simulator.provider.admin`, every input validated.

Client errors are 400s in the route's provider shape (OpenAI ``{"error": {"message",
"type", "param", "code"}}``, Anthropic ``{"type": "error", "error": {"type",
"message"}}``): malformed JSON, ``NaN``/``Infinity``, lone UTF-16 surrogates, malformed
``Content-Length`` or chunked framing (:mod:`simulator.provider.body`); an oversized body
is a 413 and an unknown route a 404. Unexpected exceptions answer 500 in the provider's
shape and are counted in ``server.internal_errors`` (``/_sim/health``).

Connections are bounded (:mod:`simulator.provider.connections`): idle, header and read
timeouts, and a connection cap answering 503. Each connection has its own thread and a
request is validated and rendered outside the provider's lock, so one large request does
not hold up the others. The server binds 127.0.0.1 by default and refuses a
non-loopback address unless ``allow_non_loopback`` is set. The cache namespace is the
request's API key (``Authorization: Bearer`` or ``x-api-key``).

Run: ``python -m simulator.provider.serve --port 8765 --seed 1`` (or
``context-engine-kit serve``); it prints ``listening on http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import http
import io
import ipaddress
import json
import socket
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from simulator.provider import render
from simulator.provider.admin import ROUTES, AdminError, admin_answer
from simulator.provider.body import BodyError, JSONBodyError, decode_json, read_body
from simulator.provider.clock import EPOCH
from simulator.provider.connections import (
    OVERFLOW_HEAD_SECONDS,
    ConnectionGate,
    ConnectionLimits,
    DeadlineReader,
    FdReserve,
    linger,
    send_and_close,
)
from simulator.provider.core import Provider
from simulator.provider.errors import ProviderError, anthropic_error, openai_error
from simulator.provider.exchange import CHAT, MESSAGES, Outcome

#: Default largest accepted request body (bytes); Anthropic's documented limit is 32 MB.
MAX_BODY_BYTES = 32 * 1024 * 1024
#: ``serve`` keeps the request/response bodies of journal entries up to this many bytes.
JOURNAL_BODY_BYTES = 64 * 1024 * 1024
_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions", "/api/v1/chat/completions")
_MODELS_PATHS = ("/v1/models", "/models", "/api/v1/models/list")
_BUSY_MESSAGE = (
    "Overloaded: the simulator is at its connection limit ({n} open connections); retry shortly."
)


#: The attribute that marks the server's own threads (its accept loop and one per connection).
SIMULATOR_THREAD = "simulator_owned"


def is_simulator_thread(thread: threading.Thread) -> bool:
    """True for a thread the simulator's HTTP server started (its accept loop or a connection's):
    a check that looks for threads an engine left behind (TS1) must not count them."""
    return bool(getattr(thread, SIMULATOR_THREAD, False))


def _simulator_thread(**kwargs: Any) -> threading.Thread:
    """A daemon ``threading.Thread(**kwargs)`` marked as the simulator's own."""
    thread = threading.Thread(daemon=True, **kwargs)
    setattr(thread, SIMULATOR_THREAD, True)
    return thread


def _reason(status: int) -> str:
    if status == 529:
        return "Site Overloaded"
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _json_bytes(obj: Any) -> bytes:
    """Compact JSON as UTF-8; raises ValueError for NaN/Infinity (never sent as "JSON")."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8", "replace")


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
    """``ThreadingHTTPServer`` holding the :class:`Provider`, its limits and counters.

    Args:
        address: ``(host, port)``; port 0 picks a free port.
        provider: the simulated provider answering requests.
        max_body_bytes: bodies larger than this are refused with 413 (bytes).
        allow_non_loopback: allow binding an address other than loopback.
        limits: timeouts (seconds) and the connection cap (:class:`ConnectionLimits`).

    Attributes:
        provider: the simulated provider answering requests.
        limits: the :class:`ConnectionLimits` in force.
        gate: the :class:`ConnectionGate` (open connections and connection counters).
        max_body_bytes: bodies larger than this are refused with 413 (bytes).
        internal_errors: unexpected exceptions caught in handlers (should stay 0).
        requests_served: HTTP requests answered (all routes).

    Raises:
        NonLoopbackRefused: ``address`` is not loopback and ``allow_non_loopback`` is False.
        OSError: the address cannot be bound.
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
        limits: ConnectionLimits | None = None,
    ) -> None:
        ensure_loopback(address[0], allow_non_loopback)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.limits = limits or ConnectionLimits()
        self.gate = ConnectionGate(self.limits.max_connections)
        self._local = threading.local()
        self._reserve = FdReserve()  # before binding: server_close() gives it back on failure
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

    # -- accepting ----------------------------------------------------------------------------
    def _busy_bytes(self) -> bytes:
        body = _json_bytes(
            openai_error(
                _BUSY_MESSAGE.format(n=self.gate.active),
                "service_unavailable_error",
                None,
                "server_is_overloaded",
            )
        )
        return (
            f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        ).encode("latin-1") + body

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept a connection; at the descriptor limit shed one pending connection (503)."""
        try:
            return self.socket.accept()
        except OSError as exc:
            if self._reserve.exhausted(exc):
                if self._reserve.shed(self.socket, self._busy_bytes()):
                    self.gate.count("fd_sheds")
            raise

    def process_request(self, request: socket.socket, client_address: Any) -> None:
        """Serve ``request`` in its own thread, or answer 503 when over the connection cap."""
        kind = self.gate.admit()
        if kind == ConnectionGate.REFUSE:
            send_and_close(request, self._busy_bytes())
            return
        thread = _simulator_thread(
            target=self._serve_connection,
            args=(request, client_address, kind),
            name="provider-sim-conn",
        )
        try:
            thread.start()
        except RuntimeError:  # no thread available: shed like the cap does
            self.gate.release(kind)
            send_and_close(request, self._busy_bytes())

    def _serve_connection(self, request: socket.socket, client_address: Any, kind: str) -> None:
        self._local.overflow = kind == ConnectionGate.OVERFLOW
        try:
            self.finish_request(request, client_address)
        except OSError:  # the client went away
            pass
        except Exception as exc:  # a handler bug: count it, keep serving
            self.count_internal_error(exc)
        finally:
            self.shutdown_request(request)
            self.gate.release(kind)

    def server_close(self) -> None:
        """Close the listening socket and give back the reserved descriptor."""
        super().server_close()
        self._reserve.close()

    # -- state --------------------------------------------------------------------------------
    def count_internal_error(self, exc: BaseException) -> None:
        """Count an unexpected exception (shown by ``/_sim/health``)."""
        with self._count_lock:
            self.internal_errors += 1
            self.last_internal_error = f"{type(exc).__name__}: {exc}"

    def reset_state(self) -> None:
        """A fresh server: full provider reset, token memos and request counters cleared."""
        self.provider.reset(full=True)
        render.clear_memo()
        with self._count_lock:
            self.internal_errors = 0
            self.last_internal_error = ""
            self.requests_served = 0


class SimHandler(BaseHTTPRequestHandler):
    """Request handler: routes to the provider, always answers in a provider's shape."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "context-engine-kit-sim/0.1"
    sys_version = ""
    server: SimServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet server
        """Silence the per-request access log."""

    # -- connection phases --------------------------------------------------------------------
    def setup(self) -> None:
        """Wrap the socket: a deadline-aware reader (timeouts) and an unbuffered writer."""
        self.connection = self.request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self._reader = DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self._reader, 65536)
        self.wfile = socketserver._SocketWriter(self.connection)
        self._overflow = getattr(self.server._local, "overflow", False)
        self._linger = False
        self._phase = "idle"
        self._body = b""
        self.path = ""

    def handle_one_request(self) -> None:
        """Wait for a request (idle timeout), read its head (header timeout), answer it."""
        limits = self.server.limits
        first = (
            min(limits.header_timeout, limits.idle_timeout, OVERFLOW_HEAD_SECONDS)
            if self._overflow
            else limits.idle_timeout
        )
        self._phase = "idle"
        self._reader.timed_out = False
        self._reader.arm_deadline(first)
        try:
            if not self.rfile.peek(1):
                self.close_connection = True
                return
        except TimeoutError:
            self.server.gate.count("idle_closed")
            self.close_connection = True
            return
        except OSError:
            self.close_connection = True
            return
        self._phase = "head"
        if not self._overflow:
            self._reader.arm_deadline(limits.header_timeout)
        super().handle_one_request()
        if self._phase == "head" and self._reader.timed_out:
            self.server.gate.count("header_timeouts")
            self._fail_connection()
            try:
                self._error(
                    408,
                    self.path,
                    "Request timed out: the request headers did not arrive within "
                    f"{limits.header_timeout:g} s.",
                    code="request_timeout",
                )
            except OSError:
                pass

    def parse_request(self) -> bool:
        """Parse the request line and headers; then bodies get the per-read timeout."""
        ok = super().parse_request()
        if ok:
            self._phase = "body"
            if not self._overflow:
                self._reader.arm_timeout(self.server.limits.read_timeout)
        return ok

    def finish(self) -> None:
        """Flush and, after an error answer, drain unread input before the socket closes."""
        super().finish()
        if self._linger:
            linger(self.connection)

    def _fail_connection(self) -> None:
        self.close_connection = True
        self._linger = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol-level errors (bad request line, headers too long...) in a provider's shape."""
        self._fail_connection()
        text = message or _reason(code)
        try:
            self._error(code, self.path or "", f"{text}: {explain}" if explain else text)
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
            f"HTTP/1.1 {status} {_reason(status)}\r\n",
            f"Server: {self.server_version}\r\nDate: {self.date_time_string()}\r\n",
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n",
        ]
        for k, v in (headers or {}).items():
            head.append(f"{k}: {v}\r\n")
        if self.close_connection:
            head.append("Connection: close\r\n")
        head.append("\r\n")
        self._reader.use_timeout(self.server.limits.read_timeout)
        self.wfile.write("".join(head).encode("latin-1") + body)

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, _json_bytes(obj), headers)

    def _send_stream(self, events: list[bytes], headers: dict[str, str], cut: bool) -> None:
        head = [
            "HTTP/1.1 200 OK\r\n",
            f"Server: {self.server_version}\r\nDate: {self.date_time_string()}\r\n",
            "Content-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n",
        ]
        for k, v in headers.items():
            head.append(f"{k}: {v}\r\n")
        head.append("\r\n")
        parts = ["".join(head).encode("latin-1")]
        for e in events:
            parts.append(b"%x\r\n%s\r\n" % (len(e), e))
        if not cut:
            parts.append(b"0\r\n\r\n")
        self._reader.use_timeout(self.server.limits.read_timeout)
        self.wfile.write(b"".join(parts))
        if cut:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _anthropic_flavour(self, path: str) -> bool:
        headers = getattr(self, "headers", None)
        return path.startswith("/v1/messages") or (
            headers is not None and "anthropic-version" in headers
        )

    def _error(
        self,
        status: int,
        path: str,
        message: str,
        type_: str = "invalid_request_error",
        anthropic_type: str | None = None,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        if self._anthropic_flavour(path):
            self._send_json(
                status,
                anthropic_error(message, anthropic_type or type_, "req_sim"),
                dict(headers or {}, **{"request-id": "req_sim"}),
            )
        else:
            self._send_json(
                status,
                openai_error(message, type_, param, code, **(extra or {})),
                dict(headers or {}, **{"x-request-id": "req_sim"}),
            )

    def _json_body(self, path: str) -> tuple[bool, Any]:
        try:
            return True, decode_json(self._body)
        except JSONBodyError as exc:
            if self._anthropic_flavour(path):
                msg = (
                    f"There was an issue with your request body: {exc.detail}."
                    if exc.detail
                    else "There was an issue with your request body: it is not valid JSON."
                )
            elif exc.detail:
                msg = f"We could not parse the JSON body of your request: {exc.detail}."
            else:
                msg = (
                    "We could not parse the JSON body of your request. (HINT: This likely means "
                    "you aren't using your "
                    "HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
                    "sent was not valid JSON.)"
                )
            self._error(400, path, msg)
            return False, None

    def _namespace(self) -> str:
        auth = self.headers.get("Authorization") or ""
        key = auth[7:] if auth[:7].lower() == "bearer " else (self.headers.get("x-api-key") or "")
        return "key:" + key if key else self.server.provider.namespace

    def _busy(self, path: str) -> None:
        """Over the connection cap: 503 in the route's shape, connection closed."""
        self.server.gate.count("busy_503")
        self._fail_connection()
        self._error(
            503,
            path,
            _BUSY_MESSAGE.format(n=self.server.gate.active),
            "service_unavailable_error",
            "overloaded_error",
            code="server_is_overloaded",
            headers={"retry-after": "1"},
        )

    # -- dispatch ------------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        path = split.path
        try:
            with self.server._count_lock:
                self.server.requests_served += 1
            if self._overflow:
                self._busy(path)
                return
            try:
                self._body = read_body(self.rfile, self.headers, self.server.max_body_bytes)
            except BodyError as exc:
                self._fail_connection()
                self._error(exc.status, path, exc.message, anthropic_type=exc.anthropic_type)
                return
            except TimeoutError:
                self.server.gate.count("read_timeouts")
                self._fail_connection()
                self._error(
                    408,
                    path,
                    "Request timed out: the request body made no progress for "
                    f"{self.server.limits.read_timeout:g} s.",
                    code="request_timeout",
                )
                return
            self._phase = "answer"
            if method == "POST" and path in _CHAT_PATHS:
                self._model_route(CHAT, path)
            elif method == "POST" and path == "/v1/messages":
                self._model_route(MESSAGES, path)
            elif method == "POST" and path == "/v1/messages/count_tokens":
                self._count_tokens(path)
            elif method == "GET" and (path in _MODELS_PATHS or path.startswith("/v1/models/")):
                self._models(path)
            elif path in ROUTES:
                self._admin(method, path, split.query)
            else:
                self._error(
                    404,
                    path,
                    f"Invalid URL ({method} {path})",
                    "invalid_request_error",
                    "not_found_error",
                )
        except OSError:  # timeouts, resets, broken pipes: the connection is gone
            self.close_connection = True
        except Exception as exc:  # never crash: answer in the provider's shape, count it
            self.server.count_internal_error(exc)
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
        finally:
            self._body = b""

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
        outcome: Outcome = self.server.provider.handle(
            route, req, namespace=self._namespace(), body_bytes=len(self._body)
        )
        if outcome.events is not None and outcome.status == 200:
            self._send_stream(outcome.events, outcome.headers, outcome.cut)
        else:
            self._send_json(outcome.status, outcome.body, outcome.headers)

    def _count_tokens(self, path: str) -> None:
        ok, req = self._json_body(path)
        if not ok:
            return
        try:
            answer = self.server.provider.count_tokens(req if isinstance(req, dict) else {})
        except ProviderError as exc:
            self._send_json(exc.status, exc.body)
            return
        self._send_json(200, answer)

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

    def _admin(self, method: str, path: str, query: str) -> None:
        payload: Any = None
        if method == "POST" and self._body.strip():
            ok, payload = self._json_body(path)
            if not ok:
                return
        try:
            status, obj = admin_answer(self.server, method, path, query, payload)
        except AdminError as exc:
            extra = {"accepted": exc.accepted} if exc.accepted else None
            self._error(
                exc.status,
                path,
                exc.message,
                param=exc.param,
                code="invalid_admin_input" if exc.status == 400 else "method_not_allowed",
                headers={"allow": ", ".join(ROUTES[path])} if exc.status == 405 else None,
                extra=extra,
            )
            return
        self._send_json(status, obj)


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


def start_server(
    provider: Provider | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allow_non_loopback: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
    limits: ConnectionLimits | None = None,
) -> SimServer:
    """Start a :class:`SimServer` in a daemon thread; returns it (``.url``, ``.shutdown()``).

    ``limits`` sets the timeouts (seconds) and the connection cap; the defaults of
    :class:`ConnectionLimits` otherwise. ``max_body_bytes`` is the body limit in bytes.

    Raises:
        NonLoopbackRefused: ``host`` is not loopback and ``allow_non_loopback`` is False.
        OSError: the port cannot be bound.
    """
    server = SimServer(
        (host, port),
        provider or Provider(),
        max_body_bytes=max_body_bytes,
        allow_non_loopback=allow_non_loopback,
        limits=limits,
    )
    thread = _simulator_thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name="provider-sim-http",
    )
    thread.start()
    return server
