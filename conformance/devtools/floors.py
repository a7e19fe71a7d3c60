"""The lowest dependency versions pyproject.toml declares, and whether they are what is installed.

tox's ``mindeps`` env installs each floor exactly and runs the kit's tests on them; this module
keeps that honest: ``python -m conformance.devtools.floors --check`` fails when an installed
version is not its floor (pip upgraded it to satisfy another package, or the list in tox.ini
drifted from pyproject.toml). The linters (ruff, mypy) are left out: they run in the ``lint``
env at their latest versions, and no test exercises them.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The extras whose floors the ``mindeps`` env installs (besides the core dependencies).
EXTRAS = ("test", "report")
#: Declared but not installed at their floor: tools the ``lint`` env runs at their latest.
LINT_TOOLS = frozenset({"ruff", "mypy"})

_FLOOR = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*$")


def floors(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """``{distribution name (lower case): floor version}`` for the core dependencies and the
    :data:`EXTRAS`, linters aside.

    Raises:
        ValueError: a requirement is not of the form ``name>=version`` (the kit declares only
            floors, so a pin or a range is a mistake to fix in pyproject.toml).
    """
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in EXTRAS:
        requirements += project["optional-dependencies"][extra]
    out: dict[str, str] = {}
    for req in requirements:
        found = _FLOOR.match(req)
        if not found:
            raise ValueError(f"{req!r} in pyproject.toml: declare a floor, name>=version")
        name = found.group(1).lower()
        if name not in LINT_TOOLS:
            out[name] = found.group(2)
    return out


def mismatches(declared: dict[str, str]) -> list[str]:
    """One line per declared floor the environment does not have exactly ([]: all are)."""
    from packaging.version import Version  # pytest's own dependency; printing needs no import

    problems = []
    for name, floor in sorted(declared.items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}: not installed (floor {floor})")
            continue
        if Version(installed) != Version(floor):
            problems.append(f"{name}: {installed} installed, the declared floor is {floor}")
    return problems


def main(argv: list[str] | None = None) -> int:
    """``--check``: exit 1 with one line per mismatch; otherwise print ``name==floor`` lines
    (what tox.ini's ``mindeps`` deps list must hold; ``.ci/run`` installs them). Printing needs
    only the standard library, so a bare ``python3`` on a checkout can run it."""
    parser = argparse.ArgumentParser(prog="python -m conformance.devtools.floors")
    parser.add_argument("--check", action="store_true", help="compare with what is installed")
    args = parser.parse_args(argv)
    declared = floors()
    if not args.check:
        for name, floor in declared.items():
            print(f"{name}=={floor}")
        return 0
    problems = mismatches(declared)
    for line in problems:
        print(f"floors: {line}", file=sys.stderr)
    if not problems:
        print(f"floors: all {len(declared)} declared floors are what is installed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
