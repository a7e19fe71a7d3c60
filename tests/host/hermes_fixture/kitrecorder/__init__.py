"""Recording context engine: logs every contract call it receives as one JSON line.

Loaded by real hermes-agent 0.19.0 (as a general plugin under ``$HERMES_HOME/plugins``)
and by the kit's host in the ``hermes-0.19`` profile, so the two call sequences can be
compared. ``KIT_RECORD_PATH`` names the JSONL file; ``KIT_COMPRESS_AT`` lists the
1-based ``should_compress`` call numbers that answer True (comma separated).
Each record: method, sorted kwarg names, a shape summary of the arguments, and whether
the call came from the main thread. The file is appended on every call, so deep copies
of the engine record into the same file.
"""

import json
import os
import threading

from agent.context_engine import ContextEngine


def _roles(messages):
    return [m.get("role") for m in messages if isinstance(m, dict)]


def _shape(method, args, kwargs):
    if method == "compress":
        return {"roles": _roles(args[0]), "n": len(args[0])}
    if method == "on_session_end":
        return {"n": len(args[1]), "roles": _roles(args[1])}
    if method == "on_session_start":
        return {
            "boundary_reason": kwargs.get("boundary_reason"),
            "platform": kwargs.get("platform"),
        }
    if method == "update_from_response":
        return {"usage_keys": sorted((args[0] or {}).keys())}
    if method == "should_compress":
        value = args[0] if args else kwargs.get("prompt_tokens")
        return {"arg_type": type(value).__name__}
    if method in ("select_context", "on_turn_complete"):
        return {"n": len(args[0])}
    return {}


class KitRecorder(ContextEngine):
    """Records calls; compacts to [user summary, assistant ack, last message] when told to."""

    threshold_percent = 0.75

    def __init__(self):
        self.path = os.environ.get("KIT_RECORD_PATH", "")
        self.compress_at = {
            int(x) for x in os.environ.get("KIT_COMPRESS_AT", "").split(",") if x.strip()
        }
        self.should_calls = 0

    def _record(self, method, args, kwargs):
        rec = {
            "method": method,
            "kwargs": sorted(kwargs),
            "shape": _shape(method, args, kwargs),
            "main_thread": threading.current_thread() is threading.main_thread(),
        }
        if self.path:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")

    @property
    def name(self):
        return "kitrecorder"

    def update_from_response(self, usage):
        self._record("update_from_response", (usage,), {})
        usage = usage or {}
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        self._record("should_compress", (prompt_tokens,), {})
        self.should_calls += 1
        return self.should_calls in self.compress_at

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        kwargs = dict(kwargs, current_tokens=current_tokens, focus_topic=focus_topic)
        self._record("compress", (messages,), kwargs)
        self.compression_count += 1
        last = dict(messages[-1]) if messages else {"role": "user", "content": "continue"}
        return [
            {"role": "user", "content": "Summary of the earlier conversation."},
            {"role": "assistant", "content": "Understood."},
            last,
        ]

    def update_model(
        self, model, context_length, base_url="", api_key="", provider="", api_mode="", **kwargs
    ):
        self._record(
            "update_model",
            (),
            dict(
                kwargs,
                model=model,
                context_length=context_length,
                base_url=base_url,
                api_key=api_key,
                provider=provider,
                api_mode=api_mode,
            ),
        )
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.threshold_percent)

    def on_session_start(self, session_id, **kwargs):
        self._record("on_session_start", (session_id,), kwargs)

    def on_session_end(self, session_id, messages):
        self._record("on_session_end", (session_id, messages), {})

    def on_session_reset(self):
        self._record("on_session_reset", (), {})
        super().on_session_reset()

    def select_context(self, request_messages, **kwargs):
        self._record("select_context", (request_messages,), kwargs)
        return None

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self._record("on_turn_complete", (messages,), kwargs)


def register(ctx):
    ctx.register_context_engine(KitRecorder())
