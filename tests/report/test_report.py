"""Covers conformance.report (write_report, plots) and conformance.frontends.report_plugin: the HTML
report's verdict by clause, one plot per scenario, byte-stable SVG, no-matplotlib fallback, the
failures summary first and the embedded clause texts every clause link points to."""

from __future__ import annotations

import html
import re

import pytest

from conformance.report import plots, write_report
from conformance.run.session import Result, scenario_results
from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios import library_paths
from conformance.scenarios.loader import load_scenario
from conformance.scenarios.runner import run_scenario
from reference_engines.compressor import ReferenceCompressor

ENGINE = "reference_engines.compressor:ReferenceCompressor"

pytest.importorskip("matplotlib", reason="the report's plots need the 'report' extra (matplotlib)")


@pytest.fixture(scope="module")
def runs():
    f = load_engine_factory(ENGINE)
    picked = [p for p in library_paths() if p.name.startswith(("b7", "l1_lifecycle", "u3"))]
    return [run_scenario(load_scenario(p), f, builtin_factory=ReferenceCompressor) for p in picked]


def results_of(runs):
    out = [
        Result("A1-name-is-str", "A1", "MUST", "passed"),
        Result("V2-pairs", "V2", "MUST", "failed", "[V2 MUST] x"),
    ]
    for r in runs:
        out += scenario_results(r.scenario, load_engine_factory(ENGINE), run=r)
    return out


def test_report_has_the_verdict_table_and_one_plot_per_scenario(tmp_path, runs):
    path = tmp_path / "report.html"
    assert write_report(path, results_of(runs), runs, engine="--engine=x:Y") == ""
    text = path.read_text(encoding="utf-8")
    assert text.count('<figure class="plot"') == len(runs) == 3
    assert text.count("<svg") == len(runs)
    for r in runs:
        assert f'data-scenario="{r.scenario.name}"' in text
    table = re.search(r'<table id="verdict-by-clause">(.*?)</table>', text, re.S).group(1)
    assert '<a href="#clause-b7">B7</a>' in table and '<a href="#clause-v2">V2</a>' in table
    assert "verdict: FAIL" in text  # the V2 MUST failure
    assert (
        "<script" not in text
        and "<link" not in text
        and not re.search(r"(src|href)=.https?:", text)
    )


def test_plot_shows_threshold_context_compactions_and_cache_series(runs):
    svg = plots.run_svg(runs[0])
    for label in (
        "prompt tokens",
        "threshold_tokens",
        "context_length",
        "compaction",
        "cache read tokens",
        "cache write tokens",
        "provider call",
    ):
        assert label in svg, label


def test_svg_is_byte_stable(runs):
    assert plots.run_svg(runs[1]) == plots.run_svg(runs[1])


def test_without_matplotlib_the_report_says_so_and_shows_the_numbers(tmp_path, runs, monkeypatch):
    monkeypatch.setattr(plots, "AVAILABLE", False)
    monkeypatch.setattr(
        plots, "MISSING_NOTE", "plots need matplotlib (the kit's report extra): pip install it"
    )
    path = tmp_path / "plain.html"
    note = write_report(path, results_of(runs), runs)
    text = path.read_text(encoding="utf-8")
    assert "pip install" in note and "<svg" not in text
    assert text.count("plots need matplotlib") >= len(runs)
    assert text.count("<table class='numbers'>") == len(runs)


