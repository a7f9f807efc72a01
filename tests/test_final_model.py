"""A stored result without a model: the rerun that reuses it fits the model and logs it."""

import functools
import json

import optuna
import pytest
from driver_support import load_in_process
from mlflow import MlflowClient

from automil.track import Tracker
from automil.tune.driver import tune
from automil.tune.final.evaluation import RESULT_ATTR
from automil.tune.options import TuneOptions


@pytest.mark.slow  # two runs and a tracked model: about 30 s on 2 cores
def test_a_rerun_that_reuses_a_result_without_a_model_fits_and_logs_the_model(tmp_path, fresh_plugins, mlflow_store):
    load_in_process(fresh_plugins, tmp_path / "records")
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    uri = mlflow_store(tmp_path)
    options = {"n_trials": 2, "timeout": None, "folds": 2, "repeats": 1, "jobs": 1, "storage": storage,
               "protocol": "tuned", "ensemble": False, "warm_start": False}
    # The first run logs nothing, so its stored result has no model (as when the budget leaves it out).
    (first,) = tune("test-bags", ["recorder"], TuneOptions(**options, track=False))
    study = optuna.load_study(study_name="test-bags/recorder", storage=storage)
    assert first.model.uri is None and study.user_attrs[RESULT_ATTR]["row"]["model_uri"] is None
    fits_before = len(list((tmp_path / "records").glob("fit-*.json")))

    (again,) = tune("test-bags", ["recorder"], TuneOptions(**options), tracking=functools.partial(Tracker, uri))
    fits = sorted((tmp_path / "records").glob("fit-*.json"))[fits_before:]
    bags = [json.loads(p.read_text())["bags"] for p in fits]
    assert len(bags) == 1 and len(bags[0]) == 48, "the result is reused: one fit, the model on every bag"
    assert again.model.uri is not None and again.headline.accuracy == first.headline.accuracy
    stored = optuna.load_study(study_name="test-bags/recorder", storage=storage).user_attrs[RESULT_ATTR]
    assert stored["row"]["model_uri"] == again.model.uri, "a third run finds the model"

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("test-bags")
    (parent,) = client.search_runs([experiment.experiment_id], "tags.`automil.kind` = 'study'")
    assert parent.data.tags["automil.model_uri"] == again.model.uri
    assert again.model.registered is not None, "the chosen learner's model is registered"
