"""Differential runs: a real Hermes ``AIAgent`` and the kit's host on the same conversations.

Shared by both Hermes versions (tests/host/test_hermes_profile.py). A conversation is a
:class:`Conversation`: user turns, ``/new`` and ``/compress <focus>`` operations, the
provider simulator's faults and replies, and the recording engine's switches
(tests/host/hermes_fixture/kitrecorder). :func:`run_real` runs many conversations in ONE
real-host process (``drive_hermes.py``; an import plus an agent init cost seconds), against
the simulator's HTTP server on loopback; :func:`run_kit` runs one conversation on the kit's
host (:class:`~simulator.host.session.HostSession`) in a profile. :func:`call_sequence` and
:func:`wire_messages` give what the two runs are compared on.

Normalisations (each one the smallest that makes two hosts comparable at all):

- **thread kind**: compress() and friends are recorded as ``main`` or ``worker``; the pool
  threads' names differ (``compress-ctx-timeout`` on 0.22, ``ctx-compress-N`` in the kit)
  and name no behaviour an engine can see.
- **the system prompt**: Hermes builds its own (identity, platform, date; about 2000 chars);
  the kit's host has a one-line one. The system row's ``content`` is replaced by
  ``"<system prompt>"`` in the provider messages; its role, position and keys are compared.
- **the streaming envelope**: Hermes streams (``stream``, ``stream_options``) and the kit's
  host does not; only the request's ``messages`` are compared, never the top-level body.
- **key values the engine cannot rely on**: the recorder keeps key SETS, roles and counts
  (and ``message_uid`` only as a key), never ids or texts that are random per host
  (uids, session ids, timestamps).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.host import discovery
from simulator.host.profiles import HostProfile, get_profile
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider
from simulator.provider.faults import FaultSchedule
from simulator.provider.http import start_server

FIXTURE = Path(__file__).parent / "hermes_fixture"
#: compression.context_timeout_seconds of the timeout conversation's home: short, so a
#: timeout run is cheap, yet long enough for a loaded real host to reach compress().
TIMEOUT_SECONDS = 5.0
#: compress() sleep of the timeout conversation (well past TIMEOUT_SECONDS).
SLEEP_SECONDS = 12.0
SYSTEM_PLACEHOLDER = "<system prompt>"
ENV_KEYS = (
    "KIT_RECORD_PATH",
    "KIT_COMPRESS_AT",
    "KIT_COMPRESS_SLEEP",
    "KIT_SELECT",
    "KIT_CLONE_RAISES",
    "KIT_TOOLS",
)


@dataclass(frozen=True)
class Conversation:
    """One scripted conversation.

    Attributes:
        name: short id (the test id).
        ops: ``("turn", text)``, ``("new", "")`` or ``("compress", focus)``, in order.
        env: the recording engine's switches (KIT_COMPRESS_AT, KIT_SELECT, ...).
        faults: the simulator's fault list (JSON form, :mod:`simulator.provider.faults`).
        replies: a ``POST /_sim/replies`` body, or None for echo replies.
        plugin: ``"folder"`` ($HERMES_HOME/plugins/kitrecorder) or ``"general"``
            (plugins.enabled: [kitrecordergp]).
        timeout: ``compression.context_timeout_seconds`` of its home (0: the default); a
            conversation with a short timeout gets a home (and a real-host process) of its
            own, so a slow start of the real host cannot time out another one's compaction.
    """

    name: str
    ops: tuple[tuple[str, str], ...]
    env: dict[str, str] = field(default_factory=dict)
    faults: tuple[dict[str, Any], ...] = ()
    replies: dict[str, Any] | None = None
    plugin: str = "folder"
    timeout: float = 0.0


def turns(*texts: str) -> tuple[tuple[str, str], ...]:
    """``("turn", text)`` ops for ``texts``."""
    return tuple(("turn", t) for t in texts)


TOOL_REPLIES = {
    "mode": "tool_script",
    "rounds": [[{"name": "kit_lookup", "arguments": {"key": "alpha"}}]],
    "final": "Done.",
}


def conversations(plugin_paths: tuple[str, ...]) -> list[Conversation]:
    """The scripted conversations, for a host that has ``plugin_paths`` ("folder",
    "general"); the ones on the folder path move to the general path when the host has no
    engine folders (0.19.0)."""
    main = "folder" if "folder" in plugin_paths else "general"
    out = [
        Conversation("plain", turns("hello one", "second message", "third message"), plugin=main),
        Conversation(
            "select",
            turns("hello one", "second message", "third message", "fourth message"),
            env={"KIT_SELECT": "tail"},
            plugin=main,
        ),
        Conversation(
            "compactions",
            turns("hello one", "second", "third", "fourth", "fifth", "sixth", "seventh"),
            env={"KIT_COMPRESS_AT": "3,6"},
            plugin=main,
        ),
        Conversation(
            "retry",
            turns("hello one", "second message"),
            faults=({"kind": "server_error", "at": [1]},),
            plugin=main,
        ),
        Conversation(
            "fault",
            turns("hello one", "second message", "third message"),
            faults=({"kind": "content_filter", "at": [1]},),
            plugin=main,
        ),
        Conversation(
            "new",
            turns("hello one", "second message") + (("new", ""),) + turns("after new"),
            plugin=main,
        ),
        Conversation(
            "compress_focus",
            turns("hello one", "second message", "third message")
            + (("compress", "the database schema"),)
            + turns("after compress"),
            plugin=main,
        ),
        Conversation(
            "timeout",
            turns("hello one", "second message", "third message", "fourth message"),
            env={"KIT_COMPRESS_AT": "2", "KIT_COMPRESS_SLEEP": str(SLEEP_SECONDS)},
            plugin=main,
            timeout=TIMEOUT_SECONDS,
        ),
        Conversation(
            "tools",
            turns("look something up", "and again"),
            replies=TOOL_REPLIES,
            plugin=main,
        ),
    ]
    if "folder" in plugin_paths:
        out.append(
            Conversation(
                "general_plugin",
                turns("hello one", "second", "third", "fourth"),
                env={"KIT_COMPRESS_AT": "3"},
                plugin="general",
            )
        )
    out.append(
        Conversation(
            "clone_raises",
            turns("hello one", "second message"),
            env={"KIT_CLONE_RAISES": "1"},
            plugin="general",
        )
    )
    return out


def hermes_home(root: Path, plugin: str, timeout: float = 0.0) -> Path:
    """A ``$HERMES_HOME`` with the recording engine on the ``plugin`` path ("folder" or
    "general"); with ``timeout``, a short compaction timeout (and an auxiliary compression
    timeout under it, which 0.22 would otherwise raise the idle timeout to)."""
    home = root / (f"home-{plugin}" + (f"-t{timeout:g}" if timeout else ""))
    if home.exists():
        return home
    (home / "plugins").mkdir(parents=True)
    if plugin == "folder":
        shutil.copytree(FIXTURE / "kitrecorder", home / "plugins" / "kitrecorder")
        enabled = ""
    else:
        dest = home / "plugins" / "kitrecordergp"
        shutil.copytree(FIXTURE / "kitrecordergp", dest)
        shutil.copy(FIXTURE / "kitrecorder" / "engine.py", dest / "engine.py")
        enabled = "plugins:\n  enabled: [kitrecordergp]\n"
    (home / "config.yaml").write_text(
        "context:\n  engine: kitrecorder\n"
        + enabled
        + "model:\n  context_length: 200000\n"
        + (
            f"compression:\n  context_timeout_seconds: {timeout:g}\n"
            + "auxiliary:\n  compression:\n    timeout: 1\n"
            if timeout
            else ""
        )
    )
    return home


def read_records(path: Path) -> list[dict[str, Any]]:
    """The recorder's JSONL lines ([] when the engine never ran)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k and "TOKEN" not in k}
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    for var in ENV_KEYS:
        env.pop(var, None)
    env.update(extra, PYTHONPATH="", NO_PROXY="*", no_proxy="*")
    return env


