"""``automil ui`` in a real browser: Debian's chromium, driven by Playwright, on a real tracking store.

The screenshot is kept in ``test-artifacts/`` at the repository root (git-ignored).
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import optuna
import pytest

from automil import LearnerSpec
from automil.track import Tracker
from automil.track.records import LearnerResult
from automil.tune.trial_states import study_record, trial_record

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
LEARNERS = {"meanpool": 0.875, "maxpool": 0.625}  # learner -> headline balanced accuracy

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                     "(apt-get install -y chromium)"),
]


def _store(uri):
    """Two learners' studies on one dataset, each with three trials and a final result."""
    tracker = Tracker(uri)
    for learner, headline in LEARNERS.items():
        spec = LearnerSpec(learner, object, lambda trial: {}, description=f"{learner} (test)", plugin="tests")
        parent = tracker.study_run(f"digits-bags/{learner}", "digits-bags", spec, {"automil.protocol": "nested"})
        study = optuna.create_study(direction="maximize")
        for number in range(3):
            score = headline - 0.05 * (2 - number)
            study.add_trial(optuna.trial.create_trial(
                params={"C": 10.0 ** number}, value=score,
                distributions={"C": optuna.distributions.FloatDistribution(1e-3, 1e3, log=True)},
                user_attrs={"fold_accuracy": [score] * 3, "fold_balanced_accuracy": [score] * 3,
                            "accuracy": score, "balanced_accuracy": score, "learner": learner}))
        for trial in study.trials:
            tracker.log_trial(parent, trial_record(trial), f"digits-bags/{learner}")
        result = LearnerResult(learner=learner, dataset="digits-bags", accuracy=headline, accuracy_std=0.05,
                               balanced_accuracy=headline, balanced_accuracy_std=0.05,
                               best_params=study.best_params, trials=3, status="ok")
        tracker.log_result(parent, result, study=study_record(study))
    return tracker.experiment_id("digits-bags")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_up(url, server, seconds=180):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if server.poll() is not None:
            pytest.fail(f"automil ui exited with code {server.returncode} before serving")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"the MLflow UI did not answer at {url} within {seconds} s")


def test_ui_shows_the_learners_runs_and_their_balanced_accuracy(tmp_path):
    playwright_api = pytest.importorskip("playwright.sync_api")
    sync_playwright, expect = playwright_api.sync_playwright, playwright_api.expect
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    experiment_id = _store(uri)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "automil.cli", "ui", "--port", str(port), "--tracking-uri", uri],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        announced = server.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        assert url in announced
        _wait_until_up(url, server)
        ARTIFACTS.mkdir(exist_ok=True)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 2400, "height": 900})
                page.goto(f"{url}/#/experiments/{experiment_id}/runs", wait_until="domcontentloaded")
                for learner in LEARNERS:  # the React app renders the runs table after its API calls
                    page.get_by_role("link", name=learner, exact=True).wait_for(timeout=90_000)
                # What a user does to compare learners: add the balanced-accuracy column.
                page.get_by_role("button", name="Columns").click()
                page.keyboard.type("balanced_accuracy")
                page.get_by_test_id("column-selector-tree").locator("[class$=tree-title]").filter(
                    has_text=re.compile(r"^balanced_accuracy$")).click()
                page.keyboard.press("Escape")
                header = page.locator('[role=columnheader][col-id="metrics.`balanced_accuracy`"]')
                header.wait_for(timeout=30_000)
                header.scroll_into_view_if_needed()
                expect(header).to_be_in_viewport()
                for learner, headline in LEARNERS.items():  # each parent run's row shows its figure
                    row = page.locator("[role=row]").filter(has=page.get_by_role("link", name=learner, exact=True))
                    index = row.first.get_attribute("row-index")
                    cell = page.locator(f'[role=row][row-index="{index}"] [col-id="metrics.`balanced_accuracy`"]')
                    expect(cell.first).to_have_text(str(headline), timeout=30_000)
                    expect(cell.first).to_be_in_viewport()
                # The trials are nested under their learner's run: unfold one.
                first = page.locator("[role=row]").filter(has=page.get_by_role("link", name="meanpool", exact=True))
                first.first.get_by_role("button").first.click()
                expect(page.get_by_role("link", name="trial 2", exact=True)).to_be_visible(timeout=30_000)
                page.screenshot(path=str(ARTIFACTS / "ui_runs.png"))
                # A learner's run page serves its figures (artifacts next to the sqlite store).
                page.get_by_role("link", name="maxpool", exact=True).click()
                page.get_by_role("tab", name="Artifacts").click()
                page.get_by_text("figures", exact=True).first.click()
                page.get_by_text("optimization_history.png", exact=True).first.click()
                # the PNG (700 x 400 px) was served and decoded by the browser
                page.wait_for_function("() => [...document.images].some(i => i.complete && i.naturalWidth == 700 "
                                       "&& i.naturalHeight == 400)", timeout=30_000)
                page.screenshot(path=str(ARTIFACTS / "ui_run_figure.png"))
            except Exception:
                page.screenshot(path=str(ARTIFACTS / "ui_runs_failure.png"))
                raise
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it to the whole group
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            raise
    assert code == 0
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/health", timeout=2)
