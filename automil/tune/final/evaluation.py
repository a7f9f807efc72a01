"""The final evaluation: nested refits, models and repeated cross-validation of every learner's best parameters.

It runs in the order the run needs its parts: the headline figure first (the nested refits, or the first
repeat under the tuned protocol), then the run's one choice of model (on the tuning scores of the rows that
have a headline figure), then the models, the chosen one first, then more repeats while the budget lasts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from automil.endpoints import task_of
from automil.evaluation.calibrated import HeldApart
from automil.evaluation.metrics import fold_scores
from automil.records import LearnerResult
from automil.records.protocol import Protocol
from automil.tune.backend.optuna_trials import best_trial, defaults_trial, records
from automil.tune.final.calibration import calibrated_ensemble, calibrated_model, measured_learners, outer_calibration
from automil.tune.final.choice import Choice, choose
from automil.tune.final.ensemble_row import (
    ENSEMBLE,
    NESTED_SCORES,
    Candidate,
    HeldOutRefit,
    Members,
    ScoreKey,
    ensemble_calibration,
    ensemble_nested,
    ensemble_row,
    loaded_scores,
    main_members,
    stored_scores,
)
from automil.tune.final.leaderboard import Evaluation, Refit, procedure_row, rank, result_row
from automil.tune.final.tasks import (
    FitTask,
    coverage_tasks,
    held_apart_tasks,
    leader_model_seconds,
    longest_first,
    model_tasks,
    nested_tasks,
    repeat_tasks,
)
from automil.tune.listener import Listener
from automil.tune.schedule.budget import fits_deadline, run_seconds
from automil.tune.studies.creation import study_name
from automil.tune.studies.plan import Plan
from automil.tune.tracking import Recorder
from automil.tune.workers.fits import fit_worker, import_for
from automil.tune.workers.task_pool import OutOfTime, run_tasks

__all__ = ["final_evaluation", "StoredResult"]

# The study user attribute holding the learner's result, valid while its studies match the key in it.
RESULT_ATTR = "result"


@dataclass(frozen=True)
class StoredResult:
    """A learner's final evaluation as its main study keeps it (one attribute, so that a worker never pairs
    one worker's row with another's key): the ``key`` of what it was computed from (a rerun reuses it only
    under the same key), the leaderboard ``row``, and every bag's out-of-fold ``scores`` (so that a rerun
    that reuses the result can still ensemble it)."""

    key: dict
    row: LearnerResult
    scores: dict[ScoreKey, np.ndarray]

    @classmethod
    def read(cls, study) -> StoredResult | None:
        """The study's stored result, if it has one."""
        stored = study.user_attrs.get(RESULT_ATTR)
        if stored is None:
            return None
        return cls(stored["key"], LearnerResult.from_dict(stored["row"]), loaded_scores(stored["scores"]))

    def write(self, study) -> None:
        study.set_user_attr(RESULT_ATTR, {"key": self.key, "row": self.row.to_dict(),
                                          "scores": stored_scores(self.scores)})


@dataclass
class _Pending:
    """A learner whose final evaluation runs: its spec, its Optuna study on all bags, the key its stored
    result will be valid for, and its evaluation so far."""

    spec: object
    study: object
    key: dict
    evaluation: Evaluation