@pytest.mark.slow
def test_pytest_option_writes_the_report_under_xdist(kit_pytester):
    import shutil

    from conformance.scenarios import LIBRARY_DIR

    for name in ("c1_subagents.scenario.yaml", "k1_model_thresholds.scenario.yaml"):
        shutil.copy(LIBRARY_DIR / name, kit_pytester.path / name)
    result = kit_pytester.runpytest_subprocess(
        "-p",
        "conformance.plugin",  # it registers the scenario and report sub-plugins
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(kit_pytester.path),
        "-n",
        "2",
        "--engine=reference_engines.mutants._base:MinimalEngine",
        "--conformance-report=out/report.html",
        "c1_subagents.scenario.yaml",
        "k1_model_thresholds.scenario.yaml",
    )
    assert result.ret == 0, result.stdout.str()
    text = (kit_pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert text.count('<figure class="plot"') == 2
    lines = result.stdout.lines
    assert "conformance report: out/report.html (10 results, 2 scenario plots)" in lines
    # the report's lines come after pytest's progress line, each on its own line
    assert any(re.fullmatch(r"\.+ +\[100%\]", line) for line in lines), lines
    assert not any("%]report" in line or "%]conformance" in line for line in lines), lines
    assert sum(line.startswith("report: ran scenario ") for line in lines) == 2, lines


def test_failures_come_first_and_every_clause_link_has_its_text(tmp_path, runs):
    from conformance.run.explain import clause_text

    path = tmp_path / "report.html"
    results = results_of(runs) + [
        Result("A6-counters-are-ints", "A6", "SHOULD", "error", "[A6 SHOULD] engine not available"),
        Result(
            "V4-system-prompt-first[compress]",
            "V4",
            "MUST",
            "failed",
            "[V4 MUST] compress() output: expected the system prompt first, got it at index 2. "
            "See docs/contract.md#v4 (context-engine-kit explain V4). Repro: pytest --engine=x:Y",
        ),
    ]
    write_report(path, results, runs, engine="--engine=x:Y")
    text = path.read_text(encoding="utf-8")
    failures = text.index('id="failures"')
    assert failures < text.index('id="verdict-by-clause"') < text.index('<figure class="plot"')
    section = re.search(r'<section id="failures">(.*?)</section>', text, re.S).group(1)
    assert "Failures (3: 2 MUST, 1 SHOULD)" in section
    rows = re.findall(r'<td class="l">([^<]+)</td><td class="msg">', section)
    assert rows == ["V2-pairs", "V4-system-prompt-first[compress]", "A6-counters-are-ints"]
    assert '<a href="#clause-v4">docs/contract.md#v4</a>' in section
    # every in-page clause link has its target, with the clause's title and text
    targets = set(re.findall(r'href="#(clause-[a-z0-9]+)"', text))
    assert {"clause-v2", "clause-v4", "clause-a6", "clause-b7"} <= targets
    for target in targets:
        clause = target.removeprefix("clause-").upper()
        match = re.search(
            rf'<section class="clause" id="{target}"><h3>(.*?)</h3><p>(.*?)</p>', text
        )
        assert match, target
        assert match.group(1).startswith(f"{clause}: ")
        assert html.unescape(match.group(2)) == clause_text(clause) != ""
    unlinked = re.sub(r'<a href="#clause-[a-z0-9]+">docs/[^<]+</a>', "", section)
    assert "docs/contract.md#" not in unlinked  # message pointers link into the report


def test_a_clean_run_says_so_where_the_failures_would_be(tmp_path, runs):
    path = tmp_path / "clean.html"
    results = [r for r in results_of(runs) if r.outcome not in ("failed", "error")]
    write_report(path, results, runs, engine="--engine=x:Y")
    text = path.read_text(encoding="utf-8")
    assert '<section id="failures" class="none"><h2>Failures (0)</h2>' in text
    assert "verdict: PASS" in text


def test_a_run_without_a_report_never_imports_matplotlib(kit_pytester):
    """The plots' library loads only for ``--conformance-report``: a plain run stays fast and
    free of matplotlib's own import-time warnings (seen with the matplotlib floor)."""
    kit_pytester.makeconftest(
        "import sys\n"
        "def pytest_unconfigure(config):\n"
        "    open('imported.txt', 'w').write(str('matplotlib' in sys.modules))\n"
    )
    result = kit_pytester.runpytest_subprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "no:cacheprovider",
        "--engine=reference_engines.mutants._base:MinimalEngine",
        "--conformance-no-scenarios",
        "-k",
        "A1-",
    )
    assert result.ret == 0, result.stdout.str()
    assert (kit_pytester.path / "imported.txt").read_text() == "False"
