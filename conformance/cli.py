"""``context-engine-kit``: the command-line front end.

Subcommands:
- ``check MODULE:ATTR [--engine-kwargs JSON] [--json FILE] [pytest/plugin options...]``:
  run the conformance checks (through pytest, so every plugin option works) and exit
  non-zero when a MUST check fails (6, ``PARTIAL``, when nothing failed but the drawing budget
  cut checks short). State (failure files) goes to a temp dir unless
  ``--state-dir`` is given (a temp dir left empty is removed); snapshots are the project's, in
  ``./.conformance/snapshots/`` (``--conformance-snapshots-dir`` to move them). Bad input is
  one ``error:`` line and exit 4 before anything runs (paths that cannot be written included),
  and ``--json FILE`` then holds the verdict ``ERROR`` with the message.
- ``scenario [FILE...] --engine MODULE:ATTR``: run scenario files (none: the bundled library).
- ``explain CLAUSE``: a clause's text, its checks, what usually causes a failure and the fix.
- ``serve``: the provider simulator over HTTP on loopback.
- ``install-plugin lcm --hermes-home DIR``: copy the bundled LCM plugin folder into a Hermes home.

``--version`` prints the kit's version and the contract version it checks. argparse picks the
command (:mod:`conformance.frontends.subcommands`); each command parses its own words. The kit's
developer commands (the kill matrix, docs/coverage.md) are not here: they are
``python -m conformance.devtools mutants|coverage`` (:mod:`conformance.devtools.__main__`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from typing import Any

from conformance.authoring.hypothesis_profiles import kit_profile
from conformance.clauses.errors import EngineSpecError, KitUsageError
from conformance.frontends.subcommands import Command, command_parser, run_command
from conformance.run.results import PARTIAL_EXIT
from conformance.runtime.engine_loading import deferred_engine_factory, parse_kwargs

#: Options of pytest and pytest-xdist (and of ``check`` itself) whose value may follow as the
#: next word: that word is the option's value, not the engine. The kit's own come from
#: :func:`kit_value_options`.
_VALUE_OPTIONS = frozenset(
    {
        "-k", "-m", "-p", "-n", "-c", "-o", "-W", "-r", "--numprocesses", "--maxprocesses",
        "--dist", "--junitxml", "--junit-xml", "--junit-prefix", "--rootdir", "--deselect",
        "--ignore", "--ignore-glob", "--basetemp", "--maxfail", "--tb", "--durations",
        "--confcutdir", "--log-level", "--log-file", "--timeout", "--capture",
        "--import-mode", "--override-ini", "--config-file", "--json", "--state-dir",
    }
)  # fmt: skip


class _OptionRecorder:
    """Stands in for pytest's parser: records the options :func:`add_options` registers."""

    def __init__(self) -> None:
        self.options: dict[str, dict] = {}
        self.spellings: dict[str, tuple[str, ...]] = {}

    def getgroup(self, *args, **kwargs) -> _OptionRecorder:
        """The one group (pytest's ``Parser.getgroup``)."""
        return self

    def addoption(self, *names: str, **kwargs) -> None:
        """Record an option (pytest's ``OptionGroup.addoption``) under each of its names."""
        for name in names:
            self.options[name] = kwargs
            self.spellings[name] = names

    def addini(self, *args, **kwargs) -> None:
        """Ini keys are not options."""


def kit_options() -> dict[str, dict]:
    """Every option the kit's pytest front end registers: name -> its ``addoption`` keywords
    (:func:`conformance.frontends.pytest_options.add_options`)."""
    from conformance.frontends.pytest_options import add_options

    recorder = _OptionRecorder()
    add_options(recorder)
    return recorder.options


def kit_option_spellings(option: str) -> tuple[str, ...]:
    """Every name of the kit's pytest option ``option`` (registered on one ``addoption``
    call): ``--host-profile`` -> ``("--host-profile", "--conformance-host-profile")``; just
    ``(option,)`` for a name the kit does not register."""
    from conformance.frontends.pytest_options import add_options

    recorder = _OptionRecorder()
    add_options(recorder)
    return recorder.spellings.get(option, (option,))


