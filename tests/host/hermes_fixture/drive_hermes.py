"""Drive a real Hermes ``AIAgent`` (0.19.0 or 0.22.2) through scripted conversations.

Run with the Python of a venv holding Hermes (not the kit's venv):

    HERMES_HOME=... python drive_hermes.py PLAN_JSON OUT_JSON

PLAN_JSON: ``{"base_url": ".../v1", "admin_url": "...", "conversations": [conv, ...]}``,
each conv ``{"name", "env": {...}, "faults": [...], "replies": {...} | null,
"config": {...}, "ops": [op, ...]}`` with ops ``{"op": "turn", "text"}``,
``{"op": "new"}`` and ``{"op": "compress", "focus"}``. One agent per conversation, all in
this one process (an import and an agent init cost seconds). Before each conversation the
simulator is reset over its admin routes and the conversation's faults and replies are
set; its ``env`` (the recording engine's switches) is exported.

``/new`` is driven through ``AIAgent.reset_session_state(previous_messages=,
old_session_id=)``, the session transition the gateway uses; ``/compress <focus>`` through
the manual-compression core the surfaces share (0.22: ``compress_now``; 0.19:
``_compress_context(..., focus_topic=, force=True)`` as its CLI does).

Network: every socket connection to a non-loopback address is refused before it is
made. Writes OUT_JSON: per conversation the final roles and the exit reasons.
"""

import ipaddress
import json
import logging
import os
import socket
import sys
import urllib.request


def _guard_network():
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def loopback(host):
        if host in ("localhost",):
            return True
        try:
            return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
        except ValueError:
            return False

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if (
            isinstance(host, str)
            and self.family in (socket.AF_INET, socket.AF_INET6)
            and not loopback(host)
        ):
            raise OSError(f"kit network guard: refused non-loopback connection to {host}")
        return real_connect(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host is not None and not loopback(host):
            raise socket.gaierror(f"kit network guard: refused lookup of {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect
    socket.getaddrinfo = getaddrinfo


def _admin(url, path, payload=None):
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(
        url + path, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"{}")


def _lower_compaction_floor():
    """0.22 raises the compaction idle timeout to at least 300 s (the auxiliary compression
    timeout floor). A timeout run must not wait 300 s, so the floor is set to 0 here; the
    kit's profile keeps 300 s (its default is tested without a real host)."""
    try:
        import agent.auxiliary_client as aux
    except ImportError:
        return
    if hasattr(aux, "_COMPRESSION_TIMEOUT_FLOOR_SECONDS"):
        aux._COMPRESSION_TIMEOUT_FLOOR_SECONDS = 0.0


def _journal(url):
    with urllib.request.urlopen(url + "/_sim/journal?full=1", timeout=30) as resp:
        entries = json.loads(resp.read())["entries"]
    return [
        {
            "status": e["status"],
            "fault": e["fault"],
            "stream": e["stream"],
            "request": e.get("request"),
        }
        for e in entries
    ]


def _manual_compress(agent, history, focus):
    try:
        from agent.conversation_compression_manual import CompressRequest, compress_now
    except ImportError:
        out, _ = agent._compress_context(
            history, None, approx_tokens=None, focus_topic=focus or None, force=True
        )
        return out
    from agent.conversation_compression import finalize_context_engine_compression_notification

    result = compress_now(agent, history, CompressRequest(focus_topic=focus or None))
    finalize_context_engine_compression_notification(agent, committed=True)
    return result.after_messages


def main():
    plan_path, out_path = sys.argv[1:3]
    _guard_network()
    logging.basicConfig(level=logging.WARNING)
    plan = json.load(open(plan_path))
    from hermes_state import SessionDB
    from run_agent import AIAgent

    _lower_compaction_floor()
    out = {}
    for n, conv in enumerate(plan["conversations"]):
        _admin(plan["admin_url"], "/_sim/reset", {})
        if conv.get("faults"):
            _admin(plan["admin_url"], "/_sim/faults", {"faults": conv["faults"]})
        if conv.get("replies"):
            _admin(plan["admin_url"], "/_sim/replies", conv["replies"])
        for key in (
            "KIT_RECORD_PATH",
            "KIT_COMPRESS_AT",
            "KIT_COMPRESS_SLEEP",
            "KIT_SELECT",
            "KIT_CLONE_RAISES",
            "KIT_TOOLS",
        ):
            os.environ.pop(key, None)
        os.environ.update(conv.get("env") or {})
        agent = AIAgent(
            base_url=plan["base_url"],
            api_key="sk-kit-test",
            model="test-model",
            quiet_mode=True,
            skip_context_files=True,
            skip_memory=True,
            enabled_toolsets=[],
            session_id=f"s{n + 1}",
            max_iterations=4,
            tool_delay=0.0,
            session_db=SessionDB(),
        )
        history, exits, roles = None, [], []
        for op in conv["ops"]:
            if op["op"] == "turn":
                result = agent.run_conversation(op["text"], conversation_history=history)
                history = result.get("messages")
                exits.append(bool(result.get("failed")) or bool(result.get("error")))
            elif op["op"] == "new":
                old = agent.session_id
                agent.session_id = old + "-new"
                agent.reset_session_state(previous_messages=list(history or []), old_session_id=old)
                history = []
            elif op["op"] == "compress":
                history = _manual_compress(agent, list(history or []), op.get("focus"))
        roles = [m.get("role") for m in history or []]
        out[conv["name"]] = {
            "roles": roles,
            "failed": exits,
            "journal": _journal(plan["admin_url"]),
        }
    with open(out_path, "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
    # The real host's background workers (title generation, compaction pools, SQLite
    # writers) are not under test; their interpreter teardown once ended this process
    # with a non-zero status after OUT_JSON was complete.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
