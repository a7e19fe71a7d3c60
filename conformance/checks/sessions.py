"""Invariants that hold for every engine, checked on sessions shaped like real agent sessions
(:func:`conformance.authoring.strategies.realistic_sessions`; docs/strategies.md says where each
shape
comes from, docs/contract-notes.md section 8 argues each level).

- A8 (MUST) the live ask survives compress() verbatim in a user row (so a user row remains);
- A9 (MUST) a compaction never returns more tokens than it got;
- A10 (SHOULD) a fact the engine put in its summary is still there after the next compaction;
- A11 (SHOULD) the summary stays bounded over many passes (twelve);
- V2 (MUST, extended) no input row and no tool chain comes out twice (head and tail overlap);
- V6 (MUST) every string of the output is valid Unicode and the output serialises as UTF-8 JSON;
- V7 (MUST) a kept row keeps its provider fields and JSON-string arguments; (SHOULD) its
  list-of-parts content is not flattened and keeps its images;
- H5 (MUST, extended) dicts the engine got in on_turn_complete are not edited at a later call;
- O7 (SHOULD, extended) should_compress_preflight() does not read image bytes as text;
- U6 (SHOULD, extended) a summary row does not take the message_uid of a row it summarised.

Each compaction check skips engines that never compact (:func:`skip_unless_compacts`).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import MUST, SHOULD, fail, short, v1_problems
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    IMAGE_KB,
    REASONING_FIELDS,
    _stamp_uids,
    argument_heavy_turn,
    compactable_histories,
    grow_history,
    image_data_url,
    live_ask_index,
    realistic_sessions,
    text_from_seed,
    transcripts,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    skip_unless_compacts,
    threshold_of,
    turn_complete_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped
from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS, count_messages

#: Passes of the multi-compaction checks (A10, A11): "ten passes and more".
PASSES = 12


def text_parts(content: Any) -> list[str]:
    """The texts of a content value: ``[content]`` for a string, the text parts of a list."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p]
    return []


def flat_text(m: Any) -> str:
    """A row's text (its text parts joined by a space); "" for a non-dict."""
    return " ".join(text_parts(m.get("content"))) if isinstance(m, dict) else ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def wire_key(m: Any) -> str:
    """A row as the provider sees it (no identity or ``_`` fields), canonical JSON."""
    if not isinstance(m, dict):
        return repr(m)
    row = {k: v for k, v in m.items() if k not in PERSISTENCE_ONLY_FIELDS and not k.startswith("_")}
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


def kept_pairs(history: list[dict[str, Any]], out: list[Any]) -> list[tuple[int, int]]:
    """``(input index, output index)`` of output rows that are input rows kept: the same role
    and the same call ids (assistant ``tool_calls``), the same tool_call_id and text (tool), or
    the same non-empty text whitespace aside (other rows), and the same message_uid when both
    carry one. Matched in order (kept rows keep their order), each input row once."""
    pairs = []
    after = 0  # kept rows keep their order: match forward only
    for j, o in enumerate(out):
        if not isinstance(o, dict):
            continue
        for i in range(after, len(history)):
            m = history[i]
            if m.get("role") != o.get("role"):
                continue
            uid = o.get("message_uid")
            if uid and m.get("message_uid") and uid != m["message_uid"]:
                continue
            if m.get("tool_calls"):
                ids_in = [c.get("id") for c in m["tool_calls"] if isinstance(c, dict)]
                calls = o.get("tool_calls")
                ids_out = (
                    [c.get("id") for c in calls if isinstance(c, dict)]
                    if isinstance(calls, list)
                    else None
                )
                same = ids_in == ids_out
            elif m.get("role") == "tool":
                same = m.get("tool_call_id") == o.get("tool_call_id") and _norm(
                    flat_text(m)
                ) == _norm(flat_text(o))
            else:
                t = _norm(flat_text(m))
                same = bool(t) and t == _norm(flat_text(o))
            if same:
                after = i + 1
                pairs.append((i, j))
                break
    return pairs


def duplicated_rows(history: list[dict[str, Any]], out: list[Any]) -> list[tuple[int, int]]:
    """``(input index, times in output)`` for input rows the output holds more often than the
    input does (V2's head/tail overlap)."""
    counts_in: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, m in enumerate(history):
        k = wire_key(m)
        counts_in[k] = counts_in.get(k, 0) + 1
        first.setdefault(k, i)
    counts_out: dict[str, int] = {}
    for o in out:
        k = wire_key(o)
        if k in counts_in:
            counts_out[k] = counts_out.get(k, 0) + 1
    return sorted((first[k], n) for k, n in counts_out.items() if n > counts_in[k])


