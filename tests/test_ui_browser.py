"""``automil ui`` in a real browser, as a user meets it: Debian's chromium, driven by Playwright, on the
store of a real short ``automil tune``.

The screenshots are kept in ``test-artifacts/`` at the repository root (git-ignored):
``ui_runs.png`` (the leaderboard: the learners' runs best first under the description's leaderboard),
``ui_trials.png`` (the trials link, one learner's trials unfolded),
``ui_run_figure.png`` (a learner's run page with the comparison chart), ``ui_home_path.png`` (the runs
table reached from the home page).
"""

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import mlflow
import pytest

from automil.records import PROCEDURE

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
DATASET = "musk1"  # 92 bags: the smallest real file
LEARNERS = ("nsk", "sil")  # two quick learners (fits of a few ms on musk1)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                                     "(apt-get install -y chromium)"),
]


def _tune(tmp_path, uri) -> str:
    """The store ``uri`` after a real ``automil tune`` with a tiny budget."""
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", DATASET, "--n-trials", "2",
               "--folds", "3", "--repeats", "1", "--jobs", "1", "--storage", f"journal:{tmp_path / 'studies.log'}",
               "--tracking-uri", uri, "--no-ensemble"]  # the learners' runs, each with its trials
    for learner in LEARNERS:
        command += ["--learner", learner]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return uri


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _pm(metrics) -> str:
    """The headline balanced accuracy as the leaderboard shows it."""
    return f"{100 * metrics['balanced_accuracy']:.1f} ± {100 * metrics['balanced_accuracy_std']:.1f}"


def _announced_links(server) -> tuple[str, str]:
    """The two links ``automil ui`` prints for ``DATASET`` after its "MLflow UI at" line: its leaderboard,
    then, on the next line, its trials."""
    announced = False
    for line in server.stdout:
        announced = announced or "MLflow UI at" in line
        found = re.match(rf"  {DATASET}: (http://\S+)$", line)
        if announced and found:
            trials = re.match(r"    trials: (http://\S+)$", server.stdout.readline())
            assert trials, "no trials link under the leaderboard's"
            return found.group(1), trials.group(1)
    pytest.fail(f"automil ui exited with code {server.wait()} before printing the links of {DATASET}")


def _close_assistant(page) -> None:
    """Close MLflow's assistant panel, which takes a third of the page when it opens."""
    close = page.locator("[data-component-id='mlflow.assistant.chat_panel.close']")
    if close.count():
        close.click()


def _shown_runs(grid, experiment_id) -> list[str]:
    """The ids of the runs the runs table lists, top to bottom as the page shows them."""
    links = grid.locator(f"a[href^='#/experiments/{experiment_id}/runs/']")
    shown = [(link.bounding_box()["y"], link.get_attribute("href").rsplit("/", 1)[1]) for link in links.all()]
    return [run_id for _, run_id in sorted(shown)]


