"""MLflow tracking against a real sqlite store: a real Optuna study with a real learner on digits-bags,
logged through ``Tracker`` and read back through ``MlflowClient``."""

import json
import threading

import mlflow
import numpy as np
import optuna
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score

import automil
from automil import BagClassifier, LearnerSpec, cli
from automil.evaluation.folds import bag_folds, fold_splits
from automil.evaluation.metrics import fold_scores, mean_std
from automil.evaluation.standardized import Standardized
from automil.records import Headline, LearnerResult, ModelRecord, TrialCounts, Tuning
from automil.track import Tracker
from automil.track.store.mlflow_store import Store
from automil.track.writing.inputs import BagsDataset
from automil.track.writing.runs import StudyRuns
from automil.tune.backend.optuna_trials import study_record, trial_record

N_TRIALS = 4
N_FOLDS = 3


class MeanPoolLogistic(BagClassifier):
    """Logistic regression on the mean instance of each bag; the witness is the instance with the
    highest linear score, so the tracker draws witnesses and coefficients for it."""

    def __init__(self, C=1.0):
        self.C = C

    def _fit(self, bags, y):
        self.model_ = LogisticRegression(C=self.C, max_iter=1000).fit(_mean_pool(bags), y)
        self.coef_ = self.model_.coef_.T  # automil's (n_features, n_classes) convention: here one margin

    def _decision_function(self, bags):
        return self.model_.decision_function(_mean_pool(bags))

    def _witness(self, bags):
        scores = bags.X @ self.coef_[:, 0]
        return np.array([np.argmax(scores[a:b]) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])


def _mean_pool(bags):
    return np.add.reduceat(bags.X, bags.offsets[:-1]) / bags.sizes[:, None]


SPEC = LearnerSpec("meanpool", MeanPoolLogistic, lambda trial: {"C": trial.suggest_float("C", 1e-3, 1e2, log=True)},
                   description="mean-pooled logistic regression (test learner)", plugin="tests")
TIMEOUT_SPEC = LearnerSpec("sleeper", MeanPoolLogistic, lambda trial: {}, description="always times out",
                           plugin="tests")


def _objective(bags, folds):
    """The driver's record, made by hand: per-fold ACC/BACC and timings in the trial's user attributes."""

    def objective(trial):
        trial.set_user_attr("n_features", bags.n_features)
        trial.set_user_attr("n_classes", 2)
        params = SPEC.search_space(trial)
        record = {"fold_accuracy": [], "fold_balanced_accuracy": [], "fit_seconds": [], "predict_seconds": []}
        for train, test in folds:
            model = Standardized(SPEC.build(**params)).fit(bags.subset(train))
            predicted = model.predict(bags.subset(test))
            scores = fold_scores(bags.y[test], predicted)
            record["fold_accuracy"].append(scores.accuracy)
            record["fold_balanced_accuracy"].append(scores.balanced_accuracy)
            record["fit_seconds"].append(0.01 * (len(record["fit_seconds"]) + 1))
            record["predict_seconds"].append(0.001)
        for metric in ("accuracy", "balanced_accuracy"):
            record[metric], record[f"{metric}_std"] = mean_std(record[f"fold_{metric}"])
        record.update(learner="meanpool", plugin="tests", dataset="digits-bags", seed=0, timed_out=False)
        if trial.number == 0:  # as an anytime learner's fit that ended in its time records how far it got
            record["time_limited"] = {"epochs": 3}
        for key, value in record.items():
            trial.set_user_attr(key, value)
        return record["balanced_accuracy"]

    return objective