def _kit_option_values(option: str, argv: list[str]) -> list[str]:
    """Every value given to the kit's option ``option`` in ``argv``, under any of its names
    (:func:`kit_option_spellings`), in command-line order."""
    names = kit_option_spellings(option)
    out = []
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                out.append(argv[i + 1])
            elif word.startswith(name + "="):
                out.append(word.split("=", 1)[1])
    return out


def kit_value_options() -> frozenset:
    """The kit's pytest options that take a value (``--engine``, ``--conformance-json`` ...)."""
    flags = ("store_true", "store_false", "count")
    return frozenset(n for n, kw in kit_options().items() if kw.get("action") not in flags)


#: Output options of ``check`` and the pytest options it checks before the run: option ->
#: (kind, what the run writes there).
_CHECKED_OUTPUTS = {
    "--json": ("file", "the JSON verdict"),
    "--state-dir": ("dir", "failure files"),
    "--conformance-json": ("file", "the JSON verdict"),
    "--conformance-report": ("file", "the HTML report"),
    "--junitxml": ("file", "the junit XML report"),
    "--junit-xml": ("file", "the junit XML report"),
    "--conformance-failures-dir": ("dir", "failure files"),
}

USAGE_ERROR = 4  # pytest's exit status for a usage error, which check shares


def _split_engine(argv: list[str]) -> tuple[str | None, list[str], list[str]]:
    """The engine word of ``check``'s command line (the first word that is not an option or an
    option's value; a word with a ``:`` wins over one without), the command line without it,
    and the other such words (files and folders for pytest)."""
    takes_value = _VALUE_OPTIONS | kit_value_options()
    words: list[tuple[int, str]] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            break
        if word.startswith("-") and word != "-":
            if "=" not in word and word in takes_value:
                i += 1  # its value follows
            i += 1
            continue
        words.append((i, word))
        i += 1
    pick = next((w for w in words if ":" in w[1]), words[0] if words else None)
    if pick is None:
        return None, list(argv), []
    others = [word for index, word in words if index != pick[0]]
    return pick[1], argv[: pick[0]] + argv[pick[0] + 1 :], others


def _option_values(option: str, argv: list[str]) -> list[str]:
    """Every value given to ``option`` in ``argv`` (``--opt VALUE`` or ``--opt=VALUE``)."""
    out = []
    for i, word in enumerate(argv):
        if word == option and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif word.startswith(option + "="):
            out.append(word.split("=", 1)[1])
    return out


def kit_option_problem(argv: list[str]) -> str | None:
    """What is wrong with a value given to one of the kit's pytest options in ``argv`` (a
    number option given a word, a choice option given something not among its choices), as
    one line that says what to give; None when every value parses.

    ``check`` reports it before pytest runs, instead of pytest's multi-line usage text. The
    options and their types come from :func:`kit_options`; ranges (a timeout that must be
    positive ...) are left to the front end, which checks them when it builds the session.
    """
    import difflib

    from conformance.authoring.hosts import ALL, known_hosts

    for option in kit_option_spellings("--host-profile"):
        for value in _option_values(option, argv):
            names = [n.strip() for n in value.split(",")]
            bad = next((n for n in names if n != ALL and n not in known_hosts()), None)
            if bad is not None:
                close = difflib.get_close_matches(bad, list(known_hosts()), n=1, cutoff=0.5)
                hint = f" (did you mean {close[0]}?)" if close else ""
                return (
                    f"{option}={value}: not one of its choices; give one of "
                    f"{', '.join(known_hosts())}, a comma-separated list of them, or {ALL}{hint}."
                )
    for name, kw in kit_options().items():
        for value in _option_values(name, argv):
            choices = kw.get("choices")
            kind = kw.get("type")
            if choices is not None and value not in choices:
                close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
                hint = f" (did you mean {close[0]}?)" if close else ""
                return (
                    f"{name}={value}: not one of its choices; give one of "
                    f"{', '.join(choices)}{hint}."
                )
            if kind in (int, float):
                try:
                    kind(value)
                except ValueError:
                    what = "a whole number" if kind is int else "a number"
                    unit = {"SECONDS": " of seconds", "GIB": " of GiB"}.get(kw.get("metavar"), "")
                    example = "3" if kind is int else "30"
                    return f"{name}={value}: not {what}; give {what}{unit} (e.g. {name}={example})."
    return None


