"""Logging a finished trial to MLflow: under 50 ms a trial on average (docs/published.md, section 4)."""

import itertools

from tracking_overhead import finished_trials

from automil import LearnerSpec
from automil.track import Tracker
from automil.tune.backend.optuna_trials import trial_record

TRIALS = 20


def test_logging_a_trial_costs_under_50_ms(timed, tmp_path):
    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}")
    spec = LearnerSpec(name="bench", estimator=object, search_space=lambda trial: {}, plugin="bench")
    records = [trial_record(trial) for trial in finished_trials(TRIALS, 6)]
    studies = (f"fox/bench-{i}" for i in itertools.count())

    def fresh_parent():  # every round logs into a study run of its own, so nothing is already there
        study = next(studies)
        return (tracker.study_run(study, "fox", spec, {"automil.protocol": "nested"}), study), {}

    def log_all(parent, study):
        for record in records:
            tracker.log_trial(parent, record, study)

    per_trial = timed("log 20 trials", log_all, rounds=3, setup=fresh_parent) / TRIALS
    assert per_trial < 0.050, f"{1000 * per_trial:.0f} ms a trial"