@pytest.fixture(scope="module")
def logged(tmp_path_factory, mlflow_store):
    """A tuned study, its trials and final result logged into an empty store; plus a learner whose every
    trial timed out."""
    root = tmp_path_factory.mktemp("store")
    uri = mlflow_store(root)
    bags = automil.get_dataset("digits-bags").load()
    rng = np.random.default_rng(0)
    order = rng.permutation(bags.n_bags)
    train, test = bags.subset(np.sort(order[:150])), bags.subset(np.sort(order[150:]))
    folds = fold_splits(bag_folds(train.y, N_FOLDS, seed=0))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", study_name="digits-bags/meanpool",
                                sampler=optuna.samplers.TPESampler(seed=0))
    study.optimize(_objective(train, folds), n_trials=N_TRIALS)

    tracker = Tracker(uri)
    parent = tracker.study_run(study.study_name, "digits-bags", SPEC, {"automil.protocol": "nested"})
    trial_runs = [tracker.log_trial(parent, trial_record(trial), study.study_name) for trial in study.trials]
    model = Standardized(SPEC.build(**study.best_params)).fit(train)
    predicted = model.predict(test)
    result = {"dataset": "digits-bags", "learner": "meanpool", "protocol": "nested", "status": "ok",
              "accuracy": accuracy_score(test.y, predicted), "accuracy_std": 0.031,
              "balanced_accuracy": balanced_accuracy_score(test.y, predicted), "balanced_accuracy_std": 0.042,
              "repeated_accuracy": 0.8, "repeated_accuracy_std": 0.02, "tuning_score": study.best_value,
              "metric": "balanced_accuracy",
              "trials": N_TRIALS, "trials_timed_out": 0, "best_params": study.best_params, "seed": 0,
              "best_trial": study.best_trial.number}
    tracker.log_result(parent, LearnerResult.from_dict(result), model=model, bags=test, study=study_record(study))

    sleeper = optuna.create_study(direction="maximize", study_name="digits-bags/sleeper")
    for _ in range(2):
        sleeper.add_trial(optuna.trial.create_trial(
            state=optuna.trial.TrialState.FAIL, params={}, distributions={},
            user_attrs={"timed_out": True, "error": "fit exceeded --fit-timeout 2 s", "learner": "sleeper"}))
    sleeper_parent = tracker.study_run(sleeper.study_name, "digits-bags", TIMEOUT_SPEC)
    for trial in sleeper.trials:
        tracker.log_trial(sleeper_parent, trial_record(trial), sleeper.study_name)
    timed_out = LearnerResult(learner="sleeper", dataset="digits-bags", status="T/O",
                              counts=TrialCounts(trials=2, timed_out=2))
    tracker.log_result(sleeper_parent, timed_out, study=study_record(sleeper))
    return {"uri": uri, "root": root, "tracker": tracker, "client": mlflow.MlflowClient(uri), "study": study,
            "parent": parent, "trial_runs": trial_runs, "model": model, "test": test, "result": result,
            "sleeper_parent": sleeper_parent}


def _children(client, parent_run_id):
    experiment_id = client.get_run(parent_run_id).info.experiment_id
    return client.search_runs([experiment_id], f"tags.`mlflow.parentRunId` = '{parent_run_id}'")


def test_one_experiment_per_dataset_holds_one_parent_run_per_learner(logged):
    client = logged["client"]
    experiment = client.get_experiment_by_name("digits-bags")
    assert experiment is not None
    assert experiment.artifact_location.startswith((logged["root"] / "mlruns").as_uri())
    parents = client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'")
    assert sorted(run.info.run_name for run in parents) == ["meanpool", "sleeper"]
    parent = client.get_run(logged["parent"])
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["automil.study"] == "digits-bags/meanpool"
    assert parent.data.tags["automil.learner"] == "meanpool"
    assert parent.data.tags["automil.plugin"] == "tests"
    assert parent.data.tags["automil.version"] == automil.__version__


def test_every_trial_is_a_nested_run_with_its_params_fold_metrics_and_tags(logged):
    client, study = logged["client"], logged["study"]
    children = {int(run.data.tags["automil.trial"]): run for run in _children(client, logged["parent"])}
    assert sorted(children) == list(range(N_TRIALS))
    for trial in study.trials:
        run = children[trial.number]
        assert run.info.run_id == logged["trial_runs"][trial.number]
        assert run.data.params == {name: str(value) for name, value in trial.params.items()}
        attrs = trial.user_attrs
        for key in ("accuracy", "balanced_accuracy", "accuracy_std", "balanced_accuracy_std"):
            assert run.data.metrics[key] == pytest.approx(attrs[key])
        assert run.data.metrics["fit_seconds"] == pytest.approx(np.mean(attrs["fit_seconds"]))
        assert run.data.metrics["objective"] == pytest.approx(trial.value)
        history = client.get_metric_history(run.info.run_id, "fold_balanced_accuracy")
        assert [m.step for m in sorted(history, key=lambda m: m.step)] == list(range(N_FOLDS))
        assert [m.value for m in sorted(history, key=lambda m: m.step)] == pytest.approx(
            attrs["fold_balanced_accuracy"])
        tags = run.data.tags
        assert tags["automil.state"] == "COMPLETE"
        assert tags["automil.study"] == "digits-bags/meanpool"
        assert (tags["automil.learner"], tags["automil.dataset"], tags["automil.seed"]) == \
               ("meanpool", "digits-bags", "0")
        assert tags["automil.n_features"] == "64"
        assert tags["automil.version"] == automil.__version__
        assert tags.get("automil.time_limited") == ('{"epochs": 3}' if trial.number == 0 else None)
        assert run.info.status == "FINISHED"


