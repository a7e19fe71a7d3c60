"""Message builders and store factories shared by the store tests."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

from simulator.store.memory import MemoryStore
from simulator.store.sqlite import SQLiteStore

FIXTURES = Path(__file__).resolve().parent / "fixtures"
V30_FIXTURE = FIXTURES / "v30_pre_uid.sqlite3"


def user(text: str) -> dict[str, Any]:
    """A user message with string content."""
    return {"role": "user", "content": text}


def assistant(text: str | None = None, call_ids: list[str] | None = None) -> dict[str, Any]:
    """An assistant message; ``call_ids`` become ``tool_calls`` with those provider ids."""
    m: dict[str, Any] = {"role": "assistant", "content": text}
    if call_ids:
        m["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": "lookup", "arguments": f'{{"n": {i}}}'},
            }
            for i, cid in enumerate(call_ids)
        ]
    return m


def tool(call_id: str, text: str = "ok") -> dict[str, Any]:
    """A tool result answering ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def seeded_uids(seed: int):
    """A deterministic uid factory (32 lowercase hex) from ``random.Random(seed)``."""
    rng = random.Random(seed)
    return lambda: f"{rng.getrandbits(128):032x}"


def copy_v30_fixture(tmp_path: Path) -> Path:
    """Copy the committed pre-uid fixture into ``tmp_path`` and return the copy's path."""
    dst = tmp_path / "legacy.sqlite3"
    shutil.copyfile(V30_FIXTURE, dst)
    return dst


def make_store(kind: str, tmp_path: Path, **kwargs: Any):
    """A fresh ``MemoryStore`` (``kind='memory'``) or ``SQLiteStore`` file in ``tmp_path``."""
    if kind == "memory":
        return MemoryStore(**kwargs)
    return SQLiteStore(tmp_path / "store.sqlite3", **kwargs)
