"""The leaderboard: one row per learner from its studies and final evaluation, their ranking, and the
nested figure of the run's choice itself (:func:`procedure_row`, the rule of :mod:`automil.tune.final.choice`
applied in every outer split). The rows are ranked by their headline figures, which no choice looks at.

The keys of a row are documented in ``docs/reference/leaderboard-row.md``; ``automil tune`` prints the rows and
:mod:`automil.track` logs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from statistics import NormalDist

import numpy as np

from automil.endpoints import TASK_METRICS, label_counts, task_of
from automil.evaluation.calibration_figures import pooled
from automil.evaluation.chance import score_stderr
from automil.evaluation.instance_metrics import InstanceFold
from automil.evaluation.metrics import FoldScores, figure_interval, mean_std, one_class
from automil.evaluation.pareto import non_dominated
from automil.records import (
    PROCEDURE,
    CalibrationFigures,
    Costs,
    Figure,
    Headline,
    InstanceFigures,
    LearnerResult,
    NestedFigure,
    OuterSplit,
    ParetoPoint,
    RepeatedFigure,
    Status,
    TrialAttr,
    TrialCounts,
    TrialRecord,
    TrialState,
    Tuning,
    metric_task,
)
from automil.records.protocol import Protocol
from automil.tune.backend.optuna_trials import counts_toward_budget, trial_counts
from automil.tune.final.chance_rule import chance_split
from automil.tune.final.choice import Choice, InnerScore, admissible, best_inner
from automil.tune.options import TuneOptions
from automil.tune.schedule.ladder import rung_states, screened_note

__all__ = ["Refit", "RowSpec", "PROCEDURE_SPEC", "Evaluation", "result_row", "instance_figures",
           "row_status", "skipped_row", "rank", "procedure_row", "pareto_front"]


class Refit(StrEnum):
    """The fits of a learner's best parameters in the final evaluation."""

    NESTED = "nested"  # outer split i's best parameters, scored on outer fold i
    REPEAT = "repeat"  # a fold of one repeat of the repeated CV
    MODEL = "model"  # all bags: the model tracking logs
    CONFORMAL = "conformal"  # without one part of the bags, scored on it: the model prediction sets come from


@dataclass(frozen=True)
class RowSpec:
    """What tracking shows of a row that is no learner (the ensemble, the procedure), in the place of a
    learner's spec."""

    name: str
    description: str
    plugin: str = "automil"


PROCEDURE_SPEC = RowSpec(PROCEDURE, "automil itself: in every outer split, the row best on its inner folds")


@dataclass
class Evaluation:
    """What tuning and the final evaluation found for one learner: the trials of its study on all bags,
    the best trial there and in every outer split, and the scores of the refits.

    ``nested[i]`` and each entry of ``repeated[r]`` are :class:`automil.evaluation.metrics.FoldScores`,
    ``instance[i]`` outer fold ``i``'s instance figures (``None`` without instance labels or output);
    ``inner[i]`` is the score outer split ``i``'s inner folds gave the parameters refitted there (what the
    procedure chooses by, :func:`procedure_row`), ``inner_folds[i]`` that score on each inner fold, and
    ``members[i]`` (the ensemble's) the learners combined in split ``i`` and ``gain_bound[i]`` the lower
    bound of its inner score's gain over its best member alone, ``calibration[i]`` the calibration
    figures of outer fold ``i`` (:func:`~automil.tune.final.calibration.outer_calibration`);
    ``predictions`` maps :attr:`Refit.NESTED` or :attr:`Refit.REPEAT` to ``(y_true, y_pred)`` pairs of
    out-of-fold predictions (of the first repeat); ``errors`` are the final evaluation's failures,
    ``notes`` what its budget left out that the headline figure does not need (a model); ``risks`` a survival
    learner's ``[bag, risk, cut]`` of every bag its outer folds held out (the Kaplan-Meier split);
    ``budget_seconds`` the wall seconds of this run's budget its trials and final fits took.
    """

    learner: str
    plugin: str
    study: str
    trials: list[TrialRecord]
    best: TrialRecord | None
    outer_best: list[TrialRecord | None] = field(default_factory=list)
    nested: list[FoldScores | None] = field(default_factory=list)
    repeated: dict[int, list[FoldScores]] = field(default_factory=dict)
    fit_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    predictions: dict[Refit, list[tuple]] = field(default_factory=dict)
    tuned_splits: int | None = None
    budget_seconds: float | None = None
    inner: list[float | None] = field(default_factory=list)
    instance: list[InstanceFold | None] = field(default_factory=list)
    inner_folds: list[list[float | None] | None] = field(default_factory=list)
    members: list[list[str] | None] = field(default_factory=list)
    calibration: list[CalibrationFigures | None] = field(default_factory=list)
    gain_bound: list[float | None] = field(default_factory=list)
    risks: list[list] = field(default_factory=list)


