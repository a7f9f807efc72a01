"""Progress inside a fit: a learner that trains in epochs reports each to the driver, whose pruner stops a
fit whose held-out score is below the median of the completed trials' at the same epoch; and an anytime
learner ends each fit in the time the driver gives it, keeping what it learned."""

import json
import re
import subprocess
import sys

import numpy as np
import optuna
import pytest
from driver_support import plugin_env, plugin_site

import automil
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.studies.pruner import EPOCH_STARTUP_TRIALS, EPOCH_STEP, EPOCH_WARMUP

EPOCHS = 12  # the test learner's epochs (automil_testlearners.learners.EPOCHS)


def test_a_fit_reporting_epochs_below_the_median_is_stopped_inside_the_fit(tmp_path):
    journal = f"journal:{tmp_path / 'studies.journal'}"
    records = tmp_path / "records"
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "test-bags",
                           "--learner", "epochs", "--storage", journal, "--n-trials", "24", "--timeout", "none",
                           "--protocol", "tuned", "--repeats", "1", "--no-track", "--jobs", "1",
                           "--json", "out.json"],
                          cwd=tmp_path, env=plugin_env(plugin_site(), records), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name="test-bags/epochs", storage=open_storage(journal)).trials
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    stopped = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED
               and not any(step < EPOCH_STEP for step in t.intermediate_values)]
    assert len(complete) >= EPOCH_STARTUP_TRIALS and stopped
    for trial in complete:  # every epoch of the first fit, then the folds' scores
        assert sorted(s for s in trial.intermediate_values if s >= EPOCH_STEP) == \
            [EPOCH_STEP + e for e in range(EPOCHS)]
    for trial in stopped:
        epochs = sorted(trial.intermediate_values)
        last = epochs[-1]
        assert epochs == list(range(EPOCH_STEP, last + 1))
        assert EPOCH_WARMUP - 1 <= last - EPOCH_STEP < EPOCHS - 1
        earlier = [t.intermediate_values[last] for t in complete if t.number < trial.number]
        assert trial.params["quality"] < np.median(earlier)
        assert trial.user_attrs.get("error") is None  # stopped, not failed
    # the fit itself stopped: its process ran only the epochs it reported, not all twelve
    ran = [json.loads(p.read_text()) for p in records.glob("epoch-*.json")]
    for trial in stopped:
        epochs_run = [r["epoch"] for r in ran if r["quality"] == trial.params["quality"]]
        assert max(epochs_run) == max(trial.intermediate_values) - EPOCH_STEP
    # the best trial is one that ran to the end
    row = json.loads((tmp_path / "out.json").read_text())[-1]
    assert row["learner"] == "epochs" and row["status"] == "ok"
    assert row["best_trial"] in {t.number for t in complete}


def test_report_epoch_outside_a_driver_is_a_no_op_and_a_listener_can_stop_the_fit():
    automil.report_epoch(0, 0.3)  # nobody listens: returns
    from automil.epochs import epoch_listener

    heard = []
    with epoch_listener(lambda epoch, score: heard.append((epoch, score)) or epoch >= 2):
        automil.report_epoch(0, 0.5)
        automil.report_epoch(1, 0.6)
        with pytest.raises(automil.FitPruned, match="after epoch 3"):
            automil.report_epoch(2, 0.7)
    assert heard == [(0, 0.5), (1, 0.6), (2, 0.7)]
    automil.report_epoch(3, 0.1)  # the listener is gone with its block


def _tune_alone(tmp_path, learner: str, *options: str):
    """``automil tune`` of ``learner`` alone on test-bags (15 s, one process, untracked, ``options``): its
    trials, and the fits its learner recorded (anytime-*.json)."""
    journal = f"journal:{tmp_path / 'studies.journal'}"
    records = tmp_path / "records"
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "test-bags", "--learner", learner,
                           "--storage", journal, "--timeout", "15", "--no-track", "--jobs", "1", *options],
                          cwd=tmp_path, env=plugin_env(plugin_site(), records), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    trials = optuna.load_study(study_name=f"test-bags/{learner}", storage=open_storage(journal)).trials
    return trials, [json.loads(p.read_text()) for p in records.glob("anytime-*.json")]


def test_an_anytime_fit_ends_in_its_time_with_a_figure_and_the_refit_trains_as_far(tmp_path):
    # the learner has no end of its own: every fit of the run ends because its time ran out
    trials, fits = _tune_alone(tmp_path, "anytime", "--protocol", "holdout", "--json", "out.json")
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert complete  # a figure, not a fit killed at its limit
    for trial in complete:  # what it reached is what it stored for the refit
        reached = trial.user_attrs["time_limited"]["epochs"]
        assert trial.user_attrs["estimator_params"]["epochs"] == reached
        assert 0 < reached < 10**6
    assert fits and all(fit["limited"] for fit in fits if fit["epochs"] is None)
    row = json.loads((tmp_path / "out.json").read_text())[-1]
    assert row["learner"] == "anytime" and row["status"] == "ok"
    best = next(t for t in complete if t.number == row["best_trial"])
    # the hold-out refit is given the epochs the best trial reached, and never trains further
    refits = [fit for fit in fits if fit["epochs"] == best.user_attrs["time_limited"]["epochs"]]
    assert refits and all(fit["ran"] <= fit["epochs"] for fit in refits)


def test_a_trial_whose_anytime_fits_run_past_their_time_tells_the_later_ones_less(tmp_path):
    # every fit runs a quarter past the time it is told: told its full part, the trial's last fit would run
    # past its kill and lose the trial; told less by what the first fit overran, it ends and the trial counts
    trials, fits = _tune_alone(tmp_path, "anytime-over", "--protocol", "nested", "--n-trials", "1")
    first = trials[0]
    assert first.state == optuna.trial.TrialState.COMPLETE, first.user_attrs.get("error")
    trial_fits = [fit for fit in fits if fit["epochs"] is None]  # the trial's, not the refits of its epochs
    assert len(trial_fits) == len(first.user_attrs["fit_seconds"]) > 1
    assert all(fit["limited"] and fit["seconds"] > fit["told"] for fit in trial_fits)  # each ran past its time


def test_an_anytime_fit_cut_to_chance_is_too_slow_and_never_refitted(tmp_path):
    # the learner learns nothing before far more epochs than its share holds: its first trial's fits are cut
    # short and score coin flips, which buys no figure; the learner is too slow, and no refit trains it so
    trials, fits = _tune_alone(tmp_path, "anytime-late", "--protocol", "holdout", "--json", "out.json")
    cut = [t for t in trials if t.user_attrs.get("time_limited") and t.user_attrs.get("rung") is None]
    assert cut and not any(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert cut[0].user_attrs["too_slow"] and "not above chance" in cut[0].user_attrs["error"]
    assert f"epochs {cut[0].user_attrs['time_limited']['epochs']} of {10**6}" in cut[0].user_attrs["error"]
    # stopped by its first fit, which reached less than ANYTIME_REACH of its epochs: the others would be cut as short
    done, total = map(int, re.search(r"\((\d+) of (\d+) fits\)", cut[0].user_attrs["error"]).groups())
    assert done == len(cut[0].user_attrs["fit_seconds"]) == 1 < total
    row = json.loads((tmp_path / "out.json").read_text())[-1]
    assert row["learner"] == "anytime-late" and row["status"] == "too slow"
    assert "ran out of time" in row["error"]
    assert fits and all(fit["epochs"] == 10**6 for fit in fits)  # every fit a trial's: none refitted
