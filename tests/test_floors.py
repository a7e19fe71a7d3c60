"""Covers conformance.devtools.floors and tox.ini's ``mindeps`` env: the env installs exactly the
floors pyproject.toml declares (no more, no less), the floor check catches a version that is
not its floor, and the package ships py.typed."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest
from packaging.version import Version

from conformance.devtools import floors

ROOT = Path(__file__).resolve().parent.parent


def mindeps_pins() -> dict[str, str]:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    pins = {}
    for line in tox["testenv:mindeps"]["deps"].split("\n"):
        if line.strip():
            name, version = line.strip().split("==")
            pins[name.lower()] = version
    return pins


def test_mindeps_installs_every_declared_floor_exactly():
    declared = floors.floors()
    assert {"pytest", "hypothesis", "syrupy", "tiktoken", "pytest-xdist"} <= set(declared)
    pins = mindeps_pins()
    assert set(pins) == set(declared)
    for name, pin in pins.items():
        assert Version(pin) == Version(declared[name]), name


def test_floor_check_names_a_version_that_is_not_its_floor():
    assert floors.mismatches({"pytest": floors.metadata.version("pytest")}) == []
    got = floors.mismatches({"pytest": "1.0", "no-such-distribution-x": "1.0"})
    assert got[0].startswith("no-such-distribution-x: not installed")
    assert got[1].startswith("pytest: ") and "the declared floor is 1.0" in got[1]


def test_a_requirement_that_is_no_floor_is_refused(tmp_path):
    bad = tmp_path / "pyproject.toml"
    bad.write_text(
        '[project]\ndependencies = ["pytest==8.3"]\n'
        "[project.optional-dependencies]\ntest = []\nreport = []\n"
    )
    with pytest.raises(ValueError, match="declare a floor"):
        floors.floors(bad)


def test_the_conformance_package_says_it_is_typed():
    """PEP 561: the package ships py.typed (pyproject's package-data), so a plugin author's
    type checker reads the kit's annotations."""
    import conformance

    assert (Path(conformance.__file__).parent / "py.typed").is_file()
    assert '"conformance" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