def run_real(python: str, root: Path, convs: list[Conversation]) -> dict[str, dict[str, Any]]:
    """Run ``convs`` on the real host: one ``drive_hermes.py`` process per home (plugin path
    and timeout setting).

    Returns ``{name: {"records": [...], "journal": [...], "roles": [...]}}``.

    Raises:
        AssertionError: the driver failed (its stderr tail in the message).
    """
    results: dict[str, dict[str, Any]] = {}
    for plugin, timeout in sorted({(c.plugin, c.timeout) for c in convs}):
        picked = [c for c in convs if (c.plugin, c.timeout) == (plugin, timeout)]
        home = hermes_home(root / "real", plugin, timeout)
        tag = home.name
        server = start_server(Provider(seed=1))
        plan = {
            "base_url": server.url + "/v1",
            "admin_url": server.url,
            "conversations": [
                {
                    "name": c.name,
                    "env": dict(c.env, KIT_RECORD_PATH=str(root / f"real-{c.name}.jsonl")),
                    "faults": list(c.faults),
                    "replies": c.replies,
                    "ops": [{"op": op, "text": arg, "focus": arg} for op, arg in c.ops],
                }
                for c in picked
            ],
        }
        plan_path, out_path = root / f"plan-{tag}.json", root / f"out-{tag}.json"
        plan_path.write_text(json.dumps(plan))
        try:
            proc = subprocess.run(
                [python, str(FIXTURE / "drive_hermes.py"), str(plan_path), str(out_path)],
                env=_clean_env({"HERMES_HOME": str(home), "HOME": str(root / "user")}),
                cwd=str(root),
                capture_output=True,
                text=True,
                timeout=1200,
            )
        finally:
            server.shutdown()
        (root / f"stderr-{tag}.txt").write_text(proc.stderr)
        tb = proc.stderr.rfind("Traceback")
        assert proc.returncode == 0, f"drive_hermes.py exited {proc.returncode}: " + (
            proc.stderr[tb : tb + 4000] if tb >= 0 else proc.stderr[-4000:]
        )
        out = json.loads(out_path.read_text())
        for c in picked:
            results[c.name] = dict(out[c.name], records=read_records(root / f"real-{c.name}.jsonl"))
    return results


