"""Engine factories that can name themselves again: ``--engine``, ``--engine-plugin``, callables.

- :func:`load_engine_factory` resolves ``--engine=MODULE:ATTR`` (plus ``--engine-kwargs``
  JSON) into an :class:`EngineFactory`; ATTR is a class or a factory callable and may be
  dotted (``pkg.mod:Outer.Engine``). Every failure raises :class:`EngineSpecError` with one
  paragraph naming what was tried and what to do; no traceback from inside the kit.
- :func:`load_plugin_factory` loads ``--engine-plugin DIR`` as the host does.
- :func:`as_factory` wraps any zero-argument callable given to ``run_conformance``.

Every factory answers :meth:`EngineFactory.cli_args` (the options that select it again, for
``Repro:`` lines), :meth:`~EngineFactory.record` (how replay files and the JSON verdict name
it) and :attr:`~EngineFactory.slug` (its folder name for failure files and snapshots).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.clauses.errors import EngineSpecError, exception_text, with_article

REQUIRED_METHODS = ("update_from_response", "should_compress", "compress")

SPEC_HELP = (
    "Give the engine as MODULE:ATTR, where ATTR is a ContextEngine subclass or a factory "
    "returning one, e.g. --engine=mypkg.engine:MyEngine (kwargs with --engine-kwargs='{\"k\": 1}')."
)


def parse_kwargs(text: str | None) -> dict[str, Any]:
    """Parse ``--engine-kwargs``: a JSON object, or empty.

    Raises:
        EngineSpecError: not valid JSON, or not an object.
    """
    if not text:
        return {}
    shown = text if len(text) <= 80 else text[:60] + f"...<{len(text)} chars>"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EngineSpecError(
            f"--engine-kwargs={shown!r} is not valid JSON ({exc.msg} at column {exc.colno}). "
            'Give a JSON object, e.g. --engine-kwargs=\'{"model": "test"}\'.'
        ) from None
    except RecursionError:  # nested deeper than the JSON parser goes
        raise EngineSpecError(_too_deep("--engine-kwargs")) from None
    if not isinstance(value, dict):
        raise EngineSpecError(
            f"--engine-kwargs must be a JSON object, got {type(value).__name__} ({shown!r})."
        )
    check_kwargs_depth(value, "--engine-kwargs")
    return value


#: How deep engine keyword arguments may nest (lists and objects); deeper is a usage error.
MAX_KWARGS_DEPTH = 64


def _too_deep(source: str) -> str:
    return (
        f"{source}: the JSON nests deeper than {MAX_KWARGS_DEPTH} levels of lists and objects. "
        "Give the engine a flat JSON object of its constructor arguments, e.g. "
        '--engine-kwargs=\'{"db_path": ":memory:"}\'.'
    )


def check_kwargs_depth(value: Any, source: str) -> None:
    """Refuse engine keyword arguments nested deeper than :data:`MAX_KWARGS_DEPTH`.

    Raises:
        EngineSpecError: naming ``source`` (where the kwargs came from) and what to give.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_KWARGS_DEPTH:
                raise EngineSpecError(_too_deep(source))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def is_engine_word(word: str) -> bool:
    """True when a positional word of a command line names an engine, ``MODULE:ATTR``: one
    ``:`` (a pytest node id has ``::``), no leading ``-`` or ``:``, and no file or folder of
    that name (``pytest mypkg:Engine``, ``context-engine-kit check|scenario mypkg:Engine``)."""
    return word.count(":") == 1 and not word.startswith(("-", ":")) and not os.path.exists(word)


def looks_like_engine(obj: Any) -> bool:
    """True when ``obj`` has ``name`` and the required methods (A1-A4)."""
    return all(callable(getattr(obj, m, None)) for m in REQUIRED_METHODS) and hasattr(obj, "name")


_SLUG_RE = re.compile(r"[^A-Za-z0-9_.-]+")


def engine_slug(spec: str, kwargs: dict[str, Any] | None = None) -> str:
    """Folder name of an engine: ``pkg.mod:Engine`` -> ``pkg.mod.Engine`` (+ ``-<8 hex>`` of
    its kwargs): snapshots and failure files of different engines never share a folder."""
    slug = _SLUG_RE.sub("_", spec.replace(":", ".")).strip("._") or "engine"
    if kwargs:
        digest = hashlib.sha256(json.dumps(kwargs, sort_keys=True).encode()).hexdigest()[:8]
        slug += "-" + digest
    return slug


