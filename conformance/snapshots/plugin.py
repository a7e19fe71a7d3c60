"""Pytest sub-plugin: the snapshot tier (syrupy) of a conformance run.

Inert unless an engine is given (read through :func:`conformance.plugin.engine_factory`:
``--engine``, ``CONFORMANCE_ENGINE``, the ini key, or ``--engine-plugin DIR``).
With an engine, the tier is on when ``--conformance-snapshots`` or ``--snapshot-update``
is given, or when ``<rootdir>/.conformance/snapshots/<engine-slug>/`` exists (the base folder is
``--conformance-snapshots-dir`` when given; ``context-engine-kit check`` gives
``<cwd>/.conformance/snapshots``), so a first
conformance run never fails for lack of snapshots. A mismatch is a failure of kit clause D1
(SHOULD; :mod:`~conformance.snapshots.mismatch`) that fails the run all the same (the stored
snapshot is the author's baseline; ``Verdict.snapshot_mismatches``). When on, the tier's tests
(:mod:`conformance.snapshots.suite`) join a conformance run (no test paths) or, with the
flag, any run. ``conformance_snapshot`` is syrupy's ``snapshot`` bound to that folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE_DIR = Path(__file__).parent / "suite"
_DIR = pytest.StashKey[Path]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    group.addoption(
        "--conformance-snapshots",
        action="store_true",
        default=False,
        help="run the snapshot tier (compress/select_context output over the seeded corpus, diffed by "
        "syrupy; snapshots in .conformance/snapshots/<engine>/). On by default when that folder "
        "exists; create it with --snapshot-update.",
    )
    group.addoption(
        "--conformance-snapshots-dir",
        default=None,
        metavar="DIR",
        help="the folder holding the per-engine snapshot folders (default "
        "<rootdir>/.conformance/snapshots; context-engine-kit check: ./.conformance/snapshots).",
    )


def _engine_key(config: pytest.Config) -> tuple | None:
    """(spec, kwargs) naming the engine's snapshot folder, from :func:`conformance.plugin.engine_factory`.

    A plugin folder (``--engine-plugin DIR``) is named ``plugin:<folder name>``, so the
    folder does not depend on where the plugin sits on this machine. None without an engine.
    """
    from conformance.plugin import PluginFolderFactory, engine_factory

    factory = engine_factory(config)
    if factory is None:
        return None
    if isinstance(factory, PluginFolderFactory):
        return f"plugin:{Path(factory.spec).name}", None
    return factory.spec, factory.kwargs


def snapshots_directory(config: pytest.Config, key: tuple) -> Path:
    """The engine's snapshot folder: ``<base>/<engine-slug>``, where base is ``--conformance-snapshots-dir``
    (relative to the folder pytest was started from) or else ``<rootdir>/.conformance/snapshots`` (clause D1)."""
    from conformance.snapshots.extension import engine_slug, snapshot_dir

    try:
        base = config.getoption("--conformance-snapshots-dir")
    except ValueError:
        base = None
    if not base:
        return snapshot_dir(config.rootpath, *key)
    return (config.invocation_params.dir / base).resolve() / engine_slug(*key)


def _option(config: pytest.Config, name: str) -> bool:
    try:
        return bool(config.getoption(name))
    except ValueError:
        return False


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    key = _engine_key(config)  # a bad engine spec is a pytest.UsageError already
    if key is None:
        return
    directory = snapshots_directory(config, key)
    flag = _option(config, "--conformance-snapshots")
    on = flag or _option(config, "--snapshot-update") or directory.is_dir()
    if not on:
        return
    config.stash[_DIR] = directory
    # snapshot files are named after the corpus case, not the test function: syrupy's
    # "Can not relate snapshot name" warning does not apply.
    config.addinivalue_line("filterwarnings", r"ignore:\s*Can not relate snapshot name:UserWarning")
    if (flag or config.args_source != pytest.Config.ArgsSource.ARGS) and str(
        SUITE_DIR
    ) not in config.args:
        config.args.append(str(SUITE_DIR))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items) -> None:
    """Tag the snapshot items with clause D1 (SHOULD) as junit ``user_properties``; the verdict reads
    them, so a snapshot mismatch counts under D1 in the summary by clause and the JSON verdict."""
    from conformance.snapshots.mismatch import TEST_NAME, item_properties

    for item in items:
        callspec = getattr(item, "callspec", None)
        if (
            getattr(item, "originalname", None) == TEST_NAME
            and callspec is not None
            and "case_id" in callspec.params
        ):
            item.user_properties += item_properties(callspec.params["case_id"])


def pytest_report_header(config: pytest.Config):
    directory = config.stash.get(_DIR, None)
    return f"conformance snapshots: {directory}" if directory is not None else None


@pytest.fixture
def conformance_snapshot(snapshot, pytestconfig: pytest.Config):
    """syrupy's ``snapshot`` storing ``<case>.json`` in ``.conformance/snapshots/<engine>/``."""
    from conformance.snapshots.extension import extension_for

    directory = pytestconfig.stash.get(_DIR, None)
    if directory is None:
        key = _engine_key(pytestconfig)
        if key is None:
            pytest.skip("no engine given: pass --engine=MODULE:ATTR or --engine-plugin DIR")
        directory = snapshots_directory(pytestconfig, key)
    return snapshot.use_extension(extension_for(directory))
