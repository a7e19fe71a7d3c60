"""The recording engine of kitrecorder (see the package docstring)."""

import copy
import json
import os
import threading
import time

from agent.context_engine import ContextEngine

TOOL = {
    "name": "kit_lookup",
    "description": "Look up a note the context engine keeps.",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
}


def _roles(messages):
    return [m.get("role") if isinstance(m, dict) else type(m).__name__ for m in messages or []]


def _rows(messages):
    """Per row: role, sorted key set (``message_uid`` shown as its presence)."""
    out = []
    for m in messages or []:
        if isinstance(m, dict):
            out.append([m.get("role"), sorted(m)])
        else:
            out.append([type(m).__name__, []])
    return out


def _thread():
    return "main" if threading.current_thread() is threading.main_thread() else "worker"


class KitRecorder(ContextEngine):
    """Records calls; compacts to [user summary, assistant ack, last message] when told to
    (no ack when the last message is the assistant's, so roles alternate)."""

    threshold_percent = 0.75

    def __init__(self):
        self.should_calls = 0

    @staticmethod
    def _env(name, default=""):
        return os.environ.get(name, default)

    def _record(self, method, kwargs, shape):
        path = self._env("KIT_RECORD_PATH")
        if not path:
            return
        rec = {"method": method, "kwargs": sorted(kwargs), "shape": shape, "thread": _thread()}
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, sort_keys=True) + "\n")

    @property
    def name(self):
        return "kitrecorder"

    def clone_for_agent(self):
        self._record("clone_for_agent", {}, {})
        if self._env("KIT_CLONE_RAISES"):
            raise RuntimeError("kitrecorder holds an open socket")
        return copy.deepcopy(self)

    def update_from_response(self, usage):
        self._record("update_from_response", {}, {"usage_keys": sorted((usage or {}).keys())})
        usage = usage or {}
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        self._record("should_compress", {}, {"arg_type": type(prompt_tokens).__name__})
        self.should_calls += 1
        at = {int(x) for x in self._env("KIT_COMPRESS_AT").split(",") if x.strip()}
        return self.should_calls in at

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        shown = {k: v for k, v in kwargs.items() if k in ("force", "bypass_cooldown")}
        self._record(
            "compress",
            dict(kwargs, current_tokens=current_tokens, focus_topic=focus_topic),
            {"rows": _rows(messages), "focus_topic": focus_topic, **shown},
        )
        sleep = float(self._env("KIT_COMPRESS_SLEEP", "0") or 0)
        if sleep:
            time.sleep(sleep)
        self.compression_count += 1
        last = dict(messages[-1]) if messages else {"role": "user", "content": "continue"}
        head = [{"role": "user", "content": "Summary of the earlier conversation."}]
        if last.get("role") != "assistant":  # roles alternate: no merge by the host
            head.append({"role": "assistant", "content": "Understood."})
        return head + [last]

    def update_model(
        self, model, context_length, base_url="", api_key="", provider="", api_mode=""
    ):
        self._record(
            "update_model",
            dict(
                model=model,
                context_length=context_length,
                base_url=base_url,
                api_key=api_key,
                provider=provider,
                api_mode=api_mode,
            ),
            {},
        )
        self.context_length = int(context_length)
        self.threshold_tokens = int(self.context_length * self.threshold_percent)

    def on_session_start(self, session_id, **kwargs):
        self._record("on_session_start", kwargs, {"boundary_reason": kwargs.get("boundary_reason")})

    def on_session_end(self, session_id, messages):
        self._record("on_session_end", {}, {"rows": _rows(messages)})

    def on_session_reset(self):
        self._record("on_session_reset", {}, {})
        super().on_session_reset()

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=None,
    ):
        self._record(
            "select_context",
            {
                "conversation_messages": 1,
                "incoming_message": 1,
                "budget_tokens": 1,
            },
            {
                "request": _rows(request_messages),
                "conversation": _rows(conversation_messages),
                "incoming": _rows([incoming_message] if incoming_message else []),
                "budget_type": type(budget_tokens).__name__,
            },
        )
        if self._env("KIT_SELECT") == "tail" and len(request_messages) > 3:
            picked = [request_messages[0]] + list(request_messages[-2:])
            return [dict(m, message_uid="sel") for m in picked]
        return None

    def on_turn_complete(self, messages, *args, **kwargs):
        shape = {
            "rows": _rows(messages),
            "usage": "positional" if args else ("keyword" if "usage" in kwargs else "absent"),
            "turn_exit_reason": kwargs.get("turn_exit_reason"),
            "interrupted": kwargs.get("interrupted"),
            "failed": kwargs.get("failed"),
        }
        self._record("on_turn_complete", kwargs, shape)

    def get_tool_schemas(self):
        return [dict(TOOL)] if self._env("KIT_TOOLS") else []

    def handle_tool_call(self, name, args, **kwargs):
        self._record("handle_tool_call", kwargs, {"name": name, "args": sorted(args or {})})
        return json.dumps({"note": "kept"})

    def prune_tool_results_only(self, messages, current_tokens=None):
        self._record("prune_tool_results_only", {"current_tokens": 1}, {"rows": _rows(messages)})
        return messages, 0

    def should_compress_info(self, prompt_tokens):
        self._record("should_compress_info", {}, {})
        return False, None

    def should_defer_preflight_to_real_usage(self, rough_tokens):
        self._record("should_defer_preflight_to_real_usage", {}, {})
        return False

    def has_content_to_compress(self, messages):
        self._record("has_content_to_compress", {}, {"rows": _rows(messages)})
        return True
