"""The value types of the kit's pytest options: pytest's own parser refuses a bad value with
a message that says what was given and what to give, for ``pytest`` and ``context-engine-kit
check`` alike. Ranges are checked with the run's options (``RunOptions.validate``).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Iterable


def _hint(value: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the closest choice, "" when none is close."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    return f" (did you mean {close[0]}?)" if close else ""


def choice(choices: Iterable[str]) -> Callable[[str], str]:
    """The ``type=`` of an option whose value is one of ``choices`` (texts).

    Raises (a value not among them):
        argparse.ArgumentTypeError: lists the choices, with the closest one as a hint.
    """
    names = tuple(choices)

    def one_of(value: str) -> str:
        if value not in names:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not one of its choices; give one of {', '.join(names)}"
                f"{_hint(value, names)}"
            )
        return value

    return one_of


def host_profiles(value: str) -> str:
    """The ``type=`` of ``--host-profile``: a host profile, a comma-separated list of them, or
    ``all``; the text is kept as given.

    Raises:
        argparse.ArgumentTypeError: an unknown name; lists the profiles, with a hint.
    """
    from conformance.authoring.hosts import ALL, known_hosts

    names = [n.strip() for n in value.split(",")]
    bad = next((n for n in names if n != ALL and n not in known_hosts()), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not one of its choices; give one of {', '.join(known_hosts())}, "
            f"a comma-separated list of them, or {ALL}{_hint(bad, known_hosts())}"
        )
    return value


def number(kind: type, unit: str, example: str) -> Callable[[str], float | int]:
    """The ``type=`` of a numeric option of ``kind`` ``int`` or ``float``; ``unit``
    (``" of seconds"``) and ``example`` (``--conformance-timeout=30``) are for the message.

    Raises (when called with a value that does not parse):
        argparse.ArgumentTypeError: says what kind of number to give, with the example.
    """
    what = "a whole number" if kind is int else "a number"

    def parse(value: str) -> float | int:
        try:
            return kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not {what}; give {what}{unit} (e.g. {example})"
            ) from None

    return parse


def given(what: str) -> Callable[[str], str]:
    """The ``type=`` of an option whose empty value would silently mean "not given"
    (``--engine``, ``--engine-plugin``).

    Raises (an empty value, an unset CI variable most often):
        argparse.ArgumentTypeError: says to give ``what``.
    """

    def non_empty(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(
                f"an empty value; give {what} (is the variable that holds it unset?)"
            )
        return value

    return non_empty


def file_name(value: str) -> str:
    """The ``type=`` of an option that names a file the run writes (``--json``,
    ``--conformance-json``, ``--conformance-report``).

    Raises (an empty value, most often an unset CI variable, or ``-``):
        argparse.ArgumentTypeError: says to give a file name.
    """
    given("a file name")(value)
    if value == "-":
        raise argparse.ArgumentTypeError(
            "'-': the kit writes this file, not standard output; give a file name"
        )
    return value


class Once(argparse.Action):
    """The ``action=`` of an option a run takes once (``--engine``, ``--engine-plugin``, the
    verdict file), where argparse would silently keep the last of two values.

    Raises (the option a second time with another value):
        argparse.ArgumentError: names both values and says to give one.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        before = getattr(namespace, self.dest, None)
        if before not in (None, self.default, values):
            raise argparse.ArgumentError(
                self,
                f"given twice ({before!r}, then {values!r}); give it once (one run checks "
                "one engine and writes one verdict: run the kit once per engine)",
            )
        setattr(namespace, self.dest, values)