def _usage_prog(line: str) -> str:
    """The program name of pytest's usage line (``ERROR: usage: PROG [options] ...``)."""
    return line.removeprefix("ERROR: usage: ").split(" ", 1)[0]


def _parser_errors(text: str) -> list[str]:
    """The messages of pytest's option-parser errors in ``text``: what follows ``PROG: error: ``
    after a usage line naming PROG ([] when there is none)."""
    found = []
    prog = None
    for line in text.splitlines():
        if line.startswith("ERROR: usage: "):
            prog = _usage_prog(line)
        elif prog and line.startswith(f"{prog}: error: "):
            found.append(line.removeprefix(f"{prog}: error: ").strip())
    return found


class _ErrorLines:
    """Wraps ``sys.stderr`` during the pytest run and keeps pytest's ``ERROR: ...`` lines (a
    usage error pytest itself reports), for the ERROR verdict.

    pytest's option-parser error (``ERROR: usage: PROG ...`` and a few lines of usage, inifile
    and rootdir) is kept but not passed on: ``check`` prints it as one line of its own after the
    run (:meth:`refused_options`). PROG is ``pytest.main()`` on recent pytest releases and the
    script's name (``context-engine-kit``, ``cli.py``) on older ones, so it is read from the
    usage line."""

    def __init__(self, stream):
        self.stream = stream
        self.text: list[str] = []
        self.size = 0
        self._held = False

    def write(self, text: str) -> int:
        """Pass ``text`` on (except pytest's usage block); keep up to 64 KiB of it."""
        if self.size < 65536:
            self.text.append(text)
            self.size += len(text)
        if text.startswith("ERROR: usage: ") and _parser_errors(text):
            self._held = True
            return len(text)
        if self._held and not text.strip():
            return len(text)  # the blank line after the usage block
        self._held = False
        return self.stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)

    def errors(self) -> str:
        """The ``ERROR:`` lines pytest printed, joined (their prefix removed)."""
        lines = "".join(self.text).splitlines()
        found = []
        prog = None
        for line in lines:
            if line.startswith("ERROR: usage: "):
                prog = _usage_prog(line)
            elif prog and line.startswith(f"{prog}: error: "):  # pytest's option parser
                found.append(line.removeprefix(f"{prog}: error: ").strip())
            elif line.startswith("ERROR: "):
                found.append(line.removeprefix("ERROR: ").strip())
        return " ".join(f for f in found if f)

    def refused_options(self) -> str:
        """What pytest's option parser refused ("" when it accepted the command line), with a
        hint when the option needs a plugin that is not installed (``-n``: pytest-xdist)."""
        found = _parser_errors("".join(self.text))
        if not found:
            return ""
        refused = found[0].rstrip(".")
        if "unrecognized arguments:" in refused and re.search(
            r"(?:^|\s)(?:-n\S*|--numprocesses\S*|--dist\S*)(?:\s|$)",
            refused.split(":", 1)[1] + " ",
        ):
            refused += " (-n and --dist need pytest-xdist: pip install pytest-xdist)"
        return refused


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def _check(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="context-engine-kit check",
        usage="context-engine-kit check MODULE:ATTR | --engine-plugin DIR | --conformance-replay "
        "FILE [options] [pytest options]",
        description="Run the conformance checks against an engine and print a verdict by clause. "
        "Unknown options are passed to pytest (e.g. -k V2, --conformance-profile=quick, "
        "--conformance-report=report.html, --junit-xml=junit.xml).",
        epilog="pytest-xdist's -n N (cases on N processes) needs pip install pytest-xdist; it "
        "is not part of the kit's dependencies, and on a small, fast engine it is not faster "
        "(each worker pays the start-up). context-engine-kit explain CLAUSE explains a clause "
        "a failure names.",
        allow_abbrev=False,
    )
    parser.add_argument("--engine", "--conformance-engine", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--engine-plugin",
        "--conformance-engine-plugin",
        default=None,
        metavar="DIR",
        help="a plugin folder as it ships ($HERMES_HOME/plugins/<name>/), in place of "
        "MODULE:ATTR: loaded as the host does and checked for R4-R6 too",
    )
    parser.add_argument(
        "--engine-kwargs",
        "--conformance-engine-kwargs",
        default=None,
        metavar="JSON",
        help="a JSON object of keyword arguments for the engine",
    )
    parser.add_argument(
        "--json",
        default=None,
        metavar="FILE",
        help="write the verdict as JSON (also when the run cannot start: verdict ERROR)",
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where failure files go (default: a new temp dir, removed when left empty)",
    )
    if any(a in ("-h", "--help") for a in argv):
        parser.add_argument(
            "engine_arg",
            nargs="?",
            metavar="MODULE:ATTR",
            help="a ContextEngine subclass or factory (or --engine MODULE:ATTR)",
        )
        parser.print_help()
        return 0
    engine_word, others, paths = _split_engine(argv)
    args, rest = parser.parse_known_args(others)
    if engine_word is not None:
        if args.engine or args.engine_plugin:
            rest = [engine_word] + rest  # a file or folder argument for pytest
        else:
            args.engine = engine_word
    json_path = os.path.abspath(args.json) if args.json else None
    from conformance.frontends import outputs

    def usage_error(message: str) -> int:
        print(f"context-engine-kit check: error: {message}", file=sys.stderr)
        if json_path and not _unwritable_file(json_path, "--json"):
            outputs.write_error_verdict(
                json_path, message, engine=_engine_record(args), profile=_profile(rest)
            )
        return USAGE_ERROR

    problem = kit_option_problem(rest)
    if problem:
        return usage_error(problem)
    second = [w for w in paths if ":" in w and not os.path.exists(w)]
    if engine_word is not None and second and not args.engine_plugin:
        return usage_error(
            f"give one engine: {engine_word!r} and {second[0]!r} both look like MODULE:ATTR. "
            "Run check once per engine (each writes its own failure files)."
        )
    replay = _option_values("--conformance-replay", rest)
    if not args.engine and not args.engine_plugin and not replay:
        return usage_error(
            "give the engine as MODULE:ATTR, or a plugin folder with --engine-plugin DIR "
            "(or a failure file with --conformance-replay FILE, which names its engine)."
        )
    for option, (kind, _what) in _CHECKED_OUTPUTS.items():
        values = (
            [getattr(args, option[2:].replace("-", "_"))]
            if option in ("--json", "--state-dir")
            else _option_values(option, rest)
        )
        for value in values:
            if value:
                try:
                    outputs.check_writable(
                        value, option=option, kind=kind, keep=option == "--state-dir"
                    )
                except KitUsageError as exc:
                    return usage_error(str(exc))
    if args.engine:
        try:
            # fail fast, resolved in a child: the engine's module never runs in this process
            deferred_engine_factory(args.engine, parse_kwargs(args.engine_kwargs))
        except EngineSpecError as exc:
            return usage_error(str(exc))
    elif args.engine_plugin and not os.path.isdir(args.engine_plugin):
        return usage_error(
            f"--engine-plugin={args.engine_plugin}: not a folder; give the plugin folder that "
            "holds __init__.py and plugin.yaml."
        )
    import pytest

    temporary = not args.state_dir
    state = (
        os.path.abspath(args.state_dir)
        if args.state_dir
        else tempfile.mkdtemp(prefix="context-engine-kit-")
    )
    os.makedirs(state, exist_ok=True)
    if not _given("--conformance-snapshots-dir", rest):
        # the project's snapshots, as a plain pytest run there
        rest = [
            "--conformance-snapshots-dir",
            os.path.join(os.getcwd(), ".conformance", "snapshots"),
        ] + rest
    selection = (["--engine", args.engine] if args.engine else []) + (
        ["--engine-plugin", os.path.abspath(args.engine_plugin)] if args.engine_plugin else []
    )
    failures = os.path.join(state, "failures")
    pytest_args = selection + [
        "-p",
        "no:cacheprovider",
        # the CLI imported the kit before pytest started; nothing of it needs rewriting
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    ]
    if not _given("--conformance-failures-dir", rest):
        pytest_args += [f"--conformance-failures-dir={failures}"]
    # The entry point is named "conformance.plugin" too, so this is a no-op when installed.
    pytest_args += ["-p", "conformance.plugin"]
    # values joined to their option: pytest picks its rootdir from the arguments before it
    # knows the kit's options, so a value standing alone that names an existing file or folder
    # (a --json file from an earlier run, the state dir) would move the rootdir
    if args.engine_kwargs:
        pytest_args += [f"--engine-kwargs={args.engine_kwargs}"]
    if json_path:
        pytest_args += [f"--conformance-json={json_path}"]
    what = (
        f"--engine={args.engine}"
        if args.engine
        else f"--engine-plugin={os.path.abspath(args.engine_plugin)}"
        if args.engine_plugin
        else f"the engine named in {replay[-1]}"
    )
    where = (
        f"{failures} (a temp dir, removed if the run leaves it empty)" if temporary else failures
    )
    if _given("--conformance-failures-dir", rest):
        where = _option_values("--conformance-failures-dir", rest)[-1]
    intro = _IntroLines(what, where, rest)
    before = _stat(json_path) if json_path else None
    errors = _ErrorLines(sys.stderr)
    sys.stderr = errors
    try:
        code = int(pytest.main(pytest_args + rest, plugins=[intro]))
    finally:
        sys.stderr = errors.stream
        _settle_state(state, temporary=temporary)
    intro.print_once(None)  # pytest stopped before its configure hook (a usage error)
    refused = errors.refused_options() if code == USAGE_ERROR else ""
    if refused:
        print(
            f"context-engine-kit check: error: pytest refused the command line: {refused}; "
            "context-engine-kit check --help and pytest --help list the options.",
            file=sys.stderr,
        )
    unwritten = json_path and _stat(json_path) in (None, before)
    if code == int(pytest.ExitCode.INTERRUPTED) and unwritten:  # Ctrl-C before any case
        print(
            "verdict: INTERRUPTED - stopped (Ctrl-C or SIGTERM) before the first case ran",
            flush=True,
        )
        outputs.write_error_verdict(
            json_path,
            "interrupted (Ctrl-C or SIGTERM) before the first case ran",
            engine=_engine_record(args),
            profile=_profile(rest),
            word="INTERRUPTED",
        )
    elif unwritten and code not in (0, 1, 5, PARTIAL_EXIT):
        message = errors.errors() or f"pytest stopped with exit status {code} before a verdict"
        outputs.write_error_verdict(
            json_path, message, engine=_engine_record(args), profile=_profile(rest)
        )
    return code


