"""Trials as records: the one module that reads or writes an Optuna trial state (Optuna's studies and
trials read as :mod:`automil.records`, and told their outcome), and the pure rules on those records: which
trials count (finished, or still running somewhere, not abandoned by a dead process), their counts, the
best one and the one that ran the defaults. The rules are shared by the budget, the leaderboard, the
ensemble and the progress lines."""

from __future__ import annotations

import time

from automil.records import StudyRecord, TrialAttr, TrialCounts, TrialRecord, TrialState
from automil.tune.backend.optuna_internals import study_storage, trial_id
from automil.tune.workers.isolation import HEARTBEAT_SECONDS
from automil.tune.workers.processes import process_alive

__all__ = ["trial_record", "records", "study_record", "tell", "fail_stale_trials", "importances",
           "counts_toward_budget", "abandoned", "best_trial", "defaults_trial", "trial_counts",
           "STALE_AFTER_SECONDS"]

# A RUNNING trial of another machine is taken as abandoned when its heartbeat is older than this.
STALE_AFTER_SECONDS = 10 * HEARTBEAT_SECONDS


def counts_toward_budget(trial: TrialRecord) -> bool:
    """Every trial counts except those a killed or interrupted process left unfinished, a queued one not
    started yet (the next worker to ask runs it), and a trial on a rung of the ladder (it only schedules)."""
    if trial.state is TrialState.WAITING or trial.attrs.get(TrialAttr.RUNG) is not None:
        return False
    if trial.state is TrialState.RUNNING:
        return not abandoned(trial)
    return not (trial.attrs.get(TrialAttr.STALE) or trial.attrs.get(TrialAttr.INTERRUPTED))


def abandoned(trial: TrialRecord) -> bool:
    """A RUNNING trial whose process is gone (same host: by pid; other hosts: by an old heartbeat)."""
    identity = trial.attrs.get(TrialAttr.WORKER)
    if identity is None:  # created by ask() but killed before the first attribute was written
        return (time.time() - trial.start.timestamp()) > STALE_AFTER_SECONDS
    alive = process_alive(identity)
    if alive is None:
        return time.time() - trial.attrs.get(TrialAttr.HEARTBEAT, 0.0) > STALE_AFTER_SECONDS
    return not alive


def best_trial(trials: list[TrialRecord], directions=("maximize",)) -> TrialRecord | None:
    """The completed trial of highest value (the earliest among equals).

    In a multi-objective study (``directions`` of every objective, the first the metric) it is the point
    of the Pareto front with the best metric: among equal metrics the better next objectives decide (the
    faster one, with ``fit_seconds`` second), then the earliest.
    """
    complete = [t for t in trials if t.state is TrialState.COMPLETE]
    if not complete:
        return None
    if len(directions) == 1:
        return max(complete, key=lambda t: (t.value, -t.number))
    signs = [1.0 if d == "maximize" else -1.0 for d in directions]
    return max(complete, key=lambda t: (*(s * v for s, v in zip(signs, t.values, strict=True)), -t.number))


def defaults_trial(trials: list[TrialRecord]) -> TrialRecord | None:
    """The completed trial that ran the learner's defaults: the earliest completed trial that was queued
    (the driver queues ``first_trial``, then a warm-start point; both were chosen without this dataset),
    else trial 0 when it completed (a sampler's first point is drawn before any score exists). ``None``
    when neither completed."""
    complete = [t for t in trials if t.state is TrialState.COMPLETE]
    queued = [t for t in complete if t.queued]
    if queued:
        return min(queued, key=lambda t: t.number)
    return next((t for t in complete if t.number == 0), None)