def final_evaluation(plan: Plan, bags, storage, worker, recorder: Recorder,
                     listener: Listener) -> tuple[list[LearnerResult], Choice]:
    """Nested refits, models and repeated CV of every learner's best parameters, run on ``--jobs`` workers;
    every learner's row (and the ensemble's) and the run's choice of model.

    The choice (:func:`~automil.tune.final.choice.choose`, on the rows' tuning scores, by the rule the row
    ``automil`` measures) is made once, when the headline rows are in and before any model is fitted: the
    chosen model is fitted first, and the run registers that one.

    A learner whose stored result matches its studies (same best trials, trial count, repeats and
    protocol) is not evaluated again; if the budget left that result without a model, the model is fitted
    and logged now (as the budget allows). Every fit stops in time to log the results before the budget
    ends, but the chosen model's, which is fitted even when that time has come (a run may pass ``--timeout``
    by that one fit): a run that chose a model must end with it (it chooses none when no row is above
    chance). Under the hold-out protocol, a chosen learner whose
    full-data fit would end past the budget ships its hold-out refit instead: the model its figure scored.
    """
    options = plan.options
    rows, pending, candidates = _evaluations(plan, storage, recorder, listener, bags.instance_y is not None)
    modelless = [learner for learner, row in rows.items() if recorder.enabled and row.model.uri is None]
    members = main_members(plan, bags, candidates) if options.ensemble and plan.classification else None
    nested = Protocol(options.protocol).held_out  # the headline from outer refits (nested or hold-out)
    repeats = plan.folds.repeats
    workers = [worker] + [fit_worker(options, spare=False) for _ in range(options.jobs - 1)]
    for w in workers:
        w.set_data(bags)

    # every fit but the chosen model's ends in time to log every result before the budget ends, and those
    # before the choice in time to fit the model too
    fits_end = fits_deadline(plan, len(pending) + 1, recorder.enabled)
    choice_end = fits_deadline(plan, len(pending) + 1, recorder.enabled,
                               leader_model_seconds(plan, candidates, bags.n_bags))

    def run(tasks: list[FitTask], deadline=fits_end):
        budget = None if deadline is None else max(deadline - time.time(), 0.0)
        if budget != 0.0:  # their learners' libraries, outside their time limits (none for fits never started)
            for w in workers:
                import_for(w, {task.learner for task in tasks})
        calls = [task.call(options.seed) for task in tasks]
        for index, out in run_tasks(workers, calls, timeout=options.fit_timeout, budget=budget):
            task = tasks[index]
            _collect(pending.get(task.learner), candidates[task.learner], task, out, bags, nested)

    try:
        outer_best = {learner: job.evaluation.outer_best for learner, job in pending.items()}
        # a hold-out refit's model comes back, to stand in for a chosen full-data fit the budget cannot end
        keep = recorder.enabled and options.protocol == Protocol.HOLDOUT
        run(longest_first(nested_tasks(plan, outer_best, keep)) if nested else _repeat_tasks(plan, pending, 0),
            deadline=choice_end)
        ensemble, chosen = ensemble_nested(plan, bags, candidates) if members is not None else (None, [])
        now = _rows_now(plan, rows, pending, candidates, members, ensemble, bags)
        pending = {learner: pending[learner] for learner in sorted(pending, key=lambda n: rank(now[n]))}  # best first
        choice = choose(list(now.values()), plan.tuning_bags(bags.y))
        # the sets of the chosen row and of the procedure's choices, measured on the outer folds as they are made
        procedure = procedure_row(list(now.values()), plan.inner_bags(bags.y), choice)
        sets = coverage_tasks(plan, outer_best, measured_learners(plan, choice, procedure, ensemble)) \
            if nested and plan.classification else []
        later = []
        if recorder.enabled:
            first, rest = _model_order(choice, [*pending, *modelless], members)
            shipped = _ship_held_out_refits(first, pending, candidates, bags.n_bags, fits_end)
            run(model_tasks(plan, bags.n_bags, candidates, [n for n in first if n not in shipped]), deadline=None)
            if plan.classification:  # the fits the logged models' prediction sets come from
                sets = held_apart_tasks(plan, candidates, first) + sets
            later = model_tasks(plan, bags.n_bags, candidates, rest) + (
                held_apart_tasks(plan, candidates, rest) if plan.classification else [])
        run(sets)
        run(later)
        for r in range(0 if nested else 1, len(repeats)):
            if time.time() >= fits_end:
                break
            run(_repeat_tasks(plan, pending, r))
    finally:
        for w in workers[1:]:
            w.close()
    for learner, job in pending.items() if plan.classification else ():
        job.evaluation.calibration = outer_calibration(plan, bags, job.spec, candidates[learner],
                                                       job.evaluation.outer_best)
    if ensemble is not None:  # now that its members' held-apart fits are in
        ensemble_calibration(plan, bags, candidates, ensemble, chosen)
    for learner, job in pending.items():
        row = result_row(plan.dataset, options, job.evaluation)
        candidate = candidates[learner]
        candidate.fit_seconds = row.costs.fit_seconds
        model = calibrated_model(plan, bags, candidate, candidate.model) if plan.classification else candidate.model
        _set_model_uri(row, recorder.study_done(job.spec, job.study, row, model, bags))
        StoredResult(job.key, row, candidate.scores).write(job.study)
        rows[learner] = row
        listener.learner_done(row)
    for learner in modelless:
        if candidates[learner].model is not None:
            model = candidates[learner].model
            model = calibrated_model(plan, bags, candidates[learner], model) if plan.classification else model
            _log_model(plan, storage, recorder, rows[learner], model, bags)
    ordered = [rows[learner] for learner in plan.learners]
    if members is not None:
        row, model = ensemble_row(plan, bags, candidates, members, ensemble)
        model = calibrated_ensemble(plan, bags, candidates, members, model)
        _set_model_uri(row, recorder.ensemble_done(row, model, bags))
        listener.learner_done(row)
        ordered.append(row)
    return ordered, choice


