"""Covers conformance.report: the report renders in headless Chromium with one plot per
scenario.

Skips, with the reason, when no Chromium is installed (``.ci/run`` installs the Debian
package ``chromium``). Chromium only opens a file:// URL; its network features are off.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conformance.engine_loading import load_engine_factory
from conformance.report import write_report
from conformance.scenarios import library_paths
from conformance.scenarios.loader import load_scenario
from conformance.scenarios.runner import run_scenario
from conformance.session import scenario_results
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


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    pytest.importorskip(
        "matplotlib", reason="the report's plots need the 'report' extra (matplotlib)"
    )
    factory = load_engine_factory("reference_engines.router:ReferenceRouter")
    runs = [
        run_scenario(load_scenario(p), factory, builtin_factory=ReferenceCompressor)
        for p in library_paths()
    ]
    results = [r for run in runs for r in scenario_results(run.scenario, factory, run=run)]
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(path, results, runs, engine="--engine=reference_engines.router:ReferenceRouter")
    return path, [run.scenario.name for run in runs]


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
