"""Covers the install lines of README.md, docs/**/*.md and the kit's own messages: the kit is not
on the package index, so every ``pip install`` that names it uses a form the README supports
(the clone's root ``.``, a path to a clone, or a git URL, extras allowed); a bare
``pip install context-engine-kit`` or ``'context-engine-kit[report]'`` would fail where the
user is."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from tests.conftest import REPO_ROOT

KIT = "context-engine-kit"
_PIP = re.compile(r"\bpip3? install\b([^`\n]*)")
_END = re.compile(r"\s(?:&&|\|\||;|#)\s?.*$")


def pip_lines(text: str) -> list[str]:
    """The argument text of every ``pip install`` in ``text`` (up to the end of the inline code
    span, the line, a ``&&`` or a shell comment)."""
    return [_END.sub("", m.group(1)).strip() for m in _PIP.finditer(text)]


def requirements(args: str) -> list[str]:
    """The requirement words of one ``pip install`` (options dropped; ``name @ url`` joined)."""
    try:
        words = shlex.split(args)
    except ValueError:  # an unbalanced quote in a message template
        words = args.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-"):
            i += 1
            continue
        if words[i + 1 : i + 2] == ["@"] and i + 2 < len(words):
            word = f"{word} @ {words[i + 2]}"
            i += 2
        out.append(word)
        i += 1
    return out


def install_form(word: str) -> str | None:
    """How ``word`` installs the kit: ``clone-root`` (``.``, ``.[extras]``), ``path`` (a path to a
    clone), ``git`` (a git URL, also ``context-engine-kit[x] @ git+...``); ``index`` for a bare
    name the package index would have to serve; None when ``word`` is not the kit."""
    if word == "." or word.startswith(".["):
        return "clone-root"
    if word.startswith("git+"):  # the only git URLs these pages install are the kit's
        return "git"
    if KIT not in word:
        return None
    name, at, url = word.partition(" @ ")
    if at and re.fullmatch(rf"{KIT}(\[[\w,]+\])?", name.strip()):
        return "git" if url.strip().startswith("git+") else "path"
    try:
        req = Requirement(word)
    except InvalidRequirement:
        return "path" if "/" in word else "index"
    if req.name != KIT:
        return None
    if req.url:
        return "git" if req.url.startswith("git+") else "path"
    return "index"


def doc_files() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def source_files() -> list[Path]:
    return sorted(p for d in ("conformance", "simulator") for p in (REPO_ROOT / d).rglob("*.py"))


def test_the_checker_refuses_the_package_index_forms():
    old = "pip install context-engine-kit\n`pip install 'context-engine-kit[report]'`"
    assert [install_form(w) for a in pip_lines(old) for w in requirements(a)] == [
        "index",
        "index",
    ]
    good = (
        "pip install path/to/context-engine-kit   # a clone\n"
        '`pip install -e path/to/context-engine-kit` and `pip install "git+<clone URL>"`\n'
        'python -m pip install "context-engine-kit[report] @ git+${KIT_URL}@${KIT_REF}"\n'
        "pip install 'path/to/context-engine-kit[report]' && pytest\n"
        ".venv/bin/pip install -e '.[test,report]' && .venv/bin/ruff check .\n"
        "pip install matplotlib"
    )
    forms = [install_form(w) for a in pip_lines(good) for w in requirements(a)]
    assert forms == ["path", "path", "git", "git", "path", "clone-root", None]


def test_every_install_line_is_one_the_readme_supports():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    readme_forms = {install_form(w) for a in pip_lines(readme) for w in requirements(a)} - {None}
    assert readme_forms == {"clone-root", "path", "git"}, readme_forms
    assert "not on the package index" in readme
    seen = {}
    for path in doc_files() + source_files():
        text = path.read_text(encoding="utf-8")
        for args in pip_lines(text):
            for word in requirements(args):
                form = install_form(word)
                where = f"{path.relative_to(REPO_ROOT)}: pip install {args}"
                assert form != "index", (
                    f"{where}: the kit is not on the package index; install it from a clone "
                    "(pip install path/to/context-engine-kit) or a git URL, as the README says"
                )
                if form:
                    seen.setdefault(form, where)
    assert readme_forms >= set(seen), seen
    # the pages the user reads first say how to install the kit
    for page in ("docs/write-your-own-engine.md", "docs/ci.md"):
        text = (REPO_ROOT / page).read_text(encoding="utf-8")
        assert any(install_form(w) for a in pip_lines(text) for w in requirements(a)), page
