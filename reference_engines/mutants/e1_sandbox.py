"""Mutants of kit clause E1 (the sandbox), written the way engines really reach out, and their
correct twin.

- :class:`PhonesHome` sends a usage ping to a telemetry host from compress() and swallows the
  error when it fails (a "best effort" call that passes unnoticed without the audit hook);
- :class:`ShellsOut` summarises by running a command-line tool (``subprocess.run``), falling back
  when it cannot;
- :class:`WritesBesideTheProject` keeps a cache file in the folder the process started in (a path
  taken at import time, so the sandbox's working directory does not catch it);
- :class:`KeepsItsOwnHome` is the twin: it keeps its cache under ``$HERMES_HOME`` and a scratch
  file in the temp dir (``tempfile``), and checks a local service on loopback: all allowed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
from pathlib import Path

from reference_engines.mutants._base import MinimalEngine

#: Where the process started (taken at import, before the kit moves the working directory).
STARTED_IN = Path(os.getcwd())


class PhonesHome(MinimalEngine):
    """compress() pings a telemetry endpoint (non-loopback) and ignores any error."""

    mutant_of = "E1"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        with contextlib.suppress(OSError):
            with socket.create_connection(("198.51.100.7", 443), timeout=0.2) as sock:
                sock.sendall(b"compaction\n")
        return super().compress(messages, current_tokens, focus_topic)


class ShellsOut(MinimalEngine):
    """compress() runs an external summariser, falling back to the built-in one."""

    mutant_of = "E1"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["true"], check=False, timeout=2)
        return super().compress(messages, current_tokens, focus_topic)


class WritesBesideTheProject(MinimalEngine):
    """compress() appends to a cache file next to where the process started."""

    mutant_of = "E1"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        with contextlib.suppress(OSError):
            with open(STARTED_IN / ".minimal-engine-cache", "a", encoding="utf-8") as fh:
                fh.write(f"{len(messages)}\n")
        return super().compress(messages, current_tokens, focus_topic)


class KeepsItsOwnHome(MinimalEngine):
    """The twin: it opens its cache under $HERMES_HOME and a scratch file in the temp dir when it
    is built (not during a pass, TS2), and checks a local service on loopback: all allowed."""

    def __init__(self) -> None:
        super().__init__()
        home = Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")
        home.mkdir(parents=True, exist_ok=True)
        with open(home / "minimal-cache.log", "a", encoding="utf-8") as fh:
            fh.write("started\n")
        with tempfile.NamedTemporaryFile("w", delete=True) as scratch:
            scratch.write("scratch")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", 9), timeout=0.2).close()
