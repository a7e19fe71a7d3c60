"""Drive a real hermes-agent 0.19.0 ``AIAgent`` through a scripted conversation.

Run with the Python of a venv holding hermes-agent 0.19.0 (not the kit's venv):

    HERMES_HOME=... KIT_RECORD_PATH=... python drive_hermes.py BASE_URL TURNS_JSON OUT_JSON

Network: every socket connection to a non-loopback address is refused before it is
made (the kit's runs never leave 127.0.0.0/8 or ::1). Writes OUT_JSON with the
final messages' roles and the number of turns run.
"""

import ipaddress
import json
import logging
import socket
import sys


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


def main():
    base_url, turns_path, out_path = sys.argv[1:4]
    _guard_network()
    logging.basicConfig(level=logging.WARNING)
    from hermes_state import SessionDB
    from run_agent import AIAgent

    turns = json.load(open(turns_path))
    agent = AIAgent(
        base_url=base_url,
        api_key="sk-kit-test",
        model="test-model",
        quiet_mode=True,
        skip_context_files=True,
        skip_memory=True,
        enabled_toolsets=[],
        session_id="s1",
        max_iterations=4,
        tool_delay=0.0,
        session_db=SessionDB(),
    )
    history = None
    for text in turns:
        result = agent.run_conversation(text, conversation_history=history)
        history = result.get("messages")
    json.dump(
        {"roles": [m.get("role") for m in history or []], "turns": len(turns)}, open(out_path, "w")
    )


if __name__ == "__main__":
    main()
