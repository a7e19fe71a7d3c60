"""Covers the messages of conformance.clauses.errors, conformance.authoring.expect,
conformance.runtime.engine_loading,
conformance.checks.c_clones and conformance.scenarios (expectations, observe): a tuple is
named, a raising hook is worded once, a missing dependency is named, likely engine classes
come first, a folder without plugin.yaml is reported once, token counts are meaningful, the
0.19 deepcopy reason is right, and an H3 diff shows where the change is."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from conformance import run_conformance
from conformance.authoring.context import CheckContext
from conformance.authoring.expect import short
from conformance.checks.c_clones import per_agent_copy
from conformance.clauses.errors import ContractViolation, EngineSpecError
from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios.expectations import _shrink
from conformance.scenarios.observe import _first_change, diff_at
from reference_engines.mutants._base import MinimalEngine
from simulator.host.shim import AbcInfo

PLUGIN_DIRS = Path(__file__).resolve().parents[2] / "reference_engines" / "mutants" / "plugin_dirs"


class ReturnsTuple(MinimalEngine):
    """compress() returns a tuple of dicts instead of a list (A4)."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        return tuple(messages)


class SelectRaises(MinimalEngine):
    def select_context(self, request_messages, **kwargs):
        raise ValueError("selector broke")


def test_a_tuple_is_named_not_shown_as_a_json_list():
    assert short(({"role": "user"},)) == 'a tuple ({"role": "user"})'
    assert short([{"role": "user"}]) == '[{"role": "user"}]'
    [result] = run_conformance(
        ReturnsTuple, profile="quick", only=["A4-compress-one-message"], scenarios=False
    )
    assert result.outcome == "failed"
    assert 'got a tuple ({"role": "user", "content": "hello"})' in result.message, result.message


def test_a_raising_hook_is_worded_once():
    [result] = run_conformance(
        SelectRaises,
        profile="quick",
        only=["H1-hooks-do-not-raise[select_context]"],
        scenarios=False,
    )
    assert result.outcome == "failed"
    assert result.message.startswith(
        "[H1 SHOULD] select_context(): expected a normal return (the host fails open "
        'and logs it), got ValueError: "selector broke". See docs/contract.md#h1 '
        "(context-engine-kit explain H1)."
    )
    assert "raised: expected" not in result.message and ".." not in result.message


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("msgs_eng")]:
        del sys.modules[name]


def test_a_missing_dependency_of_the_engine_module_is_named(module_dir):
    (module_dir / "msgs_eng_dep.py").write_text(
        "import msgs_missing_dependency_xyz\n", encoding="utf-8"
    )
    with pytest.raises(EngineSpecError) as err:
        load_engine_factory("msgs_eng_dep:Engine")
    text = str(err.value)
    assert "module 'msgs_eng_dep' was found" in text
    assert "imports 'msgs_missing_dependency_xyz', which is not installed" in text
    assert "pip install msgs_missing_dependency_xyz" in text and "pip install -e ." not in text


def test_a_missing_engine_module_still_says_how_to_install_it():
    with pytest.raises(EngineSpecError) as err:
        load_engine_factory("msgs_eng_nowhere.sub:Engine")
    assert "module 'msgs_eng_nowhere.sub' could not be imported" in str(err.value)


def test_public_names_list_engine_classes_first(module_dir):
    (module_dir / "msgs_eng_names.py").write_text(
        "from typing import Any, Dict, List, Optional\n"
        "from reference_engines.mutants._base import MinimalEngine\n"
        "def helper(): pass\n"
        "class Settings: pass\n"
        "class ZetaEngine(MinimalEngine): pass\n",
        encoding="utf-8",
    )
    with pytest.raises(EngineSpecError) as err:
        load_engine_factory("msgs_eng_names:Engine")
    names = str(err.value).split("Public names there: ", 1)[1].split(". Give", 1)[0].split(", ")
    assert names[:4] == ["ZetaEngine", "MinimalEngine", "Settings", "helper"], names
    assert set(names[4:]) == {"Any", "Dict", "List", "Optional"}


def test_a_folder_without_plugin_yaml_is_reported_once_under_r4(tmp_path):
    folder = tmp_path / "noyaml"
    folder.mkdir()
    shutil.copy(PLUGIN_DIRS / "minimal" / "__init__.py", folder / "__init__.py")
    results = {
        r.check: r
        for r in run_conformance(
            MinimalEngine,
            profile="quick",
            only=["R4", "R6"],
            plugin_dir=str(folder),
            scenarios=False,
        )
    }
    assert results["R4-plugin-folder-loads"].outcome == "failed"
    assert "plugin.yaml is missing" in results["R4-plugin-folder-loads"].message
    yaml_check = results["R6-name-matches-plugin-yaml"]
    assert yaml_check.outcome == "skipped" and "missing or has no name" in yaml_check.message
    assert not [
        r
        for r in results.values()
        if r.outcome == "failed" and "plugin.yaml" in r.message and r.clause != "R4"
    ]