def test_a_user_lands_on_the_leaderboard_best_first_finds_each_learner_with_its_score_and_opens_its_trials(
        tmp_path, data_dir, mlflow_store):
    playwright_api = pytest.importorskip("playwright.sync_api")
    sync_playwright, expect = playwright_api.sync_playwright, playwright_api.expect
    uri = _tune(tmp_path, mlflow_store(tmp_path))
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name(DATASET)
    studies = {run.data.tags["automil.learner"]: run for run in
               client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'")}
    assert set(studies) == {*LEARNERS, PROCEDURE}  # the procedure's own row ranks nothing but is shown
    trials = client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'trial'")
    assert any("balanced_accuracy" in t.data.metrics for t in trials)  # a sort alone would list them among the learners
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "automil.cli", "ui", "--port", str(port), "--tracking-uri", uri],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        link, trials_link = _announced_links(server)
        for printed in (link, trials_link):
            assert printed.startswith(f"{url}/#/experiments/{experiment.experiment_id}/runs?")
        ARTIFACTS.mkdir(exist_ok=True)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            try:
                # 1. The printed link opens the training runs table, not the GenAI overview, as the
                # leaderboard: the learners' runs best first by headline balanced accuracy, no trial among
                # them, the headline columns in view.
                page.goto(link, wait_until="domcontentloaded")
                runs = page.get_by_role("grid")
                for learner in LEARNERS:  # the React app renders the table after its API calls
                    runs.get_by_role("link", name=learner, exact=True).wait_for(timeout=90_000)
                expect(page.get_by_text("Overview", exact=True)).to_have_count(0)
                _close_assistant(page)
                by_id = {run.info.run_id: run for run in studies.values()}
                # the view is applied once the table counts the learners' runs alone (not every run)
                expect(page.get_by_text(re.compile(rf"^{len(studies)} matching runs$"))).to_be_visible()
                expect(runs.locator(f"a[href^='#/experiments/{experiment.experiment_id}/runs/']")).to_have_count(
                    len(studies))
                shown = _shown_runs(runs, experiment.experiment_id)
                assert set(shown) == set(by_id)  # every learner's run, and no trial run between them
                shown_bacc = [by_id[run_id].data.metrics["balanced_accuracy"] for run_id in shown]
                assert shown_bacc == sorted(shown_bacc, reverse=True)
                for name in ("balanced_accuracy", "balanced_accuracy_std", "accuracy", "accuracy_std"):
                    header = runs.locator(f"[role=columnheader][col-id='metrics.`{name}`']")
                    expect(header).to_be_in_viewport(ratio=1)
                # 2. The description above the table: the winner on its first line, unfolded the leaderboard.
                ranked = sorted((studies[learner] for learner in LEARNERS), key=lambda r: (
                    -r.data.metrics["balanced_accuracy"], r.data.tags["automil.learner"].lower()))
                winner = re.escape(ranked[0].data.tags["automil.learner"])
                expect(page.get_by_text(re.compile(
                    rf"best {winner}, balanced accuracy {re.escape(_pm(ranked[0].data.metrics))}"))).to_be_visible()
                # ... and the model the tune chose and registered (the selection breaks ties by fit time)
                (version,) = client.search_model_versions(f"name = 'automil-{DATASET}'")
                chosen = re.escape(client.get_run(version.run_id).data.tags["automil.learner"])
                expect(page.get_by_text(re.compile(
                    rf"chosen model {chosen}, registered as models:/automil-{DATASET}/{version.version}\b"
                ))).to_be_visible()
                page.locator("[data-component-id='mlflow.experiment.metadata_editor.expand_button']").click()
                for rank, run in enumerate(ranked, start=1):
                    learner, metrics = run.data.tags["automil.learner"], run.data.metrics
                    assert metrics["rank"] == rank
                    row = page.get_by_role("row").filter(
                        has=page.get_by_role("link", name=learner, exact=True)).filter(has_text=_pm(metrics))
                    expect(row.first).to_be_visible()
                    expect(row.first.get_by_role("link", name=learner)).to_have_attribute(
                        "href", f"#/experiments/{experiment.experiment_id}/runs/{run.info.run_id}")
                # the comparison chart is drawn in the description (served from the best learner's run)
                page.wait_for_function("() => [...document.images].some(i => i.src.includes('comparison.png') "
                                       "&& i.complete && i.naturalWidth == 900)", timeout=30_000)
                # the Dataset column names the bags and their digest
                expect(runs.get_by_text(re.compile(rf"{DATASET} \([0-9a-f]{{8}}\)")).first).to_be_visible()
                page.screenshot(path=str(ARTIFACTS / "ui_runs.png"), full_page=True)
                # 3. The second link: the runs table in creation order, one learner's trials nested under
                # its run: unfold them.
                page = browser.new_page(viewport={"width": 1600, "height": 1100})  # a new tab, as a click opens it
                page.goto(trials_link, wait_until="domcontentloaded")
                runs = page.get_by_role("grid")
                learner = ranked[0].data.tags["automil.learner"]
                runs.get_by_role("link", name=learner, exact=True).wait_for(timeout=90_000)
                _close_assistant(page)
                expect(runs.get_by_role("link", name="trial 1", exact=True)).to_have_count(0)
                row = runs.get_by_role("row").filter(has=page.get_by_role("link", name=learner, exact=True))
                row.first.get_by_role("button").first.click()
                expect(runs.get_by_role("link", name="trial 1", exact=True)).to_be_visible(timeout=30_000)
                page.screenshot(path=str(ARTIFACTS / "ui_trials.png"), full_page=True)
                # 4. The learner's run page serves its figures, the comparison among them.
                runs.get_by_role("link", name=learner, exact=True).click()
                page.get_by_role("tab", name="Artifacts").click()
                page.get_by_text("figures", exact=True).first.click()
                page.get_by_text("comparison.png", exact=True).first.click()
                page.wait_for_function("() => [...document.images].some(i => i.complete && i.naturalWidth == 900)",
                                       timeout=30_000)
                page.screenshot(path=str(ARTIFACTS / "ui_run_figure.png"))
                # 5. From the home page: the Model training switch (remembered by the browser), then the
                # experiment, lands on the same runs table.
                page.goto(f"{url}/", wait_until="domcontentloaded")
                page.get_by_text("Model training", exact=True).click()
                page.get_by_role("link", name=DATASET, exact=True).first.click()
                for learner in LEARNERS:
                    page.get_by_role("grid").get_by_role("link", name=learner, exact=True).wait_for(timeout=60_000)
                page.screenshot(path=str(ARTIFACTS / "ui_home_path.png"))
            except Exception:
                page.screenshot(path=str(ARTIFACTS / "ui_failure.png"))
                raise
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGINT)  # Ctrl-C, as a terminal sends it to the whole group
        try:
            code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            raise
        server.stdout.close()
    assert code == 0
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/health", timeout=2)