def test_logging_a_trial_again_keeps_one_run_per_trial_number(logged):
    fresh = Tracker(logged["uri"])  # a resumed process: nothing cached
    parent = fresh.study_run("digits-bags/meanpool", "digits-bags", SPEC)
    assert parent == logged["parent"]
    again = [fresh.log_trial(parent, trial_record(trial), "digits-bags/meanpool") for trial in logged["study"].trials]
    assert again == logged["trial_runs"]
    assert len(_children(logged["client"], parent)) == N_TRIALS


def test_trackers_opening_a_study_at_once_agree_on_one_parent_run_when_they_open_it_again(logged):
    # Each may keep its own parent for a moment (one can look before another's run is stored); the next
    # opening, which every worker makes before its final sweep, leaves one parent for all of them.
    barrier = threading.Barrier(3)
    trackers = [Tracker(logged["uri"]) for _ in range(3)]
    first, errors = [], []

    def open_study(tracker):
        barrier.wait()
        try:
            first.append(tracker.study_run("fox/meanpool", "fox", SPEC))
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=open_study, args=(tracker,)) for tracker in trackers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(first) == 3
    again = {tracker.study_run("fox/meanpool", "fox", SPEC) for tracker in trackers}
    assert len(again) == 1
    experiment = logged["client"].get_experiment_by_name("fox")
    runs = logged["client"].search_runs([experiment.experiment_id], "tags.`automil.study` = 'fox/meanpool'")
    assert [run.info.run_id for run in runs] == list(again)


def test_parents_made_in_a_race_merge_into_the_oldest_and_every_trial_stays_logged_once(logged):
    # Two workers opened the study at once and each kept its own parent: the one stored later carries the
    # older start time, so the first worker never saw it. The next opening of the study merges them.
    client, trials = logged["client"], logged["study"].trials
    first = Tracker(logged["uri"])
    first_parent = first.study_run("tiger/meanpool", "tiger", SPEC)
    second = Tracker(logged["uri"])
    experiment_id = client.get_run(first_parent).info.experiment_id
    older = client.get_run(first_parent).info.start_time - 1000
    second_parent = client.create_run(experiment_id, start_time=older, run_name="meanpool",
                                      tags={"automil.kind": "study", "automil.study": "tiger/meanpool"}).info.run_id
    by_first = [first.log_trial(first_parent, trial_record(trial), "tiger/meanpool") for trial in trials[:3]]
    by_second = [second.log_trial(second_parent, trial_record(trial), "tiger/meanpool") for trial in trials[2:5]]
    assert by_second[0] == by_first[2], "a trial logged under the other parent is found, not logged again"

    reopened = Tracker(logged["uri"])
    parent = reopened.study_run("tiger/meanpool", "tiger", SPEC)
    assert parent == second_parent
    assert client.get_run(first_parent).info.lifecycle_stage == "deleted"
    assert sorted(run.info.run_id for run in _children(client, parent)) == sorted({*by_first, *by_second})
    swept = [reopened.log_trial(parent, trial_record(trial), "tiger/meanpool") for trial in trials]
    assert swept[:5] == [*by_first, *by_second[1:]]
    assert len(_children(client, parent)) == len(trials)


class OvertakenRuns(StudyRuns):
    """A worker whose first merge is overtaken: right after it picks the parent to keep, a third worker's
    run with an older start time lands and that worker's merge deletes the one this worker kept."""

    overtaken = False

    def merge_parents(self, experiment_id, parents, study_name):
        keep = super().merge_parents(experiment_id, parents, study_name)
        if not self.overtaken:
            self.overtaken = True
            older = self.store.client.create_run(experiment_id, start_time=keep.info.start_time - 1000,
                                                 tags={"automil.kind": "study", "automil.study": study_name})
            StudyRuns(Store(self.store.tracking_uri)).merge_parents(experiment_id, [keep, older], study_name)
        return keep