def result_row(dataset: str, options: TuneOptions, job: Evaluation) -> LearnerResult:
    """The leaderboard row of one learner (keys documented in docs/reference/leaderboard-row.md)."""
    best, metrics = job.best, TASK_METRICS[metric_task(options.metric)]
    classification = metric_task(options.metric) == "classification"
    counts, finished = trial_counts(job.trials)
    nested_protocol = Protocol(options.protocol).held_out  # nested or hold-out: scored on outer folds
    nested = job.nested
    repeats = [scores for scores in job.repeated.values() if len(scores) == options.folds]
    nested_figure = NestedFigure()
    if nested_protocol:
        nested_figure = _figure(NestedFigure, nested if nested and all(s is not None for s in nested) else [],
                                metrics, tuned_splits=job.tuned_splits,
                                outer_splits=_outer_splits(job, metrics) if nested else None)
    # The spread is over repeats of the k-fold mean, as in the papers' 10 x 10-fold tables.
    # the mean over a repeat's folds of each metric (a fold without an AUC left out of its mean)
    means = [FoldScores(**{m: mean_std(getattr(s, m) for s in scores)[0] for m in metrics}) for scores in repeats]
    repeated = _figure(RepeatedFigure, means, metrics, repeats=len(repeats))
    predictions = job.predictions.get(Refit.NESTED if nested_protocol else Refit.REPEAT)
    scored = bool(predictions) and (not nested_protocol or _scored(nested_figure, metrics))
    classes, matrix = _confusion(predictions) if scored and classification else (None, None)
    value = getattr(nested_figure, options.metric)
    headline = Headline(**_metrics(nested_figure if nested_protocol else repeated),
                        kind=Protocol(options.protocol).headline, one_class=_one_class(predictions),
                        classes=classes, confusion_matrix=matrix, held_out_risk=(job.risks or None) if scored else None,
                        interval=_interval(matrix, options, value) if classification else
                        _task_interval(predictions, options, value) if scored else None)
    fit_seconds = job.fit_seconds or [s for t in finished for s in t.attrs.get(TrialAttr.FIT_SECONDS, [])]
    row = LearnerResult(dataset=dataset, learner=job.learner, plugin=job.plugin, study=job.study,
                        protocol=options.protocol, metric=options.metric, seed=options.seed, folds=options.folds,
                        counts=counts, tuning=Tuning(
                            score=None if best is None else best.value,
                            best_trial=None if best is None else best.number,
                            best_params=None if best is None else best.attrs[TrialAttr.ESTIMATOR_PARAMS],
                            pareto_front=pareto_front(job.trials, options) if options.multi_objective else None),
                        nested=nested_figure, repeated=repeated, headline=headline,
                        costs=Costs(fit_seconds=float(np.mean(fit_seconds)) if fit_seconds else None,
                                    budget_seconds=None if job.budget_seconds is None
                                    else round(job.budget_seconds, 1)),
                        error=_first_error(job, counts, finished, classification),
                        instance=instance_figures(job.instance) if _scored(nested_figure, metrics) else None,
                        calibration=pooled(job.calibration) if _scored(nested_figure, metrics) and classification
                        else None)
    too_slow = [t for t in job.trials if t.attrs.get(TrialAttr.TOO_SLOW)]
    rungs = rung_states(job.trials, options.metric, 0.0)
    top = any(counts_toward_budget(t) for t in job.trials)
    row.rung = _rung(rungs, top) if options.protocol == Protocol.HOLDOUT else None
    if best is None and not top and screened_note(rungs, options.metric) is not None:
        row.status, row.error = Status.SCREENED, screened_note(rungs, options.metric)
    elif best is None and too_slow:
        row.status, row.error = Status.TOO_SLOW, too_slow[-1].attrs[TrialAttr.ERROR]
    else:
        row.status = row_status(getattr(row.headline, metrics[0]), counts, best, job.errors)
    return row


