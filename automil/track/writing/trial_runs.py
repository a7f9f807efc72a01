"""A finished trial as a nested run of its study's parent run: params, per-fold metrics and tags."""

from __future__ import annotations

import time
from dataclasses import dataclass

import automil
from automil.records import OTHER_METRICS, TrialAttr, TrialRecord
from automil.track.store.mlflow_store import Store, retry
from automil.track.store.names import (
    DATASET_TAG,
    KIND_TAG,
    LEARNER_TAG,
    PARENT_TAG,
    PLUGIN_TAG,
    PLUGIN_VERSION_TAG,
    RUN_STATUS,
    STATE_TAG,
    STUDY_TAG,
    TRIAL_KIND,
    TRIAL_TAG,
    TRIAL_TAG_ATTRS,
    VERSION_TAG,
    automil_tag,
)
from automil.track.store.values import MAX_PARAM_CHARS, MAX_TAG_CHARS, clip_text, finite, millis
from automil.track.writing.runs import StudyRuns

__all__ = ["TrialLogging"]

# The metrics a trial may carry, every task's, in the order they are logged.
_METRICS = ("accuracy", "balanced_accuracy", "roc_auc", *OTHER_METRICS)
# Tags a trial run copies from its parent run.
_FROM_PARENT = (LEARNER_TAG, DATASET_TAG, PLUGIN_TAG, PLUGIN_VERSION_TAG)


@dataclass
class TrialLogging:
    """Logs finished trials into ``store``, each under its study's parent run in ``runs``."""

    store: Store
    runs: StudyRuns

    def log(self, parent_run_id: str, trial: TrialRecord, study_name: str) -> str:
        """One nested run for a finished trial; returns its id.

        Idempotent per trial number: a trial of the study already logged (by this or any other process)
        is not logged again, and its existing run id is returned; processes logging one trial at once
        leave one run. The run holds

        - params: ``trial.params``;
        - metrics: the task's metrics (``accuracy``, ``balanced_accuracy``, ``roc_auc``; ``concordance``, ...;
          ``r2``, ...) and their ``*_std`` over folds, ``fold_<metric>`` per fold (``step`` = fold index),
          ``fit_seconds`` and
          ``predict_seconds`` (mean over folds), ``objective`` (the trial's value) and ``trial_seconds``;
        - tags: learner, plugin and its version, dataset, study, trial number, state (COMPLETE, PRUNED,
          FAIL or T/O), automil version, seed, ``n_features``, ``n_classes``, and ``timed_out``,
          ``one_class``, ``error`` and ``time_limited`` (as JSON) when set.

        Everything after the run's creation goes in one ``log_batch`` call.
        """
        if not trial.finished:
            raise ValueError(f"trial {trial.number} of study {study_name!r} is still "
                             f"{trial.state}: log it once it has finished")
        number = int(trial.number)
        logged = self.runs.trial_run_id(parent_run_id, number)
        if logged is not None:
            return logged
        parent = self.runs.parent(parent_run_id)
        state = trial.outcome
        tags = {KIND_TAG: TRIAL_KIND, PARENT_TAG: parent_run_id, STUDY_TAG: study_name, TRIAL_TAG: str(number),
                STATE_TAG: state, VERSION_TAG: automil.__version__,
                **{key: parent.data.tags.get(key, "") for key in _FROM_PARENT}}
        for key in TRIAL_TAG_ATTRS:
            value = trial.attrs.get(key)
            if value is not None and value is not False and value != "":
                tags[automil_tag(key)] = clip_text(value, MAX_TAG_CHARS)
        end = millis(trial.end)
        run = retry(self.store.client.create_run, parent.info.experiment_id, start_time=millis(trial.start),
                    run_name=f"trial {number}", tags=tags)
        run_id = run.info.run_id
        params = {name: clip_text(value, MAX_PARAM_CHARS) for name, value in trial.params.items()}
        timestamp = end or int(time.time() * 1000)
        self.store.log_batch(run_id, params=params,
                             metrics=[(key, value, timestamp, step) for key, value, step in trial_metrics(trial)])
        self.store.terminate(run_id, RUN_STATUS.get(state, "FINISHED"), end_time=end)
        return self.runs.settle_trial(parent_run_id, study_name, number)


def trial_metrics(trial: TrialRecord) -> list[tuple[str, float, int]]:
    """``(key, value, step)`` of every finite number a trial carries."""
    attrs = trial.attrs
    out = []
    metrics = [m for m in _METRICS if TrialAttr.fold(m) in attrs or m in attrs]  # the trial's task's
    for key in [*map(TrialAttr, metrics), *map(TrialAttr.std, metrics)]:
        out.append((key, attrs.get(key), 0))
    for key in map(TrialAttr.fold, metrics):
        values = attrs.get(key)
        if isinstance(values, (list, tuple)):
            out.extend((key, value, fold) for fold, value in enumerate(values) if value is not None)
    for key in (TrialAttr.FIT_SECONDS, TrialAttr.PREDICT_SECONDS):
        values = attrs.get(key)
        if isinstance(values, (list, tuple)):
            values = [v for v in values if finite(v)]
            values = sum(values) / len(values) if values else None
        out.append((key, values, 0))
    out.append(("objective", trial.value, 0))
    if trial.start and trial.end:
        out.append(("trial_seconds", (trial.end - trial.start).total_seconds(), 0))
    return [(str(key), float(value), step) for key, value, step in out if finite(value)]
