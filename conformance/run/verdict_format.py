"""The JSON verdict file: its shape, its format version and its one writer.

The document itself is built by :meth:`conformance.run.verdict.Verdict.to_json`, or, for a run
that could not start, by :func:`error_verdict` here (written by :func:`write_error_verdict`;
:func:`engine_record` names the engine a command line gave); this module puts
``format_version`` first (:func:`versioned`) and writes the file (:func:`write_verdict_json`).

JSON shape (``--conformance-json`` / ``context-engine-kit check --json`` /
``run_conformance(json_path=...)``; every one written by :func:`write_verdict_json`; JSON Schema
``conformance/schemas/verdict.schema.json``, checked by
:func:`conformance.run.verdict_schema.validate_verdict`)::

    {"format_version": 1,                           # VERDICT_FORMAT_VERSION, always the first key
     "engine": {"spec", "kwargs"} | {"plugin"} | null,  # as replay files name it
     "kit_version": str, "contract_version": str, "host_abc": str,
     "host_profile": str, "profile": str,           # null in an ERROR verdict when not known
     "verdict": "PASS" | "FAIL" | "PARTIAL" | "NO CHECK RAN" | "INTERRUPTED" | "ERROR",
                                                     # Verdict.word; PARTIAL: nothing failed,
                                                     # the budget cut cases short (exit 6);
                                                     # ERROR (or INTERRUPTED before the first
                                                     # case) with "error" when the run could not
                                                     # start (error_verdict, below)
     "error"?: str,                                  # that usage error's message
     "strict": bool,                                 # --conformance-strict was given
     "counts": {"total", "passed", "failed", "skipped", "xfailed", "xpassed", "error"},
     "partly_checked": n,                            # passed/skipped rows the budget cut short
     "failures_by_level": {"MUST": n, "SHOULD": n},  # failed + error results per level
     "other_failures": n,                            # failed non-conformance tests of the session
     "snapshot_mismatches": n,                       # failed snapshot cases (D1; they fail the run)
     "snapshot_errors": n,                           # snapshot cases that could not run
     "cases_run": n, "cases_total": n,               # an interrupted run says how far it got
     "root_causes": [{"key", "first", "cases", "clause", "level"}],  # one per root cause
     "llm": {"calls", "requests", "failed_requests", "prompt_tokens", "completion_tokens",
             "cached_tokens", "cache_write_tokens", "cost_usd"},  # the engine's own LLM calls
     "results": [{"check", "clause", "level": "MUST" | "SHOULD",
                  "outcome": "passed" | "failed" | "skipped" | "xfailed" | "xpassed" | "error",
                  "message",
                  "llm": {} | <ledger>,              # the case's engine LLM calls (Result.llm)
                  "root_cause"?: <first case>, "examples"?: {"run", "asked"},
                  "hosts"?: [<host profile>, ...],  # several hosts: who the row stands for
                  "partly_checked"?: bool}],        # with "examples": cut short
     # a run of several hosts (--host-profile=a,b / all) adds, leaving the fields above as
     # they are ("host_profile" is the first host):
     "host_profiles"?: [<host profile>, ...],
     "by_host"?: {<host profile>: {"verdict", "counts", "failures_by_level",
                                   "failing": [{"clause", "level", "cases": [<check>, ...]}]}},
     "by_host_line"?: "V2 MUST on hermes-0.19; clean on documented and hermes-0.22"}

What the root causes and the ``llm`` totals count: :mod:`conformance.run.verdict`.

Format version. ``format_version`` (an int, :data:`VERDICT_FORMAT_VERSION`) is the first key of
every verdict file. Within one format version a consumer may rely on: every key shown above
without ``?`` being there (a verdict whose ``"error"`` is set, the ``ERROR`` verdict of a run
that could not start, has no ``partly_checked``, ``cases_run``, ``cases_total``,
``root_causes`` or ``llm``), each key keeping its JSON type, and the ``verdict``, ``outcome``
and ``level`` words being the ones listed here, with their meaning. A removed key, a retyped
key, or a word added to, dropped from or given a new meaning in those lists bumps the version;
an added key (at the top level, in a row or in a block) does not, so a consumer ignores keys it
does not know. Files without ``format_version`` were written by a kit older than the field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: The JSON verdict's format version, its first key ``"format_version"``: bumped when a key is
#: removed or retyped or a ``verdict``, ``outcome`` or ``level`` word is added, dropped or
#: changes meaning; not when a key is added (module docstring).
VERDICT_FORMAT_VERSION = 1


def versioned(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (a JSON verdict's fields) with ``"format_version":``
    :data:`VERDICT_FORMAT_VERSION` as its first key, the other keys in their order; a
    ``format_version`` already in ``document`` is replaced. A new dict; ``document`` is left
    as it is."""
    rest = {k: v for k, v in document.items() if k != "format_version"}
    return {"format_version": VERDICT_FORMAT_VERSION, **rest}


