"""Covers docs/ci.md, the CI recipe for plugin authors: its GitHub Actions workflow parses as
YAML and its tox env as ini; both install the kit (with the report extra) from a git URL next
to the engine, run ``pytest --engine=...`` with junit XML, the JSON verdict and the HTML report,
and keep them; every option they pass exists in the kit's pytest option list (``pytest
--help`` with the kit's plugin); the README links the page."""

from __future__ import annotations

import configparser
import re
import shlex
import subprocess
import sys
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement

from tests.conftest import REPO_ROOT

CI = REPO_ROOT / "docs" / "ci.md"
OUTPUTS = ("--junit-xml", "--conformance-json", "--conformance-report")


def block(language: str) -> str:
    (text,) = re.findall(rf"```{language}\n(.*?)```", CI.read_text(encoding="utf-8"), re.S)
    return text


@pytest.fixture(scope="module")
def pytest_help() -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conformance.plugin", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def options_of(command: str) -> dict[str, str]:
    """``--opt=value`` options of a shell command line (line continuations joined)."""
    words = shlex.split(command.replace("\\\n", " "))
    return dict(w.split("=", 1) for w in words if w.startswith("--") and "=" in w)


def check_pytest_command(command: str, pytest_help: str) -> dict[str, str]:
    assert re.search(r"(^|\s)(python -m )?pytest --engine=\S+:\S+", command), command
    options = options_of(command)
    for option in options:
        assert re.search(rf"^\s+{re.escape(option)}[=\s,]", pytest_help, re.M), (
            f"docs/ci.md passes {option}, which pytest with the kit does not know"
        )
    assert set(OUTPUTS) <= set(options), options
    return options


def check_kit_requirement(text: str) -> None:
    req = Requirement(text)
    assert req.name == "context-engine-kit" and req.url and req.url.startswith("git+"), text
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert req.extras == {"report"} <= set(extras["project"]["optional-dependencies"])


def test_the_github_actions_workflow(pytest_help):
    workflow = yaml.safe_load(block("yaml"))
    assert set(workflow[True] if True in workflow else workflow["on"]) == {"push", "pull_request"}
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    runs = [s["run"] for s in steps if "run" in s]
    install = next(r for r in runs if "pip install" in r)
    assert "pip install -e ." in install  # the engine itself, then the kit next to it
    (kit,) = re.findall(r'pip install "(context-engine-kit[^"]+)"', install)
    env = job["env"]
    check_kit_requirement(
        kit.replace("${KIT_URL}", env["KIT_URL"]).replace("${KIT_REF}", env["KIT_REF"])
    )
    command = next(r for r in runs if "--engine=" in r)
    options = check_pytest_command(command, pytest_help)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"  # the verdict and report are kept when the run fails
    kept = upload["with"]["path"].rstrip("/")
    for option in OUTPUTS + ("--conformance-failures-dir",):
        assert options[option].startswith(kept + "/"), (option, kept)


def test_the_tox_env(pytest_help):
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string(block("ini"))
    env = ini["testenv:conformance"]
    deps = [d.strip() for d in env["deps"].splitlines() if d.strip()]
    (kit,) = [d for d in deps if "context-engine-kit" in d]
    check_kit_requirement(kit)
    options = check_pytest_command(env["commands"], pytest_help)
    assert all(options[o].startswith("{toxworkdir}/conformance-results/") for o in OUTPUTS)


def test_the_readme_links_the_recipe():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "[`docs/ci.md`](docs/ci.md)" in readme
    assert "(ci.md)" in (REPO_ROOT / "docs" / "write-your-own-engine.md").read_text("utf-8")