@dataclass
class EngineFactory:
    """Builds a fresh engine per call: ``target(**kwargs)``.

    Attributes:
        spec: the ``MODULE:ATTR`` text (used in repro commands).
        target: the class or factory callable.
        kwargs: keyword arguments from ``--engine-kwargs``.
    """

    spec: str
    target: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> Any:
        return self.target(**self.kwargs)

    def cli_args(self) -> str:
        """The command-line options that select this engine again."""
        out = f"--engine={self.spec}"
        if self.kwargs:
            out += " --engine-kwargs='" + json.dumps(self.kwargs, sort_keys=True) + "'"
        return out

    @property
    def slug(self) -> str:
        """The engine's folder name (:func:`engine_slug`)."""
        return engine_slug(self.spec, self.kwargs)

    def record(self) -> dict[str, Any]:
        """How a replay file names this engine: ``{"spec": ..., "kwargs": {...}}``."""
        return {"spec": self.spec, "kwargs": dict(self.kwargs)}


class PluginFolderFactory(EngineFactory):
    """``--engine-plugin DIR``: the folder's engine, loaded as the host does (``spec`` = DIR)."""

    def __call__(self) -> Any:
        return self.target()

    def cli_args(self) -> str:
        """The option that selects this plugin folder again."""
        return f"--engine-plugin={self.spec}"

    @property
    def slug(self) -> str:
        """``plugin.<folder name>``: independent of where the folder sits on this machine."""
        return engine_slug(f"plugin:{Path(self.spec).name}")

    def record(self) -> dict[str, Any]:
        """How a replay file names this engine: ``{"plugin": DIR}``."""
        return {"plugin": self.spec}


class CallableFactory(EngineFactory):
    """Any zero-argument callable given to ``run_conformance``; ``spec`` is ``module:qualname``
    when that names the very same object (so ``Repro:`` lines can select it), else ""."""

    def __call__(self) -> Any:
        return self.target()

    def cli_args(self) -> str:
        """``--engine=module:qualname`` when the callable can be named, else ""."""
        return f"--engine={self.spec}" if self.spec else ""

    @property
    def slug(self) -> str:
        """The folder name of ``spec`` (``callable`` when it has none)."""
        return engine_slug(self.spec or "callable")

    def record(self) -> dict[str, Any]:
        """``{"spec": module:qualname}`` (empty when the callable cannot be named)."""
        return {"spec": self.spec, "kwargs": {}}


def as_factory(obj: Any) -> EngineFactory:
    """``obj`` as an :class:`EngineFactory` (returned as is when it is one already).

    Raises:
        TypeError: ``obj`` is not callable.
    """
    if isinstance(obj, EngineFactory):
        return obj
    if not callable(obj):
        raise TypeError(f"an engine factory must be callable, got {type(obj).__name__}")
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
    spec = ""
    if module and qualname and "<" not in qualname:
        try:
            target: Any = importlib.import_module(module)
            for part in qualname.split("."):
                target = getattr(target, part)
            spec = f"{module}:{qualname}" if target is obj else ""
        except Exception:  # not importable by name: no --engine form
            spec = ""
    return CallableFactory(spec, obj)


def load_plugin_factory(plugin_dir: str) -> PluginFolderFactory:
    """``--engine-plugin DIR`` as a factory: the folder's engine, loaded as the host does.

    Raises:
        EngineSpecError: not a folder, or no engine could be loaded (the R4-R6 findings).
    """
    from simulator.host import shim
    from simulator.host.discovery import load_engine_plugin

    if not os.path.isdir(plugin_dir):
        raise EngineSpecError(
            f"--engine-plugin={plugin_dir}: not a folder; give the plugin folder (the one "
            "holding __init__.py and plugin.yaml)"
        )
    shim.install()
    factory, report = load_engine_plugin(plugin_dir)
    if factory is None:
        problems = "; ".join(f"[{f.clause}] {f.message}" for f in report.failures())
        raise EngineSpecError(
            f"--engine-plugin={plugin_dir}: no engine could be loaded: {problems or 'no finding'}"
        )
    return PluginFolderFactory(str(plugin_dir), factory)


def factory_from_record(record: Any, *, deferred: bool = False) -> EngineFactory:
    """The factory a replay file names (:meth:`EngineFactory.record`); ``deferred``: resolved
    in a child process, never in this one (:func:`deferred_engine_factory`).

    Raises:
        EngineSpecError: the record names no engine, or it cannot be loaded.
    """
    if isinstance(record, dict) and record.get("plugin"):
        if deferred:
            return deferred_plugin_factory(str(record["plugin"]))
        return load_plugin_factory(str(record["plugin"]))
    if isinstance(record, dict) and record.get("spec"):
        kwargs = record.get("kwargs") or {}
        if not isinstance(kwargs, dict):
            raise EngineSpecError(
                "the replay file's engine kwargs are "
                f"{with_article(type(kwargs).__name__)}, not a JSON object; give the engine "
                "with --engine=MODULE:ATTR --engine-kwargs='{...}'"
            )
        check_kwargs_depth(kwargs, "the replay file's engine kwargs")
        if deferred:
            return deferred_engine_factory(str(record["spec"]), dict(kwargs))
        return load_engine_factory(str(record["spec"]), dict(kwargs))
    raise EngineSpecError(
        "the replay file names no engine the kit can load; give it with --engine=MODULE:ATTR"
    )


