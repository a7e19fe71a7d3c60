"""The JSON Schema of the JSON verdict, shipped with the kit, and a check against it.

``conformance/schemas/verdict.schema.json`` (JSON Schema draft 2020-12) describes the document
:func:`conformance.run.verdict_format.write_verdict_json` writes (``--conformance-json``,
``context-engine-kit check --json``, ``run_conformance(json_path=...)``) for
``format_version`` :data:`~conformance.run.verdict_format.VERDICT_FORMAT_VERSION`: every key the kit
writes, its JSON type, which keys are always there, and the ``verdict``, ``outcome`` and
``level`` words. Unknown keys are allowed at every level, so a verdict from a kit that added a
key still validates; a removed or retyped key does not.

A consumer checks a file with::

    from conformance.run.verdict_schema import validate_verdict
    validate_verdict(json.loads(Path("verdict.json").read_text(encoding="utf-8")))
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The schema file, inside the installed package.
SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "verdict.schema.json"


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return SCHEMA_PATH.read_text(encoding="utf-8")


def verdict_schema() -> dict[str, Any]:
    """The verdict's JSON Schema (a new dict on each call, parsed from :data:`SCHEMA_PATH`)."""
    return json.loads(_schema_text())


def validate_verdict(data: Any) -> None:
    """Check ``data`` (a parsed JSON verdict: the ``dict`` of ``json.loads`` on the file)
    against :func:`verdict_schema`; return None when it conforms.

    Raises:
        jsonschema.ValidationError: ``data`` breaks the schema (the most relevant error:
            its ``path`` names the key, e.g. ``results/0/outcome``, its ``message`` what is
            wrong), e.g. ``format_version`` missing or not 1, a required key missing, a key
            of the wrong JSON type, or an unknown ``verdict``, ``outcome`` or ``level`` word.
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(verdict_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise error


__all__ = ["SCHEMA_PATH", "validate_verdict", "verdict_schema"]
