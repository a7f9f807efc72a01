"""The fits of the final evaluation, as tasks for the fit workers: the nested refits, the repeats of the
cross-validation, the models, and the fits without calibration bags that prediction sets come from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from automil.evaluation.folds import fold_splits, held_apart_split
from automil.records import TrialAttr, TrialRecord
from automil.tune.backend.optuna_trials import best_trial
from automil.tune.final.ensemble_row import Candidate
from automil.tune.final.leaderboard import Refit
from automil.tune.studies.plan import Plan
from automil.tune.workers.fits import fit_predict

__all__ = ["FitTask", "nested_tasks", "longest_first", "repeat_tasks", "model_tasks", "held_apart_tasks",
           "coverage_tasks", "leader_model_seconds"]


@dataclass(frozen=True)
class FitTask:
    """One fit of the final evaluation: ``learner``'s ``params`` fitted on the ``train`` bags and scored
    on the ``test`` bags (none for a model); ``index`` is the outer split (nested, held-apart) or the repeat;
    ``calibration`` the bags among ``test`` a held-apart fit holds apart for its prediction sets;
    ``keep_model``: the fit's model comes back (a hold-out refit, to stand in for a full-data fit);
    ``seconds``: what its trial's fits took on average (0: not known), for :func:`longest_first`."""

    learner: str
    refit: Refit
    params: dict
    train: np.ndarray
    test: np.ndarray | None = None
    index: int | None = None
    calibration: np.ndarray | None = None
    keep_model: bool = False
    seconds: float = 0.0

    def call(self, seed: int) -> tuple:
        """The task as a fit worker runs it: :func:`~automil.tune.workers.fits.fit_predict` and its arguments."""
        # a logged model's held-apart fit comes back: its sets score new bags with it
        keep = self.keep_model or self.refit is Refit.MODEL or (self.refit is Refit.CONFORMAL and self.index is None)
        # the instance figures are nested like the bag figures: scored on the outer folds only, as are the
        # Kaplan-Meier curves of a survival model's held-out bags (split at its training bags' median risk)
        nested = self.refit is Refit.NESTED
        return fit_predict, self.learner, self.params, self.train, self.test, seed, keep, nested, nested


def nested_tasks(plan: Plan, outer_best: dict[str, list[TrialRecord | None]],
                 keep_models: bool = False) -> list[FitTask]:
    """The refits of every outer split's best parameters (``outer_best``, by learner), scored on its outer fold;
    with ``keep_models``, each brings its model back."""
    outer = fold_splits(plan.folds.tuning)
    return [FitTask(learner, Refit.NESTED, trial.attrs[TrialAttr.ESTIMATOR_PARAMS], *outer[i], index=i,
                    keep_model=keep_models, seconds=float(np.mean(trial.attrs.get(TrialAttr.FIT_SECONDS) or [0.0])))
            for learner, trials in outer_best.items() for i, trial in enumerate(trials) if trial is not None]


def longest_first(tasks: list[FitTask]) -> list[FitTask]:
    """``tasks`` in the order that ends them soonest on several workers: the longest first (by their trials'
    whole seconds), the short ones filling in after; tasks of the same whole seconds keep their order. Why:
    taken in any other order, a long fit that starts last ends past a deadline that all of them fitted
    within (Graham's longest-processing-time rule), while fits of under a second change no ending."""
    return sorted(tasks, key=lambda task: -int(task.seconds))


def repeat_tasks(best: dict[str, TrialRecord | None], r: int, assignment) -> list[FitTask]:
    """Repeat ``r`` of the repeated CV of every learner's ``best`` parameters, on its folds ``assignment``."""
    splits = fold_splits(assignment)
    tasks = []
    for learner, trial in best.items():  # a learner's folds together: a repeat counts only when complete
        if trial is not None:
            params = trial.attrs[TrialAttr.ESTIMATOR_PARAMS]
            tasks += [FitTask(learner, Refit.REPEAT, params, train, test, index=r) for train, test in splits]
    return tasks


def model_tasks(plan: Plan, n_bags: int, candidates: dict[str, Candidate], learners: list[str]) -> list[FitTask]:
    """The full-data refits of the ``learners``' best parameters (those with a best trial): the models
    tracking logs."""
    return [FitTask(learner, Refit.MODEL, params, np.arange(n_bags))
            for learner, params in _best_params(plan, candidates, learners)]


def leader_model_seconds(plan: Plan, candidates: dict[str, Candidate], n_bags: int) -> float:
    """The seconds of a full-data fit of the learner whose tuning score leads (the likeliest choice), at the pace
    of its best trial's fits (cost linear in bags); 0 when no learner has a score. Why: the run ends with its
    chosen model's fit, which no deadline stops, so the fits before the choice must leave it that time."""
    metric = TrialAttr(plan.options.metric)
    best = [trial for trial in (best_trial(c.trials, plan.options.directions) for c in candidates.values())
            if trial is not None and trial.attrs.get(metric) is not None]
    if not best:
        return 0.0
    leader = max(best, key=lambda trial: trial.attrs[metric])
    train = len(plan.trial_folds(plan.options.held_out).fits[0][0])
    return float(np.mean(leader.attrs.get(TrialAttr.FIT_SECONDS) or [0.0])) * n_bags / train


def held_apart_tasks(plan: Plan, candidates: dict[str, Candidate], learners: list[str]) -> list[FitTask]:
    """The fits of the ``learners``' best parameters without their model's calibration bags (one tuning fold),
    scored on those bags: the held-apart models of their logged models' prediction sets."""
    train, calibration, _ = held_apart_split(plan.folds.tuning)
    return [FitTask(learner, Refit.CONFORMAL, params, train, calibration, calibration=calibration)
            for learner, params in _best_params(plan, candidates, learners)]


def coverage_tasks(plan: Plan, outer_best: dict[str, list[TrialRecord | None]],
                   measured: list[set[str]]) -> list[FitTask]:
    """The held-apart fits that measure prediction sets on the outer folds: in outer split ``i``, each learner of
    ``measured[i]`` with a nested refit there (its parameters, ``outer_best``) fitted on the split's training
    bags less one inner fold, scored on that fold (its calibration bags) and on outer fold ``i``."""
    tasks = []
    for i, learners in zip(plan.options.outer_folds, measured, strict=True):
        train, calibration, test = held_apart_split(plan.folds.tuning, i)
        for learner in sorted(learners & set(outer_best)):
            trial = outer_best[learner][i] if i < len(outer_best[learner]) else None
            if trial is not None:
                tasks.append(FitTask(learner, Refit.CONFORMAL, trial.attrs[TrialAttr.ESTIMATOR_PARAMS], train,
                                     np.concatenate([calibration, test]), index=i, calibration=calibration))
    return tasks


def _best_params(plan: Plan, candidates: dict[str, Candidate], learners: list[str]) -> list[tuple[str, dict]]:
    """The ``learners`` with a best trial on the main studies, with its parameters."""
    best = {learner: best_trial(candidates[learner].trials, plan.options.directions) for learner in learners}
    return [(learner, trial.attrs[TrialAttr.ESTIMATOR_PARAMS]) for learner, trial in best.items() if trial is not None]
