"""Run a scenario: drive the engine through the reference host and the provider simulator.

:func:`run_scenario` (``Scenario`` + zero-argument engine factory -> :class:`ScenarioRun`)
plays every step on :class:`simulator.host.session.HostSession` agents sharing one
:class:`~simulator.provider.core.Provider`, one :class:`~simulator.store.memory.MemoryStore`
and one :class:`~conformance.scenarios.observe.ScenarioRecorder`:

=====================  =====================================================================
``user``               one turn per repetition (``HostSession.user_turn``); ``replies`` are the
                       simulated model replies of that turn, tool calls included (L1, A2)
``fault``              schedule a provider fault on the next request(s) (H4 retries, fallback)
``model``              a model switch (``update_model``; K1, K2, O4)
``compress``           ``/compress [focus]`` (A5)
``reset`` / ``new``    ``on_session_reset`` / the /new transition (O3, L1)
``end``                a real boundary: ``on_session_end`` (O2)
``restart``            the agent ends (``on_session_end``), then a new process: a new engine
                       from the factory, cloned for the agent, ``update_model`` and
                       ``on_session_start`` with the same session id, history restored from
                       the store (U2, U3)
``branch`` / ``rotate``  the store copies the session into a child; the agent continues there
                       with the restored rows (U3): ``branch`` sends
                       ``on_session_start(child, old_session_id=, boundary_reason="branch")``
                       (kit practice), ``rotate`` what Hermes sends when a compaction rotates
                       the session (``on_session_end(old)``, then ``on_session_start(child,
                       boundary_reason="compression", old_session_id=old)``); with
                       ``host.compression.in_place: false`` every committed compaction
                       rotates, mid-turn too (L1)
``timeout_compactions``  later passes are treated as timed out by the host (TS2)
``subagent``           ``spawn_subagent`` (clone of the registered engine, C1, C2) runs ``steps``
``gateway``            a gateway message: B7 hygiene, then the turn, on the conversation's agent
``check``              expectations evaluated at this point (``engine_attr``)
=====================  =====================================================================

After every step the runner checks the invariants (V2 pairs on every live transcript, U3
uid stability along the main session's lineage). An exception escaping a step stops the
run; expectations then report that step as the one that could not complete. So does the
run's time limit (``timeout``, a hanging engine), naming the engine method in flight.
Determinism: seeded text, seeded provider, the virtual clock; no wall clock decides.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
from collections.abc import Callable
from typing import Any

from conformance.authoring.expect import v2_problems
from conformance.clauses.errors import exception_text
from conformance.runtime.supervisor import supervised
from conformance.runtime.timeouts import calling, constructor_label
from conformance.scenarios.engine_attr import evaluate_check
from conformance.scenarios.observe import Finding, ScenarioRecorder
from conformance.scenarios.run import (
    DEFAULT_CONTEXT_LENGTH,
    CheckOutcome,
    ScenarioRun,
    StepRecord,
)
from conformance.scenarios.spec import Scenario, field_name
from simulator.host.gateway import Gateway
from simulator.host.scenarios import user_message
from simulator.host.session import HostConfig, HostSession, default_tool_executor
from simulator.provider.core import Provider
from simulator.provider.faults import Fault
from simulator.provider.replies import (
    EchoReplies,
    Reply,
    ReplyPolicy,
    is_summary_request,
    request_text,
    summarise,
)
from simulator.store.memory import MemoryStore

DEFAULT_MODEL = "sim-model"
_RUN_IDS = itertools.count(1)
_WORDS = (
    "alpha beta gamma delta config parser request index module handler cache token budget "
    "session compress summary output result record field value error retry build deploy"
).split()


class ScenarioReplies(ReplyPolicy):
    """Reply mode of a scenario: the current turn's scripted replies, then echo.

    Summary requests get the B4 summary (:func:`summarise`). A fault answers without
    consuming a scripted reply (the provider never asks the policy then).
    """

    def __init__(self) -> None:
        self.queue: list[Reply] = []
        self._echo = EchoReplies()

    def load(self, replies: list[Any]) -> None:
        """Queue this turn's replies (text or ``{content, tool_calls, finish_reason}``)."""
        self.queue = [
            Reply(content=r)
            if isinstance(r, str)
            else Reply(
                content=r.get("content"),
                tool_calls=[dict(c) for c in r.get("tool_calls") or ()],
                finish_reason=r.get("finish_reason"),
            )
            for r in replies
        ]

    def reply(self, request, index, seed):
        """The next scripted reply, a B4 summary for a summary request, or an echo."""
        messages = request.get("messages") or []
        if is_summary_request(messages):
            return Reply(content=summarise(request_text(messages)))
        if self.queue:
            return self.queue.pop(0)
        return self._echo.reply(request, index, seed)


