"""The LCM tools: ``lcm_grep``, ``lcm_describe``, ``lcm_expand`` (contract T1, T2, O5, O6).

:data:`TOOL_SCHEMAS` are ``{name, description, parameters}`` dicts with JSON Schema
parameters (T1). :class:`LCMTools` answers calls with JSON strings; every error is a JSON
object ``{"error": "...", "tool": name}`` (T2), never an exception.

The tools read the committed store and, marked ``"committed": false``, passes that are
still staged (in memory only, TS2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from .messages import ANON_KEY_PREFIX
from .store import LCMBackend, LCMConnection

SNIPPET_CHARS = 240
MAX_GREP_LIMIT = 200
MAX_EXPAND_LIMIT = 500
DEFAULT_EXPAND_LIMIT = 100

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "description": (
            "Search the full, verbatim conversation history and its summaries kept by Lossless "
            "Context Management, including messages that were compacted out of the context. "
            "Returns matching messages (with message_uid and the summary node that covers them) "
            "and summary nodes."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": (
                        "Text to find (case-insensitive), or a Python "
                        "regular expression when regex is true."
                    ),
                },
                "regex": {
                    "type": "boolean",
                    "default": False,
                    "description": "Treat pattern as a regular expression.",
                },
                "scope": {
                    "type": "string",
                    "enum": ["all", "messages", "summaries"],
                    "default": "all",
                    "description": "Search verbatim messages, summary nodes, or both.",
                },
                "all_sessions": {
                    "type": "boolean",
                    "default": False,
                    "description": "Search every session in the store, not just the current one.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_GREP_LIMIT,
                    "default": 20,
                    "description": "Most matches to return.",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
    {
        "name": "lcm_describe",
        "description": (
            "Describe one entry of the Lossless Context Management store: a summary node id "
            "(lcm_...) gives its level, summary, message count and children; a message_uid gives "
            "its stored versions and the summary nodes that cover it."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A summary node id (lcm_...) or a message_uid.",
                }
            },
            "required": ["id"],
            "additionalProperties": False,
        },
    },
    {
        "name": "lcm_expand",
        "description": (
            "Recover the original messages, verbatim and in order, behind a summary node "
            "(lcm_...), or the current version of one message_uid. Paged with offset/limit."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "node_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A summary node id (lcm_...) or a message_uid.",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Messages to skip.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_EXPAND_LIMIT,
                    "default": DEFAULT_EXPAND_LIMIT,
                    "description": "Most messages to return.",
                },
            },
            "required": ["node_id"],
            "additionalProperties": False,
        },
    },
]

TOOL_NAMES = frozenset(s["name"] for s in TOOL_SCHEMAS)


class ToolArgumentError(ValueError):
    """A tool argument is missing or has the wrong type; the message says which and how to fix
    it."""


def _snippet(text: str, needle_at: int = 0) -> str:
    start = max(0, needle_at - SNIPPET_CHARS // 3)
    out = text[start : start + SNIPPET_CHARS]
    return ("…" if start else "") + out + ("…" if start + SNIPPET_CHARS < len(text) else "")


def _check_args(name: str, args: Any) -> dict[str, Any]:
    """Validate ``args`` against the tool's schema (types, required, enum, bounds, extras)."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise ToolArgumentError(
                f"arguments are not valid JSON ({exc}); pass a JSON object"
            ) from exc
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolArgumentError(f"arguments must be a JSON object, got {type(args).__name__}")
    schema = next(s for s in TOOL_SCHEMAS if s["name"] == name)["parameters"]
    props = schema["properties"]
    extra = sorted(set(args) - set(props))
    if extra:
        raise ToolArgumentError(f"unknown argument(s) {extra}; allowed: {sorted(props)}")
    out: dict[str, Any] = {}
    for key, spec in props.items():
        if key not in args or args[key] is None:
            if key in schema.get("required", ()):
                raise ToolArgumentError(
                    f"missing required argument {key!r} ({spec['description']})"
                )
            if "default" in spec:
                out[key] = spec["default"]
            continue
        value = args[key]
        kind = spec["type"]
        if kind == "string":
            if not isinstance(value, str) or len(value) < spec.get("minLength", 0):
                raise ToolArgumentError(
                    f"argument {key!r} must be a non-empty string, got {value!r}"
                )
            if "enum" in spec and value not in spec["enum"]:
                raise ToolArgumentError(
                    f"argument {key!r} must be one of {spec['enum']}, got {value!r}"
                )
        elif kind == "boolean":
            if not isinstance(value, bool):
                raise ToolArgumentError(f"argument {key!r} must be true or false, got {value!r}")
        elif kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ToolArgumentError(f"argument {key!r} must be an integer, got {value!r}")
            lo, hi = spec.get("minimum"), spec.get("maximum")
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                raise ToolArgumentError(
                    f"argument {key!r} must be between {lo} and {hi}, got {value}"
                )
        out[key] = value
    return out


