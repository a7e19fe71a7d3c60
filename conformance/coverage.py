"""``docs/coverage.md``, generated from the check registry and the mutant table.

Every clause of ``docs/contract.md`` gets a row: its checks (id, level), its mutants, and
the issue that owns it. Host-side clauses list the host/provider/store test files in this
tree that name them. Run ``context-engine-kit coverage`` to rewrite the file and
``context-engine-kit coverage --check`` (or the test suite) to verify it is current.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "contract.md"
COVERAGE = ROOT / "docs" / "coverage.md"
HOST_TEST_DIRS = ("tests/host", "tests/provider", "tests/store")

#: Clauses proven by the host, provider and store rather than by engine checks.
HOST_SIDE = {
    "R1": "issue 4",
    "R2": "issue 4",
    "R3": "issue 4",
    "H2": "issue 4",
    "H4": "issue 4",
    "H7": "issue 4",
    "U1": "issue 5",
    "U3": "issue 5",
    "U5": "issue 5",
    "U8": "issue 5",
    "U9": "issue 5 / issue 3",
    "C3": "issue 4",
    "B7": "issue 4",
    "P1": "issue 3",
    "P2": "issue 3",
    "P3": "issue 3",
    "P4": "issue 3",
}
#: Clauses that only grant a permission: no mutant can break them.
PERMISSION_ONLY = {"K2": "engines that override update_model() may ignore model_thresholds"}
KIT_CLAUSES = {
    "S0": "Structural gate (kit practice): every signature problem of the engine in one message "
    "(A1-A4, O1, O4, O6, O10, H3, R4 surface).",
    "D1": "Determinism (kit practice, SHOULD): two fresh engines, same input, same output once "
    "message_uid values are masked by first appearance; for snapshot diffing (issue 7).",
}

NOTES = """\
## Notes and documented divergences

- <a id="s0"></a>**S0** and <a id="d1"></a>**D1** are kit clauses, not contract clauses: S0 is the
  structural gate (run first; all problems in one message), D1 determinism (SHOULD).
- **B3** follows the seeds: the head (protect_first_n messages, the system prompt included,
  indices 0..2 by default) is kept on every compaction; the tail keeps at least protect_last_n
  messages, uncapped. Head decay (Hermes MAIN) is host practice against the seeds and is checked
  (REG-i) only for engines that declare the capability `head-decay`.
- **V1-V4** are MUST on compress() output and SHOULD on select_context() replacements (the host
  sends replacements through its sanitizers).
- **A6**: MUST "a compress() that changed the history increments compression_count"; SHOULD
  "every call counts" (seeds; Hermes does not count a no-op pass).
- **O3**: the three last_* counters are 0 after on_session_reset (MUST); compression_count == 0 is
  host practice (SHOULD).
- **H5**: no check requires on_turn_complete to fire, or not fire, on an early exit (seeds: future work).
- Host-practice clauses say "(host practice)" in their failure messages (A7, O8 keys, K1's int()
  formula, R6 plugin.yaml name, REG-c, REG-i, REG-j).
- Checks use small windows (16 000 tokens by default) so threshold-crossing histories stay small;
  Hermes itself refuses windows under 64 000 tokens. This is a documented divergence: the
  contract's rules do not depend on the window size.