def generated_text(n_bytes: int, seed: Any) -> str:
    """Deterministic filler of about ``n_bytes`` bytes (ASCII words, newline every 12 words)."""
    rng = random.Random(f"tool-output:{seed}")
    parts: list[str] = []
    size = 0
    while size < n_bytes:
        word = rng.choice(_WORDS)
        parts.append(word + ("\n" if len(parts) % 12 == 11 else " "))
        size += len(parts[-1])
    return "".join(parts)[:n_bytes]


class _Runner:
    def __init__(
        self,
        scenario: Scenario,
        factory: Callable[[], Any],
        host_profile: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.sc = scenario
        self.factory = factory
        host = scenario.host
        self.model = host.get("model", DEFAULT_MODEL)
        self.context_length = int(host.get("context_length", DEFAULT_CONTEXT_LENGTH))
        self.config = HostConfig.from_config({"compression": host.get("compression") or {}})
        comp = host.get("compression") or {}
        if "in_place" in comp:
            self.config.compression_in_place = bool(comp["in_place"])
        if "failure_cooldown_seconds" in comp:
            self.config.failure_cooldown_seconds = float(comp["failure_cooldown_seconds"])
        for key in ("max_retries", "fallback_model", "fallback_context_length", "seconds_per_turn"):
            if key in host:
                setattr(self.config, key, host[key])
        if timeout is not None and self.config.context_timeout_seconds > 0:
            # the kit's per-check limit bounds the host's compaction timeout (0 = inline stays
            # inline)
            self.config.context_timeout_seconds = min(
                self.config.context_timeout_seconds, float(timeout)
            )
            self.config.timeout_limit_seconds = float(timeout)  # no profile floor goes past it
        self.cancelled = threading.Event()  # set when the scenario's time limit expired
        self.constructing = (
            False  # True while the engine's constructor runs (names it on a timeout)
        )
        self.replies = ScenarioReplies()
        self.provider = Provider(seed=scenario.seed, replies=self.replies)
        # session ids never repeat across the runs of a process, as Hermes' do not: engines
        # with a durable store (one file per HERMES_HOME) key state by session id
        self.store = MemoryStore(id_prefix=f"{scenario.name}-run{next(_RUN_IDS)}")
        self.recorder = ScenarioRecorder()
        self.run = ScenarioRun(scenario, self.recorder, context_length=self.context_length)
        self.turn_no = 0
        self.outputs = {
            name: (v if isinstance(v, str) else generated_text(v["bytes"], v.get("seed", name)))
            for name, v in scenario.tool_outputs.items()
        }
        self.session_kwargs = dict(
            model=self.model,
            context_length=self.context_length,
            profile=host.get("profile") or host_profile,
            config=self.config,
            recorder=self.recorder,
            cache_control=host.get("cache_control"),
            tool_executor=self.tool_executor,
        )
        if "system_prompt" in host:
            self.session_kwargs["system_prompt"] = host["system_prompt"]
        self.registered = None
        self.main: HostSession | None = None
        self.subagent: HostSession | None = None
        self.agent_counts: dict[str, int] = {}
        self._uid_prev: dict[str, tuple[str, ...]] | None = None
        self._passes_seen: dict[int, int] = {}

    # -- helpers --------------------------------------------------------------------------
    def build(self) -> Any:
        """A new engine from the factory; while it runs, a timeout names the constructor."""
        self.constructing = True
        try:
            with calling(constructor_label(self.factory)[:-2]):
                return self.factory()
        finally:
            self.constructing = False

    def tool_executor(self, name: str, arguments: Any) -> str:
        if name in self.outputs:
            return self.outputs[name]
        return default_tool_executor(name, arguments)

    def label_agent(self, kind: str, session: HostSession) -> str:
        self.agent_counts[kind] = self.agent_counts.get(kind, 0) + 1
        label = kind if self.agent_counts[kind] == 1 else f"{kind}-{self.agent_counts[kind]}"
        self.recorder.agents[id(session.engine)] = label
        self.run.sessions.append((label, session))
        return label

    def new_main(self) -> HostSession:
        self.registered = self.build()
        s = HostSession(
            self.registered, self.provider, self.store, clone=True, **self.session_kwargs
        )
        self.label_agent("main", s)
        s.start()
        return s

    def restore(self, session_id: str) -> HostSession:
        """A new process: a fresh registered engine, the agent's clone, history from the store."""
        self.registered = self.build()
        s = HostSession(
            self.registered, self.provider, self.store, clone=True, **self.session_kwargs
        )
        self.label_agent("main", s)
        s.restore(session_id)
        return s

    def texts(self, spec: Any) -> tuple[list[str], list[Any], bool]:
        """(texts, replies, interrupt) of a user spec; generated text when ``topic``/``words``."""
        if isinstance(spec, str):
            return [spec], [], False
        repeat = int(spec.get("repeat", 1))
        out = []
        for _ in range(repeat):
            self.turn_no += 1
            if "text" in spec and "topic" not in spec and "words" not in spec:
                out.append(spec["text"])
            else:
                text = user_message(
                    spec.get("topic", "database"),
                    self.turn_no,
                    self.sc.seed,
                    int(spec.get("words", 60)),
                )
                out.append((spec["text"] + " " + text) if "text" in spec else text)
        return out, list(spec.get("replies") or ()), bool(spec.get("interrupt", False))

    # -- invariants -----------------------------------------------------------------------
    def live_sessions(self) -> list[tuple[str, HostSession]]:
        out = [("main", self.main)] if self.main is not None else []
        if self.subagent is not None:
            out.append(("subagent", self.subagent))
        if self.run.gateway is not None:
            out += [(f"gateway '{k}'", s) for k, s in self.run.gateway.sessions.items()]
        return out

    def after_step(self, label: str) -> None:
        for name, s in self.live_sessions():
            problems = v2_problems(s.messages)
            if problems:
                self.run.orphans.append(
                    Finding(label, f"{name} transcript ({len(s.messages)} messages): {problems[0]}")
                )
        self.check_uids(label)
        self.settle_passes()

    def check_uids(self, label: str) -> None:
        """U3: a message still present with the same role and content keeps its message_uid."""
        if self.main is None:
            return
        current: dict[str, tuple[str, ...]] = {}
        for m in self.main.messages:
            uid = m.get("message_uid")
            if isinstance(uid, str) and uid:
                key = json.dumps(
                    [m.get("role"), m.get("content"), m.get("tool_call_id")],
                    sort_keys=True,
                    ensure_ascii=False,
                    default=repr,
                )
                current[key] = current.get(key, ()) + (uid,)
        prev = self._uid_prev
        if prev is not None:
            for key, uids in current.items():
                old = prev.get(key)
                if old and not set(old) & set(uids) and len(uids) <= len(old):
                    role, content, _ = json.loads(key)
                    text = (
                        content
                        if isinstance(content, str)
                        else json.dumps(content, ensure_ascii=False)
                    )
                    self.run.uid_changes.append(
                        Finding(
                            label,
                            f"the {role} message {text[:50]!r} had message_uid "
                            f"{old[0]} and now has {uids[0]}",
                        )
                    )
                    break
        self._uid_prev = current

    def settle_passes(self) -> None:
        """Mark each recorded compaction committed / timed out from the host's pass outcomes."""
        sessions = [s for _, s in self.run.sessions]
        if self.run.gateway is not None:
            sessions += list(self.run.gateway.hygiene_agents)
        pending: dict[int, list[Any]] = {}
        for ev in self.recorder.compactions:
            if ev.committed is None:
                pending.setdefault(ev.engine_id, []).append(ev)
        for s in sessions:
            key = id(s)
            seen = self._passes_seen.get(key, 0)
            new = s.passes[seen:]
            self._passes_seen[key] = len(s.passes)
            queue = pending.get(id(s.engine), [])
            for outcome in new:
                if queue:
                    ev = queue.pop(0)
                    ev.committed = bool(outcome.committed and not outcome.timed_out)
                    ev.timed_out = bool(outcome.timed_out)
                    ev.declined = bool(outcome.noop or outcome.no_progress)
                    ev.no_progress = bool(outcome.no_progress)

    # -- steps ----------------------------------------------------------------------------
    def run_steps(
        self, steps: list[dict[str, Any]], base: tuple, in_subagent: bool = False
    ) -> bool:
        for i, step in enumerate(steps):
            if (
                self.cancelled.is_set()
            ):  # the run was abandoned at its time limit: stop at the next step
                return False
            path = base + (i,)
            kind = next(iter(step))
            label = f"{field_name(path)} {kind}" + _brief(step[kind])
            record = StepRecord(label)
            self.run.steps.append(record)
            self.recorder.step = label
            try:
                self.step(kind, step[kind], path, label, record, in_subagent)
            except BaseException as exc:  # an engine must not end the host process
                if isinstance(exc, KeyboardInterrupt) and not supervised():
                    raise  # in this process it is the user's Ctrl-C (a child ignores SIGINT)
                if not self.cancelled.is_set():
                    self.run.stopped = (label, exception_text(exc, 400))
                return False
            self.after_step(label)
            if self.run.stopped:
                return False
        return True

    def session(self, in_subagent: bool) -> HostSession:
        return self.subagent if in_subagent and self.subagent is not None else self.main

    def step(
        self, kind: str, value: Any, path: tuple, label: str, record: StepRecord, in_subagent: bool
    ) -> None:
        s = self.session(in_subagent)
        if kind == "user":
            texts, replies, interrupt = self.texts(value)
            for n, text in enumerate(texts):
                if self.cancelled.is_set():
                    return
                if len(texts) > 1:
                    self.recorder.step = f"{label} (turn {n + 1}/{len(texts)})"
                self.replies.load(replies)
                record.turns.append(s.user_turn(text, interrupt=interrupt))
                self.replies.load([])
                if len(texts) > 1:
                    self.after_step(self.recorder.step)
        elif kind == "gateway":
            if self.run.gateway is None:
                kwargs = dict(self.session_kwargs, provider=self.provider, store=self.store)
                self.run.gateway = Gateway(self.build(), **kwargs)
            key = value["conversation"]
            if key not in self.run.gateway.sessions:
                self.label_agent(f"gateway-{key}", self.run.gateway.session(key))
            if "model" in value:
                self.run.gateway.sessions[key].switch_model(
                    value["model"]["name"], value["model"].get("context_length")
                )
            texts, replies, _ = self.texts(value["user"]) if "user" in value else ([], [], False)
            for text in texts:
                if self.cancelled.is_set():
                    return
                self.replies.load(replies)
                n_agents = len(self.run.gateway.hygiene_agents)
                record.turns.append(self.run.gateway.handle_message(key, text))
                for agent in self.run.gateway.hygiene_agents[n_agents:]:
                    label = self.label_agent("hygiene", agent)
                    for ev in self.recorder.compactions:  # the pass ran before the agent was known
                        if ev.agent == "?" and ev.engine_id == id(agent.engine):
                            ev.agent = label
                self.replies.load([])
        elif kind == "fault":
            base = len(self.provider.journal) + int(value.get("next", 0))
            at = list(range(base, base + int(value.get("count", 1))))
            kwargs = {k: value[k] for k in ("status", "retry_after") if k in value}
            self.provider.faults.add(Fault(value["kind"], at=at, **kwargs))
        elif kind == "model":
            s.switch_model(value["name"], value.get("context_length"))
        elif kind == "compress":
            s.compress(focus_topic=value)
        elif kind == "reset":
            s.reset()
        elif kind == "new":
            s.new_session()
            self._uid_prev = None
        elif kind == "end":
            s.end()
        elif kind == "restart":
            if in_subagent:
                raise ValueError(
                    "restart inside a subagent is not supported; restart the main agent"
                )
            self.main.end()
            self.main = self.restore(self.main.session_id)
        elif kind == "branch":
            s.branch(value.get("upto") if isinstance(value, dict) else None)
        elif kind == "rotate":
            s.rotate()
        elif kind == "timeout_compactions":
            s.force_compress_timeout = bool(value)
        elif kind == "subagent":
            child = s.spawn_subagent(
                model=value.get("model"), context_length=value.get("context_length")
            )
            self.label_agent("subagent", child)
            previous, self.subagent = self.subagent, child
            try:
                ok = self.run_steps(value["steps"], path + ("subagent", "steps"), in_subagent=True)
            finally:
                self.subagent = previous
            self.recorder.step = label
            if not ok:
                return
        elif kind == "check":
            for exp in self.sc.expectations:
                if exp.step == field_name(path):
                    self.run.checks[exp.id] = evaluate_check(exp, self, label)
        else:  # the schema forbids it; kept for data built in code
            raise ValueError(f"unknown step {kind!r}")

    def execute(self) -> ScenarioRun:
        self.recorder.step = "(start)"
        try:
            self.main = self.new_main()
        except (Exception, SystemExit) as exc:
            self.run.stopped = ("(start)", exception_text(exc, 400))
            return self.run
        self.after_step("(start)")
        self.run_steps(self.sc.steps, ("steps",))
        self.settle_passes()
        self.run.main = self.main
        self.run.compacts = self.engine_compacts()
        return self.run

    def engine_compacts(self) -> str:
        """Why the engine counts as one that compacts (a non-empty reason), or "" when it
        never does: it declares ``compressor``, asked to compact in this run, had a pass
        committed, or, probed on a fresh engine, asks to at twice its threshold or drops rows
        from a history over it. Expectations about compactions apply only to such engines
        (no clause asks an engine to compact)."""
        engine = getattr(self.main, "engine", None) or self.registered
        if "compressor" in (getattr(engine, "conformance_capabilities", None) or ()):
            return "it declares the 'compressor' capability"
        if self.recorder.asked_to_compact:
            return "its should_compress() answered True in this run"
        if any(e.committed for e in self.recorder.compactions):
            return "a compaction of it was committed in this run"
        try:
            return probe_compacts(self.factory, self.model, self.context_length)
        except Exception:  # a probe that fails says nothing; the run's own record stands
            return ""


def probe_compacts(factory: Callable[[], Any], model: str, context_length: int) -> str:
    """Probe a fresh engine from ``factory`` outside the run (its calls are not recorded):
    ``update_model(model, context_length)``, then ``should_compress(2 x threshold)``; if that
    is not True, ``compress()`` of a plain history over the threshold. Returns the reason it
    compacts, or "" (it never asked and removed no row)."""
    from conformance.authoring.strategies import probe_history
    from simulator.host.calls import compress_kwargs, update_model_kwargs
    from simulator.provider.tokens import count_messages

    engine = factory()
    if callable(getattr(engine, "update_model", None)):
        engine.update_model(**update_model_kwargs(model, context_length))
    threshold = int(getattr(engine, "threshold_tokens", 0) or 0) or context_length // 2
    if engine.should_compress(2 * threshold) is True:
        return "a fresh engine asks to compact at twice its threshold_tokens"
    history = probe_history(threshold)
    out = engine.compress(
        [dict(m) for m in history],
        **compress_kwargs(engine, current_tokens=count_messages(history)),
    )
    if isinstance(out, list) and len(out) < len(history):
        return "a fresh engine drops rows when compress() is called over its threshold_tokens"
    return ""


def _brief(value: Any) -> str:
    if value is None or value is True:
        return ""
    if isinstance(value, str):
        return f" {value[:40]!r}"
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], str):
            return f" {value['text'][:40]!r}"
        if "topic" in value or "words" in value:
            return f" <{value.get('words', 60)} words on {value.get('topic', 'database')}>"
        if "kind" in value:
            return f" {value['kind']}"
        if "name" in value:
            return f" {value['name']}"
        if "conversation" in value:
            return f" {value['conversation']!r}"
    return ""


