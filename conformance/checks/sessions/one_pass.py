"""Session invariants judged on one compaction: A8 (the live ask survives verbatim), A9 (never
more tokens), V2 (no row twice), V6 (valid Unicode), V7 (kept rows keep their fields and parts)."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import MUST, SHOULD, fail, short
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    REASONING_FIELDS,
    add_filler,
    argument_heavy_turn,
    deep_tool_loop,
    grow_history,
    live_ask_index,
    realistic_sessions,
    transcripts,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
)
from conformance.checks.sessions.rows import (
    compacted,
    compacting_engine,
    duplicated_rows,
    flat_text,
    kept_pairs,
    text_parts,
    where,
)
from simulator.provider.tokens import count_messages

# --- A8: the live ask -----------------------------------------------------------------------


@check(
    "A8",
    "live-ask-verbatim",
    level=MUST,
    title="compress() keeps the live ask (the last user message) verbatim in a user row",
    examples=6,
)
def check_a8_live_ask_verbatim(ctx):
    """A8 (MUST): on sessions that end on the user's ask (a long paste, a screenshot, astral
    text) or on the tool loop working on it, every text part of the ask is in one user row of
    the output; a history whose output holds no user row at all says so."""
    engine0, threshold = compacting_engine(ctx, "A8", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        out = compacted("A8", MUST, engine, history)
        if out is None:
            return
        ask = history[live_ask_index(history)]
        parts = [p for p in text_parts(ask["content"]) if p]
        users = [o for o in out if isinstance(o, dict) and o.get("role") == "user"]
        if not users:
            fail(
                "A8",
                MUST,
                "compress() output",
                expected="at least one user message (the live ask)",
                got=f"no user message at all (roles {[o.get('role') for o in out][:12]})",
                context=where(history, out),
            )
        if not any(all(p in flat_text(o) for p in parts) for o in users):
            text = " ".join(parts)
            fail(
                "A8",
                MUST,
                "the live ask (the last user message) in the compress() output",
                expected=f"its text verbatim in a user row ({len(text)} characters ending "
                f"{short(text[-40:], 60)})",
                got="no user row holding it (summarised away or rewritten)",
                context=where(history, out),
            )

    ctx.examples(body, first={"history": ask_behind_tool_loop_history(threshold + 500)})


#: Tool rounds after the live ask in A8's fixed first example: 48 rows, more than any tail an
#: engine keeps by count (Hermes' protect_last_n is 20).
ASK_LOOP_ROUNDS = 24


def ask_behind_tool_loop_history(min_tokens: int) -> list[dict[str, Any]]:
    """A8's fixed first example: an earlier conversation over ``min_tokens``, then the live ask
    and :data:`ASK_LOOP_ROUNDS` tool rounds working on it. An engine that keeps the last N rows
    and summarises the rest drops the ask once the loop outgrows N; a drawn session reaches
    that shape only at some profiles and seeds (the deep loop has 2-14 rounds there)."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Set up the project and tell me what it does."},
    ]
    add_filler(out, min_tokens, 808, tools=False)
    if out[-1].get("role") == "user":
        out.append({"role": "assistant", "content": "Understood."})
    out.append(
        {"role": "user", "content": "The tests fail on CI: find out why and fix them. ASK-0000a8a8"}
    )
    return out + deep_tool_loop(808, ASK_LOOP_ROUNDS, 1_200)


# --- A9: never more tokens ----------------------------------------------------------------------


def bulk_in_tail_history(min_tokens: int) -> list[dict[str, Any]]:
    """A9's fixed first example: a short chat whose bulk is one large tool result near the end
    (over ``min_tokens`` in all), so the middle an engine may summarise is a row or two. A
    summary and a compaction note written for it outweigh what they replace; an engine that
    commits that anyway returns more tokens than it got (found on the reference compressor by
    a random run)."""
    call = {"id": "call_bulk_0", "type": "function"}
    call["function"] = {"name": "read_file", "arguments": '{"path": "big.json"}'}
    lines: list[str] = []
    while True:
        history = _bulk_in_tail(call, lines)
        if count_messages(history) > min_tokens:
            return history
        for n in range(len(lines), len(lines) + 10):
            lines.append(
                f'{{"path": "src/mod_{(n * 37) % 1000}/file_{n}.py", "line": {(n * 613) % 5000}, '
                f'"match": "def handler_{(n * 7919) % 1000003}(request): return {n % 100}"}}'
            )


