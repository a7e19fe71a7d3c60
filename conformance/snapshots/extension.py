"""The syrupy extension of the snapshot tier: one JSON file per corpus case, in the user's project.

:func:`extension_for` makes a :class:`CompressionSnapshotExtension` subclass bound to one
directory (``<rootdir>/.conformance/snapshots/<engine-slug>/``), because syrupy asks
extensions for their directory through class methods. Files are
``<directory>/<case id>.json``; text is UTF-8 exactly as
:func:`conformance.snapshots.canonical.snapshot_text` made it, so a snapshot is
byte-stable across runs, processes and xdist workers. Never writes into site-packages.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

_NAME_RE = re.compile(r"[^A-Za-z0-9_.-]+")


class CompressionSnapshotExtension(SingleFileSnapshotExtension):
    """Text JSON snapshots named after the corpus case, stored in :attr:`directory`."""

    _write_mode = WriteMode.TEXT
    file_extension = "json"
    directory: str = ""

    def serialize(self, data: Any, **kwargs: Any) -> str:
        """Snapshot text: ``data`` as given when it is a str, else canonical JSON of it."""
        if isinstance(data, str):
            return data
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        if not cls.directory:
            raise RuntimeError(
                "CompressionSnapshotExtension has no directory; use extension_for(directory)"
            )
        return cls.directory

    @classmethod
    def matches_test_location(cls, *, test_location: Any, snapshot_location: str) -> bool:
        """Every file in :attr:`directory` belongs to the snapshot tier's test."""
        return Path(snapshot_location).parent == Path(cls.directory)

    @classmethod
    def get_snapshot_name(cls, *, test_location: Any, index: Any = 0) -> str:
        """``<case id>`` from ``test_compression_snapshot[<case id>]`` (else the test name)."""
        name = test_location.testname
        m = re.search(r"\[(.+)\]$", name)
        base = m.group(1) if m else name
        return _NAME_RE.sub("_", base) + (f".{index}" if index else "")


def extension_for(directory: Path) -> type:
    """A :class:`CompressionSnapshotExtension` subclass that stores files in ``directory``."""
    return type(
        "CompressionSnapshotExtension",
        (CompressionSnapshotExtension,),
        {"directory": str(directory)},
    )


__all__ = ["CompressionSnapshotExtension", "extension_for"]
