"""The fixed, seeded corpus of histories the snapshot tier runs compress() and select_context() on.

Every case is built from ``random.Random("<case id>:<CORPUS_SEED>")`` only, so it is the
same list of OpenAI-format messages in every process and on every machine. Messages
carry what the host would give them: ``message_uid`` (32 hex, U1), ``_tool_call_uids`` on
assistant tool-call rows and ``_tool_call_uid`` on results (U8), except where a case
is about missing or duplicated uids. :data:`CASES` lists the cases (>= 12):

``short-chat``, ``long-chat``, ``tool-heavy``, ``tool-output-40kb``, ``parallel-calls``,
``cjk-emoji``, ``multipart-image``, ``focus-topic``, ``recompress``,
``missing-and-duplicate-uids``, ``no-system-prompt``, ``repeated-call-ids``,
``absorbed-uids``, ``reasoning-fields``.

Changing a case changes every user's snapshots: treat the corpus as versioned
(:data:`CORPUS_VERSION`) and only add cases.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

CORPUS_VERSION = 1
CORPUS_SEED = 20261130
SYSTEM_PROMPT = (
    "You are a helpful assistant working in a software repository. Be precise and cite files."
)

_TOPICS = {
    "database": (
        "postgres schema migration index query transaction replica vacuum table column "
        "constraint planner"
    ).split(),
    "frontend": (
        "react component button layout render props state hook router bundle accessibility contrast"
    ).split(),
    "deploy": (
        "kubernetes cluster helm container pipeline rollout canary ingress secret namespace "
        "autoscaler"
    ).split(),
}
_FILES = [
    "src/app.py",
    "src/db/models.py",
    "src/api/routes.py",
    "web/src/App.tsx",
    "deploy/helm/values.yaml",
    "tests/test_models.py",
    "db/migrations/0042_index.sql",
    "README.md",
]
_CJK = [
    "数据库迁移需要先备份。",
    "索引重建完成了吗？",
    "このクエリは遅いです。",
    "キャッシュを無効にしてください。",
    "배포 파이프라인이 실패했습니다.",
    "테스트를 다시 실행하세요.",
]
_EMOJI = ["🚀", "✅", "🔥", "🐛", "📦", "👍🏽", "🧪", "⚠️", "🇯🇵", "👩‍💻"]


@dataclass(frozen=True)
class Case:
    """One corpus case.

    Attributes:
        id: case id (snapshot file name).
        description: what the case exercises.
        messages: the history (system prompt first unless the case has none).
        context_length: the window (tokens) given to ``update_model`` before compress().
        focus_topic: passed to compress() (A5), or None.
        recompress_with: extra messages appended to the first output before a second
            compress() (B6), or None.
    """

    id: str
    description: str
    messages: list[dict[str, Any]]
    context_length: int = 8000
    focus_topic: str | None = None
    recompress_with: list[dict[str, Any]] | None = None


class _Builder:
    """Seeded message factory for one case."""

    def __init__(self, case_id: str) -> None:
        self.rng = random.Random(f"{case_id}:{CORPUS_SEED}")
        self.calls = 0

    def uid(self) -> str:
        return f"{self.rng.getrandbits(128):032x}"

    def sentence(self, topic: str, words: int = 14) -> str:
        vocab = _TOPICS[topic]
        body = " ".join(self.rng.choice(vocab) for _ in range(words))
        return body[0].upper() + body[1:] + "."

    def paragraph(self, topic: str, sentences: int = 4) -> str:
        return " ".join(self.sentence(topic) for _ in range(sentences))

    def msg(self, role: str, content: Any, **extra: Any) -> dict[str, Any]:
        m = {"role": role, "content": content, "message_uid": self.uid()}
        m.update(extra)
        return m

    def system(self) -> dict[str, Any]:
        return self.msg("system", SYSTEM_PROMPT)

    def turn(self, topic: str, sentences: int = 4) -> list[dict[str, Any]]:
        return [
            self.msg("user", f"About the {topic}: " + self.paragraph(topic, sentences)),
            self.msg("assistant", "Noted. " + self.paragraph(topic, max(1, sentences // 2))),
        ]

    def call_id(self) -> str:
        self.calls += 1
        return "call_" + f"{self.rng.getrandbits(96):024x}"

    def tool_round(
        self,
        names_args: list[tuple],
        outputs: list[str],
        *,
        ids: list[str] | None = None,
        content: str | None = None,
    ) -> list[dict[str, Any]]:
        ids = ids or [self.call_id() for _ in names_args]
        uids = {}
        calls = []
        for cid, (name, args) in zip(ids, names_args, strict=False):
            uids.setdefault(cid, self.uid())
            calls.append(
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, sort_keys=True)},
                }
            )
        out = [self.msg("assistant", content, tool_calls=calls, _tool_call_uids=dict(uids))]
        for cid, text in zip(ids, outputs, strict=False):
            out.append(self.msg("tool", text, tool_call_id=cid, _tool_call_uid=uids[cid]))
        return out

    def file_text(self, n_bytes: int) -> str:
        lines = []
        size = 0
        n = 0
        while size < n_bytes:
            n += 1
            line = f"{n:5d}  " + " ".join(
                self.rng.choice(_TOPICS["database"] + _TOPICS["deploy"]) for _ in range(10)
            )
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)[:n_bytes]


def _short_chat(b: _Builder) -> Case:
    return Case(
        "short-chat",
        "Four messages under the threshold: nothing to "
        "compact (A4: a valid list, likely unchanged).",
        [b.system()] + b.turn("database", 2) + [b.msg("user", "Thanks, that is all for now.")],
    )


def _long_chat(b: _Builder) -> Case:
    msgs = [b.system()]
    for i in range(36):
        msgs += b.turn(("database", "frontend", "deploy")[i // 12], 4)
    msgs.append(b.msg("user", "Summarise where we are and what is left."))
    return Case(
        "long-chat", "36 plain text turns over three topics, well over the threshold.", msgs
    )


def _tool_heavy(b: _Builder) -> Case:
    msgs = [b.system()] + b.turn("database", 3)
    for i in range(14):
        path = _FILES[i % len(_FILES)]
        msgs.append(b.msg("user", f"Check {path} for problems ({i + 1})."))
        msgs += b.tool_round([("read_file", {"path": path})], [b.file_text(900)])
        msgs += b.tool_round([("grep", {"pattern": "index", "path": path})], [b.file_text(300)])
        msgs.append(b.msg("assistant", f"{path}: " + b.sentence("database")))
    msgs.append(b.msg("user", "Fix the planner problem you found."))
    return Case(
        "tool-heavy",
        "14 turns of sequential tool rounds with 300-900 byte outputs (B2 pruning).",
        msgs,
    )


def _tool_output_40kb(b: _Builder) -> Case:
    msgs = [b.system()] + b.turn("deploy", 3)
    msgs.append(b.msg("user", "Dump the full deployment logs."))
    msgs += b.tool_round([("read_logs", {"service": "api"})], [b.file_text(40_000)])
    msgs.append(b.msg("assistant", "The api logs show a crash loop. " + b.sentence("deploy")))
    msgs.append(b.msg("user", "And the worker logs."))
    msgs += b.tool_round([("read_logs", {"service": "worker"})], [b.file_text(40_000)])
    msgs.append(b.msg("assistant", "The worker is healthy. " + b.sentence("deploy")))
    msgs += b.turn("deploy", 3)
    msgs.append(b.msg("user", "Which fix do you propose?"))
    return Case(
        "tool-output-40kb",
        "Two 40 KB tool outputs in the middle of the history.",
        msgs,
        context_length=32_000,
    )


def _parallel_calls(b: _Builder) -> Case:
    msgs = [b.system()]
    for i in range(8):
        msgs.append(b.msg("user", f"Read three files at once ({i + 1}). " + b.sentence("frontend")))
        files = [_FILES[(i + k) % len(_FILES)] for k in range(3)]
        msgs += b.tool_round(
            [("read_file", {"path": f}) for f in files],
            [b.file_text(600) for _ in files],
            content="Reading three files in parallel.",
        )
        msgs.append(b.msg("assistant", "Read them. " + b.paragraph("frontend", 2)))
    msgs.append(b.msg("user", "Now compare them."))
    return Case(
        "parallel-calls",
        "Assistant rows with three parallel tool calls each (V2 pairing, U8).",
        msgs,
    )


def _cjk_emoji(b: _Builder) -> Case:
    msgs = [b.system()]
    for _ in range(24):
        text = (
            " ".join(b.rng.choice(_CJK) for _ in range(6))
            + " "
            + "".join(b.rng.choice(_EMOJI) for _ in range(4))
        )
        msgs.append(b.msg("user", text))
        msgs.append(
            b.msg(
                "assistant", "了解しました。" + b.rng.choice(_EMOJI) + " " + b.rng.choice(_CJK) * 3
            )
        )
    msgs.append(b.msg("user", "最後に要約してください 🙏"))
    return Case(
        "cjk-emoji",
        "Chinese, Japanese and Korean text with emoji (ZWJ sequences, flags, skin tones).",
        msgs,
        context_length=4000,
    )


def _multipart_image(b: _Builder) -> Case:
    msgs = [b.system()]
    for i in range(16):
        msgs.append(
            b.msg(
                "user",
                [
                    {"type": "text", "text": f"Screenshot {i + 1}: " + b.sentence("frontend")},
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": f"https://example.invalid/screens/{i + 1}.png",
                            "detail": "low",
                        },
                    },
                    {"type": "text", "text": b.sentence("frontend")},
                ],
            )
        )
        msgs.append(
            b.msg(
                "assistant", [{"type": "text", "text": "The layout: " + b.paragraph("frontend", 3)}]
            )
        )
    msgs.append(b.msg("user", [{"type": "text", "text": "Which screen has the contrast bug?"}]))
    return Case(
        "multipart-image",
        "User rows with text and image_url parts; assistant rows with text parts (V3).",
        msgs,
        context_length=6000,
    )


def _focus_topic(b: _Builder) -> Case:
    msgs = [b.system()]
    for i in range(30):
        msgs += b.turn(("database", "frontend", "deploy")[i % 3], 4)
    msgs.append(b.msg("user", "Let us get back to the database work."))
    return Case(
        "focus-topic",
        "Interleaved topics compressed with focus_topic='database' (A5).",
        msgs,
        focus_topic="database",
    )


def _recompress(b: _Builder) -> Case:
    msgs = [b.system()]
    for i in range(28):
        msgs += b.turn(("database", "deploy")[i // 14], 4)
    msgs.append(b.msg("user", "Continue with the rollout."))
    extra = []
    for _ in range(14):
        extra += b.turn("deploy", 4)
    extra.append(b.msg("user", "And now the canary."))
    return Case(
        "recompress",
        "Compressed once, 14 more turns, compressed again: the second pass builds on the first "
        "summary (B6).",
        msgs,
        recompress_with=extra,
    )


def _missing_and_duplicate_uids(b: _Builder) -> Case:
    msgs = [b.system()]
    for _ in range(26):
        msgs += b.turn("database", 4)
    for i in (3, 8, 15):
        del msgs[i]["message_uid"]  # rows written before the column existed (U2)
    msgs[20]["message_uid"] = msgs[10]["message_uid"]  # two live rows share a uid (U7)
    msgs[31]["message_uid"] = msgs[30]["message_uid"]
    msgs.append(b.msg("user", "What did we decide about the index?"))
    return Case(
        "missing-and-duplicate-uids",
        "Rows without message_uid (U2) and rows sharing one (U7).",
        msgs,
    )


def _no_system_prompt(b: _Builder) -> Case:
    msgs = []
    for _ in range(30):
        msgs += b.turn("frontend", 4)
    msgs.append(b.msg("user", "Ship it?"))
    return Case("no-system-prompt", "A history with no system message (V4 does not apply).", msgs)


def _repeated_call_ids(b: _Builder) -> Case:
    msgs = [b.system()]
    for i in range(12):
        msgs.append(b.msg("user", f"Run the tests again ({i + 1})."))
        msgs += b.tool_round([("run_tests", {"suite": "unit"})], [b.file_text(500)], ids=["call_0"])
        msgs.append(b.msg("assistant", "Tests ran. " + b.sentence("database")))
    msgs.append(b.msg("user", "Any flaky test?"))
    return Case(
        "repeated-call-ids",
        "Every turn reuses the provider id 'call_0' (V2 pairs per occurrence, U8).",
        msgs,
        context_length=6000,
    )


def _absorbed_uids(b: _Builder) -> Case:
    msgs = [b.system()]
    for _ in range(26):
        msgs += b.turn("deploy", 4)
    for i in range(2, 40, 6):
        msgs[i]["_absorbed_message_uids"] = [b.uid(), b.uid()]  # merged rows (U5)
    msgs.append(b.msg("user", "Where are we with the helm chart?"))
    return Case("absorbed-uids", "Rows that absorbed others (_absorbed_message_uids, U5).", msgs)


def _reasoning_fields(b: _Builder) -> Case:
    msgs = [b.system()]
    for _ in range(24):
        msgs.append(b.msg("user", b.paragraph("database", 4)))
        msgs.append(
            b.msg(
                "assistant",
                b.paragraph("database", 2),
                reasoning="Think: " + b.sentence("database"),
                finish_reason="stop",
            )
        )
    msgs.append(b.msg("user", "Next step?"))
    return Case(
        "reasoning-fields",
        "Assistant rows with extra fields (reasoning, finish_reason) an engine must keep or "
        "drop consistently.",
        msgs,
    )


_BUILDERS: dict[str, Callable[[_Builder], Case]] = {
    "short-chat": _short_chat,
    "long-chat": _long_chat,
    "tool-heavy": _tool_heavy,
    "tool-output-40kb": _tool_output_40kb,
    "parallel-calls": _parallel_calls,
    "cjk-emoji": _cjk_emoji,
    "multipart-image": _multipart_image,
    "focus-topic": _focus_topic,
    "recompress": _recompress,
    "missing-and-duplicate-uids": _missing_and_duplicate_uids,
    "no-system-prompt": _no_system_prompt,
    "repeated-call-ids": _repeated_call_ids,
    "absorbed-uids": _absorbed_uids,
    "reasoning-fields": _reasoning_fields,
}
#: Case ids, in a fixed order.
CASES = tuple(_BUILDERS)


def get(case_id: str) -> Case:
    """Build case ``case_id`` (a fresh, deterministic copy each call).

    Raises:
        KeyError: unknown id (the message lists the known ones).
    """
    try:
        builder = _BUILDERS[case_id]
    except KeyError:
        raise KeyError(f"no corpus case {case_id!r}; known: {', '.join(CASES)}") from None
    return builder(_Builder(case_id))


__all__ = ["Case", "CASES", "CORPUS_VERSION", "get"]
