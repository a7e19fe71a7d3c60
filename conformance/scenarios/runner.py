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

This module plays the steps; what the file scripts (host configuration, user texts, model
replies, tool outputs) is turned into the host's inputs by
:mod:`conformance.scenarios.scripted_inputs`, the invariants are
:mod:`conformance.scenarios.step_invariants`, and which compactions committed and whether the
engine compacts at all is :mod:`conformance.scenarios.compactions`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from conformance.clauses.errors import exception_text
from conformance.runtime.supervisor import supervised
from conformance.runtime.timeouts import calling, constructor_label
from conformance.scenarios.compactions import PassSettler, compaction_reason, probe_compacts
from conformance.scenarios.engine_attr import evaluate_check
from conformance.scenarios.observe import ScenarioRecorder
from conformance.scenarios.run import (
    DEFAULT_CONTEXT_LENGTH,
    CheckOutcome,
    ScenarioRun,
    StepRecord,
)
from conformance.scenarios.scripted_inputs import (
    ScenarioReplies,
    ScriptedUser,
    generated_text,
    host_config,
    step_brief,
)
from conformance.scenarios.spec import Scenario, field_name
from conformance.scenarios.step_invariants import UidWatch, orphan_findings
from simulator.host.gateway import Gateway
from simulator.host.session import HostSession, default_tool_executor
from simulator.provider.core import Provider
from simulator.provider.faults import Fault
from simulator.store.memory import MemoryStore

DEFAULT_MODEL = "sim-model"
_RUN_IDS = itertools.count(1)


class _Runner:
    """One play of a scenario: the host's agents, provider, store and recorder, and the steps
    played on them (:func:`run_scenario` drives it)."""

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
        self.config = host_config(host, timeout)
        self.cancelled = threading.Event()  # set when the scenario's time limit expired
        # True while the engine's constructor runs (names it on a timeout)
        self.constructing = False
        self.replies = ScenarioReplies()
        self.provider = Provider(seed=scenario.seed, replies=self.replies)
        # session ids never repeat across the runs of a process, as Hermes' do not: engines
        # with a durable store (one file per HERMES_HOME) key state by session id
        self.store = MemoryStore(id_prefix=f"{scenario.name}-run{next(_RUN_IDS)}")
        self.recorder = ScenarioRecorder()
        self.run = ScenarioRun(scenario, self.recorder, context_length=self.context_length)
        self.user = ScriptedUser(scenario.seed)
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
        self.uids = UidWatch()  # U3 along the main session's lineage
        self.settler = PassSettler()

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

    # -- invariants -----------------------------------------------------------------------
    def live_sessions(self) -> list[tuple[str, HostSession]]:
        out = [("main", self.main)] if self.main is not None else []
        if self.subagent is not None:
            out.append(("subagent", self.subagent))
        if self.run.gateway is not None:
            out += [(f"gateway '{k}'", s) for k, s in self.run.gateway.sessions.items()]
        return out

    def after_step(self, label: str) -> None:
        """The invariants after the step ``label`` (V2 on every live transcript, U3 on the main
        session), then the compactions settled from the host's pass outcomes."""
        self.run.orphans += orphan_findings(label, self.live_sessions())
        if self.main is not None:  # U3: same role and content keeps its message_uid
            finding = self.uids.check(label, self.main.messages)
            if finding is not None:
                self.run.uid_changes.append(finding)
        self.settle_passes()

    def settle_passes(self) -> None:
        """Mark each recorded compaction committed / timed out from the host's pass outcomes."""
        sessions = [s for _, s in self.run.sessions]
        if self.run.gateway is not None:
            sessions += list(self.run.gateway.hygiene_agents)
        self.settler.settle(sessions, self.recorder.compactions)

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
            label = f"{field_name(path)} {kind}" + step_brief(step[kind])
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
            texts, replies, interrupt = self.user.texts(value)
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
            texts, replies, _ = (
                self.user.texts(value["user"]) if "user" in value else ([], [], False)
            )
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
            self.uids.forget()
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
        # expectations about compactions apply only to an engine that compacts
        engine = getattr(self.main, "engine", None) or self.registered
        self.run.compacts = compaction_reason(
            engine, self.recorder, self.factory, self.model, self.context_length
        )
        return self.run


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
        run.hung_method = method or ""
        run.main = runner.main
    return runner.run


__all__ = [
    "run_scenario",
    "ScenarioRun",
    "ScenarioReplies",
    "StepRecord",
    "CheckOutcome",
    "generated_text",
    "probe_compacts",
]