class _IntroLines:
    """``check``'s two opening lines (what runs, on which hosts; where failure files go),
    printed once: from pytest's configure hook, where the ini file is read, so a host profile
    set by the ini key ``conformance_host_profile`` is named as the run uses it; or, when
    pytest stops before configuring (a usage error), after it returns, from the command line."""

    def __init__(self, what: str, where: str, rest: list[str]) -> None:
        self.what, self.where, self.rest = what, where, rest
        self.printed = False

    def pytest_configure(self, config: Any) -> None:
        """Print the lines with the run's host profile (option, else ini key, else default)."""
        from conformance.frontends.pytest_options import host_profile_text

        try:
            text = host_profile_text(config)
        except KitUsageError:
            text = None  # the kit's plugin reports the bad ini key
        self.print_once(text)

    def print_once(self, host_profile: str | None) -> None:
        """Print the lines unless printed; ``host_profile`` None: read it from the command line."""
        if self.printed:
            return
        self.printed = True
        print(
            f"context-engine-kit check: the kit's conformance cases against {self.what}, run by "
            f"pytest (each item of the kit's suite file test_contract.py is one case), "
            f"{_hosts_line(self.rest, host_profile)}\n"
            f"context-engine-kit check: failure files go to {self.where}",
            flush=True,
        )


