"""Seeded content: text, tool outputs, uids, astral text, screenshots, pastes and provider fields,
each built from a seed and a size (never drawn character by character), memoised.

The shapes of real agent sessions below are the ones docs/strategies.md explains: each is an
optional feature the strategies draw as a labelled boolean (or an integer whose 0 means "off")
that Hypothesis shrinks to False, so a counterexample keeps only the shapes it needs. Bytes are
built from a drawn seed and a drawn size: a 400 KB data URL costs one
``random.Random(seed).randbytes`` call, memoised.
"""

from __future__ import annotations

import hashlib
import json
import random
from functools import cache, lru_cache
from typing import Any

LOCALES = ("en_US", "ja_JP", "zh_CN", "ar_AA", "ru_RU", "he_IL", "ko_KR")
EMOJI = ("🚀", "✅", "🔥", "🧪", "📦", "👩‍💻", "🇯🇵", "❤️")
LONG_OUTPUT_CHARS = (400, 2_000, 8_000, 40_000)
TOOL_NAMES = ("read_file", "search_code", "run_tests", "list_dir", "web_fetch")


@cache
def _faker(locale: str):
    from faker import Faker

    return Faker(locale)


@lru_cache(maxsize=4096)
def text_from_seed(seed: int, locale: str, sentences: int) -> str:
    """Deterministic text of about ``sentences`` sentences in ``locale`` (plus maybe emoji)."""
    fake = _faker(locale)
    fake.seed_instance(seed)
    text = fake.paragraph(nb_sentences=max(1, sentences))
    if seed % 3 == 0:
        text += " " + EMOJI[seed % len(EMOJI)]
    return text


@lru_cache(maxsize=256)
def blob_from_seed(seed: int, chars: int) -> str:
    """A JSON-ish tool output of about ``chars`` characters, built from ``seed``."""
    rng = random.Random(seed)
    rows = []
    size = 0
    i = 0
    while size < chars:
        row = json.dumps(
            {
                "path": f"src/mod_{rng.randrange(1000)}/file_{i}.py",
                "line": rng.randrange(1, 5000),
                "match": f"def handler_{rng.randrange(10**6)}(request): "
                f"return {rng.randrange(100)}",
            }
        )
        rows.append(row)
        size += len(row) + 1
        i += 1
    return "\n".join(rows)[:chars]


def uid_from_seed(seed: int, index: int) -> str:
    """A deterministic ``message_uid``-shaped value (32 lowercase hex)."""
    return hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:32]


#: Astral code points (outside the BMP: two UTF-16 code units, four UTF-8 bytes each): emoji
#: and CJK Unified Ideographs Extension B characters used in names and classical text.
ASTRAL = ("😀", "🚀", "🧪", "🦀", "𝔘", "𠀀", "𠮷", "𡈽", "𤭢", "𩸽", "𪚲", "🫠")
#: Sizes of a pasted screenshot, kilobytes of PNG bytes before base64 (phone screenshots and
#: desktop captures as agents' users paste them: 100 KB to 600 KB).
IMAGE_KB = (120, 260, 420, 600)
#: Sizes of a long paste in the live ask (a log, a file, a stack trace), characters.
PASTE_CHARS = (6_000, 14_000, 30_000)
#: Keys a provider adds to assistant rows that the next request must carry back.
REASONING_FIELDS = ("reasoning_content", "reasoning_details", "reasoning")


@lru_cache(maxsize=128)
def astral_text(seed: int, chars: int) -> str:
    """About ``chars`` code points of mixed ASCII words and astral characters, so that astral
    characters start at every UTF-16 and UTF-8 offset parity over the whole stretch (a cap in
    code units or bytes anywhere in it cuts one in half)."""
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < chars:
        if rng.random() < 0.45:
            run = "".join(rng.choice(ASTRAL) for _ in range(rng.randint(1, 3)))
        else:
            run = "".join(
                rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 6))
            )
            run += rng.choice(" ,. ")
        out.append(run)
        n += len(run)
    return "".join(out)[:chars]


@lru_cache(maxsize=8)
def image_data_url(seed: int, kilobytes: int) -> str:
    """A ``data:image/png;base64,...`` URL of ``kilobytes`` KB of bytes (a PNG signature, then
    seeded noise: incompressible, as a real screenshot's deflated pixels are)."""
    import base64

    raw = b"\x89PNG\r\n\x1a\n" + random.Random(seed).randbytes(kilobytes * 1024 - 8)
    return "data:image/png;base64," + base64.b64encode(raw).decode("ascii")


@lru_cache(maxsize=128)
def paste_text(seed: int, chars: int) -> str:
    """A pasted log of about ``chars`` characters (timestamped lines, a traceback at the end)."""
    rng = random.Random(seed)
    lines, size, i = [], 0, 0
    while size < chars:
        line = (
            f"2026-11-30T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z "
            f"{rng.choice(('INFO', 'WARN', 'DEBUG', 'ERROR'))} worker[{rng.randrange(16)}] "
            f"job={rng.randrange(10**6)} took {rng.randrange(5000)} ms: "
            f"{rng.choice(('retrying', 'flushed batch', 'cache miss', 'lease renewed'))}"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    lines.append('Traceback (most recent call last):\n  File "app/worker.py", line 88, in run')
    return "\n".join(lines)


def reasoning_fields(seed: int, kind: str) -> dict[str, Any]:
    """Provider fields of an assistant row: ``kind`` is ``deepseek`` (``reasoning_content``),
    ``openrouter`` (``reasoning`` and ``reasoning_details`` with a signature) or ``named`` (the
    OpenAI ``name`` of a participant)."""
    thought = text_from_seed(seed, "en_US", 2)
    if kind == "deepseek":
        return {"reasoning_content": thought}
    if kind == "openrouter":
        sig = hashlib.sha256(f"sig:{seed}".encode()).hexdigest()
        return {
            "reasoning": thought,
            "reasoning_details": [
                {
                    "type": "reasoning.text",
                    "text": thought,
                    "signature": sig,
                    "format": "anthropic-claude-v1",
                    "index": 0,
                }
            ],
        }
    return {"name": f"planner_{seed % 7}"}


PROVIDER_FIELD_KINDS = ("deepseek", "openrouter", "named")
