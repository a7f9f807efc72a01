"""The logged models' calibration (:mod:`automil.evaluation.calibrated`): a learner's model is calibrated on
its best trial's out-of-fold scores, the ensemble's on its members' combined out-of-fold scores, both of
the bags the main studies scored (every training bag, or all but the held-out fold); no new fit. Their
prediction sets come from their fit without one tuning fold (:func:`~automil.tune.final.tasks.held_apart_tasks`),
grouped by patient when the bags have groups.

The same calibration is measured on the outer folds (:func:`outer_calibration`): outer split ``i``'s map comes
from the inner out-of-fold scores of the trial refitted there and is scored on the refit's scores of fold
``i``, which neither saw; the sets, where :func:`measured_learners` asks for them, from that trial fitted
without fold ``i`` and one inner fold, as the logged model's are."""

from __future__ import annotations

import numpy as np

from automil.evaluation.calibrated import HeldApart, calibrate_model, gives_probabilities
from automil.evaluation.calibration_figures import split_figures
from automil.evaluation.standardized import Standardized
from automil.records import CalibrationFigures, LearnerResult, TrialAttr, TrialRecord
from automil.tune.final.choice import Choice
from automil.tune.final.ensemble_row import (
    ENSEMBLE,
    NESTED_SCORES,
    Candidate,
    Members,
    held_apart_ensemble,
    log_scores,
    main_oof,
)
from automil.tune.final.leaderboard import Evaluation
from automil.tune.studies.plan import Plan

__all__ = ["calibrated_model", "calibrated_ensemble", "outer_calibration", "measured_learners"]


def calibrated_model(plan: Plan, bags, candidate: Candidate, model):
    """``model`` (a learner's full-data refit) calibrated on its best trial's out-of-fold scores, with the
    prediction sets of its held-apart fit when it has one; the model as it is when there is no model, or no
    best trial kept scores."""
    if model is None:
        return None
    scores = main_oof(plan, {"model": candidate})["model"]
    order = plan.trial_folds(plan.options.held_out).order
    return model if scores is None else _calibrated(model, scores, bags, order, candidate.held_apart.get(None))


def calibrated_ensemble(plan: Plan, bags, candidates: dict[str, Candidate], members: Members, model):
    """The ensemble's ``model`` calibrated on its members' combined out-of-fold scores (as its
    ``decision_function`` gives them: the log of the weighted average of the members' calibrated
    probabilities), with the sets of its members' held-apart fits combined the same way. The members and
    weights were chosen on those same scores, so they flatter it a little (docs/probabilities.md)."""
    if model is None:
        return None
    scores = log_scores(members.combined(main_oof(plan, candidates)))
    return _calibrated(model, scores, bags, plan.trial_folds(plan.options.held_out).order,
                       held_apart_ensemble(members, candidates, None))


def _calibrated(model, scores, bags, order, held_apart: HeldApart | None):
    """The calibrated model, from the bags with scores (a fit the budget cut left some without); without sets
    when ``held_apart`` kept no model; the model as it is when the bags miss a class (then ``automil predict
    --coverage`` says it has no calibration)."""
    scores = np.asarray(scores, dtype=np.float64)
    kept = np.isfinite(scores.reshape(len(scores), -1)).all(axis=1)
    sets = () if held_apart is None or held_apart.model is None else (held_apart.model, held_apart.bags(bags))
    try:
        return calibrate_model(model, scores[kept], bags.y[order][kept], *sets)
    except ValueError:
        return model


def outer_calibration(plan: Plan, bags, spec, candidate: Candidate,
                      outer_best: list[TrialRecord | None]) -> list[CalibrationFigures | None]:
    """The calibration figures of a learner (``spec``) on each outer fold (the held-out one under the hold-out
    protocol): the map fitted on the inner out-of-fold scores of the trial ``outer_best[i]`` refitted in split
    ``i``, scored on that refit's scores of fold ``i``; the sets' coverage where that trial's held-apart fit
    scored fold ``i``. ``None`` for a split without either score, or whose inner bags miss a class."""
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
        figures.append(split_figures(bags, plan.trial_folds(i).order, test, oof, nested[test],
                                     gives_probabilities(model), held_apart=candidate.held_apart.get(i)))
    return figures


def measured_learners(plan: Plan, choice: Choice, procedure: LearnerResult | None,
                      ensemble: Evaluation | None) -> list[set[str]]:
    """The learners whose prediction sets are measured in each outer split (one held-apart fit each): the run's
    chosen row's, and the row the ``procedure`` (the ``automil`` row) chooses there, an ensemble by its
    members there. A fit per learner and split would double the nested refits; these are the rows whose
    coverage a user reads (the chosen model's, and the procedure's)."""
    choices = procedure.choices if procedure is not None and procedure.choices else []
    measured = []
    for i in plan.options.outer_folds:
        rows = {choice.learner, choices[i] if i < len(choices) else None} - {None}
        members = ensemble.members[i] if ensemble is not None and i < len(ensemble.members) else None
        measured.append({m for row in rows for m in ((members or []) if row == ENSEMBLE.name else [row])})
    return measured
