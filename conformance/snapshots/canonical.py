"""Canonical, masked, readable JSON for compression snapshots (byte-stable across processes).

:func:`snapshot_text` turns a capture (see :mod:`conformance.snapshots.capture`) into the
text stored in ``.conformance/snapshots/<engine>/<case>.json``:

- volatile values are masked by first appearance: every ``message_uid``-like value (32
  hex, or a dashed UUID) becomes ``<uid-1>``, ``<uid-2>``... in the order it first
  appears, the input history walked first, so ``<uid-7>`` names the same message in the
  input and in every output and references between messages stay visible in a diff;
  timestamp-like keys become ``<timestamp>``;
- an output row equal to an input row is written ``"= input[i] (role)"``, so a diff shows
  what the engine changed, not what it kept;
- strings with newlines become ``{"text_lines": [...]}``, so a changed summary line is one
  changed diff line;
- keys sorted, two-space indent, UTF-8 (no escapes), one trailing newline.
"""

from __future__ import annotations

import json
import re
from typing import Any

UID_RE = re.compile(
    r"\b[0-9a-f]{32}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
)
TIMESTAMP_KEYS = frozenset({"timestamp", "created", "created_at", "updated_at", "ts", "time"})


class UidMask:
    """Maps each distinct uid-like string to ``<uid-N>`` in order of first appearance."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def name(self, uid: str) -> str:
        """The mask of ``uid`` (assigned on first sight)."""
        if uid not in self.names:
            self.names[uid] = f"<uid-{len(self.names) + 1}>"
        return self.names[uid]

    def text(self, s: str) -> str:
        """``s`` with every uid-like substring masked."""
        return UID_RE.sub(lambda m: self.name(m.group(0)), s)

    def walk(self, value: Any, key: str | None = None) -> Any:
        """A masked deep copy of ``value`` (dicts walked in sorted key order)."""
        if isinstance(value, dict):
            return {str(k): self.walk(value[k], str(k)) for k in sorted(value, key=str)}
        if isinstance(value, (list, tuple)):
            return [self.walk(v) for v in value]
        if (
            key in TIMESTAMP_KEYS
            and isinstance(value, (int, float, str))
            and not isinstance(value, bool)
        ):
            return "<timestamp>"
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, float):
            return round(value, 6)
        return value


def _lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lines(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lines(v) for v in value]
    if isinstance(value, str) and "\n" in value:
        return {"text_lines": value.split("\n")}
    return value


def _canon(m: Any) -> str:
    return json.dumps(m, sort_keys=True, ensure_ascii=False, default=repr)


def reference_rows(output: Any, inputs: list[Any]) -> Any:
    """``output`` with rows equal to an input row replaced by ``"= input[i] (role)"``.

    Equal rows are matched in order (the first unused equal input at or after the last
    match, else the first unused one), so duplicates map one to one.
    """
    if not isinstance(output, list):
        return output
    index: dict[str, list[int]] = {}
    for i, m in enumerate(inputs):
        index.setdefault(_canon(m), []).append(i)
    used: set = set()
    last = -1
    out = []
    for row in output:
        hits = [i for i in index.get(_canon(row), []) if i not in used]
        after = [i for i in hits if i > last]
        pick = after[0] if after else (hits[0] if hits else None)
        if pick is None:
            out.append(row)
            continue
        used.add(pick)
        last = pick
        role = row.get("role") if isinstance(row, dict) else type(row).__name__
        out.append(f"= input[{pick}] ({role})")
    return out


def snapshot_text(capture: dict[str, Any]) -> str:
    """The snapshot file text of ``capture`` (see the module doc).

    ``capture`` has ``inputs`` (a list of message lists, walked first for uid order and
    not written) and ``document`` (what is written).
    """
    mask = UidMask()
    for messages in capture.get("inputs", ()):
        mask.walk(messages)
    doc = _lines(mask.walk(capture["document"]))
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


__all__ = ["UidMask", "snapshot_text", "reference_rows"]