def _hosts_line(rest: list[str], host_profile: str | None = None) -> str:
    """What ``check``'s first line says of the hosts: the host profiles of the run and the
    real Hermes installed next to the kit, if any (distribution and version).
    ``host_profile``: the run's host profile text ("" the default hosts); None: the last
    ``--host-profile`` of the command line ``rest``."""
    from conformance.authoring.hosts import parse_hosts
    from conformance.frontends.pytest_options import hosts_text
    from simulator.host.shim import abc_info

    if host_profile is None:
        given = _kit_option_values("--host-profile", rest)
        host_profile = given[-1] if given else ""
    try:
        hosts = parse_hosts(host_profile or None)
    except ValueError:
        hosts = parse_hosts(None)
    info = abc_info()
    if info.source == "context-engine-kit":
        real = "no Hermes installed (the kit's documented ABC)"
    else:
        real = f"real Hermes {info.label()}" + (
            f" (its profile {info.profile})"
            if info.profile
            else " (no host profile matches its version; the nearest profiles play it)"
        )
    return f"on {hosts_text(hosts)}; {real}"


def _unwritable_file(path: str, option: str) -> str | None:
    """Why ``path`` cannot be written (None: it can), without raising."""
    from conformance.frontends import outputs

    try:
        outputs.check_writable(path, option=option, kind="file")
    except KitUsageError as exc:
        return str(exc)
    return None


