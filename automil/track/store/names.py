"""The names automil gives things in MLflow: tag keys, run kinds and statuses, artifact paths, and the
metric name of each leaderboard key. Stores written by automil are read back by these names, so they
change only together with a way to read the old ones."""

from __future__ import annotations

import re
from pathlib import PurePath

from automil.records import TIMED_OUT, TrialAttr, TrialState

__all__ = ["metric_name", "registered_name"]

# Tags of automil's experiments and runs. MLflow's own ``mlflow.*`` tags drive the UI (nesting, descriptions).
KIND_TAG = "automil.kind"  # STUDY_KIND (parent run) or TRIAL_KIND (nested run)
STUDY_KIND = "study"
TRIAL_KIND = "trial"
STUDY_TAG = "automil.study"
TRIAL_TAG = "automil.trial"
STATE_TAG = "automil.state"  # a trial's outcome: COMPLETE, PRUNED, FAIL or T/O
STATUS_TAG = "automil.status"  # on a parent run: the driver's status, "T/O" when every trial timed out
DATASET_TAG = "automil.dataset"  # on experiments, parent runs, trial runs and registered models
LEARNER_TAG = "automil.learner"
PLUGIN_TAG = "automil.plugin"
PLUGIN_VERSION_TAG = "automil.plugin_version"
VERSION_TAG = "automil.version"
PROTOCOL_TAG = "automil.protocol"  # "nested" (the default) or "tuned"
MODEL_URI_TAG = "automil.model_uri"
PARENT_TAG = "mlflow.parentRunId"
NOTE_TAG = "mlflow.note.content"
KIND_UI_TAG = "mlflow.experimentKind"  # the UI opens a model-training experiment on its runs table
BEST_PARAM_PREFIX = "best."  # a parent run's tag per best parameter, ``best.<name>``

# A trial's outcome -> the MLflow status of its run. The exact outcome is in the STATE_TAG tag.
RUN_STATUS = {TrialState.COMPLETE: "FINISHED", TrialState.PRUNED: "KILLED", TrialState.FAIL: "FAILED",
              TIMED_OUT: "FAILED"}

# Trial user attributes logged as tags ``automil.<key>`` (the driver writes them, see automil.records.TrialAttr).
TRIAL_TAG_ATTRS = (TrialAttr.LEARNER, TrialAttr.PLUGIN, TrialAttr.DATASET, TrialAttr.SEED, TrialAttr.N_FEATURES,
                   TrialAttr.N_CLASSES, TrialAttr.TIMED_OUT, TrialAttr.ONE_CLASS, TrialAttr.OUT_OF_MEMORY,
                   TrialAttr.INTERRUPTED, TrialAttr.ERROR, TrialAttr.WARM_START_FROM, TrialAttr.TIME_LIMITED)
# Numbers of a leaderboard row that describe the set-up rather than measure anything: tags, not metrics.
RESULT_TAG_KEYS = ("seed", "folds", "best_trial")

MODEL_NAME = "model"  # the pyfunc model of a parent run
FOLDS = "folds.json"  # on a parent run with a result: the folds it is scored on (automil.evaluation.folds_file)
CHART = "figures/comparison.png"  # on every ranked learner's run: the dataset's learners compared
SCATTER = "figures/pareto.png"  # beside it after a study with several objectives

_VARIANTS = (("nested_", "_nested"), ("repeated_", "_repeated_cv"))


def automil_tag(key: str) -> str:
    """The tag of a trial attribute or a leaderboard key: ``automil.<key>``."""
    return f"automil.{key}"


def metric_name(key: str, tuned_metric: str | None = None) -> str:
    """The run metric for the row key ``key``: ``nested_accuracy_std`` -> ``accuracy_nested_std``,
    ``repeated_balanced_accuracy`` -> ``balanced_accuracy_repeated_cv``, ``tuning_score`` ->
    ``<tuned metric>_tuning``; any other key unchanged. Variants of one measure thus sort together in the
    UI's column list."""
    if key == "tuning_score" and tuned_metric:
        return f"{tuned_metric}_tuning"
    for prefix, suffix in _VARIANTS:
        if key.startswith(prefix):
            measure = key[len(prefix):]
            std = measure.endswith("_std")
            return measure.removesuffix("_std") + suffix + ("_std" if std else "")
    return key


_DATA_SUFFIXES = {".gz", ".bz2", ".xz", ".csv", ".data", ".txt", ".arff", ".mat", ".svm", ".libsvm", ".mill"}


def registered_name(dataset: str) -> str:
    """``automil-<dataset>``; for a path, its file name without data suffixes (``automil-my-bags``), with
    characters the registry would refuse replaced by ``-``."""
    name = dataset
    if "/" in dataset or "\\" in dataset or PurePath(dataset).suffix in _DATA_SUFFIXES:
        path = PurePath(dataset)
        name = path.name
        while PurePath(name).suffix.lower() in _DATA_SUFFIXES:
            name = PurePath(name).stem
    return "automil-" + (re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "data")