def test_a_worker_whose_kept_parent_is_deleted_meanwhile_opens_the_surviving_one(logged):
    client = logged["client"]
    first = Tracker(logged["uri"]).study_run("musk2/meanpool", "musk2", SPEC)
    store = Store(logged["uri"])
    tags = {"automil.kind": "study", "automil.study": "musk2/meanpool", "automil.learner": "meanpool"}
    opened = OvertakenRuns(store).open(store.experiment_id("musk2"), "musk2/meanpool", "meanpool", tags)
    assert client.get_run(first).info.lifecycle_stage == "deleted"
    survivor = client.get_run(opened)
    assert survivor.info.lifecycle_stage == "active" and survivor.info.status == "RUNNING"
    assert survivor.data.tags["automil.learner"] == "meanpool", "the survivor got the study's tags"
    experiment_id = survivor.info.experiment_id
    assert [r.info.run_id for r in client.search_runs([experiment_id], "tags.`automil.kind` = 'study'")] == [opened]


def test_workers_logging_the_same_trials_at_once_leave_one_finished_run_per_trial(logged):
    # One worker's final sweep can meet a trial another has just finished: both look, find nothing, log.
    trials = logged["study"].trials
    trackers = [Tracker(logged["uri"]) for _ in range(2)]
    parents = [tracker.study_run("elephant/meanpool", "elephant", SPEC) for tracker in trackers]
    barrier = threading.Barrier(2)
    returned = [[], []]

    def log_all(i):
        for trial in trials:
            barrier.wait()
            returned[i].append(trackers[i].log_trial(parents[i], trial_record(trial), "elephant/meanpool"))

    threads = [threading.Thread(target=log_all, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runs = _children(logged["client"], parents[0])
    assert sorted(int(run.data.tags["automil.trial"]) for run in runs) == [t.number for t in trials]
    assert all(run.info.status == "FINISHED" and "balanced_accuracy" in run.data.metrics for run in runs)
    kept = {int(run.data.tags["automil.trial"]): run.info.run_id for run in runs}
    assert all(kept[t.number] in (first, second) for t, first, second in zip(trials, *returned))


def test_parent_run_holds_the_final_figures_and_best_parameters(logged):
    run = logged["client"].get_run(logged["parent"])
    result, study = logged["result"], logged["study"]
    for key in ("accuracy", "balanced_accuracy", "accuracy_std", "balanced_accuracy_std", "trials"):
        assert run.data.metrics[key] == pytest.approx(result[key])
    # variants named after their measure, so that they sort together in the UI's column list
    assert run.data.metrics["accuracy_repeated_cv"] == pytest.approx(result["repeated_accuracy"])
    assert run.data.metrics["accuracy_repeated_cv_std"] == pytest.approx(result["repeated_accuracy_std"])
    assert run.data.metrics["balanced_accuracy_tuning"] == pytest.approx(result["tuning_score"])
    assert not {"repeated_accuracy", "tuning_score"} & set(run.data.metrics)
    assert "seed" not in run.data.metrics and run.data.tags["automil.seed"] == "0"
    assert float(run.data.tags["best.C"]) == pytest.approx(study.best_params["C"])
    assert json.loads(run.data.tags["automil.best_params"]) == pytest.approx(study.best_params)
    assert run.data.tags["automil.best_trial"] == str(study.best_trial.number)
    assert run.data.tags["automil.best_trial_run"] == logged["trial_runs"][study.best_trial.number]
    assert run.data.tags["automil.status"] == "ok"


def test_parent_run_has_the_bags_as_its_dataset_input(logged):
    run = logged["client"].get_run(logged["parent"])
    (dataset_input,) = run.inputs.dataset_inputs
    dataset, test = dataset_input.dataset, logged["test"]
    assert dataset.name == "digits-bags" and dataset.digest == BagsDataset(test, "digits-bags").digest
    assert json.loads(dataset.profile) == {"bags": test.n_bags, "instances": test.n_instances,
                                           "features": test.n_features, "classes": len(test.classes)}
    assert json.loads(dataset.source) == {"tags": {"generated": "digits-bags"}}  # no file behind it
    assert {tag.key: tag.value for tag in dataset_input.tags} == {"mlflow.data.context": "train"}


def test_bags_of_two_versions_of_a_file_differ_by_digest_and_name_the_file(tmp_path):
    path = tmp_path / "tiny.csv"
    path.write_text("i1,b1,1,0.5,1.0\ni2,b1,0,0.1,0.2\ni3,b2,0,0.3,0.4\n")  # MILL layout
    first = BagsDataset(automil.read_bags(path), "tiny")
    path.write_text("i1,b1,1,0.5,1.0\ni2,b1,0,0.1,0.2\ni3,b2,0,0.3,0.5\n")  # one value changed
    second = BagsDataset(automil.read_bags(path), "tiny")
    assert first.digest != second.digest
    assert json.loads(first.to_dict()["source"])["uri"] == str(path.resolve())
    assert json.loads(first.to_dict()["profile"]) == {"bags": 2, "instances": 3, "features": 2, "classes": 2}


def test_parent_run_has_the_figures_as_png_artifacts(logged):
    client = logged["client"]
    names = {a.path for a in client.list_artifacts(logged["parent"], "figures")}
    assert names == {f"figures/{name}.png" for name in
                     ("confusion_matrix", "optimization_history", "param_importances", "witness", "coefficients")}
    local = client.download_artifacts(logged["parent"], "figures", str(logged["root"] / "download"))
    for name in names:
        with open(f"{local}/{name.split('/')[1]}", "rb") as png:
            assert png.read(8) == b"\x89PNG\r\n\x1a\n"
    stored = json.loads(open(client.download_artifacts(logged["parent"], "result.json",
                                                       str(logged["root"] / "download"))).read())
    assert stored["best_params"] == pytest.approx(logged["result"]["best_params"])


def test_logged_model_loads_and_predicts_the_labels_of_the_in_memory_model(logged, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", logged["uri"])
    run = logged["client"].get_run(logged["parent"])
    loaded = mlflow.pyfunc.load_model(f"runs:/{logged['parent']}/model")
    assert run.data.tags["automil.model_uri"].startswith("models:/")
    test = logged["test"]
    bags = [test[i].tolist() for i in range(test.n_bags)]
    assert loaded.predict(bags) == logged["model"].predict(test).tolist()
    assert loaded.metadata.signature is not None
    assert "Array(Array(double))" in str(loaded.metadata.signature.inputs)
    assert loaded.metadata.metadata["classes"] == [0, 1]


def test_logged_model_names_a_bag_without_instances(logged, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", logged["uri"])
    loaded = mlflow.pyfunc.load_model(logged["client"].get_run(logged["parent"]).data.tags["automil.model_uri"])
    with pytest.raises(Exception, match="bag 1"):
        loaded.predict([logged["test"][0].tolist(), []])


def test_timed_out_learner_is_marked_and_its_trials_logged_as_TO(logged):
    client = logged["client"]
    parent = client.get_run(logged["sleeper_parent"])
    assert parent.data.tags["automil.status"] == "T/O"
    assert "accuracy" not in parent.data.metrics
    children = _children(client, logged["sleeper_parent"])
    assert len(children) == 2
    assert {run.data.tags["automil.state"] for run in children} == {"T/O"}
    assert {run.info.status for run in children} == {"FAILED"}
    assert children[0].data.tags["automil.error"] == "fit exceeded --fit-timeout 2 s"


def test_a_second_result_replaces_the_first_on_the_same_parent_run(logged):
    """A resumed study finds a new best: best parameters are tags, so they can change."""
    tracker = Tracker(logged["uri"])
    parent = tracker.study_run("digits-bags/extra", "digits-bags", SPEC)
    tracker.log_result(parent, LearnerResult(headline=Headline(balanced_accuracy=0.7),
                                             tuning=Tuning(best_params={"C": 1.0}), counts=TrialCounts(trials=3)))
    tracker.log_result(parent, LearnerResult(headline=Headline(balanced_accuracy=0.8),
                                             tuning=Tuning(best_params={"C": 2.0}), counts=TrialCounts(trials=5)))
    run = tracker.store.client.get_run(parent)
    assert run.data.metrics["balanced_accuracy"] == pytest.approx(0.8)
    assert run.data.tags["best.C"] == "2.0"
    history = tracker.store.client.get_metric_history(parent, "balanced_accuracy")
    assert sorted((m.step, m.value) for m in history) == [(3, 0.7), (5, 0.8)]
    tracker.store.client.delete_run(parent)


def test_report_csv_matches_the_logged_parent_metrics(logged, capsys):
    assert cli.main(["report", "--format", "csv", "--tracking-uri", logged["uri"], "--dataset", "digits-bags"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split(",")
    rows = {line.split(",")[0]: dict(zip(header, line.split(","))) for line in lines[1:]}
    metrics = logged["client"].get_run(logged["parent"]).data.metrics
    for label, key in (("ACC", "accuracy"), ("BACC", "balanced_accuracy")):
        assert float(rows["meanpool"][f"digits-bags {label} mean"]) == pytest.approx(100 * metrics[key], abs=1e-4)
        assert float(rows["meanpool"][f"digits-bags {label} sd"]) == pytest.approx(100 * metrics[f"{key}_std"],
                                                                                  abs=1e-4)
        assert rows["sleeper"][f"digits-bags {label} mean"] == "T/O"


def test_report_markdown_shows_the_logged_figures_in_percent(logged, capsys):
    assert cli.main(["report", "--tracking-uri", logged["uri"], "--dataset", "digits-bags"]) == 0
    out = capsys.readouterr().out
    metrics = logged["client"].get_run(logged["parent"]).data.metrics
    row = next(line for line in out.splitlines() if line.startswith("| meanpool"))
    assert f"**{100 * metrics['balanced_accuracy']:.1f} ± {100 * metrics['balanced_accuracy_std']:.1f}**" in row
    assert "| sleeper | T/O | T/O |" in out


def test_the_comparison_ranks_the_learners_and_writes_the_leaderboard_into_the_experiment(logged):
    tracker, client = logged["tracker"], logged["client"]
    chosen = LearnerResult(learner="meanpool", model=ModelRecord(registered="models:/automil-digits-bags/1"))
    tracker.refresh_comparison("digits-bags", chosen)
    latest = {}
    for study in tracker.studies(["digits-bags"]):  # what the comparison should show: latest per learner
        if study.learner not in latest or study.end_time > latest[study.learner].end_time:
            latest[study.learner] = study
    scored = sorted((s for s in latest.values() if "balanced_accuracy" in s.metrics),
                    key=lambda s: -s.metrics["balanced_accuracy"])
    assert scored and [s.metrics["rank"] for s in scored] == list(range(1, len(scored) + 1))
    assert all("rank" not in s.metrics for s in latest.values() if s not in scored)  # the T/O learner
    experiment = client.get_experiment(tracker.experiment_id("digits-bags"))
    note = experiment.tags["mlflow.note.content"]
    best = scored[0]
    assert note.startswith(f"**digits-bags**: best **{best.learner}**, balanced accuracy "
                           f"{100 * best.metrics['balanced_accuracy']:.1f}")
    # the first line (all the UI shows folded) names the model the tune chose and registered
    assert "chosen model **meanpool**, registered as `models:/automil-digits-bags/1`" in note.split("\n")[0]
    for study in latest.values():  # each learner linked to its run in the table
        assert f"[{study.learner}](#/experiments/{experiment.experiment_id}/runs/{study.run_id})" in note
    assert f"run_uuid={best.run_id}" in note
    for study in scored:
        assert "figures/comparison.png" in {a.path for a in client.list_artifacts(study.run_id, "figures")}


def test_report_of_a_dataset_without_studies_says_so(logged, capsys):
    assert cli.main(["report", "--tracking-uri", logged["uri"], "--dataset", "musk1"]) == 1
    assert "no automil study in the tracking store" in capsys.readouterr().err


def test_automil_tune_logs_every_trial_the_result_and_a_model_the_report_reads(tmp_path):
    """End to end through the real command: a built-in learner (pdMISVM) and a third-party one that is a
    plain scikit-learn estimator on lists of arrays (the test plugin's ``plain``) are tuned, every trial
    and the results are logged, both models load back and predict, and the report shows both rows."""
    import subprocess
    import sys

    from driver_support import plugin_env, plugin_site

    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    env = {**plugin_env(plugin_site(), tmp_path / "records"), "AUTOMIL_LOAD_PLUGINS": "datasets,pdmisvm,testlearners"}
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", "digits-bags", "--learner", "pdmisvm",
               "--learner", "plain", "--n-trials", "3", "--folds", "2", "--repeats", "1", "--protocol", "tuned",
               "--no-ensemble", "--jobs", "1", "--storage", f"journal:{tmp_path / 'studies.journal'}",
               "--tracking-uri", uri]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("digits-bags")
    parents = {run.data.tags["automil.learner"]: run
               for run in client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'")}
    assert sorted(parents) == ["pdmisvm", "plain"]
    assert parents["pdmisvm"].data.tags["automil.plugin_version"] == automil.__version__  # a built-in plugin
    assert parents["plain"].data.tags["automil.plugin"] == "testlearners"
    bags = automil.get_dataset("digits-bags").load()
    for learner, parent in parents.items():
        assert parent.info.status == "FINISHED" and parent.data.tags["automil.status"] == "ok", learner
        # one repeat: its figure is logged, a spread it did not measure is not
        assert parent.data.metrics["repeats"] == 1 and "balanced_accuracy_repeated_cv" in parent.data.metrics
        assert not {"balanced_accuracy_repeated_cv_std", "balanced_accuracy_std"} & set(parent.data.metrics)
        children = _children(client, parent.info.run_id)
        assert sorted(int(run.data.tags["automil.trial"]) for run in children) == [0, 1, 2]
        assert all("fold_balanced_accuracy" in run.data.metrics for run in children
                   if run.data.tags["automil.state"] == "COMPLETE")
        figures = {a.path for a in client.list_artifacts(parent.info.run_id, "figures")}
        assert {"figures/confusion_matrix.png", "figures/optimization_history.png"} <= figures
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MLFLOW_TRACKING_URI", uri)
            patch.syspath_prepend(str(plugin_site()))  # the plain learner's package, as its user installs it
            loaded = mlflow.pyfunc.load_model(f"runs:/{parent.info.run_id}/model")
            predicted = np.asarray(loaded.predict([bags[i].tolist() for i in range(bags.n_bags)]))
        assert set(predicted) <= {0, 1} and len(predicted) == bags.n_bags
        # a model that learned anything: better than the majority class on the bags it was fitted on
        assert np.mean(predicted == bags.y) > max(np.mean(bags.y), 1 - np.mean(bags.y)), learner
    assert {"figures/witness.png", "figures/coefficients.png"} <= {
        a.path for a in client.list_artifacts(parents["pdmisvm"].info.run_id, "figures")}
    out = subprocess.run([sys.executable, "-m", "automil.cli", "report", "--format", "csv", "--tracking-uri", uri],
                         env=env, check=True, capture_output=True, text=True, timeout=300).stdout
    rows = {line.split(",")[0]: dict(zip(out.splitlines()[0].split(","), line.split(",")))
            for line in out.splitlines()[1:]}
    assert sorted(rows) == ["pdmisvm", "plain"]
    for learner, parent in parents.items():
        assert float(rows[learner]["digits-bags BACC mean"]) == pytest.approx(
            100 * parent.data.metrics["balanced_accuracy"], abs=1e-4)


def test_report_without_a_store_says_so_and_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "mlruns" / "mlflow.db"
    assert cli.main(["report", "--tracking-uri", f"sqlite:///{missing}"]) == 1
    assert f"no tracking store at {missing}" in capsys.readouterr().err
    assert not missing.parent.exists()


def test_a_trial_still_running_is_refused_by_name(logged):
    study = optuna.create_study(study_name="digits-bags/meanpool")
    running = study.ask()
    frozen = study.get_trials(deepcopy=False)[running.number]
    with pytest.raises(ValueError, match="trial 0 of study 'digits-bags/meanpool' is still RUNNING"):
        logged["tracker"].log_trial(logged["parent"], trial_record(frozen), "digits-bags/meanpool")


def test_a_warm_start_trial_shows_its_source_study_as_a_tag(logged):
    # A study of another dataset (its own experiment), so the fixture's runs stay as they are.
    study = optuna.create_study(direction="maximize", study_name="elsewhere/meanpool")
    study.enqueue_trial({"C": 2.0}, user_attrs={"warm_start_from": "digits-bags/meanpool"})
    study.optimize(lambda trial: SPEC.search_space(trial)["C"] / 10, n_trials=2)
    tracker, client = logged["tracker"], logged["client"]
    parent = tracker.study_run(study.study_name, "elsewhere", SPEC)
    runs = [client.get_run(tracker.log_trial(parent, trial_record(t), study.study_name)) for t in study.trials]
    assert [run.data.tags.get("automil.warm_start_from") for run in runs] == ["digits-bags/meanpool", None]
    assert runs[0].data.params == {"C": "2.0"}


class BrokenWitness(MeanPoolLogistic):
    def _witness(self, bags):
        raise RuntimeError("witness not implemented for this bag")


def test_a_figure_that_fails_is_reported_and_the_result_still_logged(logged):
    tracker, test = logged["tracker"], logged["test"]
    spec = LearnerSpec("brokenwitness", BrokenWitness, lambda trial: {}, plugin="tests")
    parent = tracker.study_run("digits-bags/brokenwitness", "digits-bags", spec)
    model = Standardized(BrokenWitness()).fit(test)
    tracker.log_result(parent, LearnerResult(headline=Headline(balanced_accuracy=0.5), status="ok"), model=model,
                       bags=test)
    run = tracker.store.client.get_run(parent)
    assert run.info.status == "FINISHED" and run.data.metrics["balanced_accuracy"] == 0.5
    assert json.loads(run.data.tags["automil.figure_errors"]) == {
        "witness": "RuntimeError: witness not implemented for this bag"}
    names = {a.path for a in tracker.store.client.list_artifacts(parent, "figures")}
    assert names == {"figures/confusion_matrix.png", "figures/coefficients.png"}
    tracker.store.client.delete_run(parent)


@pytest.fixture
def postgres_uri(monkeypatch, tmp_path):
    """A fresh database on the test PostgreSQL server (MLflow's alembic tables would collide with
    Optuna's in a shared one); artifacts go to the temporary directory."""
    import os
    import uuid

    url = os.environ.get("AUTOMIL_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("needs a PostgreSQL server: set AUTOMIL_TEST_POSTGRES_URL (.ci/postgres.sh start)")
    import sqlalchemy

    name = f"automil_mlflow_{uuid.uuid4().hex[:12]}"
    server = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with server.connect() as connection:
        connection.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    monkeypatch.chdir(tmp_path)
    yield str(sqlalchemy.engine.make_url(url).set(database=name).render_as_string(hide_password=False))
    sqlalchemy.orm.close_all_sessions()
    with server.connect() as connection:
        connection.execute(sqlalchemy.text(f"DROP DATABASE {name} WITH (FORCE)"))
    server.dispose()


@pytest.mark.slow  # MLflow migrates a fresh database for half a minute
@pytest.mark.postgres
def test_trials_and_results_round_trip_through_a_postgresql_store(logged, postgres_uri, capsys):
    trackers = [Tracker(postgres_uri) for _ in range(2)]
    parents = {tracker.study_run("digits-bags/meanpool", "digits-bags", SPEC) for tracker in trackers}
    assert len(parents) == 1
    (parent,) = parents
    study = logged["study"]
    for tracker in trackers:  # the second tracker finds every trial logged by the first
        runs = [tracker.log_trial(parent, trial_record(trial), study.study_name) for trial in study.trials]
    assert len(set(runs)) == N_TRIALS and len(_children(trackers[0].store.client, parent)) == N_TRIALS
    trackers[0].log_result(parent, LearnerResult.from_dict(logged["result"]), study=study_record(study))
    metrics = trackers[1].store.client.get_run(parent).data.metrics
    assert metrics["balanced_accuracy"] == pytest.approx(logged["result"]["balanced_accuracy"])
    assert cli.main(["report", "--format", "csv", "--tracking-uri", postgres_uri]) == 0
    row = dict(zip(*[line.split(",") for line in capsys.readouterr().out.splitlines()[:2]]))
    assert float(row["digits-bags BACC mean"]) == pytest.approx(100 * metrics["balanced_accuracy"], abs=1e-4)


def test_every_study_run_of_a_nested_tune_the_procedure_s_too_has_the_bags_as_its_dataset_input(
        tmp_path, fresh_plugins, mlflow_store):
    """Filtering the runs table by dataset keeps every row of the leaderboard, the procedure's headline row
    (``automil``) included."""
    import functools

    from driver_support import load_in_process

    from automil.records import PROCEDURE
    from automil.tune.driver import tune
    from automil.tune.options import TuneOptions

    load_in_process(fresh_plugins, tmp_path / "records")
    uri = mlflow_store(tmp_path)
    options = TuneOptions(n_trials=2, timeout=None, folds=3, repeats=1, jobs=1, protocol="nested", ensemble=False,
                          warm_start=False, storage=f"journal:{tmp_path / 'studies.journal'}")
    tune("test-bags", ["centroid"], options, tracking=functools.partial(Tracker, uri))
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("test-bags")
    studies = {run.data.tags["automil.learner"]: run
               for run in client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'")}
    assert set(studies) == {"centroid", PROCEDURE}
    expected = BagsDataset(automil.get_dataset("test-bags").load(), "test-bags").digest
    for learner, run in studies.items():
        (dataset_input,) = run.inputs.dataset_inputs
        assert (dataset_input.dataset.name, dataset_input.dataset.digest) == ("test-bags", expected), learner
