"""The ``serve`` command: the provider simulator over HTTP on loopback until SIGINT/SIGTERM.

``context-engine-kit serve [options]`` and ``python -m simulator.provider.serve [options]``
both land in :func:`main`. Options set the reply behaviour (``--seed``, ``--replies``,
``--reply-mode``, ``--model``, ``--strict-u9``), memory bounds (``--max-body-bytes``,
``--journal-limit``, ``--journal-body-bytes``) and connection limits
(``--max-connections``, ``--idle-timeout``, ``--header-timeout``, ``--read-timeout``). A port
outside 0..65535, or an address it cannot listen on, is one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from simulator.provider.connections import ConnectionLimits
from simulator.provider.core import Provider
from simulator.provider.http import (
    JOURNAL_BODY_BYTES,
    MAX_BODY_BYTES,
    NonLoopbackRefused,
    SimServer,
)
from simulator.provider.replies import REPLY_KEY_MODES, EchoReplies, SummariserReplies


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.01 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected seconds from 0.01 to 86400, got {text!r}")
    return value


#: The program name of the command line, in its usage and its error lines.
PROG = "context-engine-kit serve"


def build_parser() -> argparse.ArgumentParser:
    """The ``serve`` command line (``--host``, ``--port``, ``--seed``, limits, reply mode...)."""
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Serve the deterministic provider simulator on loopback.",
    )
    defaults = ConnectionLimits()
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
        "--reply-mode",
        choices=REPLY_KEY_MODES,
        default="request",
        help="request: the reply is a function of seed and request (default); "
        "sequence: it also depends on the request index",
    )
    ap.add_argument(
        "--strict-u9",
        action="store_true",
        help="answer 400 when a persistence-only field (U9) or a key outside the message "
        "schema is sent",
    )
    ap.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=MAX_BODY_BYTES,
        help="largest accepted request body (bytes)",
    )
    ap.add_argument(
        "--journal-limit",
        type=_positive_int,
        default=10_000,
        help="journal entries kept (oldest dropped)",
    )
    ap.add_argument(
        "--journal-body-bytes",
        type=_positive_int,
        default=JOURNAL_BODY_BYTES,
        help="request bytes whose bodies the journal keeps (older bodies dropped)",
    )
    ap.add_argument(
        "--max-connections",
        type=_positive_int,
        default=defaults.max_connections,
        help="connections served at once; more are answered 503",
    )
    ap.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=defaults.idle_timeout,
        help="seconds a connection may wait for its next request",
    )
    ap.add_argument(
        "--header-timeout",
        type=_seconds,
        default=defaults.header_timeout,
        help="seconds a request's headers may take to arrive",
    )
    ap.add_argument(
        "--read-timeout",
        type=_seconds,
        default=defaults.read_timeout,
        help="seconds a body read or response write may wait without progress",
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``serve [--host H] [--port N] [--seed S] ...`` until SIGINT or SIGTERM.

    A leading ``serve`` word is accepted and ignored. Prints ``listening on <url>``.
    Returns the process exit code: 2 for bad arguments (argparse's usage and error; a port
    outside 0..65535 is one ``error:`` line) and for an address it cannot listen on (one line:
    a refused non-loopback address, or the reason the socket gave and what to pick instead).
    """
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["serve"]:
        args_in = args_in[1:]
    args = build_parser().parse_args(args_in)
    if not 0 <= args.port <= 65535:
        print(
            f"{PROG}: error: --port {args.port}: a port is a number from 0 to 65535. Pick a free "
            "port (0 picks one for you).",
            file=sys.stderr,
        )
        return 2
    kwargs: dict[str, Any] = {
        "seed": args.seed,
        "strict_u9": args.strict_u9,
        "journal_limit": args.journal_limit,
        "journal_body_bytes": args.journal_body_bytes,
        "reply_mode": args.reply_mode,
        "replies": SummariserReplies() if args.replies == "summariser" else EchoReplies(),
    }
    if args.model:
        kwargs["model"] = args.model
    limits = ConnectionLimits(
        idle_timeout=args.idle_timeout,
        header_timeout=args.header_timeout,
        read_timeout=args.read_timeout,
        max_connections=args.max_connections,
    )
    try:
        server = SimServer(
            (args.host, args.port),
            Provider(**kwargs),
            max_body_bytes=args.max_body_bytes,
            allow_non_loopback=args.allow_non_loopback,
            limits=limits,
        )
    except NonLoopbackRefused as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, OverflowError, ValueError) as exc:
        reason = str(exc).rstrip(". ") or type(exc).__name__
        print(
            f"{PROG}: error: cannot listen: {reason}. Pick a free port between 0 and 65535 "
            "(0 picks one for you) on a loopback address.",
            file=sys.stderr,
        )
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
