"""The records of trials and studies as the budget, the leaderboard and tracking read them: a trial's state
and attributes, a study's trials. No Optuna here: ``automil/tune/backend/optuna_trials.py`` turns Optuna's
trials into these.

The trial attribute keys are the names the driver stores with every Optuna trial (``docs/reference/study.md``, "What
a study stores").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum, auto

import numpy as np

__all__ = ["TrialState", "TrialAttr", "TrialRecord", "StudyRecord", "TIMED_OUT", "rounded"]

TIMED_OUT = "T/O"  # a trial's outcome when the driver killed its fit at --fit-timeout


class TrialState(StrEnum):
    """A trial's state. The values are Optuna's state names (what tracking tags a trial with);
    :mod:`automil.tune.backend.optuna_trials` is the one place that converts between the two."""

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        return name

    RUNNING = auto()
    WAITING = auto()  # queued (the learner's defaults, a warm-start point), not started yet
    COMPLETE = auto()
    PRUNED = auto()
    FAIL = auto()

    @property
    def finished(self) -> bool:
        return self in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


class TrialAttr(StrEnum):
    """Keys of the user attributes the driver stores with every trial."""

    WORKER = "worker"  # the process running it (host, pid, start time)
    HEARTBEAT = "heartbeat"
    LEARNER = "learner"
    PLUGIN = "plugin"
    DATASET = "dataset"
    SEED = "seed"
    TASK = "task"  # classification, survival or regression (automil.endpoints): what the search space builds
    N_FEATURES = "n_features"
    N_CLASSES = "n_classes"
    N_INSTANCES = "n_instances"
    ESTIMATOR_PARAMS = "estimator_params"  # the learner's parameters as JSON: what the final evaluation refits
    FOLD_ACCURACY = "fold_accuracy"
    FOLD_BALANCED_ACCURACY = "fold_balanced_accuracy"
    FOLD_ROC_AUC = "fold_roc_auc"  # None for a fold whose test bags hold one class
    ACCURACY = "accuracy"  # the mean over the folds (and its sd below), set when the trial finishes
    ACCURACY_STD = "accuracy_std"
    BALANCED_ACCURACY = "balanced_accuracy"
    BALANCED_ACCURACY_STD = "balanced_accuracy_std"
    ROC_AUC = "roc_auc"
    ROC_AUC_STD = "roc_auc_std"
    # survival (automil.endpoints.TASK_METRICS): Harrell's and Uno's concordance, the integrated Brier score
    FOLD_CONCORDANCE = "fold_concordance"
    FOLD_UNO_CONCORDANCE = "fold_uno_concordance"
    FOLD_INTEGRATED_BRIER = "fold_integrated_brier"  # None for a fold whose learner gives no survival curves
    CONCORDANCE = "concordance"
    CONCORDANCE_STD = "concordance_std"
    UNO_CONCORDANCE = "uno_concordance"
    UNO_CONCORDANCE_STD = "uno_concordance_std"
    INTEGRATED_BRIER = "integrated_brier"
    INTEGRATED_BRIER_STD = "integrated_brier_std"
    # regression
    FOLD_R2 = "fold_r2"
    FOLD_SPEARMAN = "fold_spearman"
    FOLD_MAE = "fold_mae"
    FOLD_RMSE = "fold_rmse"
    R2 = "r2"
    R2_STD = "r2_std"
    SPEARMAN = "spearman"
    SPEARMAN_STD = "spearman_std"
    MAE = "mae"
    MAE_STD = "mae_std"
    RMSE = "rmse"
    RMSE_STD = "rmse_std"
    FIT_SECONDS = "fit_seconds"
    PREDICT_SECONDS = "predict_seconds"
    TIMED_OUT = "timed_out"  # a fit passed --fit-timeout
    TIME_LIMITED = "time_limited"  # a fit ended in its time, short of its own end: the parameters it reached
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM or the run's budget stopped it: not counted
    TOO_SLOW = "too_slow"  # its defaults passed their fair share of the budget (also interrupted)
    ESTIMATED_SECONDS = "estimated_seconds"  # its defaults' trial as estimated from fits on samples of bags
    STALE = "stale"  # its process died: not counted
    OUT_OF_MEMORY = "out_of_memory"
    ONE_CLASS = "one_class"  # predicted one class for every bag it scored (pooled over its fits)
    WARM_START_FROM = "warm_start_from"  # a queued warm-start point: the study its parameters come from
    PORTFOLIO = "portfolio"  # a queued point of the portfolio (automil.tune.portfolio), after the learner's first
    RUNG = "rung"  # a trial of the ladder: the fraction of the training bags it fitted on (never counted)
    OOF_SCORES = "oof_scores"  # out-of-fold bag scores, in the order of the folds' bags (trials near the best)
    ERROR = "error"

    @staticmethod
    def fold(metric: str) -> TrialAttr:
        """The key of a metric's per-fold scores (``fold_accuracy``, ``fold_concordance``)."""
        return TrialAttr(f"fold_{metric}")

    @staticmethod
    def std(metric: str) -> TrialAttr:
        """The key of the sd over the folds of a metric (its mean's key is the metric's name)."""
        return TrialAttr(f"{metric}_std")


@dataclass(frozen=True)
class TrialRecord:
    """One Optuna trial as plain data: its ``state``, its user attributes ``attrs`` (keys in
    :class:`TrialAttr`), ``value`` the value of the study's metric, its first objective."""

    number: int
    state: TrialState
    value: float | None = None
    params: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    start: datetime | None = None
    end: datetime | None = None
    queued: bool = False  # its parameters were queued (the learner's defaults or a warm start), not sampled
    values: tuple = ()  # every objective's value of a multi-objective study (``value`` is the first)

    def __post_init__(self):
        object.__setattr__(self, "state", TrialState(self.state))

    @property
    def finished(self) -> bool:
        return self.state.finished

    @property
    def outcome(self) -> str:
        """The state, or ``T/O`` for a trial whose fit the driver killed at its time-out."""
        return TIMED_OUT if self.attrs.get(TrialAttr.TIMED_OUT) else self.state


@dataclass(frozen=True)
class StudyRecord:
    """A study's trials and what only the driver can compute from them (the parameter importances, or
    why there are none), for the figures of its result."""

    name: str
    trials: list[TrialRecord]
    direction: str = "maximize"
    importances: dict | None = None
    importances_note: str = ""


def rounded(values) -> list:
    """Scores as JSON for storage: 6 significant digits (their noise needs no more), NaN as ``None``."""
    values = np.asarray(values, dtype=np.float64)
    flat = [None if np.isnan(v) else float(f"{v:.6g}") for v in values.ravel()]
    return np.asarray(flat, dtype=object).reshape(values.shape).tolist()
