"""The structural gate (kit clause S0): every signature problem of the engine, in one message.

Run first (zope.interface ``verifyObject`` style): missing required methods, ``name`` not
a property, signatures the host cannot call (``handle_tool_call`` without ``**kwargs``:
the host passes ``messages=``; ``on_turn_complete``/``on_session_start``/``update_model``
without ``**kwargs``; ``select_context`` without its keyword arguments), and an engine that
does not subclass ContextEngine but quacks like one. S0 is kit practice; the problems it
lists belong to A1-A4, O1, O4, O6, O10, H3 and R4.
"""

from __future__ import annotations

import inspect
from typing import Any

from conformance.authoring.expect import MUST, fail
from conformance.authoring.registry import check
from conformance.checks.engine_calls import overrides

REQUIRED = ("update_from_response", "should_compress", "compress")


def _params(fn: Any):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


def _has_var_kw(params) -> bool:
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _accepts_positional(params, n: int) -> bool:
    """True when ``n`` positional arguments (after self) can be passed."""
    pos = [
        p
        for p in params.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()):
        return True
    required = [p for p in pos if p.default is inspect.Parameter.empty]
    return len(required) <= n <= len(pos)


def _accepts_keywords(params, names) -> bool:
    if _has_var_kw(params):
        return True
    return all(
        n in params
        and params[n].kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        for n in names
    )


def structural_problems(engine: Any, abc_class: Any) -> list[str]:
    """Every signature problem of ``engine`` as ``"[clause] text"`` strings (empty when fine)."""
    cls = type(engine)
    out: list[str] = []
    if abc_class is not None and not isinstance(engine, abc_class):
        out.append(
            f"[R4] {cls.__name__} does not subclass agent.context_engine.ContextEngine (it "
            "only quacks like one); Hermes' general plugin loader refuses such an engine (R4), and "
            "code that relies on the ABC's defaults finds none"
        )
    static_name = inspect.getattr_static(cls, "name", None)
    if static_name is None:
        out.append("[A1] no 'name' attribute; declare @property def name(self) -> str")
    elif inspect.isfunction(static_name) or isinstance(static_name, (staticmethod, classmethod)):
        out.append(
            "[A1] 'name' is a method, not a property: engine.name would be a bound method; "
            "decorate it with @property"
        )
    for method in REQUIRED:
        fn = getattr(engine, method, None)
        if not callable(fn):
            out.append(f"[A2-A4] required method {method}() is missing")
            continue
        if getattr(fn, "__isabstractmethod__", False):
            out.append(f"[A2-A4] {method}() is still abstract")
    checks = (
        (
            "update_from_response",
            "[A2]",
            lambda p: _accepts_positional(p, 1),
            "update_from_response(usage)",
        ),
        (
            "should_compress",
            "[A3]",
            lambda p: _accepts_positional(p, 0) and _accepts_positional(p, 1),
            "should_compress(prompt_tokens=None)",
        ),
        (
            "compress",
            "[A4]",
            lambda p: _accepts_positional(p, 1),
            "compress(messages, current_tokens=None, focus_topic=None)",
        ),
        (
            "on_session_start",
            "[O1]",
            lambda p: _accepts_positional(p, 1) and _has_var_kw(p),
            "on_session_start(session_id, **kwargs) (the host passes platform=, model=, ...)",
        ),
        (
            "update_model",
            "[O4]",
            lambda p: _accepts_keywords(
                p, ("model", "context_length", "base_url", "api_key", "provider", "api_mode")
            ),
            "update_model(model, context_length, base_url='', "
            "api_key='', provider='', api_mode='', **kwargs)",
        ),
        (
            "handle_tool_call",
            "[O6]",
            lambda p: _accepts_positional(p, 2) and _has_var_kw(p),
            "handle_tool_call(name, args, **kwargs) (the host passes messages=)",
        ),
        (
            "on_turn_complete",
            "[O10]",
            lambda p: (
                _accepts_positional(p, 1) and _has_var_kw(p) and _accepts_keywords(p, ("usage",))
            ),
            "on_turn_complete(messages, usage=None, **kwargs)",
        ),
        (
            "select_context",
            "[H3]",
            lambda p: (
                _accepts_positional(p, 1)
                and _accepts_keywords(
                    p, ("conversation_messages", "incoming_message", "budget_tokens")
                )
            ),
            "select_context(request_messages, *, conversation_messages=None, "
            "incoming_message=None, budget_tokens=0)",
        ),
    )
    for method, clause, ok, wanted in checks:
        fn = getattr(engine, method, None)
        if not callable(fn) or (method not in REQUIRED and not overrides(engine, method)):
            continue
        params = _params(fn)
        if params is None:
            continue
        if not ok(params):
            out.append(f"{clause} {method}{inspect.signature(fn)} cannot be called as {wanted}")
    return out


@check(
    "S0",
    "structural-gate",
    level=MUST,
    kind="structural",
    practice="kit",
    title="all signature problems of the engine, reported together",
)
def check_s0_structural_gate(ctx):
    """S0: the engine has the required surface with signatures the host can call."""
    engine = ctx.new_engine(configure=False)
    abc_class = None
    try:
        from agent.context_engine import ContextEngine as abc_class  # noqa: N813
    except Exception:
        pass
    problems = structural_problems(engine, abc_class)
    if problems:
        fail(
            "S0",
            MUST,
            f"{type(engine).__name__} surface",
            expected="the documented ContextEngine signatures",
            got=f"{len(problems)} problem(s): " + "; ".join(problems),
        )
