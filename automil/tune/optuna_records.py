"""Optuna's studies and trials read as records (:mod:`automil.records`), and told their outcome: the one
module that reads or writes an Optuna trial state."""

from __future__ import annotations

from automil.records import StudyRecord, TrialAttr, TrialRecord, TrialState
from automil.tune.trial_rules import abandoned

__all__ = ["trial_record", "records", "study_record", "tell", "fail_stale_trials", "importances"]

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
    heartbeat attribute, which an RDB storage's own heartbeat precedes, see :mod:`automil.tune.storage`)."""
    from optuna.trial import TrialState as OptunaState

    for trial in study.get_trials(deepcopy=False, states=(OptunaState.RUNNING,)):
        if abandoned(trial_record(trial)):
            storage = study._storage  # Optuna has no public way to annotate another process's trial
            storage.set_trial_user_attr(trial._trial_id, TrialAttr.STALE, True)
            storage.set_trial_user_attr(trial._trial_id, TrialAttr.ERROR, DIED)
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