def trial_counts(trials: list[TrialRecord]) -> tuple[TrialCounts, list[TrialRecord]]:
    """The leaderboard's trial counts and the finished trials that count."""
    finished = [t for t in trials if t.finished and counts_toward_budget(t)]
    timed_out = sum(bool(t.attrs.get(TrialAttr.TIMED_OUT)) for t in finished)
    return TrialCounts(trials=len(finished),
                       complete=sum(t.state is TrialState.COMPLETE for t in finished),
                       pruned=sum(t.state is TrialState.PRUNED for t in finished),
                       failed=sum(t.state is TrialState.FAIL for t in finished) - timed_out,
                       timed_out=timed_out,
                       stopped=sum(bool(t.attrs.get(TrialAttr.INTERRUPTED)) for t in trials)), finished


DIED = "its process died before it finished"


def trial_record(frozen_trial, retried: bool = False) -> TrialRecord:
    """An Optuna ``FrozenTrial`` as a :class:`TrialRecord`; a ``retried`` one (its process died, a later
    trial runs its parameters again) is stale: it does not count."""
    values = frozen_trial.values or []
    attrs = frozen_trial.user_attrs
    if retried:
        attrs = {**attrs, TrialAttr.STALE: True, TrialAttr.ERROR: DIED}
    return TrialRecord(number=int(frozen_trial.number), state=TrialState[frozen_trial.state.name],
                       value=values[0] if values else None, params=dict(frozen_trial.params),
                       attrs=attrs, start=frozen_trial.datetime_start,
                       end=frozen_trial.datetime_complete, queued="fixed_params" in frozen_trial.system_attrs,
                       values=tuple(values) if len(values) > 1 else ())


def records(study) -> list[TrialRecord]:
    """Every trial of an Optuna study as a record."""
    trials = study.get_trials(deepcopy=False)
    # The numbers of the trials Optuna's heartbeat failed and queued again (its retry callback's history)
    retried = {number for t in trials for number in t.system_attrs.get("retry_history", ())}
    return [trial_record(t, t.number in retried) for t in trials]


def study_record(study) -> StudyRecord:
    """An Optuna study as a :class:`StudyRecord`, with its parameter importances."""
    trials = records(study)
    found, note = importances(study, trials)
    direction = study.direction.name.lower() if len(study.directions) == 1 else "maximize"
    return StudyRecord(study.study_name, trials, direction, found, note)


def tell(study, trial, state: TrialState, value) -> TrialRecord:
    """Finish ``trial`` (asked from ``study``) in ``state``; ``value`` (the objective value or values)
    counts only for a completed trial. The finished trial's record."""
    from optuna.trial import TrialState as OptunaState

    frozen = study.tell(trial, value if state is TrialState.COMPLETE else None, state=OptunaState[state.name])
    return trial_record(frozen)


def fail_stale_trials(study):
    """Fail the RUNNING trials of processes that died (on this machine by pid; on others by an old
    heartbeat attribute, which an RDB storage's own heartbeat precedes, see
    :mod:`automil.tune.backend.optuna_storage`)."""
    from optuna.trial import TrialState as OptunaState

    for trial in study.get_trials(deepcopy=False, states=(OptunaState.RUNNING,)):
        if abandoned(trial_record(trial)):
            storage = study_storage(study)  # Optuna has no public way to annotate another process's trial
            storage.set_trial_user_attr(trial_id(trial), TrialAttr.STALE, True)
            storage.set_trial_user_attr(trial_id(trial), TrialAttr.ERROR, DIED)
            study.tell(trial.number, state=OptunaState.FAIL, skip_if_finished=True)


def importances(study, trials: list[TrialRecord]) -> tuple[dict | None, str]:
    """fANOVA parameter importances of the study, or ``None`` and why not."""
    import optuna

    complete = [t for t in trials if t.state is TrialState.COMPLETE]
    if len(complete) < 2:
        return None, f"needs at least 2 completed trials ({len(complete)} so far)"
    if not any(t.params for t in complete):
        return None, "no hyperparameter was searched"
    try:
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)  # named on the figure
        return optuna.importance.get_param_importances(study, evaluator=evaluator), ""
    except (ValueError, RuntimeError) as error:  # e.g. every trial has the same parameters
        return None, f"not computable: {error}"