def _evaluations(plan: Plan, storage, recorder: Recorder, listener: Listener, instance_labels: bool):
    """Every learner's stored row when it is still valid (``rows``), else what its final evaluation starts
    from (``pending``), and every learner as the ensemble sees it (``candidates``). On data with
    ``instance_labels`` a row is valid only when its final evaluation scored the instances."""
    import optuna

    from automil import plugins

    options = plan.options
    rows, pending, candidates = {}, {}, {}
    for learner in plan.learners:
        spec = plugins.get_learner(learner)
        main = optuna.load_study(study_name=study_name(plan.dataset, learner), storage=storage)
        subs = [optuna.load_study(study_name=study_name(plan.dataset, learner, i), storage=storage)
                for i in options.splits[1:]]
        trials = records(main)
        study_trials = [trials, *(records(s) for s in subs)]  # every study of the learner
        # under the hold-out protocol the main study is the tuning of its one outer split
        sub_trials = [trials] if options.protocol == Protocol.HOLDOUT else study_trials[1:]
        best = best_trial(trials, options.directions)
        # An outer split the budget left untuned takes the learner's defaults: chosen before any data
        # was seen, they are as blind to its outer fold as a tuning on the other folds.
        defaults = defaults_trial(trials)
        tuned = [best_trial(t, options.directions) for t in sub_trials]
        outer_best = [t or defaults for t in tuned]
        key = {"trials": [len(t) for t in study_trials],
               "best": [None if t is None else t.number for t in [best, *outer_best]],
               "repeats": options.repeats, "protocol": options.protocol}
        if plan.folds.source is not None:  # drawn repeats follow from the seed the studies hold already
            key["folds"] = plan.folds.digest
        if instance_labels:  # the bags' digest leaves out instance labels; a row without their figures won't do
            key["instance_figures"] = True
        if options.outer_folds:  # nor one without calibration figures, or with sets not from a held-apart fit
            key["calibration_figures"] = "held-apart sets"
        candidates[learner] = Candidate(trials, sub_trials)
        stored = StoredResult.read(main)
        if stored is not None and stored.key == key:
            rows[learner] = stored.row
            candidates[learner].scores = stored.scores
            candidates[learner].fit_seconds = rows[learner].costs.fit_seconds
            recorder.study_done(spec, main)  # what this worker could not log as it went
            listener.learner_done(rows[learner])
            continue
        inner = [candidates[learner].inner(plan, i) for i in range(len(sub_trials))]
        pending[learner] = _Pending(spec, main, key, Evaluation(learner, spec.plugin, main.study_name, trials, best,
                                                                outer_best, nested=[None] * len(sub_trials),
                                                                instance=[None] * len(sub_trials),
                                                                tuned_splits=sum(t is not None for t in tuned),
                                                                inner=[view.score for view in inner],
                                                                inner_folds=[view.folds for view in inner]))
        # the seconds this run's budget gave its trials so far; its final fits add theirs
        pending[learner].evaluation.budget_seconds = run_seconds(study_trials, plan.start, time.time())
    return rows, pending, candidates


def _ship_held_out_refits(first: list[str], pending: dict[str, _Pending], candidates: dict[str, Candidate],
                          n_bags: int, end: float) -> set[str]:
    """The learners of the chosen model (``first``) whose full-data fit, at the pace of their hold-out
    refit, would end after ``end``: their kept hold-out refit becomes their model (the one their figure
    scored), noted in their row. The others are fitted on all bags; no hold-out refit is kept after."""
    shipped = set()
    for learner, candidate in candidates.items():
        refit, candidate.held_out_refit = candidate.held_out_refit, None
        if learner in first and refit is not None and time.time() + refit.full_data_seconds(n_bags) > end:
            candidate.model = refit.model
            shipped.add(learner)
            if learner in pending:
                pending[learner].evaluation.notes.append(
                    f"model: its hold-out refit on {refit.bags} of the {n_bags} bags (its fit on all of them, "
                    f"about {refit.full_data_seconds(n_bags):.0f} s, would end past the budget)")
    return shipped


def _repeat_tasks(plan: Plan, pending: dict[str, _Pending], r: int) -> list[FitTask]:
    """Repeat ``r`` of the repeated CV of every pending learner's best parameters."""
    return repeat_tasks({learner: job.evaluation.best for learner, job in pending.items()}, r, plan.folds.repeats[r])


def _rows_now(plan: Plan, rows: dict, pending: dict[str, _Pending], candidates: dict[str, Candidate],
              members: Members | None, ensemble, bags) -> dict[str, LearnerResult]:
    """Every learner's row (and the ensemble's) from the headline fits made so far."""
    now = dict(rows)
    for learner, job in pending.items():
        now[learner] = result_row(plan.dataset, plan.options, job.evaluation)
        candidates[learner].fit_seconds = now[learner].costs.fit_seconds
    if members is not None:
        now[ENSEMBLE.name] = ensemble_row(plan, bags, candidates, members, ensemble)[0]
    return now


