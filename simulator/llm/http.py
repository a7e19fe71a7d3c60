"""The engine's LLM over HTTP on loopback, for hermes-agent's real auxiliary client.

:class:`LLMServer` runs :func:`simulator.provider.http.start_server` (127.0.0.1, a free
port, threads) with an :class:`~simulator.llm.engine_llm.EngineLLM` in front of its
provider: every ``POST /v1/chat/completions`` goes through the LLM's faults and ledger;
other routes (models, admin) reach the provider unchanged. A ``timeout`` fault holds the
request ``wall_seconds`` (0: until the server stops, at most ``hold_limit`` s) and then
drops the connection without an answer, so the client's own deadline is what fires.

:func:`serve_hermes_llm` starts a server and writes ``$HERMES_HOME/config.yaml``
(:func:`~simulator.llm.hermes_config.configure_hermes_home`) in one step.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from simulator.llm import ledger
from simulator.llm.engine_llm import EngineLLM
from simulator.llm.hermes_config import configure_hermes_home
from simulator.provider.exchange import CHAT, Outcome
from simulator.provider.http import SimServer, start_server


class _ServedProvider:
    """What the HTTP server sees as its provider: chat completions through the LLM."""

    def __init__(self, llm: EngineLLM, stop: threading.Event, hold_limit: float) -> None:
        object.__setattr__(self, "_llm", llm)
        object.__setattr__(self, "_stop", stop)
        object.__setattr__(self, "_hold_limit", hold_limit)

    def handle(self, route: str, request: Any, *, namespace=None, **kwargs: Any) -> Outcome:
        """Answer one request; chat completions get the LLM's faults and ledger.

        Raises:
            ConnectionResetError: a ``timeout`` fault's hold ended (the server answers nothing).
        """
        llm = self._llm
        if route != CHAT or not isinstance(request, dict):
            return llm.provider.handle(route, request, namespace=namespace, **kwargs)
        ledger.note_call(llm)
        ex = llm.exchange(request)
        if ex.outcome is None:
            wall = ex.fault.wall_seconds if ex.fault is not None else 0.0
            self._stop.wait(min(wall or self._hold_limit, self._hold_limit))
            raise ConnectionResetError("engine LLM timeout fault: the answer was withheld")
        return ex.outcome

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm.provider, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._llm.provider, name, value)


class LLMServer:
    """An :class:`EngineLLM` served on loopback; a context manager that shuts it down.

    Args:
        llm: the LLM (default: a new :class:`EngineLLM`).
        host: loopback address to bind.
        port: port (0: any free port).
        hold_limit: longest hold of a ``timeout`` fault (seconds).

    Attributes:
        llm: the served :class:`EngineLLM`.
        server: the :class:`~simulator.provider.http.SimServer`.

    Raises:
        simulator.provider.http.NonLoopbackRefused: ``host`` is not loopback.
        OSError: the port cannot be bound.
    """

    def __init__(
        self,
        llm: EngineLLM | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        hold_limit: float = 600.0,
    ) -> None:
        self.llm = llm if llm is not None else EngineLLM()
        self._stop = threading.Event()
        self._closed = False
        self.server: SimServer = start_server(
            _ServedProvider(self.llm, self._stop, hold_limit), host, port
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.server.url

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
        return self.server.url + "/v1"

    def close(self) -> None:
        """Release held requests and stop serving (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> LLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def serve_hermes_llm(
    home: str | Path,
    llm: EngineLLM | None = None,
    *,
    tasks: Iterable[str] = ("compression",),
    timeout: float | None = None,
    transient_retries: int | None = None,
) -> Iterator[tuple[LLMServer, dict[str, str]]]:
    """Serve ``llm`` on loopback and configure ``home`` for it; yields ``(server, env)``.

    ``env`` (``HERMES_HOME``, ``NO_PROXY``) is what a Hermes process needs; the model, API
    key and (unless given) ``transient_retries`` written are the LLM's, so Hermes retries
    as the shim does. Arguments as in
    :func:`~simulator.llm.hermes_config.configure_hermes_home`.
    """
    with LLMServer(llm) as server:
        env = configure_hermes_home(
            home,
            server.base_url,
            model=server.llm.model,
            api_key=server.llm.api_key,
            tasks=tasks,
            timeout=timeout,
            transient_retries=(
                server.llm.transient_retries if transient_retries is None else transient_retries
            ),
        )
        yield server, env