def _rung(rungs, top: bool) -> str | None:
    """The rung a learner ended on: ``all`` (a trial on all the training bags), else its highest scored one."""
    scored = [r.fraction for r in rungs if r.score is not None]
    return "all" if top else f"1/{round(1 / max(scored))}" if scored else None


def _interval(matrix, options: TuneOptions, value: float | None) -> list[float] | None:
    """Under the nested and hold-out protocols, the 95% interval of the metric's figure ``value`` over the bags
    its outer folds scored (:func:`~automil.evaluation.metrics.figure_interval`): on a small set, how little
    its bags can tell, which a spread over three outer folds does not say."""
    if not Protocol(options.protocol).held_out or matrix is None or value is None:
        return None
    return [round(v, 4) for v in figure_interval(options.metric, value, matrix, options.seed)]


def _task_interval(predictions: list[tuple], options: TuneOptions, value: float | None) -> list[float] | None:
    """Under the nested and hold-out protocols, the 95% interval of a survival or regression figure ``value`` of
    the metric over the bags its outer folds scored (the pooled ``(y_true, prediction)`` pairs): ``value`` within
    the normal quantile times its standard error (:func:`~automil.evaluation.chance.score_stderr`, from the
    events and censored bags, or the bags), a concordance kept in [0, 1]."""
    if not Protocol(options.protocol).held_out or value is None:
        return None
    counts = label_counts(np.concatenate([y for y, _ in predictions]))
    margin = NormalDist().inv_cdf(0.975) * score_stderr(options.metric, value, counts)
    low, high = value - margin, value + margin
    return [round(v, 4) for v in ((max(low, 0.0), min(high, 1.0)) if "concordance" in options.metric
                                  else (low, high))]


def _scored(figure: Figure, metrics: tuple[str, ...]) -> bool:
    """Whether ``figure`` holds a figure of its task (its first metric, which every scored fold has)."""
    return getattr(figure, metrics[0]) is not None


def _figure(cls, scores, metrics: tuple[str, ...], **extra) -> Figure:
    """A ``cls`` (a :class:`Figure`) of the mean and sd of each of the task's ``metrics`` over ``scores``
    (records with a field per metric: :class:`~automil.evaluation.metrics.FoldScores`,
    :class:`~automil.records.OuterSplit`)."""
    values = {}
    for metric in metrics:
        values[metric], values[f"{metric}_std"] = mean_std(getattr(s, metric) for s in scores)
    return cls(**values, **extra)


def _metrics(figure: Figure) -> dict:
    """The fields of :class:`Figure` of ``figure``, to make another part with the same figure."""
    return {f.name: getattr(figure, f.name) for f in fields(Figure)}


def _outer_splits(job: Evaluation, metrics: tuple[str, ...]) -> list[OuterSplit | None]:
    """Each outer split's inner score (with its folds, and the ensemble's members there) and the scores of its
    refit on the outer fold (``None``: no refit)."""
    return [None if s is None else OuterSplit(inner=_at(job.inner, i), **{m: getattr(s, m) for m in metrics},
                                              inner_folds=_at(job.inner_folds, i), members=_at(job.members, i),
                                              calibration=_at(job.calibration, i),
                                              gain_bound=_at(job.gain_bound, i))
            for i, s in enumerate(job.nested)]


def _at(values: list, i: int):
    """``values[i]``, ``None`` past its end (an evaluation built without that part)."""
    return values[i] if i < len(values) else None


def instance_figures(folds: list[InstanceFold | None]) -> InstanceFigures | None:
    """Mean and sd over the outer folds of their instance figures; a fold without a figure (an AUC of test
    bags with one instance class) is left out. ``None`` when no fold has any: no instance labels, or a
    learner with neither instance scores nor a witness."""
    scored = [fold for fold in folds if fold is not None]
    auc, auc_std = mean_std(fold.instance_auc for fold in scored)
    precision, precision_std = mean_std(fold.witness_precision for fold in scored)
    if auc is None and precision is None:
        return None
    return InstanceFigures(instance_auc=auc, instance_auc_std=auc_std, witness_precision=precision,
                           witness_precision_std=precision_std)


