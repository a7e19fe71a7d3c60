"""Covers docs/contract.md, docs/contract-notes.md and simulator.contract: the kit's contract
text and its seed notes.

Every clause id must keep its ``<a id="...">`` anchor (failure messages link to it through
``simulator.contract.clause_link``), the version in the document must match ``CONTRACT_VERSION``,
and every clause the notes cite must exist in the contract.
"""

import re
from pathlib import Path

from simulator.contract import CONTRACT_VERSION, clause_link

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
NOTES = ROOT / "docs" / "contract-notes.md"

#: Every clause id of the contract, by section (R, A, V, O, H, U, T, C, L, K, TS, B, P).
CLAUSES = (
    [f"R{i}" for i in range(1, 7)]
    + [f"A{i}" for i in range(1, 8)]
    + [f"V{i}" for i in range(1, 6)]
    + [f"O{i}" for i in range(1, 15)]
    + [f"H{i}" for i in range(1, 8)]
    + [f"U{i}" for i in range(1, 11)]
    + ["T1", "T2", "C1", "C2", "C3", "L1", "K1", "K2", "TS1", "TS2", "TS3"]
    + [f"B{i}" for i in range(1, 8)]
    + [f"P{i}" for i in range(1, 6)]
    + ["A8", "A9", "A10", "A11", "V6", "V7"]  # invariants on realistic sessions
)


def _anchors(text):
    return re.findall(r'<a id="([^"]+)"></a>', text)


def test_every_clause_has_exactly_one_anchor():
    anchors = _anchors(CONTRACT.read_text(encoding="utf-8"))
    assert sorted(anchors) == sorted(c.lower() for c in CLAUSES)


def test_every_clause_text_follows_its_anchor():
    lines = CONTRACT.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        ids = _anchors(line)
        if not ids:
            continue
        body = lines[i + 1]
        for clause in ids:
            assert re.search(rf"\b{clause.upper()}\b", body), (
                f"anchor {clause!r} is not followed by its clause: {body!r}"
            )


def test_clause_link_targets_exist():
    anchors = set(_anchors(CONTRACT.read_text(encoding="utf-8")))
    for clause in CLAUSES:
        assert clause_link(clause).split("#", 1)[1] in anchors


def test_document_version_matches_contract_version():
    head = CONTRACT.read_text(encoding="utf-8").split("\n\n", 2)[:2]
    assert f"Contract version {CONTRACT_VERSION}." in head[0]
    assert f"(version {CONTRACT_VERSION})" in "\n".join(head)


def test_notes_cite_only_existing_clauses():
    notes = NOTES.read_text(encoding="utf-8").split("\n## 4.", 1)[0]  # sections 1-3 cite clauses
    cited = set(re.findall(r"^### \d+\.\d+ \[([A-Z]+\d+)\]", notes, flags=re.M))
    cited |= set(re.findall(r"^\| \d+\.\d+ \| ([A-Z]+\d+)", notes, flags=re.M))
    assert cited, "no clause citations found in the notes"
    assert cited <= set(CLAUSES), sorted(cited - set(CLAUSES))