- Capabilities (`conformance_capabilities`): `compressor` (B1-B6, REG-h MUST), `focus` (A5),
  `head-decay` (REG-i instead of B3's head rule). Missing capabilities turn checks into skips with
  the reason.
"""


def contract_clauses() -> dict[str, str]:
    """``{clause: first words of its text}`` in contract order, from docs/contract.md."""
    out: dict[str, str] = {}
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^- ([A-Z]{1,2}\d+) (.*)", line)
        if m and m.group(1) not in out:
            text = re.sub(r"[`*]", "", m.group(2)).strip()
            out[m.group(1)] = text[:70] + ("..." if len(text) > 70 else "")
        for extra in re.findall(r"\b(O6|O10)\b `", line):  # "O5 ... O6 ..." share one line
            out.setdefault(extra, "see O5" if extra == "O6" else "see O9")
    return out


def host_tests(clause: str) -> list[str]:
    """Test files under tests/host, tests/provider, tests/store that name ``clause``."""
    found = []
    pattern = re.compile(rf"\b{re.escape(clause)}\b")
    for d in HOST_TEST_DIRS:
        for path in sorted((ROOT / d).glob("test_*.py")):
            if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                found.append(f"{d}/{path.name}")
    return found


def render() -> str:
    """The whole of docs/coverage.md."""
    from conformance import CONTRACT_VERSION, registry
    from reference_engines.mutants import KILLS

    checks = defaultdict(list)
    for c in registry.all_checks():
        checks[c.clause].append(c)
    mutants = defaultdict(list)
    for spec, kill in KILLS.items():
        mutants[kill.clause].append(spec.replace("reference_engines.mutants.", ""))
    clauses = dict(KIT_CLAUSES)
    clauses.update(contract_clauses())
    lines = [
        "<!-- Generated by `context-engine-kit coverage` from the check registry; do not edit. -->",
        f"# Coverage: contract {CONTRACT_VERSION} clause -> checks -> mutants -> owner",
        "",
        "Every engine-facing clause has checks that can fail and a mutant engine they kill "
        "(`context-engine-kit mutants` prints the kill matrix). Host-side clauses are proven by the "
        "host, provider and store tests listed. Levels: MUST fails the run, SHOULD is reported.",
        "",
        "| clause | text | checks (level) | mutants | owner |",
        "|---|---|---|---|---|",
    ]
    for clause in sorted(clauses, key=registry.clause_key):
        text = clauses[clause].replace("|", "\\|")
        chk = "<br>".join(f"`{c.id}` ({c.level})" for c in checks.get(clause, []))
        mut = "<br>".join(f"`{m}`" for m in mutants.get(clause, []))
        if clause in HOST_SIDE:
            tests = host_tests(clause)
            chk = chk or (
                "proven by " + ", ".join(f"`{t}`" for t in tests)
                if tests
                else "host-side; its host/provider/store tests are not in this tree yet"
            )
            owner = HOST_SIDE[clause]
            mut = mut or "(host-side)"
        else:
            owner = "issue 6"
        if clause in PERMISSION_ONLY:
            mut = f"none needed (permission: {PERMISSION_ONLY[clause]})"
            chk = chk or "none (a permission cannot be violated)"
        if clause == "A5":
            mut += "<br>(permission-only for engines without `focus`)"
        lines.append(f"| {clause} | {text} | {chk or '**none**'} | {mut or '**none**'} | {owner} |")
    lines += ["", NOTES]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``coverage`` writes docs/coverage.md; ``coverage --check`` exits 1 when it is stale.

    Bad options exit 2 with argparse's message; ``--help`` prints usage and writes nothing.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="context-engine-kit coverage",
        description="Write docs/coverage.md (clause -> checks -> mutants -> owner) "
        "from the check registry.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="only verify that docs/coverage.md is current (exit 1 when it is stale)",
    )
    args = parser.parse_args(argv)
    if not CONTRACT.is_file():
        print(
            f"context-engine-kit coverage: error: {CONTRACT} not found: coverage needs a source checkout of "
            "context-engine-kit (docs/ is not installed with the package). Run it from a clone installed "
            "with pip install -e path/to/clone.",
            file=sys.stderr,
        )
        return 2
    text = render()
    if args.check:
        current = COVERAGE.read_text(encoding="utf-8") if COVERAGE.exists() else ""
        if current != text:
            print("docs/coverage.md is out of date: run context-engine-kit coverage")
            return 1
        print("docs/coverage.md is current")
        return 0
    COVERAGE.write_text(text, encoding="utf-8")
    print(f"wrote {COVERAGE}")
    return 0
