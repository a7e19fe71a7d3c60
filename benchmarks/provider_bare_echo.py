"""Bare standard-library echo server: the floor for server CPU per request (benchmark helper).

Same transport as the simulator (``ThreadingHTTPServer``, HTTP/1.1, Nagle disabled), parses
the JSON body, answers a fixed ``chat.completion`` (usage included) or a fixed 8-event SSE
stream with the include_usage chunk. No tokenizing, no caching, no validation.

Run: ``python benchmarks/provider_bare_echo.py PORT`` (binds 127.0.0.1 only).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

USAGE = {
    "prompt_tokens": 3000,
    "completion_tokens": 8,
    "total_tokens": 3008,
    "prompt_tokens_details": {"cached_tokens": 0},
}
BODY = json.dumps(
    {
        "id": "chatcmpl-bare",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "fixed reply from bare echo"},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": USAGE,
    }
).encode()


def _chunk(delta, finish=None, usage=False):
    return {
        "id": "chatcmpl-bare",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **({"usage": None} if usage else {}),
    }


EVENTS = (
    [_chunk({"role": "assistant", "content": ""}, usage=True)]
    + [_chunk({"content": w}, usage=True) for w in ("fixed ", "reply ", "from ", "bare ", "echo")]
    + [_chunk({}, "stop", usage=True)]
)
STREAM = (
    b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in EVENTS)
    + b"data: "
    + json.dumps(
        {
            "id": "chatcmpl-bare",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "m",
            "choices": [],
            "usage": USAGE,
        }
    ).encode()
    + b"\n\ndata: [DONE]\n\n"
)


class Handler(BaseHTTPRequestHandler):
    """Fixed answers; streamed when the request says ``stream: true``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        """No access log."""

    def do_POST(self):  # noqa: N802
        """Parse the body, answer a fixed completion or stream."""
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if req.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in STREAM.split(b"\n\n")[:-1]:
                data = part + b"\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)


if __name__ == "__main__":
    srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    srv.daemon_threads = True
    print(f"listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()