def _one_class(predictions: list[tuple] | None) -> bool:
    """Whether the headline's out-of-fold ``(y_true, y_pred)`` pairs give every bag one class, pooled over
    its folds: a fold of a few bags given one class says nothing of the model; all of them do. A survival or
    regression fit that gives every bag of its fold one risk or value ignores the bags: one such fold does."""
    if not predictions:
        return False
    if task_of(predictions[0][0]) != "classification":
        return any(one_class(y_true, y_pred) for y_true, y_pred in predictions)
    return one_class(*(np.concatenate(part) for part in zip(*predictions, strict=True)))


def _confusion(predictions: list[tuple]) -> tuple[list, list]:
    """The classes and the confusion matrix of out-of-fold ``(y_true, y_pred)`` pairs, as lists."""
    from sklearn.metrics import confusion_matrix

    classes = np.unique(np.concatenate([y for y, _ in predictions]))
    y_true, y_pred = (np.concatenate(part) for part in zip(*predictions, strict=True))
    return classes.tolist(), confusion_matrix(y_true, y_pred, labels=classes).tolist()


def pareto_front(trials: list[TrialRecord], options: TuneOptions) -> list[ParetoPoint]:
    """The completed trials of a multi-objective study that no other beats on every objective, best
    metric first. Like the tuning score, the values come from the folds the parameters were tuned on."""
    complete = [t for t in trials if t.state is TrialState.COMPLETE and len(t.values) == len(options.objectives)]
    if not complete:
        return []
    keep = non_dominated([t.values for t in complete], [d == "maximize" for d in options.directions])
    front = [ParetoPoint(t.number, t.attrs.get(TrialAttr.ESTIMATOR_PARAMS),
                         dict(zip(options.objectives, t.values, strict=True))) for t in (complete[i] for i in keep)]
    return sorted(front, key=lambda point: (-point.values[options.metric], point.trial))


def _first_error(job: Evaluation, counts: TrialCounts, finished: list[TrialRecord],
                 classification: bool = True) -> str | None:
    """Why the row lacks a figure or part of one, most telling reason first; else what it lacks besides."""
    best, stopped = job.best, counts.stopped
    missing = [i for i, t in enumerate(job.outer_best) if t is None]
    errors = job.errors + [t.attrs[TrialAttr.ERROR] for t in finished
                           if t.state is TrialState.FAIL and not t.attrs.get(TrialAttr.TIMED_OUT)]
    if missing and best is not None:
        errors.insert(0, f"no completed trial in outer split(s) {', '.join(map(str, missing))}: no nested "
                         "figure (raise --timeout or --n-trials)")
    one_class = sum(bool(t.attrs.get(TrialAttr.ONE_CLASS)) for t in finished)
    if best is None and one_class:
        what = "one class" if classification else "the same value"
        errors.insert(0, f"{one_class} of {counts.trials} trials predicted {what} for every bag they "
                         "scored (never a result)")
    if best is None and not counts.trials:
        errors.insert(0, f"no trial finished within the --timeout budget ({stopped} stopped by it): raise "
                         "--timeout" if stopped else "no trial ran: raise --timeout")
    if best is None and not errors and counts.pruned:
        reasons = [t.attrs[TrialAttr.ERROR] for t in finished
                   if t.state is TrialState.PRUNED and t.attrs.get(TrialAttr.ERROR)]
        errors.append(f"no trial completed: {counts.pruned} of {counts.trials} pruned"
                      + (f" ({reasons[0]})" if reasons else "") + f", {counts.timed_out} timed out, "
                      f"{stopped} stopped by the --timeout budget")
    return errors[0] if errors else (job.notes[0] if job.notes else None)


def row_status(accuracy, counts: TrialCounts, best, final_errors) -> Status:
    """``ok``, ``partial``, or why there is no figure: ``T/O``, ``failed``, ``no result``, ``no trials``."""
    if accuracy is not None:
        return Status.OK if best is not None and not final_errors else Status.PARTIAL
    if best is not None:
        return Status.PARTIAL
    if not counts.trials:
        return Status.NO_TRIALS
    if counts.timed_out == counts.trials:
        return Status.TIMED_OUT
    return Status.FAILED if counts.failed == counts.trials else Status.NO_RESULT


def skipped_row(dataset, spec, reason, options) -> LearnerResult:
    return LearnerResult(dataset=dataset, learner=spec.name, plugin=spec.plugin, status=Status.SKIPPED,
                         error=reason, protocol=options.protocol, metric=options.metric, counts=TrialCounts(trials=0))


def rank(result: LearnerResult):
    """Best headline figure of the tuned metric first; rows without a figure last, by name."""
    value = result.metric_value()
    return (value is None, -(value or 0.0), result.learner)


