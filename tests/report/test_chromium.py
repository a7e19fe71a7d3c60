"""Covers conformance.report: the report renders in headless Chromium with one plot per
scenario, and a report with failures shows its failures summary at the top of the page, above
the fold, ahead of the eleven scenario plots.

Skips, with the reason, when no Chromium is installed (``.ci/run`` installs the Debian
package ``chromium``). Chromium only opens a file:// URL; its network features are off.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conformance.report import write_report
from conformance.run.session import Result, scenario_results
from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios import library_paths
from conformance.scenarios.loader import load_scenario
from conformance.scenarios.runner import run_scenario
from reference_engines.compressor import ReferenceCompressor

BROWSER = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium found (install the Debian package 'chromium')"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--mute-audio",
]


ENGINE = "--engine=reference_engines.router:ReferenceRouter"
#: The failures summary's left border (conformance.report.html CSS): only it has this colour.
FAILURES_BORDER = (0xB7, 0x1C, 0x1C)


@pytest.fixture(scope="module")
def library_runs():
    pytest.importorskip(
        "matplotlib", reason="the report's plots need the 'report' extra (matplotlib)"
    )
    factory = load_engine_factory("reference_engines.router:ReferenceRouter")
    runs = [
        run_scenario(load_scenario(p), factory, builtin_factory=ReferenceCompressor)
        for p in library_paths()
    ]
    results = [r for run in runs for r in scenario_results(run.scenario, factory, run=run)]
    return runs, results


@pytest.fixture(scope="module")
def report(tmp_path_factory, library_runs):
    runs, results = library_runs
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(path, results, runs, engine=ENGINE)
    return path, [run.scenario.name for run in runs]


@pytest.fixture(scope="module")
def failing_report(tmp_path_factory, library_runs):
    """The same eleven scenario plots, with two failed checks that come last in "All results"."""
    runs, results = library_runs
    failed = [
        Result(
            "V4-system-prompt-first[compress]",
            "V4",
            "MUST",
            "failed",
            "[V4 MUST] compress() output: expected the system prompt first, got it at index 2. "
            "See docs/contract.md#v4 (context-engine-kit explain V4). Repro: pytest "
            f"{ENGINE} -k 'V4-system-prompt-first[compress]'",
        ),
        Result("TS3-parallel-sessions-isolated", "TS3", "MUST", "failed", "[TS3 MUST] mixed"),
    ]
    path = tmp_path_factory.mktemp("failing") / "report.html"
    write_report(path, results + failed, runs, engine=ENGINE)
    return path


def chromium(tmp_path, *args):
    profile = tmp_path / "profile"
    proc = subprocess.run(
        [BROWSER, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc


def test_rendered_dom_has_one_plot_per_scenario(report, tmp_path):
    path, names = report
    proc = chromium(tmp_path, "--dump-dom", path.as_uri())
    dom = proc.stdout
    assert "verdict: PASS" in dom, proc.stderr[-2000:]
    figures = re.findall(r'<figure class="plot" data-scenario="([^"]+)">\s*<svg', dom)
    assert figures == names and len(names) >= 10
    assert 'id="verdict-by-clause"' in dom


def test_screenshot_shows_the_plots(report, tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    path, names = report
    shot = tmp_path / "report.png"
    proc = chromium(
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1200,1600",
        "--hide-scrollbars",
        path.as_uri(),
    )
    assert shot.is_file(), proc.stderr[-2000:]
    pixels = mpimg.imread(str(shot))[:, :, :3]
    assert pixels.shape[:2] == (1600, 1200)
    # the prompt-token line (#4e79a7) and the cache-read bars (#59a14f at 55 % alpha) were painted
    line = np.all(np.abs(pixels - np.array([0x4E, 0x79, 0xA7]) / 255) < 0.06, axis=2).sum()
    ink = (pixels.mean(axis=2) < 0.9).mean()
    assert line > 200 and 0.02 < ink < 0.6
    shutil.copy(shot, path.with_suffix(".png"))


def _border_rows(pixels):
    import numpy as np

    hit = np.all(np.abs(pixels - np.array(FAILURES_BORDER) / 255) < 0.03, axis=2)
    return np.nonzero(hit.sum(axis=1) >= 4)[0]  # rows where the 6 px border is painted


def test_failures_summary_is_above_the_fold(failing_report, report, tmp_path):
    import matplotlib.image as mpimg

    dom = chromium(tmp_path, "--dump-dom", failing_report.as_uri()).stdout
    assert "verdict: FAIL" in dom
    summary = dom.index('id="failures"')
    assert summary < dom.index('id="verdict-by-clause"') < dom.index('<figure class="plot"')
    assert "Failures (2: 2 MUST, 0 SHOULD)" in dom and "V4-system-prompt-first[compress]" in dom
    shots = {}
    for name, path in (("failing", failing_report), ("passing", report[0])):
        shot = tmp_path / f"{name}-top.png"
        proc = chromium(
            tmp_path, f"--screenshot={shot}", "--window-size=1200,900", "--hide-scrollbars",
            path.as_uri(),
        )  # fmt: skip
        assert shot.is_file(), proc.stderr[-2000:]
        shots[name] = mpimg.imread(str(shot))[:, :, :3]
        shutil.copy(shot, path.with_name(f"{name}-top.png"))
    rows = _border_rows(shots["failing"])
    # the summary's red border is painted in the first screen (900 px), well inside it
    assert len(rows) >= 60 and rows.min() < 400 and rows.max() < 900, rows
    assert len(_border_rows(shots["passing"])) == 0  # a clean run shows the green all-clear