def _engine(ctx: Any, clause: str, level: str) -> tuple[Any, int]:
    skip_unless_compacts(ctx, clause, level)
    engine = ctx.new_engine()
    return engine, threshold_of(engine, ctx.window // 2)


def _compacted(clause: str, level: str, engine: Any, history: list[dict[str, Any]]) -> Any:
    """compress() like the host; None when the output is not a V1-valid list (A4/V1 report)."""
    out = compress_like_host(clause, level, engine, history)
    if not isinstance(out, list) or v1_problems(out):
        return None
    return out


def _where(history: list[dict[str, Any]], out: list[Any]) -> str:
    return (
        f"history of {len(history)} messages ({count_messages(history)} tokens), "
        f"output of {len(out)}"
    )


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
    engine0, threshold = _engine(ctx, "A8", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        out = _compacted("A8", MUST, engine, history)
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
                context=_where(history, out),
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
                context=_where(history, out),
            )

    ctx.examples(body)


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
    engine0, threshold = _engine(ctx, "A9", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        out = _compacted("A9", MUST, engine, history)
        if out is None or duplicated_rows(history, out):
            return
        before, after = count_messages(history), count_messages(out)
        if after > before:
            fail(
                "A9",
                MUST,
                "tokens of the compress() output",
                expected=f"at most the {before} tokens it got",
                got=f"{after} tokens ({len(out)} rows for {len(history)})",
                context=_where(history, out),
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
    engine0, threshold = _engine(ctx, "V2", MUST)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            realistic_sessions(
                min_tokens=threshold + 500, short=True, **compactable_shape(ctx, engine0)
            ),
            "history",
        )
        out = _compacted("V2", MUST, engine, history)
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
                context=_where(history, out),
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
    engine0, threshold = _engine(ctx, "V6", MUST)

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
                    context=_where(history, out),
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
                context=_where(history, out),
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
    engine0, threshold = _engine(ctx, "V7", level)

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
        out = _compacted("V7", level, engine, history)
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
                context=_where(history, out),
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


# --- A10 / A11: many compactions ----------------------------------------------------------------


def new_rows(history: list[dict[str, Any]], out: list[Any]) -> list[Any]:
    """Output rows found nowhere in the input as they are (a summary, a note, a rewritten
    system prompt, a cleared tool output)."""
    seen = {wire_key(m) for m in history}
    return [o for o in out if wire_key(o) not in seen]


def _sessions(ctx, clause: str, level: str, judge) -> None:
    """Draw a compactable history with a planted fact, then compact it up to :data:`PASSES`
    times (the history grows back over the threshold between passes) and call
    ``judge(pass_no, history, out, state)`` after each pass; a judge returning True ends the
    session early (its rule is settled). A pass the engine declines (its output is its input)
    is tried once more on a history grown by half the threshold; a second decline in a row
    ends the session."""
    engine0, threshold = _engine(ctx, clause, level)

    def body(draw):
        engine = ctx.new_engine()
        seed = draw(st.integers(0, 2**20), "passes.seed")
        fact = f"FACT-{seed:06x}"
        history = draw(
            compactable_histories(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        at = next(  # after the first plain assistant reply: in the middle, alternating
            i + 1
            for i, m in enumerate(history)
            if m.get("role") == "assistant" and not m.get("tool_calls")
        )
        history[at:at] = [
            {"role": "user", "content": f"Remember for later: the staging key is {fact}."},
            {"role": "assistant", "content": f"Noted: the staging key is {fact}."},
        ]
        state: dict[str, Any] = {"fact": fact, "threshold": threshold, "window": ctx.window}
        declined = False
        for k in range(1, PASSES + 1):
            out = _compacted(clause, level, engine, history)
            if out is None:
                return  # invalid: A4 / V report it
            if out == history:
                # Declined: a middle of a few short rows gains nothing (A9), so an engine may
                # keep the history. Once more after new turns give it a middle worth compacting;
                # declined twice in a row, the session ends.
                if declined:
                    return
                declined = True
                more = count_messages(history) + threshold // 2
                history = grow_history(history, more, seed + 97 * k)
                continue
            declined = False
            if judge(k, history, out, state):
                return
            history = grow_history(out, threshold + 500, seed + 97 * k)

    ctx.examples(body)


@check(
    "A10",
    "summary-survives-next-compaction",
    level=SHOULD,
    title="a fact the engine put in its summary is still there after the next compaction",
    examples=2,
)
def check_a10_summary_survives_next_compaction(ctx):
    """A10 (SHOULD): a fact planted early is followed over up to twelve passes; once the
    engine's own new rows (its summary) hold it, the output of the next compaction holds it
    somewhere (later ones may let it go: a bounded summary must drop something, A11). An
    engine that declares ``compressor`` is judged by B6 (later compactions update the previous
    summary), the built-in's stricter form of the same rule: one fault, one finding."""
    if "compressor" in (getattr(ctx, "capabilities", None) or ()):
        raise CheckSkipped(
            "the engine declares 'compressor': B6 judges how its summaries carry earlier ones"
        )

    def judge(k, history, out, state):
        fact = state["fact"]
        if "since" not in state:
            if any(fact in json.dumps(o, ensure_ascii=False) for o in new_rows(history, out)):
                state["since"] = k
            return False
        if fact in json.dumps(out, ensure_ascii=False):
            return True
        fail(
            "A10",
            SHOULD,
            f"compaction {k} of one session",
            expected=f"the fact {fact!r} the engine's summary held after compaction "
            f"{state['since']} still somewhere in the output",
            got="it is gone (the previous summary was dropped, not folded into the next)",
            context=_where(history, out),
        )

    _sessions(ctx, "A10", SHOULD, judge)


@check(
    "A11",
    "summary-bounded",
    level=SHOULD,
    title="the summary stays bounded over many compactions",
    examples=2,
)
def check_a11_summary_bounded(ctx):
    """A11 (SHOULD): over twelve passes, the tokens of the rows each pass adds (its summary)
    stay under max(2 x the largest of the first three passes, 5 % of the window)."""

    def judge(k, history, out, state):
        tokens = count_messages(new_rows(history, out))
        sizes = state.setdefault("sizes", [])
        sizes.append(tokens)
        if k <= 3:
            return False
        bound = max(2 * max(sizes[:3]), int(0.05 * state["window"]))
        if tokens > bound:
            fail(
                "A11",
                SHOULD,
                f"the summary written by compaction {k} of one session",
                expected=f"at most {bound} tokens (2 x the largest of compactions 1-3, or 5 % "
                "of the window)",
                got=f"{tokens} tokens (per compaction: {sizes})",
                context=_where(history, out),
            )
        return False

    _sessions(ctx, "A11", SHOULD, judge)


# --- H5 across calls ----------------------------------------------------------------------------


@check(
    "H5",
    "turn-dicts-untouched-later",
    level=MUST,
    title="dicts on_turn_complete() got are not edited at a later engine call",
    examples=6,
)
def check_h5_turn_dicts_untouched_later(ctx):
    """H5 (MUST): the host's dicts handed to on_turn_complete() for turn 1 stay as they were
    through the next calls (should_compress, compress, select_context, on_turn_complete of
    turn 2, on_session_end): an engine that keeps them and edits them later edits the host's
    transcript."""
    engine = ctx.new_engine()
    if not overrides(engine, "on_turn_complete"):
        raise CheckSkipped("engine keeps the ABC default on_turn_complete; the host never calls it")

    def body(draw):
        engine = ctx.new_engine()
        history = draw(transcripts(max_turns=4), "history")
        host = copy.deepcopy(history)
        snapshot = copy.deepcopy(host)
        seed = draw(st.integers(0, 2**20), "later.seed")
        later = grow_history(host, threshold_of(engine, ctx.window // 2) + 500, seed)[len(host) :]
        host2 = host + later

        def turn(msgs, tid):
            fail_open(
                turn_complete_like_host,
                "H5",
                MUST,
                engine,
                list(msgs),
                usage(count_messages(msgs)),
                turn_id=tid,
                interrupted=False,
                failed=False,
                turn_exit_reason="completed",
            )

        steps = [
            ("on_turn_complete() of turn 1", lambda: turn(host, "t1")),
            ("should_compress()", lambda: fail_open(engine.should_compress, 10**6)),
            ("compress()", lambda: fail_open(compress_like_host, "H5", MUST, engine, host2)),
            ("on_turn_complete() of turn 2", lambda: turn(host2, "t2")),
            ("select_context()", lambda: fail_open(select_like_host, "H5", MUST, engine, host2)),
            ("on_turn_complete() of turn 3", lambda: turn(host2, "t3")),
            (
                "on_session_end()",
                lambda: fail_open(engine.on_session_end, "s1", copy.deepcopy(host2)),
            ),
        ]
        for name, call in steps:
            call()
            for i, (now, was) in enumerate(zip(host, snapshot, strict=True)):
                if now != was and name != steps[0][0]:
                    keys = sorted(k for k in set(now) | set(was) if now.get(k) != was.get(k))
                    fail(
                        "H5",
                        MUST,
                        f"the host's message {i} ({was.get('role')}) handed to on_turn_complete()"
                        " of turn 1",
                        expected="left unchanged by every later call (the engine got the host's "
                        "own dicts)",
                        got=f"keys {', '.join(map(str, keys))} changed during {name}",
                    )
            if name == steps[0][0] and host != snapshot:
                return  # edited within the call: the H5 turn-complete-does-not-mutate finding

    ctx.examples(body)


# --- O7: images are not text --------------------------------------------------------------------


@check(
    "O7",
    "preflight-images-not-text",
    level=SHOULD,
    title="should_compress_preflight() does not count a screenshot's base64 bytes as text",
    examples=4,
)
def check_o7_preflight_images_not_text(ctx):
    """O7 (SHOULD): a short chat (far under the threshold) whose user pasted a screenshot as a
    base64 data URL of 120-600 KB: the estimate answers False (an image costs a flat charge,
    85 tokens here, or its tile count: never its bytes as text)."""
    engine = ctx.new_engine()
    if not overrides(engine, "should_compress_preflight"):
        raise CheckSkipped("engine keeps the ABC default should_compress_preflight (False)")

    def body(draw):
        engine = ctx.new_engine()
        seed = draw(st.integers(0, 2**20), "chat.seed")
        kb = draw(st.sampled_from(IMAGE_KB), "image.kb")
        chat = [{"role": "system", "content": "You are a helpful assistant."}]
        for k in range(draw(st.integers(0, 3), "chat.exchanges")):
            chat += [
                {"role": "user", "content": text_from_seed(seed + k, "en_US", 2)},
                {"role": "assistant", "content": text_from_seed(seed + k + 50, "en_US", 3)},
            ]
        chat.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is wrong in this screenshot?"},
                    {"type": "image_url", "image_url": {"url": image_data_url(seed % 7, kb)}},
                ],
            }
        )
        _stamp_uids(chat, "all", seed)
        tokens = count_messages(chat)
        threshold = threshold_of(engine, ctx.window // 2)
        if tokens * 2 > threshold:
            return
        out = invoke("O7", SHOULD, engine, "should_compress_preflight", copy.deepcopy(chat))
        if out is True:
            fail(
                "O7",
                SHOULD,
                f"should_compress_preflight(<{len(chat)} messages, {tokens} tokens, one "
                f"{kb} KB screenshot>)",
                expected=f"False (far under threshold_tokens {threshold}: an image part is "
                "not text)",
                got="True (the base64 bytes read as text? the host would compact a short chat "
                "and lose the screenshot)",
            )

    ctx.examples(body)


# --- U6: a summary takes no summarised row's uid ------------------------------------------------


@check(
    "U6",
    "summary-uid-fresh",
    level=SHOULD,
    title="a summary row does not reuse the message_uid of a row it summarised",
    examples=6,
)
def check_u6_summary_uid_fresh(ctx):
    """U6 (SHOULD; docs/contract-notes.md 8.10): a row compress() wrote in place of several
    removed rows does not carry the uid of one of them (U7 would read it as a new version of
    that one message)."""
    engine0, threshold = _engine(ctx, "U6", SHOULD)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            compactable_histories(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        _stamp_uids(history, "all", draw(st.integers(0, 2**20), "uid_seed"))
        out = _compacted("U6", SHOULD, engine, history)
        if out is None:
            return
        index = {m["message_uid"]: i for i, m in enumerate(history)}
        out_uids = {o.get("message_uid") for o in out if isinstance(o, dict)}
        kept = {j for _, j in kept_pairs(history, out)}
        for j, o in enumerate(out):
            i = index.get(o.get("message_uid")) if isinstance(o, dict) else None
            if i is None or j in kept or o.get("role") == "tool":
                continue
            # a neighbour of row i (before or after it, not the system prompt) is gone too: the
            # row stands for several removed rows, not for row i rewritten in place (U4) nor for
            # row i with the summary folded into it (its text still there, as in U5's merges)
            gone = [
                n
                for n in (i - 1, i + 1)
                if 0 <= n < len(history)
                and history[n].get("role") != "system"
                and history[n].get("message_uid") not in out_uids
            ]
            own = _norm(flat_text(history[i]))
            if (
                gone
                and wire_key(o) != wire_key(history[i])
                and not (own and own in _norm(flat_text(o)))
            ):
                fail(
                    "U6",
                    SHOULD,
                    f"output row {j} ({o.get('role')}, {short(flat_text(o)[:60], 70)})",
                    expected="a fresh message_uid (or none) on a row that stands for several "
                    "removed rows",
                    got=f"the message_uid of input message {i}, which it summarised (U7 reads "
                    "the summary as a new version of that message)",
                    context=_where(history, out),
                )

    ctx.examples(body)