def test_a_wrong_plugin_yaml_name_still_fails_r6():
    results = {
        r.check: r
        for r in run_conformance(
            MinimalEngine,
            profile="quick",
            only=["R6-name-matches-plugin"],
            plugin_dir=str(PLUGIN_DIRS / "r6_wrong_name"),
            scenarios=False,
        )
    }
    result = results["R6-name-matches-plugin-yaml"]
    assert result.outcome == "failed"
    assert (
        "[R6 SHOULD] plugin.yaml name of plugin folder 'r6_wrong_name': "
        "expected engine.name 'minimal', got 'r6_wrong_name'"
    ) in result.message


def test_token_counts_say_what_a_compaction_did():
    assert _shrink(750603, 750603) == "took 750603 tokens and returned 750603 (nothing removed)"
    assert _shrink(1000, 1200) == "took 1000 tokens and returned 1200 (nothing removed, 200 more)"
    assert _shrink(1000, 250) == "took 1000 tokens and returned 250 (75% removed)"


class DeepcopyRaises(MinimalEngine):
    def __deepcopy__(self, memo):
        raise TypeError("cannot pickle 'sqlite3.Connection' object")


def test_deepcopy_failure_names_the_abc_without_clone_for_agent():
    ctx = CheckContext(DeepcopyRaises, abc=AbcInfo("hermes-agent", "0.19.0", frozenset()))
    with pytest.raises(ContractViolation) as err:
        per_agent_copy(ctx, ctx.new_engine(), "C1")
    text = str(err.value)
    assert (
        "the host ABC in use (hermes-agent 0.19.0) has no clone_for_agent, so the host deep-copies"
        in text
    )
    assert "'documented'" not in text


def test_deepcopy_failure_names_the_profile_that_never_clones():
    ctx = CheckContext(DeepcopyRaises, host_profile="hermes-0.19")
    with pytest.raises(ContractViolation) as err:
        per_agent_copy(ctx, ctx.new_engine(), "C1")
    assert (
        "the host profile 'hermes-0.19' never calls clone_for_agent, so the host deep-copies"
        in str(err.value)
    )


def test_h3_diff_shows_the_first_differing_position():
    text = (
        "Let us talk about the database: we use postgres "
        "15 for the main store and redis for caching."
    )
    assert diff_at(text, text.replace("15", "16")) == (
        'at character 49: "...abase: we use postgres 15 for the main store and..." -> '
        '"...abase: we use postgres 16 for the main store and..."'
    )
    where = _first_change(
        [{"role": "user", "content": text}],
        [{"role": "user", "content": text + "!"}],
        "request_messages",
    )
    assert where.startswith("request_messages[0].content (at character 92, 92 -> 93 characters: ")
    assert where.endswith('"...e and redis for caching." -> "...e and redis for caching.!")')


class WritesPartsAsText(MinimalEngine):
    """Keeps its tail, but stores each kept row's content as text: a list of parts (a pasted
    screenshot) becomes its JSON, base64 data URL included, so the output outgrows the input."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        import json

        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        return [
            {**m, "content": json.dumps(m["content"])} if isinstance(m.get("content"), list) else m
            for m in out
        ]


def test_an_a9_failure_names_content_parts_written_out_as_text():
    [result] = run_conformance(
        WritesPartsAsText, profile="quick", only=["A9-no-more-tokens"], scenarios=False
    )
    assert result.outcome == "failed", result.message
    assert "a list of parts written out as text" in result.message, result.message
    assert "(V7)" in result.message


def test_an_abstract_engine_is_told_to_implement_the_abstract_methods():
    from conformance.run.options import Declarations
    from conformance.run.probe import probe_problem

    raised = (
        "constructing the engine raised TypeError: Can't instantiate abstract class Mine with "
        "abstract methods compress, name"
    )
    text = probe_problem(Declarations(error=raised), "--engine=m:Mine", not_run="check")
    assert text is not None and "Implement every abstract method the error names" in text
    assert "--engine-kwargs" not in text  # arguments are not what it lacks
    other = probe_problem(
        Declarations(error="constructing the engine raised ValueError: no db"), "x", not_run="c"
    )
    assert other is not None and "--engine-kwargs" in other
