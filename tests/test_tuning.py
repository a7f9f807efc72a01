"""`automil tune` end to end: real studies in a temporary journal, real CLI processes, the test plugin."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
from driver_support import ctrl_c_reaches_children, load_in_process, plugin_env, plugin_site, wait_for
from optuna.trial import TrialState

from automil.tune.backend.optuna_storage import open_storage

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
FAST = ["--no-track", "--repeats", "1", "--timeout", "none", "--jobs", "1"]


def automil(tmp_path, *args, wait=True, records=None, fit_delay=0.0):
    """Run the real CLI in ``tmp_path`` with only the test plugin loaded."""
    env = {**plugin_env(plugin_site(), records or tmp_path / "records"),
           "AUTOMIL_TEST_FIT_DELAY": str(fit_delay), "TMPDIR": str(tmp_path)}  # where the run's data file goes
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", "test-bags",
               "--storage", f"journal:{tmp_path / 'studies.journal'}", *args]
    if not wait:
        with ctrl_c_reaches_children():
            return subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def load(tmp_path, name):
    return optuna.load_study(study_name=name, storage=open_storage(f"journal:{tmp_path / 'studies.journal'}"))


def records(directory: Path, kind: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob(f"{kind}-*.json"))]


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    """One run of a sleeping, a crashing, a pruned and a working learner under a 2 s fit time-out."""
    tmp_path = tmp_path_factory.mktemp("mixed")
    done = automil(tmp_path, "--learner", "sleepy", "--learner", "crashy", "--learner", "centroid", "--learner",
                   "pruney", "--fit-timeout", "2", "--n-trials", "2", "--protocol", "tuned", "--json", "out.json",
                   *FAST)
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    return tmp_path, rows, done


def test_fit_past_the_fit_timeout_is_killed_and_reported_TO_while_the_others_finish(mixed_run):
    tmp_path, rows, done = mixed_run
    assert rows["sleepy"]["status"] == "T/O"
    assert rows["sleepy"]["trials_timed_out"] == rows["sleepy"]["trials"] == 2
    pids = [r["pid"] for r in records(tmp_path / "records", "sleepy")]
    assert len(pids) == 2 and all(pid_gone(pid) for pid in pids)
    trials = load(tmp_path, "test-bags/sleepy").trials
    assert [t.state for t in trials] == [TrialState.FAIL] * 2
    assert all(t.user_attrs["timed_out"] for t in trials)
    assert rows["centroid"]["status"] == "ok" and rows["centroid"]["trials_complete"] == 2
    assert any(line.split()[:2] == ["sleepy", "T/O"] for line in done.stdout.splitlines())
    assert not list(tmp_path.glob("automil-run-*"))  # killed workers leave the run's data file to the run


def test_crashing_learner_is_recorded_as_failed_with_its_error_and_the_study_goes_on(mixed_run):
    tmp_path, rows, _ = mixed_run
    assert rows["crashy"]["status"] == "failed"
    assert "crashy always fails in fit" in rows["crashy"]["error"]
    trials = load(tmp_path, "test-bags/crashy").trials
    assert len(trials) == 2
    for trial in trials:
        assert trial.state == TrialState.FAIL and not trial.user_attrs["timed_out"]
        assert "RuntimeError: crashy always fails in fit" in trial.user_attrs["error"]


def test_a_learner_whose_every_trial_is_pruned_says_why_it_has_no_result(mixed_run):
    _, rows, _ = mixed_run
    assert rows["pruney"]["status"] == "no result" and rows["pruney"]["accuracy"] is None
    assert rows["pruney"]["error"] == ("no trial completed: 2 of 2 pruned (pruned: no setting fits 5 features), "
                                       "0 timed out, 0 stopped by the --timeout budget")
    assert rows["sleepy"]["error"] is None, "a learner whose every trial timed out is T/O; that says it all"


def test_trial_record_holds_the_attributes_tracking_reads(mixed_run):
    tmp_path, _, _ = mixed_run
    study = load(tmp_path, "test-bags/centroid")
    assert study.user_attrs["dataset"] == "test-bags" and study.user_attrs["learner"] == "centroid"
    assert study.user_attrs["folds"]["n_splits"] == 6 and len(study.user_attrs["fold_assignment"]) == 48
    trial = study.trials[0]
    for key in ("n_features", "n_classes", "fold_accuracy", "fold_balanced_accuracy", "accuracy",
                "balanced_accuracy", "accuracy_std", "balanced_accuracy_std", "fit_seconds",
                "predict_seconds", "timed_out", "one_class", "learner", "plugin", "dataset", "seed"):
        assert key in trial.user_attrs, key
    assert len(trial.user_attrs["fold_accuracy"]) == 6
    assert trial.value == pytest.approx(sum(trial.user_attrs["fold_balanced_accuracy"]) / 6)
    assert trial.intermediate_values == dict(enumerate(trial.user_attrs["fold_balanced_accuracy"]))


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _wait_for_complete_trials(tmp_path, count):
    journal = tmp_path / "studies.journal"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if journal.exists() and journal.read_text().count('"state":1') >= count:  # TrialState.COMPLETE
            return
        time.sleep(0.05)


def test_ctrl_c_mid_run_keeps_completed_trials_and_a_rerun_finishes_the_study(tmp_path):
    args = ["--learner", "recorder", "--n-trials", "8", "--protocol", "tuned", *FAST]
    process = automil(tmp_path, *args, wait=False)
    _wait_for_complete_trials(tmp_path, 3)
    assert len(list(tmp_path.glob("automil-run-*/instances.npy"))) == 1  # the data every process maps
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "every completed trial is kept" in err
    assert not list(tmp_path.glob("automil-run-*"))  # the run's shared data file is gone with it
    before = load(tmp_path, "test-bags/recorder").trials
    complete = {t.number: t.value for t in before if t.state == TrialState.COMPLETE}
    assert len(complete) >= 3
    assert all(t.user_attrs.get("interrupted") for t in before if t.state == TrialState.FAIL)
    automil(tmp_path, *args)
    after = load(tmp_path, "test-bags/recorder").trials
    assert {t.number: t.value for t in after if t.number in complete} == complete
    assert sum(t.state in FINISHED for t in after) == 8


def test_sigkill_mid_run_then_rerun_loses_no_completed_trial_and_duplicates_none(tmp_path):
    args = ["--learner", "recorder", "--n-trials", "12", "--protocol", "tuned", *FAST]
    process = automil(tmp_path, *args, wait=False)
    _wait_for_complete_trials(tmp_path, 3)  # kill once a few trials are complete and one is running
    workers = _children(process.pid)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = load(tmp_path, "test-bags/recorder").trials
    complete = {t.number: (t.params, t.value) for t in before if t.state == TrialState.COMPLETE}
    assert 3 <= len(complete) < 12
    assert workers and all(_wait_gone(pid) for pid in workers)

    automil(tmp_path, *args)
    after = load(tmp_path, "test-bags/recorder").trials
    assert {t.number: (t.params, t.value) for t in after if t.number in complete} == complete
    counted = [t for t in after if not t.user_attrs.get("stale")]
    assert len(counted) == 12
    assert all(t.state in FINISHED for t in counted)
    stale = [t for t in after if t.user_attrs.get("stale")]
    assert all(t.state == TrialState.FAIL for t in stale) and len(stale) <= 1
    # Every fit the learner saw belongs to a stored trial, and every counted trial ran its folds once.
    tags = [r["tag"] for r in records(tmp_path / "records", "fit")]
    assert {int(tag.split("#")[1]) for tag in tags} <= {t.number for t in after}
    assert all(tags.count(f"test-bags/recorder#{t.number}") == _fits_of(t, counted) for t in counted)


def _wait_gone(pid, wait=10.0):
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if pid_gone(pid):
            return True
        time.sleep(0.05)
    return False


def test_two_processes_on_one_storage_record_every_trial_once(tmp_path):
    args = ["--learner", "recorder", "--n-trials", "10", "--protocol", "tuned", *FAST]
    # Fits of 0.3 s make the run outlast the processes' start-up, so that all three tune at once.
    first = automil(tmp_path, *args, "--jobs", "2", wait=False, fit_delay=0.3)  # the last --jobs wins
    second = automil(tmp_path, *args, wait=False, fit_delay=0.3)
    for process in (first, second):
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    trials = load(tmp_path, "test-bags/recorder").trials
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    # Each process stops starting trials at 10; the three may start their last one at the same moment.
    assert 10 <= len(trials) <= 12
    assert all(t.state in FINISHED for t in trials)
    assert len({t.user_attrs["worker"] for t in trials}) >= 2
    tags = [r["tag"] for r in records(tmp_path / "records", "fit")]
    # Every fold of every trial was fitted exactly once, by whichever process ran the trial; on top, each
    # command's final evaluation refits a best trial on the 6 folds of its one repeat (both commands may
    # evaluate, each with the best trial it saw).
    assert sorted(set(tags)) == sorted(f"test-bags/recorder#{t.number}" for t in trials)
    extra = [tags.count(f"test-bags/recorder#{t.number}") - len(t.user_attrs["fit_seconds"]) for t in trials]
    assert set(extra) <= {0, 6, 12} and sum(extra) in (6, 12)


def _fits_of(trial, trials) -> int:
    """Fits a trial caused: one per fold it ran (pruned trials stop early), and for the best trial the
    6 folds of the one repeat of the final evaluation."""
    best = max((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: (t.value, -t.number))
    return len(trial.user_attrs["fit_seconds"]) + 6 * (trial.number == best.number)


def _order(record):
    return record["pid"], record["time"]


def test_nested_tuning_never_fits_on_or_scores_bags_of_its_outer_test_fold(tmp_path):
    automil(tmp_path, "--learner", "recorder", "--learner", "plain", "--n-trials", "3", "--folds", "4",
            "--protocol", "nested", "--json", "out.json", *FAST)
    main = load(tmp_path, "test-bags/recorder")
    assignment = main.user_attrs["fold_assignment"]
    fold_of = {f"bag-{i:03d}": fold for i, fold in enumerate(assignment)}
    fits, scores = records(tmp_path / "records", "fit"), records(tmp_path / "records", "score")
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    for outer in range(4):
        prefix = f"test-bags/recorder/outer-{outer}#"
        mine_fit = [r for r in fits if r["tag"].startswith(prefix)]
        mine_score = [r for r in scores if r["tag"].startswith(prefix)]
        assert mine_fit and mine_score
        # Every fit made for split `outer` (its tuning, the refit that gives its nested score, and the fit
        # that measures its prediction sets) trains without the outer test fold; the refit scores it alone,
        # the sets' fit with the inner fold it held apart, where the split's sets are measured.
        assert all(outer not in {fold_of[b] for b in r["bags"]} for r in mine_fit)
        refits = [r for r in mine_score if {fold_of[b] for b in r["bags"]} == {outer}]
        assert len(refits) == 1
        apart = min(set(range(4)) - {outer})
        sets = [r for r in mine_score if {fold_of[b] for b in r["bags"]} == {apart, outer}]
        assert len(sets) == 1 if rows["automil"]["choices"][outer] == "recorder" else len(sets) <= 1
        tuning_scores = [r for r in mine_score if r is not refits[0] and r not in sets]
        assert all(outer not in {fold_of[b] for b in r["bags"]} for r in tuning_scores)
        assert len(tuning_scores) == len(mine_fit) - 1 - len(sets) == 3 * 3  # 3 trials x 3 inner folds
    # Folds never split a bag: no bag is both fitted on and scored by one fit (each worker fits, then
    # scores, so records of one pid alternate fit, score).
    for fit, score in zip(sorted(fits, key=_order), sorted(scores, key=_order)):
        assert fit["tag"] == score["tag"] and not set(fit["bags"]) & set(score["bags"])
    row = rows["recorder"]
    assert row["headline"] == "nested" and row["nested_balanced_accuracy"] is not None
    assert row["balanced_accuracy"] == row["nested_balanced_accuracy"]
    _assert_the_ensemble_is_scored_on_outer_folds_it_never_selected_on(tmp_path, rows["ensemble"], fold_of)
    # automil's own figure: in each outer split the row best on the inner folds, scored on the outer fold
    procedure = rows["automil"]
    assert procedure["status"] == "ok" and set(procedure["choices"]) <= {"recorder", "plain", "ensemble"}
    chosen = [rows[c]["outer_splits"][i] for i, c in enumerate(procedure["choices"])]
    assert len(chosen) == 4 and procedure["outer_splits"] == chosen
    assert procedure["balanced_accuracy"] == pytest.approx(sum(s["balanced_accuracy"] for s in chosen) / 4)
    # the ensemble only where it beats its best member there, alone too by its gain's standard error
    for i, choice in enumerate(procedure["choices"]):
        split = rows["ensemble"]["outer_splits"][i]
        best = max(rows[m]["outer_splits"][i]["inner"] for m in split["members"])
        assert (choice == "ensemble") <= (split["inner"] > best and split["gain_bound"] > 0)


def _assert_the_ensemble_is_scored_on_outer_folds_it_never_selected_on(tmp_path, row, fold_of):
    assert row["status"] == "ok" and row["headline"] == "nested" and row["tuned_splits"] == 4
    assert {m["learner"] for m in row["members"]} <= {"recorder", "plain"}
    assert sum(m["weight"] for m in row["members"]) == pytest.approx(1.0)
    # the lower bound of its gain over its best member alone, which the choices hold it to
    assert all(isinstance(bound, float) for bound in [row["tuning_gain_bound"]]
               + [split["gain_bound"] for split in row["outer_splits"]])
    # Its nested figures come from one prediction of every bag, made in the bag's outer fold: with 6 bags
    # of each class in every fold, the mean over folds equals the pooled figure of the confusion matrix.
    matrix = row["confusion_matrix"]
    assert sum(map(sum, matrix)) == 48
    assert row["nested_accuracy"] == pytest.approx((matrix[0][0] + matrix[1][1]) / 48)
    # Outer split i selects on its sub-studies' out-of-fold scores, which cover the other folds only.
    for learner in ("recorder", "plain"):
        for outer in range(4):
            study = load(tmp_path, f"test-bags/{learner}/outer-{outer}")
            assert len(study.best_trial.user_attrs["oof_scores"]) == sum(f != outer for f in fold_of.values())


def test_rerun_with_other_folds_is_refused_rather_than_regenerating_them(mixed_run):
    tmp_path, _, _ = mixed_run
    env = plugin_env(plugin_site(), tmp_path / "records")
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "test-bags", "--learner",
                           "centroid", "--storage", f"journal:{tmp_path / 'studies.journal'}", "--folds", "4",
                           *FAST], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "was made with 6 folds" in done.stderr and "4 folds" in done.stderr


def test_fold_assignment_is_written_last_so_workers_opening_a_study_at_once_see_a_whole_record(tmp_path):
    # A worker checks a study's folds, metric and labels only once its fold assignment is there; were any of
    # them written after it, a worker opening the study meanwhile would refuse it as made on other data.
    import sqlite3

    automil(tmp_path, "--learner", "centroid", "--n-trials", "1", "--folds", "3", "--protocol", "nested",
            "--storage", f"sqlite:///{tmp_path / 'studies.db'}", *FAST)
    with sqlite3.connect(tmp_path / "studies.db") as db:
        written = db.execute("SELECT study_id, key FROM study_user_attributes ORDER BY study_user_attribute_id")
        by_study = {}
        for study, key in written:
            by_study.setdefault(study, []).append(key)
    assert len(by_study) == 4  # the main study and one per outer split
    for keys in by_study.values():
        assert {"labels_digest", "metric", "folds", "protocol"} <= set(keys)
        tuning_keys = [key for key in keys if key not in ("result", "warm_start")]  # written after preparing
        assert tuning_keys[-1] == "fold_assignment"


def test_a_rerun_of_a_finished_study_logs_the_trials_mlflow_lacks(tmp_path, mlflow_store):
    # A worker that could not log a trial (its MLflow call failed) and then found its result already
    # computed by another worker must still leave every finished trial in MLflow.
    import mlflow

    uri = mlflow_store(tmp_path)
    args = ["--learner", "centroid", "--n-trials", "3", "--protocol", "tuned", "--repeats", "1",
            "--timeout", "none", "--jobs", "1", "--tracking-uri", uri]
    automil(tmp_path, *args)
    client = mlflow.MlflowClient(uri)
    experiment_id = client.get_experiment_by_name("test-bags").experiment_id
    trial_runs = client.search_runs([experiment_id], "tags.`automil.kind` = 'trial'")
    assert len(trial_runs) == 3
    client.delete_run(trial_runs[0].info.run_id)
    automil(tmp_path, *args)
    assert len(load(tmp_path, "test-bags/centroid").trials) == 3  # no new trial: the stored result is reused
    logged = client.search_runs([experiment_id], "tags.`automil.kind` = 'trial'")
    assert sorted(int(r.data.tags["automil.trial"]) for r in logged) == [0, 1, 2]
    parents = client.search_runs([experiment_id], "tags.`automil.kind` = 'study'")
    assert [p.info.status for p in parents] == ["FINISHED"], "the sweep leaves the parent run finished"


def test_a_first_trial_cut_short_is_tried_again_by_the_rerun(tmp_path):
    args = ["--learner", "recorder", "--n-trials", "2", "--protocol", "tuned", *FAST]
    process = automil(tmp_path, *args, wait=False, fit_delay=30)
    wait_for(lambda: list((tmp_path / "records").glob("fit-*.json")), 60, "the first fit of the first trial")
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=120)
    assert process.returncode == 130
    automil(tmp_path, *args)
    trials = sorted(load(tmp_path, "test-bags/recorder").trials, key=lambda t: t.number)
    assert trials[0].user_attrs.get("interrupted") and trials[0].params == {"shrink": 0.25}
    counted = [t for t in trials if not t.user_attrs.get("interrupted")]
    assert len(counted) == 2 and counted[0].params == {"shrink": 0.25}, "the defaults ran once in full"
    assert all(t.state.name != "WAITING" for t in trials)


def test_a_budget_that_runs_out_in_the_final_evaluation_still_ends_with_the_chosen_model(
        tmp_path, fresh_plugins, mlflow_store):
    monkeypatch = fresh_plugins  # the built-in plugins come back after the test
    from functools import partial

    from automil import load_bags, plugins
    from automil.evaluation.folds_file import RunFolds
    from automil.track import Tracker
    from automil.track.writing.model import load_estimator
    from automil.tune.final.evaluation import final_evaluation
    from automil.tune.listener import Silent
    from automil.tune.options import TuneOptions
    from automil.tune.recording import TrackingRecorder
    from automil.tune.studies.creation import prepare_studies
    from automil.tune.studies.plan import Plan
    from automil.tune.tracking import open_tracking
    from automil.tune.workers.fits import fit_worker

    automil(tmp_path, "--learner", "centroid", "--learner", "recorder", "--n-trials", "1", "--folds", "3",
            "--protocol", "nested", *FAST)
    load_in_process(monkeypatch, tmp_path / "records")
    monkeypatch.setenv("AUTOMIL_TEST_FIT_DELAY", "600")  # the recorder's refits run past the budget
    options = TuneOptions(n_trials=1, folds=3, repeats=3, timeout=45.0, jobs=2, ensemble=False,
                          protocol="nested", storage=f"journal:{tmp_path / 'studies.journal'}")
    bags, learners = load_bags("test-bags"), ["centroid", "recorder"]
    storage = open_storage(options.storage)
    folds = RunFolds.drawn("test-bags", bags, options.folds, options.seed, options.repeats)
    prepare_studies(storage, "test-bags", bags, [plugins.get_learner(n) for n in learners], options, folds)
    worker = fit_worker(options)
    try:
        plan = Plan("test-bags", learners, options, folds, time.time())
        uri = mlflow_store(tmp_path)
        recorder = TrackingRecorder(plan, open_tracking(partial(Tracker, uri), Silent()))
        rows, choice = final_evaluation(plan, bags, storage, worker, recorder, Silent())
        rows = {row.learner: row for row in rows}
    finally:
        worker.close()
    chosen, cut = choice.row(list(rows.values())), rows["recorder"]
    assert chosen is rows["centroid"]
    assert cut.status == "partial" and "time budget" in cut.error and cut.model.uri is None
    # the chosen learner's headline is whole and its model was fitted after the budget ended; no repeat ran
    assert chosen.status == "ok" and chosen.headline.balanced_accuracy is not None and chosen.repeated.repeats == 0
    assert chosen.model.uri is not None
    # its fit without the calibration bags runs under the budget: none, so the model is calibrated without sets
    assert chosen.error == ("no prediction sets: its fit without the calibration bags was not started: the time "
                            "budget ran out")
    model = load_estimator(uri, chosen.model.uri)
    assert model.predict_proba(bags).shape == (bags.n_bags, 2)
    with pytest.raises(ValueError, match="gives no prediction sets"):
        model.predict_set(bags)


def test_a_chosen_model_whose_full_data_fit_would_end_past_the_budget_is_its_hold_out_refit(
        tmp_path, fresh_plugins, mlflow_store):
    monkeypatch = fresh_plugins  # the built-in plugins come back after the test
    from functools import partial

    from automil import load_bags, plugins
    from automil.evaluation.folds_file import RunFolds
    from automil.track import Tracker
    from automil.track.writing.model import load_estimator
    from automil.tune.final.evaluation import final_evaluation
    from automil.tune.listener import Silent
    from automil.tune.options import TuneOptions
    from automil.tune.recording import TrackingRecorder
    from automil.tune.schedule.budget import LOG_SECONDS
    from automil.tune.studies.creation import prepare_studies
    from automil.tune.studies.plan import Plan
    from automil.tune.tracking import open_tracking
    from automil.tune.workers.fits import fit_worker

    automil(tmp_path, "--learner", "recorder", "--n-trials", "1", "--folds", "4", "--protocol", "holdout", *FAST)
    records_dir = tmp_path / "records"
    tuned = {r["time"] for r in records(records_dir, "fit")}
    load_in_process(monkeypatch, records_dir)
    delay = 3.0  # every fit's seconds from here: a full-data fit takes 4 s at the hold-out refit's pace
    monkeypatch.setenv("AUTOMIL_TEST_FIT_DELAY", str(delay))
    # 2 repeats: not the stored result of the run above, whose final evaluation is made again
    options = TuneOptions(n_trials=1, folds=4, repeats=2, timeout=45.0, jobs=1, ensemble=False,
                          protocol="holdout", storage=f"journal:{tmp_path / 'studies.journal'}")
    bags = load_bags("test-bags")
    storage = open_storage(options.storage)
    folds = RunFolds.drawn("test-bags", bags, options.folds, options.seed, options.repeats)
    _, validation = prepare_studies(storage, "test-bags", bags, [plugins.get_learner("recorder")], options, folds)
    worker = fit_worker(options)
    try:
        worker.wait_started()
        uri = mlflow_store(tmp_path)
        # 2 delays of the budget left before the time kept to log its 2 results (its row, the ensemble's
        # place): the refit ends within them, a full-data fit after it would not
        logging = 2 * LOG_SECONDS
        plan = Plan("test-bags", ["recorder"], options, folds, time.time() - options.timeout + 2 * delay + logging,
                    validation=validation)
        recorder = TrackingRecorder(plan, open_tracking(partial(Tracker, uri), Silent()))
        (row,), choice = final_evaluation(plan, bags, storage, worker, recorder, Silent())
    finally:
        worker.close()
    assert choice.learner == "recorder" and row.model.uri is not None
    training = int(np.sum(folds.tuning != 0))  # the hold-out refit trains on every fold but the held-out one
    assert row.error.startswith(f"model: its hold-out refit on {training} of the {bags.n_bags} bags")
    final_fits = [r for r in records(records_dir, "fit") if r["time"] not in tuned]
    # the refit first, and no fit on all bags (a repeat may start in the time left before the logging)
    assert len(final_fits[0]["bags"]) == training
    assert all(len(r["bags"]) < bags.n_bags for r in final_fits)
    model = load_estimator(uri, row.model.uri)
    assert model.predict_proba(bags).shape == (bags.n_bags, 2)


def test_every_new_study_tries_the_learners_first_trial_first(tmp_path):
    automil(tmp_path, "--learner", "recorder", "--n-trials", "3", "--folds", "3", "--protocol", "nested", *FAST)
    for name in ["test-bags/recorder", *(f"test-bags/recorder/outer-{i}" for i in range(3))]:
        trials = sorted(load(tmp_path, name).trials, key=lambda t: t.number)
        assert len(trials) == 3
        assert trials[0].params == {"shrink": 0.25}, name  # the test plugin's first_trial
        assert all(t.params["shrink"] != 0.25 for t in trials[1:]), "later trials come from the sampler"


def test_run_executes_the_studies_a_file_declares_and_names_unknown_keys(tmp_path):
    study_file = tmp_path / "grid.toml"
    study_file.write_text('[options]\nn_trials = 2\ntimeout = "none"\nprotocol = "tuned"\nrepeats = 1\n'
                          'folds = 4\n\n[[study]]\ndataset = "test-bags"\n'
                          'learners = ["centroid", "crashy"]\n')
    env = plugin_env(plugin_site(), tmp_path / "records")
    common = ["--storage", f"journal:{tmp_path / 'studies.journal'}", "--no-track", "--jobs", "1"]
    done = subprocess.run([sys.executable, "-m", "automil.cli", "run", str(study_file), *common, "--json",
                           "out.json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    assert rows["centroid"]["status"] == "ok" and rows["crashy"]["status"] == "failed"
    assert rows["centroid"]["folds"] == 4
    assert load(tmp_path, "test-bags/centroid").user_attrs["folds"]["n_splits"] == 4
    study_file.write_text('[options]\nn_trails = 2\n\n[[study]]\ndataset = "test-bags"\n')
    done = subprocess.run([sys.executable, "-m", "automil.cli", "run", str(study_file), *common],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "unknown option 'n_trails' in [options]" in done.stderr


def test_a_learner_whose_fit_is_estimated_above_the_memory_budget_is_skipped_before_any_fit_and_says_why(tmp_path):
    automil(tmp_path, "--learner", "centroid", "--learner", "hungry", "--memory", "2G", "--n-trials", "1",
            "--folds", "3", "--protocol", "tuned", "--json", "out.json", *FAST)
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    assert rows["centroid"]["status"] == "ok"
    hungry = rows["hungry"]
    assert hungry["status"] == "skipped" and "above the 2.1 GB a fit may take under --memory" in hungry["error"]
    assert "a fit on every bag needs about" in hungry["error"]
    studies = optuna.get_all_study_names(open_storage(f"journal:{tmp_path / 'studies.journal'}"))
    assert not any("hungry" in name for name in studies)  # no study, so no trial and no fit