def run_scenario(
    scenario: Scenario,
    engine_factory: Callable[[], Any],
    host_profile: str | None = None,
    timeout: float | None = None,
    builtin_factory: Callable[[], Any] | None = None,
) -> ScenarioRun:
    """Play ``scenario`` with engines from ``engine_factory`` (zero-argument callable).

    ``host_profile`` (``--host-profile``) is the host played when the file names none.
    ``builtin_factory`` is the built-in compressor an agent falls back to (C3; None: the
    host's own minimal one).
    ``timeout`` (seconds, ``--conformance-timeout``; default 120 s) is the limit of one engine
    call, and also bounds the host's compaction timeout (TS1,
    ``compression.context_timeout_seconds``; a file's smaller value, or 0 for inline passes, is
    kept). The steps run on a watched daemon thread: when one engine call stays in flight
    longer than the limit the run is abandoned there and ``stopped``/``timed_out`` name the step
    and the method (e.g. ``should_compress() did not return within 1 s``), so a hanging engine
    fails this scenario and the caller goes on. A slow engine whose calls each return in time
    is no hang, however long the whole run takes.

    Returns a :class:`ScenarioRun`; never raises for an engine failure (the failing step
    is recorded in ``stopped``). Raises only for kit bugs and KeyboardInterrupt (Ctrl-C).
    """
    from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
    from conformance.runtime.supervisor import Hung, supervise_inprocess
    from simulator.host import shim

    shim.install()
    runner = _Runner(scenario, engine_factory, host_profile, timeout)
    runner.config.builtin_factory = builtin_factory
    limit = float(timeout) if timeout is not None else DEFAULT_CHECK_TIMEOUT_S
    hung = supervise_inprocess(runner.execute, call_limit=limit, case_limit=float("inf"))
    if isinstance(hung, Hung):
        runner.cancelled.set()
        run = runner.run
        method = hung.method  # the constructor is in flight as "MyEngine" (calling())
        if method:
            what = f"{method}()"
        else:
            what = "the engine (no engine method in flight: its constructor or the host)"
        run.stopped = (
            run.recorder.step,
            f"timeout: {what} did not return within {limit:g} s (--conformance-timeout, the "
            "limit of one engine call; the call was abandoned and the run went on)",
        )
        run.timed_out = True
        run.main = runner.main
    return runner.run


__all__ = [
    "run_scenario",
    "ScenarioRun",
    "ScenarioReplies",
    "StepRecord",
    "CheckOutcome",
    "generated_text",
]
