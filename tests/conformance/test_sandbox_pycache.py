"""The sandbox lets Python's import system write its bytecode cache (the ``__pycache__`` folder
and the files in it) wherever a module is imported from: that write is the interpreter's, not
the engine's. In a fresh, non-editable install (``tox -e pypi-engines``) the kit's own modules
imported lazily during a case create their ``__pycache__`` folders
(docs/verdicts/hermes-context-tuner-0.3.3.md, Notes)."""

from __future__ import annotations

import importlib
import sys

from conformance.runtime.sandbox import Sandbox, install_audit_hook, watching


def test_bytecode_cache_folder_and_files_are_allowed(tmp_path):
    sandbox = Sandbox()
    try:
        assert sandbox.allows_write(tmp_path / "pkg" / "__pycache__")
        assert sandbox.allows_write(tmp_path / "pkg" / "__pycache__" / "m.cpython-311.pyc")
        assert not sandbox.allows_write(tmp_path / "pkg" / "m.py")
        assert not sandbox.allows_write(tmp_path / "pkg" / "__pycache__x")
    finally:
        sandbox.close()


def test_first_import_of_a_module_inside_a_case_is_no_finding(tmp_path, monkeypatch):
    pkg = tmp_path / "fresh_pkg_for_sandbox"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    install_audit_hook()
    sandbox = Sandbox()
    try:
        with watching(sandbox) as reaches:
            module = importlib.import_module("fresh_pkg_for_sandbox")
        assert module.VALUE == 1
        assert (pkg / "__pycache__").is_dir()  # the cache was written
        assert reaches == []
    finally:
        sandbox.close()
        sys.modules.pop("fresh_pkg_for_sandbox", None)
