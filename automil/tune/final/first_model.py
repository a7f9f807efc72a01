"""The model a run at scale commits to first: the portfolio's first member for the data, trained before any trial
on the tuning bags, scored on the held-out bags, and registered right then when it is above chance by its
uncertainty, so that a run stopped later (Ctrl-C, SIGTERM, a kill) still holds a model that learned.

At the size pathology cohorts come in (slides of thousands of patches: the ``cohorts`` regime of
:mod:`automil.tune.portfolio.members`, under the hold-out protocol) one fit takes minutes and a search ends with
nothing when its budget runs out before its final evaluation. Where the run chooses a model at its end, that
choice replaces this one only when it beats it by the rule the ``automil`` row measures: its score on the bags
the trials score (the inner hold-out), never the held-out bags (:func:`keeps`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from automil.evaluation.chance import chance_level
from automil.evaluation.metrics import LABELS, fold_scores, mean_std
from automil.records import Costs, Headline, LearnerResult, ModelRecord, NestedFigure, OuterSplit, Status, Tuning
from automil.records.protocol import Protocol
from automil.tune.final.chance_rule import above, bag_bound
from automil.tune.final.leaderboard import RowSpec
from automil.tune.listener import Listener
from automil.tune.portfolio.members import COHORTS, Member, estimator_params, grouped, regime_of
from automil.tune.studies.plan import Plan
from automil.tune.tracking import Recorder
from automil.tune.workers.fits import fit_predict, import_for
from automil.tune.workers.isolation import FitError, FitMemoryExceeded, FitTimeout, WorkerDied

__all__ = ["FIRST_MODEL", "FIRST_SHARE", "FirstModel", "commits_first", "sub_bag_size", "first_params",
           "commit_first_model", "keeps", "stays_note", "shipped_row", "replaced_row"]

FIRST_MODEL = RowSpec("first-model", "the portfolio's first member, trained before any trial and registered when "
                                     "above chance on the held-out bags")
# The first model ends within this share of the budget: three quarters are left to the search and the final
# evaluation, and a run stopped after a quarter of its budget holds a model.
FIRST_SHARE = 0.25
# A network's sub-bag: half the median instances of a bag (nnMIL's data fingerprint, arXiv 2511.14907).
SUB_BAG_SHARE = 0.5


@dataclass(frozen=True)
class FirstModel:
    """What the first model came to: its ``learner`` and estimator ``params``; its ``inner`` score of the run's
    metric on the bags the trials score and its ``held_out`` one, with that figure's ``bound`` (less twice its
    standard error over the held-out bags) against ``chance``; its leaderboard ``row``; ``registered``, its
    ``models:/`` version (``None``: not registered, ``reason`` says why)."""

    learner: str
    params: dict
    inner: float | None
    held_out: float | None
    bound: float | None
    chance: float
    row: LearnerResult
    registered: str | None = None
    reason: str | None = None


def commits_first(plan: Plan, bags) -> bool:
    """Whether the run commits to a first model: the hold-out protocol on bags of the ``cohorts`` regime (as the
    run's portfolio bounds it), with a portfolio member to train and a metric with a chance level to pass."""
    if plan.options.protocol != Protocol.HOLDOUT or not plan.portfolio or plan.chance is None:
        return False
    size = {"mean_bag_size": bags.n_instances / bags.n_bags, "grouped": grouped(bags)}  # no pass over the matrix
    return regime_of(size, plan.options.portfolio) == COHORTS


def sub_bag_size(sizes) -> int:
    """The instances a network samples of a bag at a step, from the data: half the median bag size."""
    return max(1, int(SUB_BAG_SHARE * float(np.median(sizes))))


def first_params(spec, member: Member, bags) -> dict:
    """The estimator parameters of ``member`` (its learner's search space on the member's point), with the
    data's sub-bag size (:func:`sub_bag_size`) where the learner takes a ``max_instances`` the point leaves open."""
    params = dict(estimator_params(spec, member.params, bags))
    if "max_instances" not in params and "max_instances" in spec.build(**params).get_params():
        params["max_instances"] = sub_bag_size(bags.sizes)
    return params


def commit_first_model(plan: Plan, bags, worker, recorder: Recorder, listener: Listener) -> FirstModel | None:
    """Train the portfolio's first member as a trial's first fit trains (the tuning bags less the inner
    hold-out, or less the first inner fold where trials cross-validate), to its own end within ``FIRST_SHARE`` of
    the budget; score it on those held-apart tuning bags (its inner score, by the trials' blocks) and on the
    held-out fold; log and register it when its held-out figure is above chance by its uncertainty. ``None``
    when its fit failed or ended past its time (the listener hears why)."""
    from automil import plugins

    options, member = plan.options, plan.portfolio[0]
    spec = plugins.get_learner(member.learner)
    folds = plan.trial_folds(options.held_out)
    train, inner = folds.fits[0]
    held_out = np.flatnonzero(np.asarray(plan.folds.tuning) == options.held_out)
    params = first_params(spec, member, bags)
    seconds = None if options.timeout is None else max(plan.start + FIRST_SHARE * options.timeout - time.time(), 0.0)
    listener.message(f"first model: {member.learner} {params} on {len(train)} tuning bags, "
                     f"{'to its end' if seconds is None else f'within {seconds:.0f} s'}")
    worker.set_data(bags)
    worker.wait_started()
    import_for(worker, (spec.name,))
    timeout = options.fit_timeout if seconds is None else min(options.fit_timeout or seconds, seconds)
    try:
        out = worker.call(fit_predict, spec.name, params, train, np.concatenate([inner, held_out]), options.seed,
                          True, False, timeout=timeout, budget=seconds)
    except (FitTimeout, FitMemoryExceeded, FitError, WorkerDied) as error:
        listener.message(f"first model: {member.learner} has none: {error}; the run goes on")
        return None
    metric = options.metric
    inner_score = _block_mean(folds.fit_blocks()[0], bags.y[inner], out.y_pred[:len(inner)],
                              out.scores[:len(inner)], bags.classes, metric)
    y = bags.y[held_out]
    figures = fold_scores(y, out.y_pred[len(inner):], out.scores[len(inner):], bags.classes)
    value = getattr(figures, metric)
    bound = bag_bound(value, metric, np.unique(y, return_counts=True)[1])
    chance = chance_level(metric, y)
    row = _row(plan, spec, params, figures, inner_score, out.fit_seconds, y, out.y_pred[len(inner):], bags.classes)
    first = FirstModel(spec.name, params, inner_score, value, bound, chance, row)
    name = LABELS.get(metric, metric)
    if figures.one_class or not above(bound, chance):
        why = "one class for every held-out bag" if figures.one_class else (
            f"{name} {_shown(value)} on the held-out bags, its lower bound {_shown(bound)} not above chance "
            f"{chance:.2f}")
        listener.message(f"first model: {spec.name}: {why}: not registered; the run goes on")
        return replace(first, reason=why, row=replace(row, error=_note(spec.name, f"not registered: {why}")))
    uri = recorder.first_model_done(row, out.model, bags)
    registered = None if uri is None else recorder.register(uri)
    if registered is None:
        listener.message(f"first model: {spec.name} {name} {value:.3f} on the held-out bags: not registered "
                         "(tracking did not take it); the run goes on")
        return replace(first, reason="tracking did not take it")
    listener.message(f"first model: {spec.name} {name} {value:.3f} on the held-out bags (lower bound {bound:.3f}, "
                     f"chance {chance:.2f}), inner score {_shown(inner_score)}: "
                     f"registered as {registered}")
    row = replace(row, model=ModelRecord(uri=uri, selected=True, registered=registered))
    return replace(first, row=row, registered=registered)


def keeps(first: FirstModel | None, chosen: LearnerResult | None, split_choice: str | None) -> bool:
    """Whether the registered first model stays the run's model after the final choice ``chosen``: unless the
    chosen row has a logged model and is ``split_choice``, the ``automil`` row's choice in its one outer split
    among the rows and the first model (:func:`~automil.tune.final.choice.best_inner` on their inner scores),
    so that the row measures the model the run ships. The held-out bags decide nothing here: they measure the
    model that stays."""
    if first is None or first.registered is None:
        return False
    return chosen is None or chosen.model.uri is None or split_choice != chosen.learner


def stays_note(first: FirstModel, chosen: LearnerResult | None) -> str:
    """Why the first model stays the run's model (:func:`keeps`), in a line."""
    if chosen is None:
        return "the final evaluation chose no model"
    if chosen.model.uri is None:
        return f"the final choice, {chosen.learner}, has no logged model"
    return (f"the final choice, {chosen.learner}, has the inner score {_shown(_inner(chosen))}, "
            f"not preferred to its {_shown(first.inner)}")


def shipped_row(first: FirstModel, chosen: LearnerResult | None) -> LearnerResult:
    """The first model's row once it stays the run's model: selected, saying why."""
    return replace(first.row, error=_note(first.learner, f"the shipped model, registered first: "
                                                          f"{stays_note(first, chosen)}"),
                   model=replace(first.row.model, selected=True))


def replaced_row(first: FirstModel, chosen: LearnerResult) -> LearnerResult:
    """The first model's row once the final choice replaced it (:func:`keeps` false): not selected, saying why."""
    if first.registered is None:
        return first.row
    return replace(first.row, error=_note(first.learner, f"replaced: the final choice, {chosen.learner}, has the "
                                                          f"inner score {_shown(_inner(chosen))}, preferred to "
                                                          f"its {_shown(first.inner)}"),
                   model=replace(first.row.model, selected=False))


def _inner(row: LearnerResult) -> float | None:
    split = (row.nested.outer_splits or [None])[0]
    return None if split is None else split.inner


def _block_mean(blocks, y, y_pred, scores, classes, metric: str) -> float | None:
    """The mean over ``blocks`` (``(block, positions)``) of ``metric``: a trial's value on the same bags."""
    return mean_std(getattr(fold_scores(y[at], y_pred[at], scores[at], classes), metric) for _, at in blocks)[0]


def _row(plan: Plan, spec, params: dict, figures, inner: float | None, fit_seconds: float, y, y_pred,
         classes) -> LearnerResult:
    from sklearn.metrics import confusion_matrix

    options = plan.options
    matrix = confusion_matrix(y, y_pred, labels=classes).tolist()
    return LearnerResult(dataset=plan.dataset, learner=FIRST_MODEL.name, plugin=spec.plugin,
                         study=f"{plan.dataset}/{FIRST_MODEL.name}", protocol=options.protocol, metric=options.metric,
                         seed=options.seed, folds=options.folds, tuning=Tuning(score=inner, best_params=params),
                         headline=Headline(accuracy=figures.accuracy, balanced_accuracy=figures.balanced_accuracy,
                                           roc_auc=figures.roc_auc, kind=Protocol(options.protocol).headline,
                                           one_class=figures.one_class, classes=np.asarray(classes).tolist(),
                                           confusion_matrix=matrix),
                         # its one outer split: what the automil row chooses by (inner) and then measures
                         nested=NestedFigure(outer_splits=[OuterSplit(
                             inner=inner, accuracy=figures.accuracy, balanced_accuracy=figures.balanced_accuracy,
                             roc_auc=figures.roc_auc)]),
                         costs=Costs(fit_seconds=round(fit_seconds, 2)), status=Status.OK,
                         error=_note(spec.name, "registered when above chance"))


def _note(learner: str, status: str) -> str:
    """The first model's note: which learner it is, and what became of it."""
    return f"{learner}, the portfolio's first member: {status}"


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
