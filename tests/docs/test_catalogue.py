"""Covers conformance.clauses.catalogue against docs/contract.md (its inventory is read from the
spec, as
array-api-tests does) and against the registry: every anchor of the contract is a catalogue
clause and back, every registered check names a catalogue clause, every capability and host
feature a check declares is a declared one, and an unknown capability is a usage error that
names the known ones and the closest match."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.authoring import registry
from conformance.clauses import catalogue
from conformance.clauses.errors import KitUsageError
from conformance.run.session import ConformanceSession, RunOptions
from reference_engines.mutants._base import MinimalEngine
from simulator.host.profiles import HOST_FEATURES, PROFILES

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "contract.md"


def contract_anchors() -> list[str]:
    return re.findall(r'<a id="([a-z]+\d+)"></a>', CONTRACT.read_text(encoding="utf-8"))


def test_every_contract_anchor_is_a_catalogue_clause_and_back():
    anchors = contract_anchors()
    contract = [c for c in catalogue.CLAUSES.values() if c.side != catalogue.KIT]
    assert sorted(anchors) == sorted(c.id.lower() for c in contract)
    for clause in contract:
        assert clause.anchor == f"docs/contract.md#{clause.id.lower()}"
    for kit in ("S0", "D1"):
        assert catalogue.get(kit).anchor == f"docs/coverage.md#{kit.lower()}"


def test_catalogue_titles_follow_the_contract_order_and_text():
    text = CONTRACT.read_text(encoding="utf-8")
    order = [m.group(1) for m in re.finditer(r"^- ([A-Z]{1,2}\d+) ", text, re.M)]
    listed = [c for c in catalogue.CLAUSES if catalogue.get(c).side != catalogue.KIT]
    assert [c for c in listed if c in order] == [c for c in order if c in listed]
    for clause in catalogue.CLAUSES.values():
        assert clause.title and len(clause.title) <= 90 and not clause.title.endswith(".")


def test_registry_declarations_come_from_the_catalogue():
    for chk in registry.all_checks():
        assert chk.clause in catalogue.CLAUSES, chk.id
        assert chk.requires <= catalogue.CAPABILITIES.keys(), chk.id
        assert chk.excludes <= catalogue.CAPABILITIES.keys(), chk.id
        assert chk.needs <= set(HOST_FEATURES), chk.id
        assert chk.func.__name__ == registry.function_name(chk.id), chk.id
    host_side = [c for c in catalogue.CLAUSES.values() if c.side == catalogue.HOST]
    assert {"R1", "H2", "H4", "U9", "P1", "B7", "C3"} <= {c.id for c in host_side}


def test_host_features_are_read_off_the_profiles_own_fields():
    documented, old = PROFILES["documented"], PROFILES["hermes-0.19"]
    assert all(documented.has(f) for f in HOST_FEATURES)
    assert not any(old.has(f) for f in HOST_FEATURES)
    with pytest.raises(KeyError):
        documented.has("compresor")


def test_a_capability_typo_is_a_usage_error_naming_the_closest_match():
    with pytest.raises(
        KitUsageError, match=r"unknown capability 'compresor' \(did you mean 'compressor'\?\)"
    ):
        ConformanceSession(RunOptions(capabilities=frozenset({"compresor"})), MinimalEngine)

    class Typo(MinimalEngine):
        conformance_capabilities = frozenset({"focuss"})

    session = ConformanceSession(RunOptions(), Typo)
    with pytest.raises(
        KitUsageError,
        match=r"Typo.conformance_capabilities: unknown capability 'focuss' "
        r"\(did you mean 'focus'\?\).*'compressor'",
    ):
        session.declarations  # noqa: B018


def test_a_check_declaring_an_unknown_clause_or_capability_is_refused_at_import():
    with pytest.raises(KeyError, match="no clause 'Q9'"):
        registry.check("Q9", "made-up", level="MUST", title="t")
    with pytest.raises(ValueError, match="unknown capability 'compresor'"):
        registry.check("B1", "made-up", level="MUST", title="t", requires=("compresor",))
    with pytest.raises(ValueError, match="name it check_b1_made_up"):
        registry.check("B1", "made-up", level="MUST", title="t")(lambda ctx: None)
