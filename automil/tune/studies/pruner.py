"""The pruner of a single-objective study: between folds, a paired test against the best trial; inside the
first fit, the median rule over its epochs."""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["FoldAndEpochPruner", "EPOCH_STEP"]

# A trial's intermediate values: each tuning fold's score at the fold's number (0 to k-1), and the epochs
# its first fit reported (automil.report_epoch) at EPOCH_STEP + epoch, so that the two never meet in one
# comparison.
EPOCH_STEP = 1_000_000
EPOCH_STARTUP_TRIALS = 5  # completed trials with a report at an epoch before a fit can be stopped there
# Epochs every fit runs before it can be stopped: a network's held-out score over its first epochs says little
# (on a few dozen held-out slides the deep learners' loss is often lowest after 1 to 3 epochs, while they still
# predict the class shares), so the pruner waits as long as their own early stopping does (MIN_EPOCHS in
# automil_deep's training).
EPOCH_WARMUP = 10


class FoldAndEpochPruner:
    """The pruner of a single-objective study (Optuna calls ``prune``). Between folds, Optuna's Wilcoxon
    test of the trial's fold scores against the best trial's, paired by fold. Inside the first fold's fit,
    before any fold score, the median rule over epochs (as Optuna's MedianPruner, on the epoch steps only):
    after ``EPOCH_WARMUP`` epochs, a fit whose best held-out score so far is below the median of the
    completed trials' scores at the same epoch is stopped, once ``EPOCH_STARTUP_TRIALS`` of them reached it."""

    def __init__(self):
        import optuna

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self._wilcoxon = optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)

    def prune(self, study, trial) -> bool:
        if not any(step < EPOCH_STEP for step in trial.intermediate_values):
            return _epoch_rule(study, trial)
        try:
            best = _folds_only(study.best_trial)
        except ValueError:  # no completed trial yet
            return False
        return self._wilcoxon.prune(_StudyView(study.direction, best), _folds_only(trial))


@dataclass(frozen=True)
class _StudyView:
    """The study as the Wilcoxon test reads it: its direction and its best trial without epoch reports."""

    direction: object
    best_trial: object


def _folds_only(trial):
    """A copy of a frozen trial with only its fold scores as intermediate values."""
    view = copy.copy(trial)
    view.intermediate_values = {s: v for s, v in trial.intermediate_values.items() if s < EPOCH_STEP}
    return view


def _epoch_rule(study, trial) -> bool:
    """The median rule over the epochs of the trial's first fit (higher scores better)."""
    import optuna

    step = trial.last_step
    if step is None or step - EPOCH_STEP < EPOCH_WARMUP - 1:
        return False
    others = [t.intermediate_values[step] for t in study.get_trials(deepcopy=False, states=(
        optuna.trial.TrialState.COMPLETE,)) if step in t.intermediate_values]
    if len(others) < EPOCH_STARTUP_TRIALS:
        return False
    return max(trial.intermediate_values.values()) < float(np.median(others))
