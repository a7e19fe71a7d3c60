"""Deterministic conversation histories for benchmarks and tests.

``history(n, seed=0, kind="mixed")`` returns exactly ``n`` OpenAI-format messages: a
system prompt, then turns of ``user`` ask -> ``assistant`` with one to three
``tool_calls`` (parallel calls included) -> their ``tool`` results -> ``assistant``
answer. The list is a valid sequence (contract V1-V4): every call has its result right
after it and nothing is orphaned, also at the cut to ``n`` rows.

Kinds:
- ``tool_heavy``: many short tool calls per turn, short-to-medium results.
- ``long_tool_outputs``: results of 1 500 to 8 000 characters (file reads, logs).
- ``cjk``: Chinese and Japanese prose in every user/assistant row and most results.
- ``mixed``: all three, the default for benchmarks.

Only a ``random.Random(seed)`` instance is used: the same (n, seed, kind) gives the same
bytes in every process. Pure Python, standard library only, so the Hermes-side benchmark
subprocess can import this file without the kit installed.
"""

from __future__ import annotations

import json
import random
from typing import Any

KINDS = ("tool_heavy", "long_tool_outputs", "cjk", "mixed")

_WORDS = (
    "the service config cache request handler retries timeout database index query "
    "schema migration worker queue token budget parser module function class method "
    "error warning trace stack build test suite fixture deploy branch commit review "
    "latency memory buffer stream socket client server header payload response status "
    "user session context summary compaction window provider model prompt result value"
).split()
_CJK = (
    "数据库 配置 缓存 请求 处理 超时 索引 查询 迁移 队列 模型 上下文 摘要 压缩 窗口 "
    "テスト 設定 ファイル 関数 エラー 警告 構築 展開 セッション 応答 トークン 予算"
).split()
_TOOLS = ("read_file", "terminal", "search_files", "write_file", "web_search", "lookup_docs")
_DIRS = ("src", "tests", "docs", "lib", "config", "scripts")
_EXTS = ("py", "md", "json", "yaml", "ts", "txt")

SYSTEM_PROMPT = (
    "You are a careful coding agent. Use tools to read and change files, run tests, and "
    "report what you did. Keep answers short and cite file paths."
)


def _words(rng: random.Random, k: int, cjk: bool) -> str:
    if cjk:
        return "".join(rng.choices(_CJK, k=k)) + "。"
    return " ".join(rng.choices(_WORDS, k=k)) + "."


def _path(rng: random.Random) -> str:
    return f"{rng.choice(_DIRS)}/{rng.choice(_WORDS)}_{rng.randrange(100)}.{rng.choice(_EXTS)}"


def _text(rng: random.Random, sentences: int, cjk_share: float) -> str:
    parts = []
    for _ in range(sentences):
        cjk = rng.random() < cjk_share
        parts.append(_words(rng, rng.randint(6, 18), cjk))
    return " ".join(parts)


def _tool_output(rng: random.Random, kind: str, cjk_share: float) -> str:
    if kind == "long_tool_outputs" or (kind == "mixed" and rng.random() < 0.3):
        size = rng.randint(1_500, 8_000)
    elif kind == "tool_heavy":
        size = rng.randint(80, 900)
    else:
        size = rng.randint(150, 2_500)
    lines = []
    total = 0
    while total < size:
        if rng.random() < cjk_share:
            line = _words(rng, rng.randint(4, 12), True)
        else:
            line = f"{_path(rng)}:{rng.randrange(1, 900)}: " + _words(
                rng, rng.randint(5, 14), False
            )
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size]


def _turn(rng: random.Random, t: int, kind: str, id_prefix: str) -> list[dict[str, Any]]:
    cjk_share = {"cjk": 0.8, "mixed": 0.15}.get(kind, 0.0)
    rows: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": f"Task {t}: "
            + _text(rng, rng.randint(1, 4), cjk_share)
            + f" See {_path(rng)}.",
        }
    ]
    rounds = rng.randint(2, 4) if kind == "tool_heavy" else rng.randint(1, 2)
    for r in range(rounds):
        calls = []
        for c in range(rng.choice((1, 1, 2, 3))):
            name = rng.choice(_TOOLS)
            args = {"path": _path(rng), "query": _words(rng, rng.randint(2, 6), False)}
            calls.append(
                {
                    "id": f"{id_prefix}_{t}_{r}_{c}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                }
            )
        content = _text(rng, 1, cjk_share) if rng.random() < 0.5 else None
        rows.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call in calls:
            rows.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["function"]["name"],
                    "content": _tool_output(rng, kind, cjk_share),
                }
            )
    rows.append({"role": "assistant", "content": _text(rng, rng.randint(1, 5), cjk_share)})
    return rows


def history(
    n: int, seed: int = 0, kind: str = "mixed", id_prefix: str = "call"
) -> list[dict[str, Any]]:
    """Exactly ``n`` messages (n >= 1) of the given ``kind``; see the module doc.

    Tool call ids read ``{id_prefix}_{turn}_{round}_{call}``; pass another prefix to
    append two histories without id clashes.

    Raises:
        ValueError: ``n`` < 1 or ``kind`` not in :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int >= 1, got {n!r}")
    rng = random.Random(f"{kind}:{seed}")
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    t = 0
    while len(out) < n:
        turn = _turn(rng, t, kind, id_prefix)
        t += 1
        room = n - len(out)
        if len(turn) <= room:
            out.extend(turn)
            continue
        # Fill the remaining rows with plain user/assistant rows: never a partial tool group.
        role = "user" if out[-1]["role"] != "user" else "assistant"
        while len(out) < n:
            out.append({"role": role, "content": _text(rng, 2, 0.0)})
            role = "assistant" if role == "user" else "user"
    return out[:n]


if __name__ == "__main__":  # pragma: no cover - a quick look at the shapes
    import sys

    size = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for k in KINDS:
        h = history(size, 0, k)
        chars = sum(len(m.get("content") or "") for m in h)
        print(k, len(h), chars)
