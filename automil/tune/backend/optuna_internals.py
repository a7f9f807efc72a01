"""The one place automil reaches past Optuna's public API; ``tests/test_optuna_internals.py`` pins each
use on the installed Optuna (pyproject.toml bounds optuna to the major version those tests cover).

- A study's storage and a trial's storage id: Optuna has no public handle on either, and automil needs
  them to annotate another process's trial and to keep a trial's heartbeat.
- Whether a storage keeps heartbeats (``optuna.storages._heartbeat``).
- Trial creation: ``study.ask()`` makes a trial in one storage call, through the RDB storage's
  ``_create_new_trial`` (what Optuna's cache in front of it calls) or the journal's ``create_new_trial``.
  automil replaces that call to write a trial's owner in the same record, and to find a trial whose
  creation answer a database restart lost.
"""

from __future__ import annotations

import datetime

__all__ = ["study_storage", "trial_id", "heartbeat_enabled", "trial_template", "replace_trial_creation",
           "owned_trials"]


def study_storage(study):
    """The storage ``study`` reads and writes (for an RDB storage, Optuna's cache in front of it)."""
    return study._storage


def trial_id(trial) -> int:
    """The storage's id of a ``Trial`` or ``FrozenTrial`` (not its number within the study)."""
    return trial._trial_id


def heartbeat_enabled(storage) -> bool:
    """Whether ``storage`` records trial heartbeats (an RDB storage opened with a heartbeat interval)."""
    from optuna.storages._heartbeat import is_heartbeat_enabled

    return is_heartbeat_enabled(storage)


def trial_template(template=None, user_attrs: dict | None = None, system_attrs: dict | None = None):
    """A trial template for ``create_new_trial``: ``template`` (``None``: Optuna's default, a RUNNING trial
    starting now) with ``user_attrs`` and ``system_attrs`` added."""
    from optuna.trial import FrozenTrial, TrialState

    user_attrs, system_attrs = user_attrs or {}, system_attrs or {}
    if template is None:
        return FrozenTrial(number=-1, state=TrialState.RUNNING, value=None, values=None,
                           datetime_start=datetime.datetime.now(), datetime_complete=None, params={},
                           distributions={}, user_attrs=user_attrs, system_attrs=system_attrs,
                           intermediate_values={}, trial_id=-1)
    return FrozenTrial(number=template.number, state=template.state, value=None, values=template.values,
                       datetime_start=template.datetime_start, datetime_complete=template.datetime_complete,
                       params=template.params, distributions=template.distributions,
                       user_attrs={**template.user_attrs, **user_attrs},
                       system_attrs={**template.system_attrs, **system_attrs},
                       intermediate_values=template.intermediate_values, trial_id=trial_id(template))


def replace_trial_creation(storage, wrap) -> None:
    """Make every trial ``storage`` creates go through ``wrap(create)``: a function ``(study_id, template)
    -> FrozenTrial`` given Optuna's own ``create`` of the same signature."""
    from optuna.storages import RDBStorage

    if isinstance(storage, RDBStorage):
        made = wrap(storage._create_new_trial)
        storage._create_new_trial = made
    else:
        create = storage.create_new_trial
        made = wrap(lambda study_id, template=None: storage.get_trial(create(study_id, template)))
    storage.create_new_trial = lambda study_id, template_trial=None: trial_id(made(study_id, template_trial))


def owned_trials(storage, owner) -> None:
    """Every trial ``study.ask()`` takes from ``storage`` carries ``owner()`` (user attributes) from its first
    record: a new trial is created with them in one storage call, and a queued trial gets them before its
    state turns RUNNING. A process killed anywhere in ``ask()`` so never leaves a RUNNING trial without
    the owner by which a rerun finds it abandoned."""
    from optuna.trial import TrialState

    if getattr(storage, "_automil_owned", False):
        return

    def wrap(create):
        return lambda study_id, template=None: create(
            study_id, trial_template(user_attrs=owner()) if template is None else template)

    replace_trial_creation(storage, wrap)
    set_state = storage.set_trial_state_values

    def claim_owned(trial_id: int, state, values=None):
        if state == TrialState.RUNNING and values is None:  # ask() claims a queued trial
            for key, value in owner().items():
                storage.set_trial_user_attr(trial_id, key, value)
        return set_state(trial_id, state, values)

    storage.set_trial_state_values = claim_owned
    storage._automil_owned = True
