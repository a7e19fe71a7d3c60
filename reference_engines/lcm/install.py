"""Install the LCM plugin folder into a Hermes home: ``DIR/plugins/lcm/`` (R3 user directory).

:func:`install_plugin` copies the folder; :func:`main` is its command line, for both
``context-engine-kit install-plugin lcm --hermes-home DIR`` and
``python -m reference_engines.lcm.install``.

Import-safe: Hermes' loader executes sibling modules of a plugin's ``__init__.py``, so this
module only defines functions.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

#: Files and folders never copied into an installed plugin.
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".*")


def plugin_source_dir() -> Path:
    """The folder of this plugin (the one holding ``plugin.yaml``)."""
    return Path(__file__).resolve().parent


def install_plugin(name: str = "lcm", hermes_home: str | Path | None = None) -> Path:
    """Copy this plugin folder to ``<hermes_home>/plugins/<name>/`` and return that path.

    An existing install there is replaced. ``hermes_home`` defaults to ``$HERMES_HOME`` or
    ``~/.hermes``.

    Raises:
        ValueError: ``name`` is not ``"lcm"`` (this module installs only the LCM engine), or
            the target would be inside the source folder.
        OSError: the directory cannot be written (the message names it).
    """
    if name != "lcm":
        raise ValueError(f"install_plugin: this installer ships only 'lcm', got {name!r}")
    if hermes_home is None:
        import os

        hermes_home = os.environ.get("HERMES_HOME") or Path.home() / ".hermes"
    source = plugin_source_dir()
    target = Path(hermes_home).expanduser().resolve() / "plugins" / name
    if source == target or source in target.parents:
        raise ValueError(f"install_plugin: target {target} is inside the plugin source {source}")
    try:
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, target, ignore=_IGNORE)
    except OSError as exc:
        raise OSError(f"install_plugin: could not write {target}: {exc}") from exc
    return target


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Install from a command line, ``[lcm] --hermes-home DIR``, and print the installed folder.

    ``prog``: the command this runs as, named in its usage and error lines. The kit's
    ``context-engine-kit install-plugin`` passes its name: there ``lcm`` and ``--hermes-home``
    are required, a failed copy is one ``PROG: error: ...`` line, and the folder alone is
    printed. Without it, as ``python -m reference_engines.lcm.install``, both may be left out
    (``--hermes-home`` defaults to ``$HERMES_HOME`` or ``~/.hermes``), a failed copy says
    ``install failed: ...``, and a second line says how to select the engine.

    Exit status 0 on success, 2 with a message on stderr when the copy fails or the command
    line is wrong.
    """
    import argparse
    import sys

    standalone = prog is None
    parser = argparse.ArgumentParser(
        prog=prog or "python -m reference_engines.lcm.install",
        description="Copy a bundled reference engine, laid out as a Hermes plugin folder, "
        "to HERMES_HOME/plugins/<name>/.",
    )
    parser.add_argument(
        "name",
        nargs="?" if standalone else None,
        default="lcm",
        choices=["lcm"],
        help="the bundled plugin to install",
    )
    parser.add_argument(
        "--hermes-home",
        required=not standalone,
        default=None,
        metavar="DIR",
        help="the Hermes home folder"
        + (" (default: $HERMES_HOME or ~/.hermes)" if standalone else ""),
    )
    args = parser.parse_args(argv)
    try:
        target = install_plugin(args.name, args.hermes_home)
    except (OSError, ValueError) as exc:
        print(f"install failed: {exc}" if standalone else f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(target)
    if standalone:
        print("Select it with `context.engine: lcm` in config.yaml.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