def _did_you_mean(name: str, namespace: Any) -> str:
    """`` Did you mean 'X'?`` for the closest public name of ``namespace`` ("" when none is
    close)."""
    import difflib

    names = [n for n in dir(namespace) if not n.startswith("_")]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return f" Did you mean {close[0]!r}?" if close else ""


def public_names(namespace: Any, limit: int = 16) -> str:
    """The public names of a module (or class) for an error message, likely engines first:
    engine classes defined there, imported engine classes, other classes and functions defined
    there, then the rest (imported typing names such as ``Any`` last); at most ``limit``,
    then ``... N more``. Serves the ``--engine`` error messages (R, A1)."""
    home = getattr(namespace, "__name__", None)

    def rank(name: str) -> tuple:
        obj = getattr(namespace, name, None)
        local = getattr(obj, "__module__", None) == home
        if inspect.isclass(obj):
            return (
                (0 if local else 1, name) if looks_like_engine(obj) else (2 if local else 4, name)
            )
        return (3 if local else 5, name)

    names = sorted((n for n in dir(namespace) if not n.startswith("_")), key=rank)
    more = f" ... {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more if names else "(none)"


def load_engine_factory(spec: str, kwargs: dict[str, Any] | None = None) -> EngineFactory:
    """Resolve ``MODULE:ATTR`` into an :class:`EngineFactory`.

    Raises:
        EngineSpecError: no colon, module not importable, attribute missing, or the
            object is neither an engine class nor a callable.
    """
    from simulator.host import shim

    shim.install()
    spec = (spec or "").strip()
    if ":" not in spec or spec.startswith(":") or spec.endswith(":"):
        raise EngineSpecError(f"--engine={spec!r} is not of the form MODULE:ATTR. {SPEC_HELP}")
    module_name, _, attr_path = spec.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # like `python -m`: an engine module in the current folder imports
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and missing != module_name and not module_name.startswith(missing + "."):
            raise EngineSpecError(
                f"--engine={spec!r}: module {module_name!r} was found, but importing "
                f"it failed because it imports {missing!r}, which is not installed here "
                f"(ModuleNotFoundError: {exc}). Install that dependency in this environment (e.g. "
                f"pip install {missing.split('.')[0]}, or your package's requirements) and rerun."
            ) from None
        from conformance.runtime.sandbox import CASE_PREFIX

        # the user's folders: not the kit's case folder the engine is resolved in
        mine = [p or "." for p in sys.path if CASE_PREFIX not in p]
        where = "; ".join(mine[:4])
        raise EngineSpecError(
            f"--engine={spec!r}: module {module_name!r} could not be imported "
            f"(ModuleNotFoundError: {exc}). Searched sys.path starting with: {where} ... "
            "Install your package in this environment (pip install -e .) or add its folder to "
            "PYTHONPATH."
        ) from None
    except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        # an engine module that raises SystemExit or KeyboardInterrupt at import must not end
        # the run with exit 0 and no verdict: it is a usage error like any other import error
        raise EngineSpecError(
            f"--engine={spec!r}: importing module {module_name!r} raised "
            f"{exception_text(exc)}. Fix the error in your module (run "
            f"python -c 'import {module_name}' to see the traceback)."
        ) from None
    target: Any = module
    for part in attr_path.split("."):
        if not hasattr(target, part):
            raise EngineSpecError(
                f"--engine={spec!r}: {getattr(target, '__name__', module_name)!r} has no attribute "
                f"{part!r}.{_did_you_mean(part, target)} Public names there: "
                f"{public_names(target)}. {SPEC_HELP}"
            )
        target = getattr(target, part)
    if inspect.isclass(target):
        if not looks_like_engine(target):
            missing = [m for m in REQUIRED_METHODS if not callable(getattr(target, m, None))]
            raise EngineSpecError(
                f"--engine={spec!r} names class {target.__name__!r}, which is not a context engine "
                f"(missing {', '.join(missing) or 'name'}). Subclass "
                "agent.context_engine.ContextEngine and implement name, update_from_response, "
                "should_compress and compress."
            )
    elif not callable(target):
        raise EngineSpecError(
            f"--engine={spec!r} names {with_article(type(target).__name__)}, not a class or "
            "factory. If it is an engine instance, give its class or a function that returns a "
            "new one. " + SPEC_HELP
        )
    return EngineFactory(spec, target, dict(kwargs or {}))


