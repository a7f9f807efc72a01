"""The logged models' calibration (:mod:`automil.evaluation.calibrated`): a learner's model is calibrated on
its best trial's out-of-fold scores, the ensemble's on its members' combined out-of-fold scores, both of
the bags the main studies scored (every training bag, or all but the held-out fold), grouped by patient
when the bags have groups. No new fit: the tuning folds have scored every one of those bags already."""

from __future__ import annotations

import numpy as np

from automil.evaluation.calibrated import calibrate_model
from automil.evaluation.prediction import one_column_if_binary
from automil.tune.final.ensemble_row import Candidate, Members, main_oof, out_of_fold_order
from automil.tune.final.ensemble_selection import calibrated
from automil.tune.studies.plan import Plan

__all__ = ["calibrated_model", "calibrated_ensemble"]


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
    oof = main_oof(plan, candidates)
    total = sum(w * calibrated(c, oof[n]) for n, c, w in zip(members.names, members.calibrators, members.weights,
                                                              strict=True))
    scores = one_column_if_binary(np.log(np.clip(total, 1e-12, None)))
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
