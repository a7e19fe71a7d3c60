"""Provider failures shaped as hermes-agent 0.19.0's ``call_llm`` delivers them.

Hermes' auxiliary client reaches a custom endpoint through the openai SDK with
``max_retries=0``, so a 4xx/5xx answer reaches the engine as the SDK's status error and a
client-side deadline as ``APITimeoutError``. This module builds the same exceptions without
a network stack:

- :func:`status_error`: ``BadRequestError`` (400), ``AuthenticationError`` (401),
  ``PermissionDeniedError`` (403), ``NotFoundError`` (404), ``ConflictError`` (409),
  ``UnprocessableEntityError`` (422), ``RateLimitError`` (429), ``InternalServerError``
  (>= 500), else ``APIStatusError``. ``str(e)`` is ``"Error code: <status> - <body>"`` with
  the provider's JSON body as a Python dict repr (the SDK's text); ``e.status_code``;
  ``e.body`` is the inner ``error`` object; ``e.response`` has ``status_code``, ``headers``
  (case-insensitive ``get``: ``retry-after``, ``x-request-id`` ...), ``text`` and ``json()``;
  ``e.request_id`` is the ``x-request-id`` header; ``code`` / ``param`` / ``type`` come
  from the body.
- :func:`timeout_error`: ``APITimeoutError`` with the SDK's message ``"Request timed out."``.

Class names equal the SDK's (Hermes and engines classify by ``type(e).__name__`` too).
When ``openai`` is importable, each class also subclasses the SDK class of the same name,
so ``except openai.RateLimitError`` catches it; the SDK constructor (which wants an
``httpx`` request) is not called. Classes are built on first use.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

#: class name -> parent class name (None: ``Exception``), parents first.
_HIERARCHY: tuple[tuple[str, str | None], ...] = (
    ("APIError", None),
    ("APIStatusError", "APIError"),
    ("APIConnectionError", "APIError"),
    ("APITimeoutError", "APIConnectionError"),
    ("BadRequestError", "APIStatusError"),
    ("AuthenticationError", "APIStatusError"),
    ("PermissionDeniedError", "APIStatusError"),
    ("NotFoundError", "APIStatusError"),
    ("ConflictError", "APIStatusError"),
    ("UnprocessableEntityError", "APIStatusError"),
    ("RateLimitError", "APIStatusError"),
    ("InternalServerError", "APIStatusError"),
)
_BY_STATUS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
TIMEOUT_MESSAGE = "Request timed out."
CONNECTION_MESSAGE = "Connection error."

_lock = threading.Lock()
_classes: dict[str, type] = {}


class Headers(Mapping):
    """Response headers with case-insensitive lookup (as ``httpx.Headers``)."""

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items = {str(k).lower(): str(v) for k, v in (items or {}).items()}

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


class SimResponse:
    """The HTTP answer behind a status error: ``status_code``, ``headers``, ``text``, ``json()``."""

    def __init__(self, status_code: int, body: Any, headers: Mapping[str, str] | None = None):
        self.status_code = status_code
        self.headers = Headers(headers)
        self._body = body
        self.request = None

    @property
    def text(self) -> str:
        """The body as JSON text."""
        return json.dumps(self._body, ensure_ascii=False)

    def json(self) -> Any:
        """The decoded JSON body (the provider's full error document)."""
        return self._body


def _status_init(self, message: str, *, response: SimResponse, body: Any) -> None:
    Exception.__init__(self, message)
    self.message = message
    self.request = None
    self.body = body
    self.response = response
    self.status_code = response.status_code
    self.request_id = response.headers.get("x-request-id")
    fields = body if isinstance(body, Mapping) else {}
    self.code = fields.get("code")
    self.param = fields.get("param")
    self.type = fields.get("type")


def _connection_init(self, *, message: str = CONNECTION_MESSAGE, request: Any = None) -> None:
    Exception.__init__(self, message)
    self.message = message
    self.request = request
    self.body = None
    self.code = self.param = self.type = None


def _timeout_init(self, request: Any = None) -> None:
    _connection_init(self, message=TIMEOUT_MESSAGE, request=request)


def _sdk_class(name: str) -> type | None:
    try:
        import openai
    except Exception:  # openai absent or broken: kit classes only
        return None
    cls = getattr(openai, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def _build() -> dict[str, type]:
    out: dict[str, type] = {}
    for name, parent_name in _HIERARCHY:
        parent = out[parent_name] if parent_name else Exception
        if name == "APITimeoutError":
            init = _timeout_init
        elif name in ("APIError", "APIConnectionError"):
            init = _connection_init
        else:
            init = _status_init
        namespace = {"__module__": __name__, "__qualname__": name, "__init__": init}
        sdk = _sdk_class(name)
        cls = None
        if sdk is not None:
            try:
                cls = type(name, (sdk, parent), namespace)
            except TypeError:  # an SDK hierarchy we cannot merge with: kit classes only
                cls = None
        out[name] = cls or type(name, (parent,), namespace)
    return out


def error_class(name: str) -> type:
    """The exception class called ``name`` (e.g. ``"RateLimitError"``).

    Raises:
        KeyError: not one of the SDK's status / connection error names.
    """
    with _lock:
        if not _classes:
            _classes.update(_build())
        return _classes[name]


def status_error(status: int, document: Any, headers: Mapping[str, str] | None = None) -> Exception:
    """The exception the SDK raises for an HTTP ``status`` answer with JSON ``document``.

    Args:
        status: HTTP status (4xx/5xx).
        document: the provider's JSON body (OpenAI ``{"error": {...}}``); ``e.body`` is its
            inner ``error`` object, as the SDK sets it.
        headers: response headers (``retry-after``, ``x-request-id`` ...).
    """
    name = _BY_STATUS.get(status) or ("InternalServerError" if status >= 500 else "APIStatusError")
    document = json.loads(json.dumps(document))  # the SDK sees the decoded wire JSON
    inner = document.get("error", document) if isinstance(document, Mapping) else document
    message = f"Error code: {status} - {document}"
    return error_class(name)(message, response=SimResponse(status, document, headers), body=inner)


def timeout_error() -> Exception:
    """``APITimeoutError("Request timed out.")``: the client's deadline passed with no answer."""
    return error_class("APITimeoutError")()