def procedure_row(rows: list[LearnerResult], inner_bags: list,
                  choice: Choice | None = None) -> LearnerResult | None:
    """automil's own nested figure: the row ``automil``, or ``None`` without nested rows.

    A learner's nested figure is honest for that learner, but the run then picks among many learners. Here
    outer split ``i`` makes the run's choice (:func:`~automil.tune.final.choice.best_inner`, the rule
    :func:`~automil.tune.final.choice.choose` applies to the tuning scores) blind to its outer fold: on the
    rows' scores on split ``i``'s inner folds, their uncertainty over the bags those scored
    (``inner_bags[i]`` of each class: :meth:`~automil.tune.studies.plan.Plan.inner_bags`), the ensemble's
    members and gain bound there; that row's score on outer fold ``i`` is the procedure's. A split where no
    row passes ships nothing: it is scored as chance (a prediction of the majority class), its choice is
    ``None``, and the row's ``error`` names it, and the run's ``choice`` when it chose nothing says why.
    ``choices`` names the row chosen in each split (under the hold-out protocol ``choices[0]`` is the run's
    choice); ``outer_splits`` holds the chosen row's inner and outer scores. No fit.
    """
    nested = [r for r in rows if Protocol(r.protocol).held_out and r.learner != PROCEDURE
              and r.status != Status.SKIPPED]
    if not nested:
        return None
    first = nested[0]
    row = LearnerResult(dataset=first.dataset, learner=PROCEDURE, plugin=PROCEDURE_SPEC.plugin,
                        study=f"{first.dataset}/{PROCEDURE}",
                        protocol=first.protocol, metric=first.metric, seed=first.seed, folds=first.folds,
                        headline=Headline(kind=Protocol(first.protocol).headline, one_class=False))
    candidates = [r for r in nested if admissible(r) and r.nested.outer_splits]
    metric = first.metric or "balanced_accuracy"
    choices, outer_splits, at_chance = [], [], []
    for i in range((first.folds or 0) if first.protocol == Protocol.NESTED else 1):
        scored = [InnerScore(r, s.inner, s.members, s.gain_bound) for r in candidates
                  if (s := _split(r, i)) is not None and s.inner is not None]
        inner = {r.learner: s.inner for r in nested if (s := _split(r, i)) is not None}
        chosen = best_inner(scored, inner, metric, inner_bags[i])
        split = _split(chosen.row, i) if chosen is not None else chance_split([s.row for s in scored])
        if chosen is None and split is not None:
            at_chance.append(str(i))
        choices.append(chosen and chosen.row.learner)
        outer_splits.append(split)
    row.choices, row.nested = choices, NestedFigure(outer_splits=outer_splits)
    missing = [str(i) for i, split in enumerate(outer_splits) if split is None]
    if missing:
        row.status = Status.NO_RESULT
        row.error = (f"no learner with an ok nested figure and an inner score in outer split(s) "
                     f"{', '.join(missing)}")
        return row
    row.status = Status.OK
    # a survival or regression metric some split lacks (at chance: an IBS, an MAE) has no figure, not a partial mean
    whole = [m for m in TASK_METRICS[row.task] if row.task == "classification" or
             all(getattr(split, m) is not None for split in outer_splits)]
    row.nested = _figure(NestedFigure, outer_splits, whole, outer_splits=outer_splits)
    row.calibration = pooled([split.calibration for split in outer_splits])  # a split at chance ships no set
    notes = [] if not at_chance else [
        f"no row scored above chance on the inner folds of outer split(s) {', '.join(at_chance)} (an ensemble: "
        f"above its best member): nothing is shipped there, scored as chance "
        f"({'the majority class' if row.task == 'classification' else 'a constant prediction'})"]
    row.error = "; ".join(notes + ([choice.reason] if choice and choice.learner is None else [])) or None
    # under the hold-out protocol the one chosen row's figure is the procedure's, with its interval
    chosen = next((r for r in candidates if r.learner == choices[0]), None) \
        if first.protocol == Protocol.HOLDOUT else None
    row.headline = replace(row.headline, **_metrics(row.nested),
                           interval=None if chosen is None else chosen.headline.interval)
    return row


def _split(row: LearnerResult, i: int) -> OuterSplit | None:
    """The row's outer split ``i`` (``None``: no refit there, or no such split)."""
    return _at(row.nested.outer_splits or [], i)