def write_verdict_json(path: str | os.PathLike, document: dict[str, Any]) -> None:
    """Write a JSON verdict file: :func:`versioned` ``document`` as UTF-8 JSON (2-space indent,
    non-ASCII kept as is, a final newline), making missing parent folders. The one writer of
    verdict files (:meth:`conformance.run.verdict.Verdict.write_json`,
    :func:`write_error_verdict`).

    Raises:
        OSError: ``path`` or its folder cannot be written.
        TypeError, ValueError: ``document`` holds a value JSON cannot encode (or a cycle).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(versioned(document), indent=2, ensure_ascii=False) + "\n"
    target.write_text(text, encoding="utf-8")


def unwritten(path: str | os.PathLike, exc: OSError) -> str:
    """What a front end says when the verdict file of a finished run could not be written
    (:func:`write_verdict_json` raised ``exc``): the printed verdict stands, give another
    file."""
    return (
        f"the JSON verdict could not be written to {os.fspath(path)} ({exc.strerror or exc}); "
        "the verdict printed above stands. Give a file on a writable disk with room"
    )


def error_verdict(
    message: str,
    *,
    engine: Any = None,
    profile: str | None = None,
    host_profile: str | None = None,
    strict: bool = False,
    word: str = "ERROR",
) -> dict[str, Any]:
    """The JSON verdict of a run stopped before any case ran (the shape of
    :meth:`conformance.run.verdict.Verdict.to_json`, ``"verdict": word`` (``ERROR``, or
    ``INTERRUPTED`` for a Ctrl-C before the first case), no results) with ``"error"``:
    ``message``; ``format_version`` first (:func:`versioned`)."""
    from conformance import CONTRACT_VERSION, __version__
    from conformance.run.results import OUTCOMES
    from simulator.host.shim import abc_info

    return versioned(
        {
            "engine": engine,
            "kit_version": __version__,
            "contract_version": CONTRACT_VERSION,
            "host_abc": abc_info().label(),
            "host_profile": host_profile,
            "profile": profile,
            "verdict": word,
            "error": message,
            "strict": bool(strict),
            "counts": {"total": 0, **{o: 0 for o in OUTCOMES}},
            "failures_by_level": {"MUST": 0, "SHOULD": 0},
            "other_failures": 0,
            "snapshot_mismatches": 0,
            "snapshot_errors": 0,
            "results": [],
        }
    )


def write_error_verdict(path: str | os.PathLike, message: str, **kwargs: Any) -> bool:
    """Write :func:`error_verdict` to ``path`` (with :func:`write_verdict_json`, the one writer
    of verdict files); False (and nothing written) when ``path`` cannot be written (that is then
    the error the user sees)."""
    try:
        write_verdict_json(path, error_verdict(message, **kwargs))
    except (OSError, ValueError):
        return False
    return True


def engine_record(
    engine: str | None, engine_kwargs: str | None, engine_plugin: str | None
) -> dict[str, Any] | None:
    """How an ERROR verdict names the engine given on a command line, as the JSON verdict and
    failure files do: ``{"spec", "kwargs"}`` (``kwargs`` the text itself when it is not valid
    JSON), ``{"plugin": DIR}`` (absolute), or None when neither is given."""
    from conformance.clauses.errors import EngineSpecError
    from conformance.runtime.engine_loading import parse_kwargs

    if engine:
        try:
            kwargs: Any = parse_kwargs(engine_kwargs)
        except EngineSpecError:
            kwargs = engine_kwargs
        return {"spec": engine, "kwargs": kwargs}
    if engine_plugin:
        return {"plugin": os.path.abspath(engine_plugin)}
    return None


__all__ = [
    "VERDICT_FORMAT_VERSION",
    "engine_record",
    "error_verdict",
    "unwritten",
    "versioned",
    "write_error_verdict",
    "write_verdict_json",
]
