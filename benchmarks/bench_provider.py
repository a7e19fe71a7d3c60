"""Benchmark of the provider simulator: not a timed test, prints medians and ratios.

Sections, all measured in one run:

1. In-process cost per request as a conversation of mixed text (~150 tokens a message:
   prose, code, JSON tool output, CJK) grows to 5,000 messages: at 500 and at 5,000,
   plain ``Provider.chat_completions(dict)`` and the incremental ``Conversation`` handle,
   and the ratio to tokenizing the whole conversation from scratch (target <= 10%).
2. Simulator tokens/s (cold memo, warm memo) against raw tiktoken on the same text.
3. HTTP server CPU ms per request (utime+stime of the server's process tree / requests),
   with wall req/s beside it, for a 20-message ~3,000-token conversation, plain and
   streamed with ``include_usage``: our simulator, a bare stdlib echo server
   (``benchmarks/provider_bare_echo.py``), and the peers ``llmock`` and ``fakellm`` from
   the package index, installed into their own venvs under a temp dir and bound to
   127.0.0.1. Client: the official ``openai`` SDK (``max_retries=0``); a raw ``http.client``
   pass with pre-encoded bodies is reported as the server's ceiling.

Run: ``PYTHONPATH=. python benchmarks/bench_provider.py [--quick] [--no-peers]``.
Loopback only; the peers are installed with pip from the package index.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.provider import render, tokens  # noqa: E402
from simulator.provider.core import Provider  # noqa: E402

PEERS = {"llmock": "llmock==0.2.2", "fakellm": "fakellm==0.3.5"}
MODEL = "anthropic/claude-sonnet-4"


# -- workloads ----------------------------------------------------------------------------------
_PROSE = (
    "The parser keeps a stack of open scopes and reports the first unmatched token with "
    "its line and column. We agreed to keep the public API stable while the internals "
    "move to a table-driven design, because downstream users pin exact signatures. "
)
_CODE = (
    "def handle_{n}(request, *, retries=3):\n    for attempt in range(retries):\n        try:\n"
    "            return client.post('/v1/items/{n}', json=request, timeout=2.5)\n"
    "        except TimeoutError as exc:\n"
    "            log.warning('attempt %d failed: %s', attempt, exc)\n"
    "    raise RuntimeError('gave up on {n}')\n"
)
_CJK = (
    "缓存命中率在第{n}轮对话后明显上升，系统提示保持不变。キャッシュの有効期限は五分です。Кэш "
    "сохраняется {n} минут. "
)
_LOG = (
    "2026-11-30T09:{m:02d}:{s:02d}Z INFO worker-{n} "
    "processed batch {n} in {ms} ms (queue depth {q})\n"
)


def _json_output(rng: random.Random, n: int) -> str:
    rows = [
        {
            "id": n * 10 + k,
            "path": f"src/module_{n}/file_{k}.py",
            "size": rng.randrange(100, 99999),
            "ok": rng.random() < 0.8,
        }
        for k in range(3)
    ]
    return json.dumps({"results": rows, "total": 3, "query": f"grep handle_{n}"})


def _text(rng: random.Random, n: int, kind: int) -> str:
    if kind == 0:
        words = _PROSE.split()
        rng.shuffle(words)
        return (
            f"[{n}] "
            + " ".join(words[: rng.randrange(40, 110)])
            + " "
            + " ".join(words[: rng.randrange(20, 60)])
        )
    if kind == 1:
        return _CODE.format(n=n) + _CODE.format(n=n + 1)[: rng.randrange(100, 300)]
    if kind == 2:
        return _json_output(rng, n) + " " + _json_output(rng, n + 1)
    if kind == 3:
        return (_CJK.format(n=n)) * rng.randrange(2, 4)
    return "".join(
        _LOG.format(m=k % 60, s=(n + k) % 60, n=n, ms=rng.randrange(999), q=k)
        for k in range(rng.randrange(5, 8))
    )


def long_conversation(n_messages: int, seed: int = 1) -> list[dict[str, Any]]:
    """System prompt + mixed user/assistant/tool messages (~150 tokens each), tool pairs intact."""
    rng = random.Random(seed)
    msgs: list[dict[str, Any]] = [{"role": "system", "content": _PROSE * 12}]
    n = 0
    while len(msgs) < n_messages:
        n += 1
        msgs.append({"role": "user", "content": _text(rng, n, rng.randrange(5))})
        if rng.random() < 0.35 and len(msgs) + 2 < n_messages:
            cid = f"call_{n:06d}"
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": "search",
                                "arguments": json.dumps({"q": f"handle_{n}"}),
                            },
                        }
                    ],
                }
            )
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": cid,
                    "content": _json_output(rng, n) + _json_output(rng, n + 7),
                }
            )
        msgs.append({"role": "assistant", "content": _text(rng, n + 100000, rng.randrange(5))})
    return msgs[:n_messages]


def http_conversation() -> list[dict[str, Any]]:
    """The 20-message (~3,000 cl100k tokens) conversation of the HTTP benchmark: system + 10 user +
    9 assistant."""
    rng = random.Random(7)
    msgs: list[dict[str, Any]] = [{"role": "system", "content": _PROSE * 6}]
    kinds = [0, 1, 2, 3, 4, 0, 2, 1, 3, 0]
    for k in range(10):
        msgs.append({"role": "user", "content": _text(rng, k, kinds[k])})
        if k < 9:
            msgs.append({"role": "assistant", "content": _text(rng, k + 50, kinds[(k + 3) % 10])})
    return msgs


def _valid_end(msgs: list[dict[str, Any]], i: int) -> bool:
    last = msgs[i - 1]
    return not (last.get("role") == "assistant" and last.get("tool_calls"))


def _hermes_marked(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """P1 system_and_3: copies of the system and last 3 messages carry a marker on their last
    part."""
    out = list(msgs)
    idx = [0] + [i for i in range(len(msgs) - 3, len(msgs)) if i > 0]
    for i in idx:
        m = dict(msgs[i])
        c = m.get("content")
        if isinstance(c, str) and c:
            m["content"] = [{"type": "text", "text": c, "cache_control": {"type": "ephemeral"}}]
        elif m.get("role") != "tool" and not c:
            pass
        else:
            m["cache_control"] = {"type": "ephemeral"}
        out[i] = m
    return out


# -- 1. in-process ---------------------------------------------------------------------------------
def _texts_of(msgs: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in msgs:
        if isinstance(m.get("content"), str):
            out.append(m["content"])
        for c in m.get("tool_calls") or ():
            out.append(c["function"]["arguments"])
    return out


def bench_inprocess(n_max: int, probes: int) -> dict[str, Any]:
    msgs = long_conversation(n_max + probes * 3 + 10)
    enc = tokens.encoding()
    texts = _texts_of(msgs[:n_max])
    total_tokens = sum(len(enc.encode_ordinary(t)) for t in texts)
    scratch = []
    for _ in range(3):
        t0 = time.perf_counter()
        for t in texts:
            enc.encode_ordinary(t)
        scratch.append(time.perf_counter() - t0)
    scratch_s = statistics.median(scratch)
    results: dict[str, Any] = {
        "messages": n_max,
        "tokens": total_tokens,
        "avg_tokens_per_message": total_tokens / n_max,
        "scratch_ms": scratch_s * 1e3,
    }
    for n in (500, n_max):
        for model, tag in ((MODEL, ""), ("gpt-4.1", "gpt41_")):
            # plain dict requests, Hermes-style markers (client-side copying not timed)
            p = Provider(seed=1, journal_limit=50)
            p.models.override(MODEL, context_length=1_000_000)  # Sonnet 4's 1M-token context tier
            start = n - 1
            while not _valid_end(msgs, start):
                start -= 1
            p.chat_completions(
                {"model": model, "messages": _hermes_marked(msgs[:start])}
            )  # warm: the history is known
            ends = [i for i in range(start + 1, len(msgs)) if _valid_end(msgs, i)][:probes]
            times = []
            for e in ends:
                req = {"model": model, "messages": _hermes_marked(msgs[:e])}
                t0 = time.perf_counter()
                p.chat_completions(req)
                times.append(time.perf_counter() - t0)
            results[f"{tag}plain_{n}_ms"] = statistics.median(times) * 1e3
            # incremental handle: append the new messages, then send
            p = Provider(seed=1, journal_limit=50)
            p.models.override(MODEL, context_length=1_000_000)
            conv = p.conversation(model=model, cache_strategy="system_and_3", append_replies=False)
            conv.extend(msgs[:start])
            conv.send()
            times = []
            pos = start
            for e in ends:
                t0 = time.perf_counter()
                conv.extend(msgs[pos:e])
                conv.send()
                times.append(time.perf_counter() - t0)
                pos = e
            results[f"{tag}handle_{n}_ms"] = statistics.median(times) * 1e3
    for tag in ("", "gpt41_"):
        results[f"{tag}plain_ratio"] = results[f"{tag}plain_{n_max}_ms"] / results["scratch_ms"]
        results[f"{tag}handle_ratio"] = results[f"{tag}handle_{n_max}_ms"] / results["scratch_ms"]
    return results


# -- 2. tokens/s -----------------------------------------------------------------------------------
def bench_tokens(n_messages: int) -> dict[str, float]:
    texts = _texts_of(long_conversation(n_messages, seed=3))
    enc = tokens.encoding()
    n_tok = sum(len(enc.encode_ordinary(t)) for t in texts)
    raw, cold, warm = [], [], []
    for _ in range(3):
        t0 = time.perf_counter()
        for t in texts:
            enc.encode_ordinary(t)
        raw.append(time.perf_counter() - t0)
        tokens.count_text.cache_clear()
        render._MEMO.clear()
        t0 = time.perf_counter()
        for t in texts:
            render.text_info(t)
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for t in texts:
            render.text_info(t)
        warm.append(time.perf_counter() - t0)
    return {
        "tokens": n_tok,
        "raw_tok_s": n_tok / statistics.median(raw),
        "cold_tok_s": n_tok / statistics.median(cold),
        "warm_tok_s": n_tok / statistics.median(warm),
    }


# -- 3. HTTP ---------------------------------------------------------------------------------------
def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _proc_tree_cpu(pid: int) -> float:
    """utime+stime (seconds) of ``pid`` and all its descendants, from /proc."""
    tck = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        ppid = int(fields[1])
        children.setdefault(ppid, []).append(int(d))
        stats[int(d)] = (int(fields[11]), int(fields[12]))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        u, s = stats.get(p, (0, 0))
        total += u + s
        todo.extend(children.get(p, []))
    return total / tck


def _listening_on_loopback_only(port: int) -> bool:
    want = f":{port:04X}"
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            parts = ln.split()
            if parts[1].endswith(want) and parts[3] == "0A":
                found.append(parts[1].split(":")[0])
    return bool(found) and all(a in ("0100007F", "00000000000000000000000001000000") for a in found)


def install_peers(tmp: Path) -> dict[str, Any]:
    """pip-install each peer into its own venv under ``tmp``; value = bin dir or an error string."""
    out: dict[str, Any] = {}
    for name, spec in PEERS.items():
        venv = tmp / f"venv-{name}"
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", str(venv)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            r = subprocess.run(
                [str(venv / "bin" / "pip"), "install", "-q", spec],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if r.returncode != 0:
                out[name] = (
                    f"pip install {spec} failed: "
                    f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
                )
                continue
            out[name] = venv / "bin"
        except Exception as exc:  # report, don't crash the benchmark
            out[name] = f"install of {spec} failed: {type(exc).__name__}: {exc}"
    return out


def start(kind: str, port: int, tmp: Path, peers: dict[str, Any]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if kind == "simulator":
        cmd = [
            sys.executable,
            "-m",
            "simulator.provider.http",
            "serve",
            "--port",
            str(port),
            "--seed",
            "1",
        ]
        cwd = ROOT
    elif kind == "bare echo":
        cmd = [sys.executable, str(ROOT / "benchmarks" / "provider_bare_echo.py"), str(port)]
        cwd = ROOT
    elif kind == "llmock":
        cmd = [str(peers["llmock"] / "llmock"), "serve", "--host", "127.0.0.1", "--port", str(port)]
        cwd = tmp
    elif kind == "fakellm":
        cwd = tmp / "fakellm-cwd"
        cwd.mkdir(exist_ok=True)
        if not (cwd / "fakellm.yaml").exists():
            subprocess.run(
                [str(peers["fakellm"] / "fakellm"), "init"],
                cwd=cwd,
                capture_output=True,
                timeout=60,
            )
        cmd = [
            str(peers["fakellm"] / "fakellm"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
    else:
        raise ValueError(kind)
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"{kind} exited with {proc.returncode}: {proc.stderr.read().decode()[-500:]}"
            )
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        raise RuntimeError(f"{kind} did not listen on 127.0.0.1:{port} within 60 s")
    if not _listening_on_loopback_only(port):
        proc.kill()
        raise RuntimeError(f"{kind} is not bound to loopback only")
    return proc


def _sdk_call(client: Any, msgs: list[dict[str, Any]], stream: bool) -> bool:
    if not stream:
        r = client.chat.completions.create(model=MODEL, messages=msgs)
        return r.usage is not None
    usage = None
    for chunk in client.chat.completions.create(
        model=MODEL, messages=msgs, stream=True, stream_options={"include_usage": True}
    ):
        if chunk.usage is not None:
            usage = chunk.usage
    return usage is not None


def _raw_call(conn: http.client.HTTPConnection, body: bytes) -> bool:
    conn.request(
        "POST",
        "/v1/chat/completions",
        body=body,
        headers={"content-type": "application/json", "authorization": "Bearer bench"},
    )
    resp = conn.getresponse()
    data = resp.read()
    return resp.status == 200 and b'"usage"' in data


def trial(
    kind: str,
    client_kind: str,
    stream: bool,
    n: int,
    cap_s: float,
    tmp: Path,
    peers: dict[str, Any],
) -> dict[str, Any]:
    import openai

    port = _free_port()
    proc = start(kind, port, tmp, peers)
    msgs = http_conversation()
    try:
        if client_kind == "sdk":
            client = openai.OpenAI(
                base_url=f"http://127.0.0.1:{port}/v1", api_key="bench", max_retries=0
            )
            call: Callable[[], bool] = lambda: _sdk_call(client, msgs, stream)  # noqa: E731
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            body = json.dumps(
                {
                    "model": MODEL,
                    "messages": msgs,
                    "stream": stream,
                    **({"stream_options": {"include_usage": True}} if stream else {}),
                }
            ).encode()
            call = lambda: _raw_call(conn, body)  # noqa: E731
        for _ in range(20):
            call()
        cpu0, cli0, t0 = _proc_tree_cpu(proc.pid), time.process_time(), time.perf_counter()
        lat, with_usage, done = [], 0, 0
        while done < n and time.perf_counter() - t0 < cap_s:
            s = time.perf_counter()
            with_usage += call()
            lat.append(time.perf_counter() - s)
            done += 1
        wall = time.perf_counter() - t0
        cpu = _proc_tree_cpu(proc.pid) - cpu0
        cli = time.process_time() - cli0
        lat.sort()
        return {
            "req_s": done / wall,
            "server_cpu_ms": cpu / done * 1e3,
            "client_cpu_ms": cli / done * 1e3,
            "p50_ms": lat[len(lat) // 2] * 1e3,
            "requests": done,
            "with_usage": with_usage,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def bench_http(
    kinds: list[str],
    n: int,
    cap_s: float,
    repeats: int,
    tmp: Path,
    peers: dict[str, Any],
    clients: list[str],
) -> dict[tuple[str, str, str], dict[str, Any]]:
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    workloads = [(c, s) for c in clients for s in (False, True)]
    for rep in range(repeats):
        order = kinds if rep % 2 == 0 else list(reversed(kinds))
        wl = workloads if rep % 2 == 0 else list(reversed(workloads))
        for kind in order:
            for client_kind, stream in wl:
                key = (kind, client_kind, "stream" if stream else "plain")
                try:
                    runs.setdefault(key, []).append(
                        trial(kind, client_kind, stream, n, cap_s, tmp, peers)
                    )
                except Exception as exc:
                    runs.setdefault(key, []).append({"error": f"{type(exc).__name__}: {exc}"})
    out = {}
    for key, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            out[key] = {"error": rs[0]["error"]}
            continue
        med = {
            f: statistics.median(r[f] for r in ok)
            for f in ("req_s", "server_cpu_ms", "client_cpu_ms", "p50_ms")
        }
        med["min_max_cpu"] = (
            min(r["server_cpu_ms"] for r in ok),
            max(r["server_cpu_ms"] for r in ok),
        )
        med["usage"] = f"{sum(r['with_usage'] for r in ok)}/{sum(r['requests'] for r in ok)}"
        out[key] = med
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument(
        "--no-peers", action="store_true", help="skip installing/running llmock and fakellm"
    )
    ap.add_argument("--requests", type=int, default=800, help="timed requests per HTTP trial")
    ap.add_argument("--cap", type=float, default=12.0, help="seconds cap per HTTP trial")
    ap.add_argument("--repeats", type=int, default=3, help="HTTP repeats (alternating order)")
    ap.add_argument(
        "--raw", action="store_true", help="also run the raw http.client pass (server ceiling)"
    )
    ap.add_argument(
        "--peers-dir",
        type=Path,
        default=None,
        help="reuse venvs DIR/llmock and DIR/fakellm made earlier instead of installing",
    )
    args = ap.parse_args(argv)
    n_max = 1000 if args.quick else 5000
    print(
        f"# bench_provider  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  "
        f"python {platform.python_version()}  cores {os.cpu_count()}  {platform.machine()}"
    )

    r = bench_inprocess(n_max, probes=5 if args.quick else 11)
    print(
        f"\n## 1. In-process cost per request (conversation of {r['messages']} messages, "
        f"{r['tokens']} tokens, {r['avg_tokens_per_message']:.0f} tokens/message)"
    )
    print(
        f"tokenizing the whole {r['messages']}-message conversation "
        f"from scratch (tiktoken): {r['scratch_ms']:.1f} ms"
    )
    print(
        f"| path | at 500 msgs (ms) | at {n_max:d} msgs (ms) | ratio to from-scratch at {n_max:d} |"
    )
    print("|---|---|---|---|")
    for tag, label in (
        ("", f"{MODEL} (Anthropic rules, system_and_3 markers)"),
        ("gpt41_", "gpt-4.1 (OpenAI automatic caching)"),
    ):
        print(
            f"| {label}: plain chat_completions(dict) | {r[tag + 'plain_500_ms']:.2f} "
            f"| {r[f'{tag}plain_{n_max}_ms']:.2f} | {r[tag + 'plain_ratio']:.1%} |"
        )
        print(
            f"| {label}: Conversation handle | {r[tag + 'handle_500_ms']:.3f} | "
            f"{r[f'{tag}handle_{n_max}_ms']:.3f} | {r[tag + 'handle_ratio']:.2%} |"
        )

    t = bench_tokens(500 if args.quick else 3000)
    print(f"\n## 2. Tokens/s ({t['tokens']} tokens of mixed text)")
    print("| counter | tokens/s | vs raw tiktoken |\n|---|---|---|")
    print(f"| raw tiktoken encode_ordinary | {t['raw_tok_s']:,.0f} | 1.00x |")
    print(
        "| simulator, cold memo (encode + digest + memo) | "
        f"{t['cold_tok_s']:,.0f} | {t['cold_tok_s'] / t['raw_tok_s']:.2f}x |"
    )
    print(
        f"| simulator, warm memo (repeat content) | {t['warm_tok_s']:,.0f} "
        f"| {t['warm_tok_s'] / t['raw_tok_s']:.0f}x |"
    )

    tmp = Path(tempfile.mkdtemp(prefix="bench-provider-"))
    try:
        kinds = ["simulator", "bare echo"]
        peers: dict[str, Any] = {}
        if not args.no_peers:
            if args.peers_dir:
                peers = {
                    n: (args.peers_dir / n / "bin")
                    if (args.peers_dir / n / "bin" / n).exists()
                    else f"{args.peers_dir / n} has no bin/{n}"
                    for n in PEERS
                }
            else:
                peers = install_peers(tmp)
            for name, where in peers.items():
                if isinstance(where, Path):
                    kinds.append(name)
                else:
                    print(f"\nNOTE: peer {name} not measured: {where}")
        conv_tokens = tokens.count_messages(http_conversation())
        clients = ["sdk"] + (["raw"] if args.raw else [])
        res = bench_http(
            kinds,
            100 if args.quick else args.requests,
            args.cap,
            1 if args.quick else args.repeats,
            tmp,
            peers,
            clients,
        )
        print(
            f"\n## 3. HTTP: 20-message conversation, {conv_tokens} cl100k tokens; medians of "
            f"{1 if args.quick else args.repeats} alternated repeats"
        )
        for client_kind in clients:
            label = (
                "official openai SDK client"
                if client_kind == "sdk"
                else "raw http.client, pre-encoded body"
            )
            print(f"\n### client: {label}")
            print(
                "| server | CPU ms/req plain [min-max] | CPU ms/req stream+usage [min-max] | "
                "req/s plain | req/s stream | usage chunks | ratio to bare (plain / stream) |"
            )
            print("|---|---|---|---|---|---|---|")
            bare = (
                res.get(("bare echo", client_kind, "plain"), {}),
                res.get(("bare echo", client_kind, "stream"), {}),
            )
            for kind in kinds:
                a, b = (
                    res.get((kind, client_kind, "plain"), {}),
                    res.get((kind, client_kind, "stream"), {}),
                )
                if "error" in a or "error" in b:
                    print(f"| {kind} | error: {a.get('error') or b.get('error')} |")
                    continue
                ratio = (
                    (
                        f"{a['server_cpu_ms'] / bare[0]['server_cpu_ms']:.2f}x "
                        f"/ {b['server_cpu_ms'] / bare[1]['server_cpu_ms']:.2f}x"
                    )
                    if bare[0].get("server_cpu_ms") and bare[1].get("server_cpu_ms")
                    else "-"
                )
                print(
                    f"| {kind} | {a['server_cpu_ms']:.2f} "
                    f"[{a['min_max_cpu'][0]:.2f}-{a['min_max_cpu'][1]:.2f}] | "
                    f"{b['server_cpu_ms']:.2f} "
                    f"[{b['min_max_cpu'][0]:.2f}-{b['min_max_cpu'][1]:.2f}] | "
                    f"{a['req_s']:.0f} | {b['req_s']:.0f} | {b['usage']} | {ratio} |"
                )
            sim = (
                res.get(("simulator", client_kind, "plain"), {}),
                res.get(("simulator", client_kind, "stream"), {}),
            )
            peer_cpu = [
                (
                    res.get((p, client_kind, "plain"), {}).get("server_cpu_ms"),
                    res.get((p, client_kind, "stream"), {}).get("server_cpu_ms"),
                )
                for p in ("llmock", "fakellm")
            ]
            peer_cpu = [pc for pc in peer_cpu if pc[0] and pc[1]]
            if peer_cpu and sim[0].get("server_cpu_ms") and sim[1].get("server_cpu_ms"):
                best_plain = min(pc[0] for pc in peer_cpu)
                best_stream = min(pc[1] for pc in peer_cpu)
                print(
                    f"simulator vs best peer: plain {sim[0]['server_cpu_ms']:.2f} vs "
                    f"{best_plain:.2f} ms "
                    f"({'below' if sim[0]['server_cpu_ms'] < best_plain else 'NOT below'}), "
                    f"stream {sim[1]['server_cpu_ms']:.2f} vs {best_stream:.2f} ms "
                    f"({'below' if sim[1]['server_cpu_ms'] < best_stream else 'NOT below'})"
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