def _engine_record(args: argparse.Namespace) -> dict | None:
    """How the ERROR verdict names the engine (as the JSON verdict does)."""
    from conformance.frontends.outputs import engine_record

    return engine_record(args.engine, args.engine_kwargs, args.engine_plugin)


def _profile(rest: list[str]) -> str:
    values = _option_values("--conformance-profile", rest)
    choices = kit_options()["--conformance-profile"]["choices"]
    if values and values[-1] in choices:
        return values[-1]
    return kit_profile((_option_values("--hypothesis-profile", rest) or [None])[-1]) or "default"


def _given(option: str, argv: list[str]) -> bool:
    """True when ``option`` is among ``argv`` (as ``--opt VALUE`` or ``--opt=VALUE``)."""
    return any(a == option or a.startswith(option + "=") for a in argv)


def _settle_state(state: str, temporary: bool) -> None:
    """After a ``check`` run: drop a temp state dir the run left empty; otherwise say where its
    files are."""
    files = [os.path.join(d, f) for d, _, names in os.walk(state) for f in names]
    if temporary and not files:
        shutil.rmtree(state, ignore_errors=True)
    elif files:
        print(
            f"context-engine-kit: state kept in {state} (failure files "
            "under failures/; rerun one with --conformance-replay FILE)"
        )


