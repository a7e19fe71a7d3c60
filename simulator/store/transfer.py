"""Export and import of one session as JSONL, keeping every identity field (U3).

Format (one JSON object per line, UTF-8):

- line 1: ``{"type": "session", "format": "context-engine-kit/session", "version": 1,
  "session": {"id", "parent_session_id", "kind", "meta"}}``
- then one ``{"type": "message", "message": {...}}`` per message, in order, with
  ``message_uid``, ``_absorbed_message_uids``, ``_tool_call_uids`` and ``_tool_call_uid``.

Works with any :class:`~simulator.store.base.FullSessionStore`. Importing creates a new
session (``kind="import"``, ``meta["imported_from"]`` = the exported id) whose rows keep
the exported uids, so importing the same file twice gives two live rows per uid (U7).
"""

from __future__ import annotations

import json
from typing import IO, Any

from .identity import StoreInputError, validate_message

FORMAT = "context-engine-kit/session"
VERSION = 1


def export_jsonl(store: Any, session_id: str, fp: IO[str]) -> int:
    """Write ``session_id`` of ``store`` to the text stream ``fp``; return the message count."""
    info = store.session_info(session_id)
    header = {
        "type": "session",
        "format": FORMAT,
        "version": VERSION,
        "session": {
            "id": info.id,
            "parent_session_id": info.parent_session_id,
            "kind": info.kind,
            "meta": info.meta,
        },
    }
    fp.write(json.dumps(header, ensure_ascii=False) + "\n")
    messages = store.load(session_id)
    for m in messages:
        fp.write(json.dumps({"type": "message", "message": m}, ensure_ascii=False) + "\n")
    return len(messages)


def import_jsonl(store: Any, fp: IO[str], *, session_id: str | None = None) -> str:
    """Read an export from ``fp`` into a new session of ``store``; return its id (U3).

    Raises :class:`~simulator.store.identity.StoreInputError` naming the line for a
    missing/foreign header, a line that is not JSON, or a line of unknown type, and
    naming the message for a malformed one; nothing is written in those cases.
    """
    header: dict[str, Any] | None = None
    messages: list[dict[str, Any]] = []
    for lineno, line in enumerate(fp, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise StoreInputError(
                f"import line {lineno}: not JSON ({exc.msg}); is this a session export?"
            ) from None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if header is None:
            if kind != "session" or obj.get("format") != FORMAT:
                raise StoreInputError(
                    f"import line {lineno}: expected the session header "
                    f'{{"type": "session", "format": "{FORMAT}", ...}}, got {line[:80]!r}'
                )
            if obj.get("version") != VERSION:
                raise StoreInputError(
                    f"import line {lineno}: export version {obj.get('version')!r} is not {VERSION}"
                )
            header = obj
        elif kind == "message" and isinstance(obj.get("message"), dict):
            messages.append(obj["message"])
        else:
            raise StoreInputError(
                f'import line {lineno}: expected {{"type": '
                f'"message", "message": {{...}}}}, got {line[:80]!r}'
            )
    if header is None:
        raise StoreInputError("import: empty input; expected a session export (JSONL)")
    for i, m in enumerate(messages):
        validate_message(m, where=f"import message {i + 1}")
    meta = dict(header["session"].get("meta") or {})
    meta["imported_from"] = header["session"].get("id")
    new_id = store.create_session(session_id=session_id, kind="import", **meta)
    if messages:
        store.append(new_id, messages)
    return new_id


__all__ = ["FORMAT", "VERSION", "export_jsonl", "import_jsonl"]