class LCMTools:
    """Tool handlers over one engine's connection and the shared backend (T2).

    Args:
        conn: the engine's :class:`LCMConnection`.
        backend: the shared :class:`LCMBackend` (for staged, uncommitted passes).
        session_id: zero-argument callable returning the engine's current session id.
    """

    def __init__(
        self, conn: LCMConnection, backend: LCMBackend, session_id: Callable[[], str | None]
    ):
        self.conn = conn
        self.backend = backend
        self._session_id = session_id

    def call(self, name: str, args: Any) -> str:
        """Run tool ``name`` with ``args`` (dict or JSON string); always returns a JSON string
        (T2)."""
        if name not in TOOL_NAMES:
            return json.dumps({"error": f"Unknown context engine tool: {name}", "tool": name})
        try:
            clean = _check_args(name, args)
            result = getattr(self, name)(**clean)
        except ToolArgumentError as exc:
            return json.dumps({"error": f"{name}: {exc}", "tool": name})
        except Exception as exc:  # T2: a failure is reported as JSON, never raised into the agent
            return json.dumps(
                {"error": f"{name} failed: {type(exc).__name__}: {exc}", "tool": name}
            )
        return json.dumps(result, ensure_ascii=False, default=str)

    # -- node lookup (committed first, then staged) ------------------------------------
    def _node(self, node_id: str) -> tuple[dict[str, Any] | None, bool]:
        found = self.conn.nodes([node_id]).get(node_id)
        if found is not None:
            return found, True
        staged = self.backend.staged_node(node_id)
        return staged, False

    def _nodes(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        out = self.conn.nodes(ids)
        for nid in ids:
            if nid not in out:
                staged = self.backend.staged_node(nid)
                if staged is not None:
                    out[nid] = staged
        return out

    def _leaf_refs(self, root: dict[str, Any]) -> list[tuple[str, str]]:
        """All ``(msg_key, version_hash)`` refs under ``root``, in order (iterative, batched)."""
        frontier: list[dict[str, Any]] = [root]
        while any(n["kind"] != "leaf" for n in frontier):
            need = [c for n in frontier if n["kind"] != "leaf" for c in n["children"]]
            found = self._nodes(need)
            nxt: list[dict[str, Any]] = []
            for item in frontier:
                if item["kind"] == "leaf":
                    nxt.append(item)
                    continue
                for c in item["children"]:
                    child = found.get(c)
                    if child is None:
                        raise LookupError(
                            f"node {c} (child of {item['node_id']}) is missing from the store"
                        )
                    nxt.append(child)
            frontier = nxt
        refs: list[tuple[str, str]] = []
        for leaf in frontier:
            refs.extend((c[0], c[1]) for c in leaf["children"])
        return refs

    def _resolve_versions(self, refs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        stored = self.conn.versions(refs)
        out = []
        for ref in refs:
            msg = stored.get(ref)
            if msg is None:
                staged = self.backend.staged_version(*ref)
                if staged is None:
                    raise LookupError(
                        f"message version {ref[0]}@{ref[1]} is missing from the store"
                    )
                msg = staged.message
            out.append(msg)
        return out

    def _follow(self, uid: str) -> tuple[str, str | None]:
        """``(key to read, absorbed uid followed from)``: follows U5 links when ``uid`` has no
        rows."""
        if self.conn.message_history(uid):
            return uid, None
        survivor = self.conn.survivor_of(uid)
        if survivor:
            return survivor, uid
        return uid, None

    # -- the tools -----------------------------------------------------------------------
    def lcm_grep(
        self, pattern: str, regex: bool, scope: str, all_sessions: bool, limit: int
    ) -> dict[str, Any]:
        """Search verbatim messages and/or summaries. Returns ``{matches, truncated, ...}``."""
        session = None if all_sessions else self._session_id()
        matcher = None
        if regex:
            try:
                compiled = re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                raise ToolArgumentError(
                    f"pattern is not a valid regular expression: {exc}"
                ) from exc
            matcher = compiled.search
        else:
            low = pattern.lower()

            def matcher(text: str):
                pos = text.lower().find(low)
                return pos if pos >= 0 else None

        def where(text: str) -> int | None:
            m = matcher(text)
            if m is None:
                return None
            return m if isinstance(m, int) else m.start()

        matches: list[dict[str, Any]] = []
        truncated = False
        if scope in ("all", "messages"):
            if regex or not pattern.isascii():
                rows = self.conn.iter_messages(session)
            else:
                rows = self.conn.find_messages(pattern, session, limit + 1)
            hits = []
            for key, vhash, role, text, seq, sid in rows:
                pos = where(text)
                if pos is not None:
                    hits.append((key, vhash, role, text, seq, sid, pos))
                    if len(hits) > limit:
                        break
            current = self.conn.current_seq([h[0] for h in hits[:limit]])
            for key, _vhash, role, text, seq, sid, pos in hits[:limit]:
                matches.append(
                    {
                        "kind": "message",
                        "message_uid": None if key.startswith(ANON_KEY_PREFIX) else key,
                        "key": key,
                        "role": role,
                        "is_current": current.get(key) == seq,
                        "session_id": sid,
                        "snippet": _snippet(text, pos),
                        "node_ids": self.conn.leaves_covering(key),
                        "committed": True,
                    }
                )
            truncated = len(hits) > limit
        if scope in ("all", "summaries") and len(matches) < limit:
            nodes = [(n, True) for n in self.conn.iter_nodes(session)]
            for p in self.backend.staged_snapshot():
                if session is None or p.session_id == session:
                    nodes += [(n, False) for n in p.nodes]
            for node, committed in nodes:
                pos = where(node["summary"])
                if pos is None:
                    continue
                if len(matches) >= limit:
                    truncated = True
                    break
                matches.append(
                    {
                        "kind": "summary",
                        "node_id": node["node_id"],
                        "level": node["level"],
                        "type": node["kind"],
                        "message_count": node["message_count"],
                        "snippet": _snippet(node["summary"], pos),
                        "committed": committed,
                    }
                )
        if scope in ("all", "messages") and len(matches) < limit:
            for p in self.backend.staged_snapshot():
                if session is not None and p.session_id != session:
                    continue
                for v in p.versions:
                    pos = where(v.text)
                    if pos is None:
                        continue
                    if len(matches) >= limit:
                        truncated = True
                        break
                    matches.append(
                        {
                            "kind": "message",
                            "message_uid": None if v.key.startswith(ANON_KEY_PREFIX) else v.key,
                            "key": v.key,
                            "role": v.role,
                            "session_id": v.session_id,
                            "snippet": _snippet(v.text, pos),
                            "committed": False,
                        }
                    )
        return {
            "pattern": pattern,
            "scope": scope,
            "session_id": session,
            "matches": matches,
            "truncated": truncated,
        }

    def lcm_describe(self, id: str) -> dict[str, Any]:  # noqa: A002 - schema field name
        """Describe a node (by ``lcm_...`` id) or a message (by uid, following U5 links)."""
        node, committed = self._node(id)
        if node is not None:
            if node["kind"] == "leaf":
                msgs = self._resolve_versions([(c[0], c[1]) for c in node["children"]])
                children = [
                    {
                        "message_uid": m.get("message_uid"),
                        "role": m.get("role"),
                        "snippet": _snippet(_plain(m)),
                    }
                    for m in msgs
                ]
            else:
                kids = self._nodes(list(node["children"]))
                children = [
                    {
                        "node_id": c,
                        "level": kids[c]["level"] if c in kids else None,
                        "type": kids[c]["kind"] if c in kids else None,
                        "message_count": kids[c]["message_count"] if c in kids else None,
                    }
                    for c in node["children"]
                ]
            return {
                "kind": "node",
                "node_id": node["node_id"],
                "type": node["kind"],
                "level": node["level"],
                "message_count": node["message_count"],
                "first_message": node.get("first_key"),
                "last_message": node.get("last_key"),
                "focus_topic": node.get("focus_topic"),
                "summary": node["summary"],
                "children": children,
                "committed": committed,
            }
        key, followed = self._follow(id)
        history = self.conn.message_history(key)
        if not history:
            return {
                "error": f"lcm_describe: no summary node or message with id {id!r}; "
                "use an lcm_... id from the summary or a message_uid from lcm_grep",
                "tool": "lcm_describe",
            }
        return {
            "kind": "message",
            "message_uid": key,
            "followed_from": followed,
            "versions": [
                {
                    "version": i + 1,
                    "is_current": i == len(history) - 1,
                    "role": h["role"],
                    "session_id": h["session_id"],
                    "snippet": _snippet(h["text"]),
                }
                for i, h in enumerate(history)
            ],
            "node_ids": self.conn.leaves_covering(key),
        }

    def lcm_expand(self, node_id: str, offset: int, limit: int) -> dict[str, Any]:
        """The verbatim messages under a node, paged; or a message's current version (U5, U7)."""
        node, committed = self._node(node_id)
        if node is None:
            key, followed = self._follow(node_id)
            history = self.conn.message_history(key)
            if not history:
                return {
                    "error": f"lcm_expand: no summary node or message with id {node_id!r}; "
                    "use an lcm_... id from the summary or a message_uid from lcm_grep",
                    "tool": "lcm_expand",
                }
            return {
                "node_id": node_id,
                "kind": "message",
                "followed_from": followed,
                "versions": len(history),
                "total": 1,
                "offset": 0,
                "messages": [history[-1]["message"]],
                "next_offset": None,
                "committed": True,
            }
        refs = self._leaf_refs(node)
        page = refs[offset : offset + limit]
        messages = self._resolve_versions(page)
        end = offset + len(page)
        return {
            "node_id": node["node_id"],
            "kind": "node",
            "type": node["kind"],
            "total": len(refs),
            "offset": offset,
            "messages": messages,
            "next_offset": end if end < len(refs) else None,
            "committed": committed,
        }


def _plain(message: Mapping[str, Any]) -> str:
    from .messages import searchable_text

    return searchable_text(message)
