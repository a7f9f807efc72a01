"""Which trials of a study count: finished or still running somewhere, abandoned by a dead process,
and the best one. Shared by the driver's budget, the leaderboard and the progress lines."""

from __future__ import annotations

import time

from automil.tune.isolation import HEARTBEAT_SECONDS, process_alive

__all__ = ["counts_toward_budget", "abandoned", "fail_stale_trials", "best_trial", "trial_counts"]

# A RUNNING trial of another machine is taken as abandoned when its heartbeat is older than this.
STALE_AFTER_SECONDS = 10 * HEARTBEAT_SECONDS


def counts_toward_budget(trial) -> bool:
    """Every trial counts except those a killed or interrupted process left unfinished, and a queued one
    not started yet (the next worker to ask runs it)."""
    from optuna.trial import TrialState

    if trial.state == TrialState.WAITING:
        return False
    if trial.state == TrialState.RUNNING:
        return not abandoned(trial)
    return not (trial.user_attrs.get("stale") or trial.user_attrs.get("interrupted"))


def abandoned(trial) -> bool:
    """A RUNNING trial whose process is gone (same host: by pid; other hosts: by an old heartbeat)."""
    identity = trial.user_attrs.get("worker")
    if identity is None:  # created by ask() but killed before the first attribute was written
        return (time.time() - trial.datetime_start.timestamp()) > STALE_AFTER_SECONDS
    alive = process_alive(identity)
    if alive is None:
        return time.time() - trial.user_attrs.get("heartbeat", 0.0) > STALE_AFTER_SECONDS
    return not alive


def fail_stale_trials(study):
    """Fail the RUNNING trials of processes that died (a journal storage has no heartbeat of its own)."""
    from optuna.trial import TrialState

    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if abandoned(trial):
            storage = study._storage  # Optuna has no public way to annotate another process's trial
            storage.set_trial_user_attr(trial._trial_id, "stale", True)
            storage.set_trial_user_attr(trial._trial_id, "error", "its process died before it finished")
            study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)


def best_trial(study):
    from optuna.trial import TrialState

    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return max(complete, key=lambda t: (t.value, -t.number)) if complete else None


def trial_counts(study) -> dict:
    from optuna.trial import TrialState

    finished = [t for t in study.get_trials(deepcopy=False)
                if t.state.is_finished() and counts_toward_budget(t)]
    timed_out = sum(bool(t.user_attrs.get("timed_out")) for t in finished)
    return {"trials": len(finished),
            "trials_complete": sum(t.state == TrialState.COMPLETE for t in finished),
            "trials_pruned": sum(t.state == TrialState.PRUNED for t in finished),
            "trials_failed": sum(t.state == TrialState.FAIL for t in finished) - timed_out,
            "trials_timed_out": timed_out}, finished