def kit_profile(name: str) -> HostProfile:
    """The profile ``name`` as the differential runs play it: with no compaction-timeout
    floor, the same setting :func:`run_real`'s driver gives the real host (0.22's 300 s
    floor would make a timeout run cost five minutes; the floor itself is tested without
    a real host, tests/host/test_hermes_profile.py)."""
    return dataclasses.replace(get_profile(name), timeout_floor_seconds=0.0)


def run_kit(root: Path, conv: Conversation, profile: str, monkeypatch: Any) -> dict[str, Any]:
    """Run ``conv`` on the kit's host in ``profile``, the engine found through the kit's own
    discovery in a home like the real one. Returns ``{"records", "journal", "roles"}``."""
    home = hermes_home(root / "kit", conv.plugin, conv.timeout)
    rec = root / f"kit-{profile}-{conv.name}.jsonl"
    if rec.exists():
        rec.unlink()
    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    for key, value in dict(conv.env, KIT_RECORD_PATH=str(rec)).items():
        monkeypatch.setenv(key, value)
    selection = discovery.select_engine(hermes_home=home, profile=profile)
    provider = Provider(seed=1, faults=FaultSchedule.from_json(list(conv.faults)))
    if conv.replies:
        from simulator.provider.admin import replies_from_json

        provider.replies = replies_from_json(conv.replies)
    config = HostConfig.from_config(discovery.read_config(home))
    session = HostSession(
        selection.engine,
        provider,
        model="test-model",
        context_length=200_000,
        profile=kit_profile(profile),
        clone=True,
        engine_source=selection.source,
        config=config,
    )
    session.start()
    for op, arg in conv.ops:
        if op == "turn":
            session.user_turn(arg)
        elif op == "new":
            session.new_session()
        elif op == "compress":
            session.compress(focus_topic=arg)
    journal = [
        {"status": e.status, "fault": e.fault, "stream": e.stream, "request": e.request}
        for e in provider.journal
    ]
    return {
        "records": read_records(rec),
        "journal": journal,
        "roles": [m.get("role") for m in session.history()],
    }


def call_sequence(records: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], str, str]]:
    """What an engine sees, call by call: (method, keyword names, argument shape, thread)."""
    return [
        (r["method"], tuple(r["kwargs"]), json.dumps(r["shape"], sort_keys=True), r["thread"])
        for r in records
    ]


def wire_messages(journal: list[dict[str, Any]]) -> list[str]:
    """Each provider request's ``messages``, as canonical JSON, after the documented
    normalisation (the system row's content; nothing else)."""
    out = []
    for entry in journal:
        messages = copy.deepcopy((entry.get("request") or {}).get("messages") or [])
        for m in messages:
            if isinstance(m, dict) and m.get("role") == "system":
                m["content"] = SYSTEM_PLACEHOLDER
        out.append(json.dumps(messages, sort_keys=True, ensure_ascii=False))
    return out


def first_difference(real: list[Any], kit: list[Any]) -> str:
    """A readable first difference of two sequences ("" when equal)."""
    for i, (a, b) in enumerate(zip(real, kit, strict=False)):
        if a != b:
            return f"item {i}:\n  real: {a}\n  kit:  {b}"
    if len(real) != len(kit):
        extra = (real if len(real) > len(kit) else kit)[min(len(real), len(kit)) :][:3]
        return f"lengths differ: real {len(real)}, kit {len(kit)}; extra: {extra}"
    return ""
