"""Version of the context-engine contract the kit carries out (kept apart from the package version).

The contract text lives in ``docs/contract.md``; each clause has an anchor there.
"""

CONTRACT_VERSION = "1.1"

#: Where failure messages point; ``#<clause>`` anchors are lower-case clause ids.
CONTRACT_DOC = "docs/contract.md"


def clause_link(clause: str) -> str:
    """Relative link to a clause's anchor, e.g. ``docs/contract.md#v2`` for ``V2``."""
    return f"{CONTRACT_DOC}#{clause.lower()}"
