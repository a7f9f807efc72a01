"""The logged models' calibration (:mod:`automil.evaluation.calibrated`): a learner's model is calibrated on
its best trial's out-of-fold scores, the ensemble's on its members' combined out-of-fold scores, both of
the bags the main studies scored (every training bag, or all but the held-out fold), grouped by patient
when the bags have groups. No new fit: the tuning folds have scored every one of those bags already.

The same calibration is measured on the outer folds (:func:`outer_calibration`): outer split ``i``'s map comes
from the inner out-of-fold scores of the trial refitted there and is scored on the refit's scores of fold
``i``, which neither saw."""

from __future__ import annotations

import numpy as np

from automil.evaluation.calibrated import calibrate_model, gives_probabilities
from automil.evaluation.calibration_figures import split_figures
from automil.evaluation.standardized import Standardized
from automil.records import CalibrationFigures, TrialAttr, TrialRecord
from automil.tune.final.ensemble_row import NESTED_SCORES, Candidate, Members, log_scores, main_oof, out_of_fold_order
from automil.tune.studies.plan import Plan

__all__ = ["calibrated_model", "calibrated_ensemble", "outer_calibration"]


def calibrated_model(plan: Plan, bags, candidate: Candidate, model):
    """``model`` (a learner's full-data refit) calibrated on its best trial's out-of-fold scores; the model
    as it is when there is none, or no best trial kept them."""
    if model is None:
        return None
    scores = main_oof(plan, {"model": candidate})["model"]
    order = out_of_fold_order(plan.folds.tuning, plan.options.held_out)
    return model if scores is None else _calibrated(model, scores, bags, order)


def calibrated_ensemble(plan: Plan, bags, candidates: dict[str, Candidate], members: Members, model):
    """The ensemble's ``model`` calibrated on its members' combined out-of-fold scores (as its
    ``decision_function`` gives them: the log of the weighted average of the members' calibrated
    probabilities). The members and weights were chosen on those same scores, so they flatter it a little
    (docs/probabilities.md)."""
    if model is None:
        return None
    scores = log_scores(members.combined(main_oof(plan, candidates)))
    return _calibrated(model, scores, bags, out_of_fold_order(plan.folds.tuning, plan.options.held_out))


def _calibrated(model, scores, bags, order):
    """The calibrated model, from the bags with scores (a fit the budget cut left some without); the model
    as it is when they miss a class (then ``automil predict --coverage`` says it has no calibration)."""
    scores = np.asarray(scores, dtype=np.float64)
    kept = np.isfinite(scores.reshape(len(scores), -1)).all(axis=1)
    groups = None if bags.groups is None else bags.groups[order][kept]
    try:
        return calibrate_model(model, scores[kept], bags.y[order][kept], groups)
    except ValueError:
        return model


def outer_calibration(plan: Plan, bags, spec, candidate: Candidate,
                      outer_best: list[TrialRecord | None]) -> list[CalibrationFigures | None]:
    """The calibration figures of a learner (``spec``) on each outer fold (the held-out one under the hold-out
    protocol): the map and conformal quantile fitted on the inner out-of-fold scores of the trial ``outer_best[i]``
    refitted in split ``i``, scored on that refit's scores of fold ``i``. ``None`` for a split without either
    score, or whose inner bags miss a class."""
    nested = candidate.scores.get(NESTED_SCORES)
    figures = []
    for i in plan.options.outer_folds:
        trial = outer_best[i] if i < len(outer_best) else None
        oof = candidate.inner(plan, i).oof
        if trial is None or oof is None or nested is None:
            figures.append(None)
            continue
        model = Standardized(spec.build(**trial.attrs[TrialAttr.ESTIMATOR_PARAMS]))  # unfitted: what it scores by
        test = np.flatnonzero(plan.folds.tuning == i)
        figures.append(split_figures(bags, out_of_fold_order(plan.folds.tuning, i), test, oof, nested[test],
                                     gives_probabilities(model)))
    return figures