def _bulk_in_tail(call: dict[str, Any], lines: list[str]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find the handlers in the repository."},
        {"role": "assistant", "content": "I will search the source tree for them."},
        {"role": "user", "content": "Start with the index file, please."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_bulk_0", "content": "\n".join(lines)},
        {"role": "assistant", "content": "The index lists every handler."},
        {"role": "user", "content": "continue ASK-0000a9a9"},
    ]


_PART_TEXT = re.compile(r"""["']type["']\s*:\s*["'](text|image_url|input_audio|file)["']""")


def flattened(out: list[dict[str, Any]]) -> str:
    """A hint for an A9 failure whose output holds content parts written out as text (a list
    ``content`` turned into ``str(parts)`` or JSON): "" when no row does."""
    rows = [
        n
        for n, m in enumerate(out)
        if isinstance(m, dict)
        and isinstance(m.get("content"), str)
        and _PART_TEXT.search(m["content"])
    ]
    if not rows:
        return ""
    return (
        f"; row {rows[0]}'s content is a list of parts written out as text (a 'type': "
        "'image_url' or 'text' part inside a string): keep a list content a list of parts "
        "(V7), since a flattened image costs its whole base64 data URL as text tokens"
    )


@check(
    "A9",
    "no-more-tokens",
    level=MUST,
    title="a compaction never returns more tokens than it got",
    examples=6,
)
def check_a9_no_more_tokens(ctx):
    """A9 (MUST): compress() of a history over the threshold returns at most as many tokens
    (cl100k, identity fields aside); histories shorter than head + tail are drawn. An output
    that holds an input row twice is V2's finding, not also A9's."""
    engine0, threshold = compacting_engine(ctx, "A9", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        out = compacted("A9", MUST, engine, history)
        if out is None or duplicated_rows(history, out):
            return
        before, after = count_messages(history), count_messages(out)
        if after > before:
            fail(
                "A9",
                MUST,
                "tokens of the compress() output",
                expected=f"at most the {before} tokens it got",
                got=f"{after} tokens ({len(out)} rows for {len(history)}){flattened(out)}",
                context=where(history, out),
            )

    ctx.examples(body, first={"history": bulk_in_tail_history(threshold + 500)})


# --- V2: no row twice ---------------------------------------------------------------------------


@check(
    "V2",
    "no-row-twice",
    level=MUST,
    title="no input row and no tool chain comes out of compress() twice (head/tail overlap)",
    examples=6,
)
def check_v2_no_row_twice(ctx):
    """V2 (MUST): on histories shorter than head + tail (3 to 8 messages, the bulk in one or
    two rows), no input row appears in the output more often than in the input."""
    engine0, threshold = compacting_engine(ctx, "V2", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(
                min_tokens=threshold + 500, short=True, **compactable_shape(ctx, engine0)
            ),
            "history",
        )
        out = compacted("V2", MUST, engine, history)
        if out is None:
            return
        dup = duplicated_rows(history, out)
        if dup:
            i, n = dup[0]
            fail(
                "V2",
                MUST,
                f"input message {i} ({history[i].get('role')}) in the compress() output",
                expected="each input row at most as often as in the input (head and tail "
                "never overlap)",
                got=f"it comes out {n} times"
                + (f" (+{len(dup) - 1} more rows)" if dup[1:] else ""),
                context=where(history, out),
            )

    ctx.examples(body)


# --- V6: valid Unicode ---------------------------------------------------------------------------


def _strings(value: Any, path: str = ""):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")


_SURROGATE = re.compile("[\ud800-\udfff]")


@check(
    "V6",
    "valid-unicode",
    level=MUST,
    title="output text is valid Unicode (no lone surrogate) and serialises as UTF-8 JSON",
    examples=6,
)
def check_v6_valid_unicode(ctx):
    """V6 (MUST): sessions with long stretches of astral characters (emoji, CJK Extension B) at
    every offset; every string of the output encodes as UTF-8 and the output as JSON."""
    engine0, threshold = compacting_engine(ctx, "V6", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(
                min_tokens=threshold + 500, force={"astral"}, **compactable_shape(ctx, engine0)
            ),
            "history",
        )
        out = compress_like_host("V6", MUST, engine, history)
        if not isinstance(out, list):
            return
        for path, s in _strings(out, "output"):
            bad = _SURROGATE.search(s)
            if bad:
                fail(
                    "V6",
                    MUST,
                    f"{path} of the compress() output",
                    expected="valid Unicode text (providers reject lone surrogates with a 400)",
                    got=f"a lone surrogate U+{ord(bad.group()):04X} at character {bad.start()} "
                    f"of {len(s)} (text cut in UTF-16 code units?)",
                    context=where(history, out),
                )
        try:
            json.dumps(out, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            fail(
                "V6",
                MUST,
                "the compress() output as a request body",
                expected="JSON that encodes as UTF-8",
                got=f"{type(exc).__name__}: {short(str(exc), 120)}",
                context=where(history, out),
            )

    ctx.examples(body)


# --- V7: kept rows keep their fields ------------------------------------------------------------

#: Fields of a kept row an engine may not drop or change (V7).
KEPT_FIELDS = (*REASONING_FIELDS, "name")


def field_problems(history: list[dict[str, Any]], out: list[Any]) -> list[str]:
    """V7 (MUST): for each kept row, provider fields dropped or changed, and tool_calls
    arguments that are no longer a string, or no longer parse as JSON where they did (shortened
    inside the JSON they may be: that is compaction of an old call, not a broken row)."""
    problems = []
    for i, j in kept_pairs(history, out):
        m, o = history[i], out[j]
        for key in KEPT_FIELDS:
            if key in m and o.get(key) != m[key]:
                what = "dropped" if key not in o else f"changed to {short(o[key], 40)}"
                problems.append(f"kept message {i} ({m['role']}) has its {key!r} {what}")
        for c_in, c_out in zip(m.get("tool_calls") or (), o.get("tool_calls") or (), strict=False):
            a_in = (c_in.get("function") or {}).get("arguments")
            fn = c_out.get("function") if isinstance(c_out, dict) else None
            a_out = fn.get("arguments") if isinstance(fn, dict) else None
            if isinstance(a_in, str) and not isinstance(a_out, str):
                problems.append(
                    f"kept message {i} has tool call {c_in.get('id')!r} with arguments of type "
                    f"{type(a_out).__name__}, not the JSON string it had"
                )
            elif isinstance(a_in, str) and a_out != a_in and _json_ok(a_in) and not _json_ok(a_out):
                # shrinking long arguments inside their JSON is compaction (Hermes' compressor
                # does it outside the protected tail); cutting the string is a broken request
                problems.append(
                    f"kept message {i} has tool call {c_in.get('id')!r} with arguments that no "
                    f"longer parse as JSON ({len(a_in)} characters cut to {len(a_out)})"
                )
    return problems


def _json_ok(text: str) -> bool:
    """True when ``text`` parses as JSON (what the provider asks of ``function.arguments``)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parts_problems(history: list[dict[str, Any]], out: list[Any]) -> list[str]:
    """V7 (SHOULD): kept rows whose list-of-parts content became a string or lost image parts."""
    problems = []
    for i, j in kept_pairs(history, out):
        c_in, c_out = history[i].get("content"), out[j].get("content")
        if not isinstance(c_in, list):
            continue
        if not isinstance(c_out, list):
            problems.append(
                f"kept message {i} ({history[i]['role']}) has its list of {len(c_in)} content "
                f"parts flattened to {type(c_out).__name__}"
            )
            continue
        images_in = [p for p in c_in if isinstance(p, dict) and p.get("type") != "text"]
        images_out = [p for p in c_out if isinstance(p, dict) and p.get("type") != "text"]
        if len(images_out) < len(images_in):
            problems.append(
                f"kept message {i} ({history[i]['role']}) lost {len(images_in) - len(images_out)}"
                " image part(s)"
            )
    return problems


def late_arguments_history(min_tokens: int) -> list[dict[str, Any]]:
    """V7's fixed first example: a history over ``min_tokens`` whose last exchange before the
    live ask wrote a file (a 2 000-character ``write_file`` call, :func:`argument_heavy_turn`),
    so that every engine keeps that call in its tail: an engine that shortens kept arguments
    shows there what it does to them."""
    history = grow_history(
        [{"role": "system", "content": "You are a coding agent."}], min_tokens, 7
    )
    if history[-1].get("role") != "user":
        history.append({"role": "user", "content": "Write the report, please."})
    history += argument_heavy_turn(71, 2_000)
    history.append({"role": "assistant", "content": "Done with that step."})
    history.append({"role": "user", "content": "Now check the report. ASK-0000a7a7"})
    return history


def _v7(ctx, level: str, problems, force: set[str], first: bool = False) -> None:
    engine0, threshold = compacting_engine(ctx, "V7", level)

    def body(draw):
        engine = ctx.new_engine()
        if draw(st.booleans(), "transcript"):
            history = draw(transcripts(min_tokens=threshold + 500), "history")
        else:
            history = draw(
                realistic_sessions(
                    min_tokens=threshold + 500, force=force, **compactable_shape(ctx, engine0)
                ),
                "history",
            )
        out = compacted("V7", level, engine, history)
        if out is None:
            return
        found = problems(history, out)
        if found:
            fail(
                "V7",
                level,
                "a row compress() kept",
                expected="every field the input row had (reasoning_content, reasoning_details, "
                "name, tool_calls arguments as JSON strings, list-of-parts content and its images)",
                got=found[0] + (f" (+{len(found) - 1} more)" if found[1:] else ""),
                context=where(history, out),
            )

    fixed = (
        {"transcript": False, "history": late_arguments_history(threshold + 500)} if first else None
    )
    ctx.examples(body, first=fixed)


@check(
    "V7",
    "kept-rows-keep-fields",
    level=MUST,
    title="kept rows keep reasoning fields, name, and tool_calls arguments as JSON strings",
    examples=6,
)
def check_v7_kept_rows_keep_fields(ctx):
    """V7 (MUST): rows compress() keeps carry every provider field they had (DeepSeek's
    ``reasoning_content``, OpenRouter's ``reasoning_details``, ``name``) and their tool calls'
    ``function.arguments`` as JSON strings (the same ones, or shortened inside the JSON)."""
    _v7(ctx, MUST, field_problems, {"reasoning"}, first=True)


@check(
    "V7",
    "kept-parts-not-flattened",
    level=SHOULD,
    title="kept rows keep list-of-parts content (and its images) as a list",
    examples=6,
)
def check_v7_kept_parts_not_flattened(ctx):
    """V7 (SHOULD): a kept row whose content was a list of parts stays a list with its image
    parts (a pasted screenshot in the live ask, a multimodal tool result)."""
    _v7(ctx, SHOULD, parts_problems, {"image"})
