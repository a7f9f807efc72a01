"""The ensemble's leaderboard row: ensemble selection (:mod:`automil.tune.final.ensemble_selection`) over the
learners' best
trials, scored as honestly as a learner (members and weights of outer split ``i`` chosen on its inner folds
only), and its model assembled from the members' full-data refits. Also what outer split ``i``'s inner
folds saw of a learner (:meth:`Candidate.inner`), which the ensemble and the procedure's choice share."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from automil.evaluation.calibrated import HeldApart
from automil.evaluation.calibration_figures import split_figures
from automil.evaluation.chance import CHANCE_SIGMAS, gain_stderr
from automil.evaluation.folds import fold_splits
from automil.evaluation.metrics import fold_scores, mean_std, score
from automil.evaluation.prediction import one_column_if_binary
from automil.records import LearnerResult, Member, Status, TrialAttr, TrialCounts, TrialRecord
from automil.records.trials import rounded
from automil.tune.backend.optuna_trials import best_trial, defaults_trial
from automil.tune.final.chance_rule import best_member
from automil.tune.final.ensemble_selection import Ensemble, calibrate, calibrated, select
from automil.tune.final.leaderboard import Evaluation, Refit, RowSpec, result_row
from automil.tune.studies.plan import Plan

__all__ = ["ENSEMBLE", "ScoreKey", "NESTED_SCORES", "Inner", "Candidate", "HeldOutRefit", "Members", "choose_members",
           "main_members", "ensemble_nested", "ensemble_calibration", "ensemble_row", "held_apart_ensemble", "main_oof",
           "log_scores", "out_of_fold_order", "stored_scores", "loaded_scores"]


ENSEMBLE = RowSpec("ensemble", "ensemble selection over the learners' best trials (Caruana et al., 2004)")


@dataclass(frozen=True)
class ScoreKey:
    """Which out-of-fold scores of a learner: those of its nested refits (every bag from its outer split's
    refit), or those of repeat ``repeat`` of the repeated CV. ``str()`` gives its stored name."""

    refit: Refit
    repeat: int | None = None

    def __str__(self) -> str:
        return str(self.refit) if self.repeat is None else f"{self.refit}-{self.repeat}"

    @classmethod
    def parse(cls, text: str) -> ScoreKey:
        """The inverse of ``str()``: ``nested`` or ``repeat-R``."""
        refit, _, repeat = text.partition("-")
        return cls(Refit(refit), int(repeat) if repeat else None)


NESTED_SCORES = ScoreKey(Refit.NESTED)


class Inner(NamedTuple):
    """What outer split ``i``'s inner folds saw of a learner: the score of the trial its nested refit uses,
    that score's inner folds (its uncertainty) and the trial's out-of-fold scores of the inner bags (each
    ``None`` where it kept none)."""

    score: float | None
    folds: list[float | None] | None
    oof: np.ndarray | None


@dataclass(frozen=True)
class HeldOutRefit:
    """A learner's refit on the hold-out protocol's training bags (``bags`` of them), its model and fit seconds."""

    model: object
    bags: int
    fit_seconds: float

    def full_data_seconds(self, n_bags: int) -> float:
        """The seconds of its fit on ``n_bags`` bags at its pace (costs linear in bags)."""
        return self.fit_seconds * n_bags / self.bags


@dataclass
class Candidate:
    """One learner as the ensemble sees it: its study trials (main study, then the outer splits), the
    out-of-fold scores of its final evaluation by :class:`ScoreKey` (every bag; NaN where a fit is
    missing), its mean fit seconds, its full-data refit and its fits without calibration bags (by outer
    split; ``None``: its model's), when made; its hold-out refit, when kept to stand in for a full-data refit
    that the budget cannot end."""

    trials: list[TrialRecord]
    sub_trials: list[list[TrialRecord]]
    scores: dict[ScoreKey, np.ndarray] = field(default_factory=dict)
    fit_seconds: float | None = None
    model: object = None
    held_apart: dict[int | None, HeldApart] = field(default_factory=dict)
    held_out_refit: HeldOutRefit | None = None

    def inner(self, plan: Plan, i: int) -> Inner:
        """What outer split ``i``'s inner folds saw of the learner (:class:`Inner`).

        The trial is split ``i``'s best; a split the budget left untuned refits the learner's defaults
        (:func:`~automil.tune.backend.optuna_trials.defaults_trial` of the main study), whose score here is the mean
        over the main study's folds other than ``i``, and whose out-of-fold scores are those of the inner
        bags: fold ``i``'s bags are scored by neither.
        """
        options = plan.options
        order = plan.trial_folds(i).order
        tuned = best_trial(self.sub_trials[i], options.directions)
        if tuned is not None:
            return Inner(tuned.value, tuned.attrs.get(TrialAttr.fold(options.metric)), _oof_scores(tuned, len(order)))
        defaults = defaults_trial(self.trials)
        if defaults is None:
            return Inner(None, None, None)
        folds = [v for f, v in enumerate(defaults.attrs.get(TrialAttr.fold(options.metric), [])) if f != i]
        value = mean_std(folds)[0] if folds else None
        everywhere = _oof_scores(defaults, len(plan.folds.tuning))
        if everywhere is None:
            return Inner(value, folds or None, None)
        position = np.empty(len(plan.folds.tuning), dtype=np.int64)
        position[out_of_fold_order(plan.folds.tuning)] = np.arange(len(plan.folds.tuning))
        return Inner(value, folds or None, everywhere[position[order]])


@dataclass(frozen=True)
class Members:
    """The members an ensemble selection chose, their calibration maps and weights (summing to 1)."""

    names: list[str]
    calibrators: list
    weights: list[float]

    def combined(self, scores: dict[str, np.ndarray]) -> np.ndarray:
        """The weighted average of the members' calibrated probabilities of their ``scores`` (by learner),
        shape ``(n_bags, K)``: the ensemble's ``predict_proba`` of those bags."""
        return sum(w * calibrated(c, scores[n]) for n, c, w in zip(self.names, self.calibrators, self.weights,
                                                                    strict=True))

    def predict(self, candidates: dict[str, Candidate], key: ScoreKey, where, classes) -> tuple | None:
        """Labels and combined probabilities of the bags ``where`` from the members' scores under ``key``;
        ``None`` if one is missing."""
        total = 0.0
        for name, calibrator, weight in zip(self.names, self.calibrators, self.weights, strict=True):
            scores = candidates[name].scores.get(key)
            if scores is None or np.isnan(scores[where]).any():
                return None
            total = total + weight * calibrated(calibrator, scores[where])
        return classes[np.argmax(total, axis=1)], total


def _oof_scores(trial: TrialRecord | None, n_bags: int) -> np.ndarray | None:
    """The out-of-fold scores a trial kept, when they cover ``n_bags`` bags."""
    scores = None if trial is None else trial.attrs.get(TrialAttr.OOF_SCORES)
    return None if scores is None or len(scores) != n_bags else np.asarray(scores, dtype=np.float64)


def choose_members(oof: dict[str, np.ndarray | None], order, y, metric: str) -> Members | None:
    """Ensemble selection over the learners with out-of-fold scores ``oof`` of the bags ``order`` (labelled
    ``y[order]``; ``None``: not a candidate); ``None`` without a candidate."""
    labels = np.asarray(y)[order]
    classes = np.unique(labels)
    names, calibrators, probas = [], [], []
    for name, scores in oof.items():
        if scores is None:
            continue
        calibrator = calibrate(scores, labels)
        names.append(name)
        calibrators.append(calibrator)
        probas.append(calibrated(calibrator, scores))
    if not names:
        return None
    y_index = np.searchsorted(classes, labels)
    # Candidates best first, so that ties go to the better single learner.
    ranking = sorted(range(len(names)), key=lambda j: -score(y_index, probas[j], metric))
    weights = select([probas[j] for j in ranking], y_index, metric)
    kept = [(names[j], calibrators[j], float(w)) for j, w in zip(ranking, weights, strict=True) if w > 0]
    kept.sort(key=lambda m: -m[2])
    return Members(*(list(part) for part in zip(*kept, strict=True)))


def ensemble_nested(plan: Plan, bags, candidates: dict[str, Candidate]) -> tuple[Evaluation, list[Members | None]]:
    """The ensemble's evaluation with its nested folds filled in (the held-out one under the hold-out
    protocol, none under the tuned protocol): what :func:`ensemble_row` completes; and the members chosen in
    each outer split (``None`` where none could be), which :func:`ensemble_calibration` scores once the
    members' held-apart fits are in. It needs the members' nested refits."""
    evaluation = Evaluation(ENSEMBLE.name, ENSEMBLE.plugin, f"{plan.dataset}/{ENSEMBLE.name}", [], None)
    if not plan.options.outer_folds:
        return evaluation, []
    return evaluation, _nested(plan, bags, candidates, evaluation, np.unique(bags.y))


def ensemble_calibration(plan: Plan, bags, candidates: dict[str, Candidate], evaluation: Evaluation,
                         chosen: list[Members | None]) -> None:
    """Fill in the ensemble's calibration figures of each outer split (``evaluation.calibration``) from the
    members ``chosen`` there (:func:`ensemble_nested`): calibrated as its model is
    (tune.final.calibration.calibrated_ensemble), on the log of its probabilities, with the sets of its
    members' held-apart fits."""
    classes = np.unique(bags.y)
    evaluation.calibration = [None] * len(chosen)
    for i, members in enumerate(chosen):
        test = np.flatnonzero(plan.folds.tuning == i)
        predicted = None if members is None else members.predict(candidates, NESTED_SCORES, test, classes)
        if predicted is None:
            continue
        order = plan.trial_folds(i).order
        oof = {n: candidates[n].inner(plan, i).oof for n in members.names}
        evaluation.calibration[i] = split_figures(bags, order, test, log_scores(members.combined(oof)),
                                                  log_scores(predicted[1]), probabilities=False, raw=predicted[1],
                                                  held_apart=held_apart_ensemble(members, candidates, i))


def ensemble_row(plan: Plan, bags, candidates: dict[str, Candidate], main: Members,
                 nested: Evaluation) -> tuple[LearnerResult, Ensemble | None]:
    """The ensemble's row and model from the members ``main`` chosen on the main studies (:func:`main_members`),
    its nested folds (:func:`ensemble_nested`) and the repeats the members have scores of now. The model
    needs every member's full-data refit."""
    options = plan.options
    classes = np.unique(bags.y)
    evaluation = replace(nested, repeated={}, predictions=dict(nested.predictions),
                         fit_seconds=[sum(candidates[n].fit_seconds or 0.0 for n in main.names)])
    for r, assignment in enumerate(plan.folds.repeats):
        for _, test in fold_splits(assignment):
            predicted = main.predict(candidates, ScoreKey(Refit.REPEAT, r), test, classes)
            if predicted is None:
                break
            y_pred, probas = predicted
            evaluation.repeated.setdefault(r, []).append(fold_scores(bags.y[test], y_pred, probas, classes))
            if r == 0:
                evaluation.predictions.setdefault(Refit.REPEAT, []).append((bags.y[test], y_pred))
    row = result_row(plan.dataset, options, evaluation)
    row.members = [Member(n, w) for n, w in zip(main.names, main.weights, strict=True)]
    # its counterpart of a tuning score, which the run's choice holds against its members' (choice.choose)
    trials = {n: best_trial(candidates[n].trials, options.directions) for n in main.names}
    best = best_member(main.names, {n: None if t is None else t.value for n, t in trials.items()})
    folds, gain = _inner_folds(plan, bags, main_oof(plan, candidates), options.held_out, classes, best)
    row.tuning = replace(row.tuning, score=mean_std(folds)[0], gain_bound=gain)
    row.error = evaluation.errors[0] if evaluation.errors else None
    row.status = (Status.NO_RESULT if row.headline.accuracy is None
                  else Status.PARTIAL if evaluation.errors else Status.OK)
    row.counts = TrialCounts()
    models = [candidates[n].model for n in main.names]
    model = None if any(m is None for m in models) else Ensemble(models, main.calibrators, main.weights,
                                                                 main.names)
    return row, model


def main_members(plan: Plan, bags, candidates: dict[str, Candidate]) -> Members | None:
    """The members chosen on the main studies' out-of-fold scores (the model's members and weights), when
    two or more learners have a best trial with them; ``None`` (no ensemble) otherwise."""
    oof = main_oof(plan, candidates)
    if sum(scores is not None for scores in oof.values()) < 2:
        return None
    order = plan.trial_folds(plan.options.held_out).order
    return choose_members(oof, order, bags.y, plan.options.metric)


def main_oof(plan: Plan, candidates: dict[str, Candidate]) -> dict[str, np.ndarray | None]:
    """Every learner's out-of-fold scores of its main study's best trial (of the bags the main studies
    scored; ``None``: none kept)."""
    n_bags = len(plan.trial_folds(plan.options.held_out).order)
    return {n: _oof_scores(best_trial(c.trials, plan.options.directions), n_bags) for n, c in candidates.items()}


def _nested(plan: Plan, bags, candidates: dict[str, Candidate], evaluation: Evaluation, classes):
    """The ensemble's nested folds: outer split ``i`` selects on the inner out-of-fold scores of every
    learner with a nested refit there (tuned in the split, or its defaults), combines their outer refits'
    scores of fold ``i``, and notes its own score on the inner folds (``evaluation.inner``, by fold in
    ``evaluation.inner_folds``) and the members it combined there (``evaluation.members``)."""
    outer = plan.options.outer_folds
    evaluation.nested, evaluation.inner = [None] * len(outer), [None] * len(outer)
    evaluation.inner_folds, evaluation.members = [None] * len(outer), [None] * len(outer)
    evaluation.gain_bound = [None] * len(outer)
    chosen: list[Members | None] = [None] * len(outer)
    tuned = 0
    for i in outer:
        order = plan.trial_folds(i).order
        inner = {n: c.inner(plan, i) for n, c in candidates.items()}
        oof = {n: seen.oof for n, seen in inner.items()}
        members = choose_members(oof, order, bags.y, plan.options.metric)
        if members is None:
            evaluation.errors.append(f"no learner with out-of-fold scores in outer split {i}: no nested figure")
            continue
        tuned += 1
        chosen[i] = members
        best = best_member(members.names, {n: seen.score for n, seen in inner.items()})
        evaluation.inner_folds[i], evaluation.gain_bound[i] = _inner_folds(plan, bags, oof, i, classes, best)
        evaluation.inner[i], evaluation.members[i] = mean_std(evaluation.inner_folds[i])[0], members.names
        test = np.flatnonzero(plan.folds.tuning == i)
        predicted = members.predict(candidates, NESTED_SCORES, test, classes)
        if predicted is None:
            evaluation.errors.append(f"a member's nested fit of outer split {i} is missing: no nested figure")
            continue
        y_pred, probas = predicted
        evaluation.nested[i] = fold_scores(bags.y[test], y_pred, probas, classes)
        evaluation.predictions.setdefault(Refit.NESTED, []).append((bags.y[test], y_pred))
    evaluation.tuned_splits = tuned
    return chosen


def held_apart_ensemble(members: Members, candidates: dict[str, Candidate], split: int | None) -> HeldApart | None:
    """The ensemble's fit without calibration bags in outer ``split`` (``None``: its model's): its ``members``'
    own, combined with their calibration maps and weights (its model when theirs were kept); ``None`` when a
    member has none. The members' fits there hold the same bags apart and score the same bags."""
    parts = [candidates[name].held_apart.get(split) for name in members.names]
    if any(part is None for part in parts):
        return None
    scores = parts[0].scores
    where = np.flatnonzero(np.isfinite(scores.reshape(len(scores), -1)).all(axis=1))
    combined = log_scores(members.combined({n: p.scores[where] for n, p in zip(members.names, parts, strict=True)}))
    every = np.full((len(scores), *combined.shape[1:]), np.nan)
    every[where] = combined
    models = [part.model for part in parts]
    model = None if any(m is None for m in models) else Ensemble(models, members.calibrators, members.weights,
                                                                 members.names)
    return HeldApart(parts[0].calibration, every, model)


def _inner_folds(plan: Plan, bags, oof: dict[str, np.ndarray | None], i: int | None, classes,
                 best: str | None) -> tuple[list[float | None], float | None]:
    """The ensemble's counterpart of a tuning score, by block: on each block of the trials that never see fold
    ``i`` (outer split ``i``'s inner folds, or the blocks of the main studies' inner hold-out; ``None``: every
    fold, the main studies' under the nested and tuned protocols), the metric of the members, calibration
    maps and weights selected on the out-of-fold scores ``oof`` of the other blocks. Selected and scored on
    the same bags, an ensemble would beat its members by the selection alone (on a few hundred bags, by more
    than learners a few points apart differ); ``None`` for a block where nothing could be selected. Also the
    lower bound of its gain over its ``best`` member alone, selected (calibrated) the same way: the gain of
    the pooled blocks' metric less ``CHANCE_SIGMAS`` of its paired standard error over their bags
    (:func:`~automil.evaluation.chance.gain_stderr`; ``None`` without that member). Against the member
    alone, a gain that its calibration map alone buys is no gain of the combination."""
    folds = plan.trial_folds(i)
    order, metric = folds.order, plan.options.metric
    values, paired = [], []
    for block in dict.fromkeys(folds.blocks.tolist()):
        held = folds.blocks == block
        test = order[held]
        members = choose_members({n: None if s is None else s[~held] for n, s in oof.items()}, order[~held],
                                 bags.y, metric)
        if members is None:
            values.append(None)
            continue
        total = members.combined({n: oof[n][held] for n in members.names})
        y_pred = classes[np.argmax(total, axis=1)]
        values.append(getattr(fold_scores(bags.y[test], y_pred, total, classes), metric))
        if best is not None and oof.get(best) is not None:
            alone = choose_members({best: oof[best][~held]}, order[~held], bags.y, metric)
            paired.append((test, total, alone.combined({best: oof[best][held]})))
    if not paired:
        return values, None
    test, ours, theirs = (np.concatenate(part) for part in zip(*paired, strict=True))
    y_index = np.searchsorted(classes, bags.y[test])
    gain = score(y_index, ours, metric) - score(y_index, theirs, metric)
    return values, gain - CHANCE_SIGMAS * gain_stderr(metric, y_index, ours, theirs, plan.options.seed)


def log_scores(proba) -> np.ndarray:
    """The ensemble's decision scores of bags with probabilities ``proba``: their log (clipped away from 0),
    the positive class's column of two."""
    return one_column_if_binary(np.log(np.clip(proba, 1e-12, None)))


def out_of_fold_order(assignment, exclude=None) -> np.ndarray:
    """The bags of a trial's out-of-fold scores, in their order: its folds' test bags, fold by fold."""
    return np.concatenate([test for _, test in fold_splits(assignment, exclude=exclude)])


def stored_scores(scores: dict[ScoreKey, np.ndarray]) -> dict[str, list]:
    """A candidate's scores as JSON (kept with the learner's stored result, so that a rerun that reuses
    the result can still ensemble it), as :func:`automil.records.trials.rounded`."""
    return {str(key): rounded(values) for key, values in scores.items()}


def loaded_scores(stored: dict[str, list]) -> dict[ScoreKey, np.ndarray]:
    """The inverse of :func:`stored_scores`."""
    return {ScoreKey.parse(key): np.asarray(values, dtype=np.float64) for key, values in stored.items()}