def _serve(argv: list[str]) -> int:
    try:
        from simulator.provider import serve
    except ImportError as exc:  # pragma: no cover - the provider ships http
        print(f"context-engine-kit serve: error: {exc}", file=sys.stderr)
        return 2
    port = _port_given(argv)
    if port is not None and not 0 <= port <= 65535:
        print(
            f"context-engine-kit serve: error: --port {port}: a port is a number from 0 to "
            "65535. Pick a free port (0 picks one for you).",
            file=sys.stderr,
        )
        return 2
    try:
        return int(serve.main(argv) or 0)
    except (OSError, OverflowError, ValueError) as exc:
        reason = str(exc).rstrip(". ") or type(exc).__name__
        print(
            f"context-engine-kit serve: error: cannot listen: {reason}. Pick a free "
            "port between 0 and 65535 (0 picks one for you) on a loopback address.",
            file=sys.stderr,
        )
        return 2


def _port_given(argv: list[str]) -> int | None:
    """The ``--port`` value of a ``serve`` command line when it is a whole number, else None
    (the serve parser reports what is wrong with it)."""
    values = _option_values("--port", argv)
    try:
        return int(values[-1]) if values else None
    except ValueError:
        return None


def _install_plugin(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="context-engine-kit install-plugin",
        description="Copy a bundled reference engine, laid out as a Hermes plugin folder, "
        "to HERMES_HOME/plugins/<name>/.",
    )
    parser.add_argument("name", choices=["lcm"], help="the bundled plugin to install")
    parser.add_argument(
        "--hermes-home", required=True, metavar="DIR", help="the Hermes home folder"
    )
    args = parser.parse_args(argv)
    from reference_engines.lcm.install import install_plugin

    try:
        target = install_plugin(args.name, args.hermes_home)
    except OSError as exc:
        print(f"context-engine-kit install-plugin: error: {exc}", file=sys.stderr)
        return 2
    print(target)
    return 0


def _explain(argv: list[str]) -> int:
    from conformance.run.explain import main as explain_main

    return explain_main(argv)


def _scenario(argv: list[str]) -> int:
    from conformance.frontends.scenario_cli import main as scenario_main

    return int(scenario_main(argv) or 0)


COMMANDS = (
    Command("check", "run the conformance checks and print a verdict by clause", _check),
    Command("scenario", "run scenario files (none: the bundled library)", _scenario),
    Command("explain", "a clause's text, its checks, usual causes and fixes", _explain),
    Command("serve", "run the provider simulator over HTTP on 127.0.0.1", _serve),
    Command("install-plugin", "copy the bundled LCM plugin to DIR/plugins/lcm/", _install_plugin),
)


def kit_version() -> str:
    """The installed distribution's version (``importlib.metadata``); from a source tree that is
    not installed, ``conformance.__version__``."""
    from importlib import metadata

    try:
        return metadata.version("context-engine-kit")
    except metadata.PackageNotFoundError:
        import conformance

        return str(getattr(conformance, "__version__", "unknown"))


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser of ``context-engine-kit``: one subcommand per entry of
    :data:`COMMANDS`, ``--help`` and ``--version``."""
    from simulator.contract import CONTRACT_VERSION

    parser = command_parser(
        "context-engine-kit",
        "Check a Hermes context engine against the contract. Each command takes --help.",
        COMMANDS,
        epilog="examples:\n"
        "  context-engine-kit check mypkg.engine:MyEngine --json verdict.json\n"
        "  context-engine-kit scenario --engine mypkg.engine:MyEngine\n"
        "  context-engine-kit explain V2\n"
        "  context-engine-kit install-plugin lcm --hermes-home DIR\n\n"
        "The kit's developer commands (kill matrix, docs/coverage.md) are\n"
        "python -m conformance.devtools --help.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {kit_version()} (contract {CONTRACT_VERSION})",
        help="print the kit's version and the contract version it checks, and exit",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``context-engine-kit`` console script.

    ``argv``: the words after the program name (default ``sys.argv[1:]``). Returns the exit
    code: the command's own (``check``: 0 pass, 1 a MUST failure, 4 bad input, 6 partial, as
    pytest otherwise; the others: 0, 1 on failures, 2 on bad input), 0 for ``--help`` and
    ``--version``, 2 for a wrong or missing command.
    """
    from simulator.host import shim

    shim.install()
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_command(build_parser(), COMMANDS, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