def _model_order(choice: Choice, fitted: list[str], members: Members | None) -> tuple[list[str], list[str]]:
    """The learners whose model is fitted, split into those of the chosen model (the ensemble's members
    when it is chosen) and the others, in the order of ``fitted`` (the learners evaluated now, then those
    whose stored result has no model).

    A learner whose stored result is reused keeps its logged model (one stored without a model is in
    ``fitted``), unless it is a member of the ensemble (whose model is assembled from its members' refits).
    """
    names = [] if members is None else members.names
    if choice.learner == ENSEMBLE.name:
        first = names
    else:
        first = [choice.learner] if choice.learner in fitted else []
    return first, [n for n in dict.fromkeys([*fitted, *names]) if n not in first]


def _log_model(plan: Plan, storage, recorder: Recorder, row: LearnerResult, model, bags):
    """Log the model of a stored result that had none, with the result, and store its URI in the result."""
    import optuna

    from automil import plugins

    study = optuna.load_study(study_name=study_name(plan.dataset, row.learner), storage=storage)
    _set_model_uri(row, recorder.study_done(plugins.get_learner(row.learner), study, row, model, bags))
    stored = StoredResult.read(study)
    if row.model.uri is not None and stored.row.model.uri is None:
        stored_row = replace(stored.row, model=replace(stored.row.model, uri=row.model.uri))
        replace(stored, row=stored_row).write(study)


def _set_model_uri(row: LearnerResult, uri: str | None):
    """The row's model is the one logged at ``uri`` (``None``: none logged)."""
    row.model = replace(row.model, uri=uri)


def _collect(job: _Pending | None, candidate: Candidate, task: FitTask, out, bags, nested: bool):
    """File one finished task (or its exception) under its learner (``job`` is ``None`` for a learner
    whose stored result is reused: only its model is made again).

    What the budget left out is no error when the headline does not need it: a repeat is left out
    (``repeats`` counts the complete ones), a model is noted as missing; a held-apart fit that failed or was
    cut leaves its model, or its outer split, without prediction sets (noted for a model).
    """
    if isinstance(out, OutOfTime) and task.refit is Refit.REPEAT and (nested or task.index > 0):
        return
    if isinstance(out, Exception) and task.refit is Refit.CONFORMAL:
        if job is not None and task.index is None:
            how = "was" if isinstance(out, OutOfTime) else "failed:"
            job.evaluation.notes.append(f"no prediction sets: its fit without the calibration bags {how} {out}")
        return
    if isinstance(out, OutOfTime) and task.refit is Refit.MODEL:
        if job is not None:
            job.evaluation.notes.append(f"no model: its full-data fit was {out}")
        return
    if isinstance(out, Exception):
        if job is not None:
            job.evaluation.errors.append(f"{task.refit} fit: {out}")
        return
    if job is not None:
        job.evaluation.budget_seconds += out.fit_seconds + out.predict_seconds
    if task.refit is Refit.MODEL:
        candidate.model = out.model
    elif task.refit is Refit.CONFORMAL:
        scores = np.full((bags.n_bags, *out.scores.shape[1:]), np.nan)
        scores[task.test] = out.scores
        candidate.held_apart[task.index] = HeldApart(task.calibration, scores, out.model)
    else:
        evaluation, test = job.evaluation, task.test
        key = NESTED_SCORES if task.refit is Refit.NESTED else ScoreKey(Refit.REPEAT, task.index)
        # every bag's out-of-fold scores, for the ensemble (of a survival or regression model: its predictions,
        # whose survival curves are taken at each fold's own times)
        classification = task_of(bags.y) == "classification"
        kept = out.scores if classification else out.y_pred
        if key not in candidate.scores:
            candidate.scores[key] = np.full((bags.n_bags, *kept.shape[1:]), np.nan)
        candidate.scores[key][test] = kept
        scores = fold_scores(bags.y[test], out.y_pred, out.scores, bags.classes if classification else None,
                             bags.y[task.train])
        if task.refit is Refit.NESTED or task.index == 0:  # out-of-fold predictions for the confusion matrix
            evaluation.predictions.setdefault(task.refit, []).append((bags.y[test], out.y_pred))
        if task.refit is Refit.NESTED:
            if out.train_risk is not None:  # each held-out bag, its risk and its refit's training median risk
                evaluation.risks += [[int(b), float(r), out.train_risk] for b, r in zip(test, out.y_pred)]
            evaluation.nested[task.index] = scores
            evaluation.instance[task.index] = out.instance
            if out.model is not None:
                candidate.held_out_refit = HeldOutRefit(out.model, len(task.train), out.fit_seconds)
        else:
            evaluation.repeated.setdefault(task.index, []).append(scores)
            evaluation.fit_seconds.append(out.fit_seconds)