# -- the door: the kit's own process never runs the engine's code ---------------------------
# ``--engine=MODULE:ATTR`` and ``--engine-plugin DIR`` are resolved in a supervised child that
# hands back plain data (None, or the usage error's text); the factory the run keeps is
# deferred: it imports the module (or loads the plugin) where it is first called, which is a
# case's supervised child. So neither the module's import-time code nor the constructor runs
# in the process that writes the verdict, and nothing they do (patching the kit's verdict, say)
# reaches it. ``run_conformance(factory)`` and the conftest fixture route hand the kit an
# object the caller imported already: the kit still builds engines only in children.


class DeferredEngineFactory(EngineFactory):
    """``--engine=MODULE:ATTR`` resolved where it is first called (``target`` is None until
    then); :func:`deferred_engine_factory` made sure it resolves."""

    def __call__(self) -> Any:
        return self.resolve()(**self.kwargs)

    def resolve(self) -> Callable[..., Any]:
        """The class or factory callable (imports the module the first time).

        Raises:
            EngineSpecError: it no longer resolves.
        """
        if self.target is None:
            self.target = load_engine_factory(self.spec, self.kwargs).target
        return self.target


class DeferredPluginFactory(PluginFolderFactory):
    """``--engine-plugin DIR`` loaded where it is first called (``target`` None until then)."""

    def __call__(self) -> Any:
        return self.resolve()()

    def resolve(self) -> Callable[..., Any]:
        """The folder's engine factory (loads the plugin the first time).

        Raises:
            EngineSpecError: no engine could be loaded.
        """
        if self.target is None:
            self.target = load_plugin_factory(self.spec).target
        return self.target


def resolve_in_child(load: Callable[[], Any], what: str, timeout: float) -> None:
    """Run ``load()`` (import the engine's module, load its plugin) in a supervised child, in a
    sandbox with the network blocked, and return nothing: this process never runs the code.

    Raises:
        EngineSpecError: what ``load()`` raised, or the child died or hung (naming ``what``).
    """
    from conformance.runtime.sandbox import Sandbox, block_network, install_audit_hook, watching
    from conformance.runtime.supervisor import Died, Hung, Worker, fork_available

    def serve(_task: Any) -> None:
        sandbox = Sandbox(os.environ.get("HERMES_HOME") or None)
        try:
            with watching(sandbox):
                sandbox.new_home()
                with block_network():
                    load()
        finally:
            sandbox.close()

    if not fork_available():  # nowhere to put it: resolved here (documented)
        load()
        return
    worker = Worker(serve, on_start=install_audit_hook)
    try:
        outcome = worker.call(None, call_limit=timeout, case_limit=timeout)
    finally:
        worker.close()
    if isinstance(outcome, Died):
        raise EngineSpecError(
            f"{what}: loading the engine ended its process: it {outcome.describe()}"
        )
    if isinstance(outcome, Hung):
        raise EngineSpecError(
            f"{what}: loading the engine did not finish within {timeout:g} s (an import that "
            "blocks: a connection, a lock, a sleep at module level?)"
        )


def deferred_engine_factory(
    spec: str, kwargs: dict[str, Any] | None = None, *, timeout: float = 120.0
) -> DeferredEngineFactory:
    """``--engine=MODULE:ATTR`` as a factory this process never calls into: the spec is
    resolved once in a child (:func:`resolve_in_child`, the same errors as
    :func:`load_engine_factory`), and the factory imports the module where it is called.

    Raises:
        EngineSpecError: the spec does not resolve.
    """
    spec = (spec or "").strip()
    kwargs = dict(kwargs or {})
    resolve_in_child(lambda: load_engine_factory(spec, kwargs), f"--engine={spec!r}", timeout)
    return DeferredEngineFactory(spec, None, kwargs)


def deferred_plugin_factory(plugin_dir: str, *, timeout: float = 120.0) -> DeferredPluginFactory:
    """``--engine-plugin DIR`` as a factory this process never calls into (loaded once in a
    child to check it, then where it is called); a relative ``DIR`` is taken from the current
    folder.

    Raises:
        EngineSpecError: not a folder, or no engine could be loaded.
    """
    if not os.path.isdir(plugin_dir):
        load_plugin_factory(plugin_dir)  # raises the usual "not a folder" error
    full = os.path.abspath(plugin_dir)  # the children work in folders of their own
    resolve_in_child(lambda: load_plugin_factory(full), f"--engine-plugin={plugin_dir}", timeout)
    return DeferredPluginFactory(full, None)
