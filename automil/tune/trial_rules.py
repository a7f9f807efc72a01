"""Rules on trial records: which trials count (finished, or still running somewhere, not abandoned by a
dead process), their counts, the best one and the one that ran the defaults. Shared by the budget, the
leaderboard, the ensemble and the progress lines; no Optuna here (:mod:`automil.tune.optuna_records`
makes the records)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from automil.records import TrialAttr, TrialRecord, TrialState
from automil.tune.isolation import HEARTBEAT_SECONDS
from automil.tune.processes import process_alive

__all__ = ["counts_toward_budget", "abandoned", "best_trial", "defaults_trial", "trial_counts", "TrialCounts",
           "STALE_AFTER_SECONDS"]

# A RUNNING trial of another machine is taken as abandoned when its heartbeat is older than this.
STALE_AFTER_SECONDS = 10 * HEARTBEAT_SECONDS


def counts_toward_budget(trial: TrialRecord) -> bool:
    """Every trial counts except those a killed or interrupted process left unfinished, and a queued one
    not started yet (the next worker to ask runs it)."""
    if trial.state is TrialState.WAITING:
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


@dataclass(frozen=True)
class TrialCounts:
    """A study's finished trials that count (``trials``), by outcome; a timed-out trial is not also
    counted as failed."""

    trials: int = 0
    complete: int = 0
    pruned: int = 0
    failed: int = 0
    timed_out: int = 0


def trial_counts(trials: list[TrialRecord]) -> tuple[TrialCounts, list[TrialRecord]]:
    """The leaderboard's trial counts and the finished trials that count."""
    finished = [t for t in trials if t.finished and counts_toward_budget(t)]
    timed_out = sum(bool(t.attrs.get(TrialAttr.TIMED_OUT)) for t in finished)
    return TrialCounts(trials=len(finished),
                       complete=sum(t.state is TrialState.COMPLETE for t in finished),
                       pruned=sum(t.state is TrialState.PRUNED for t in finished),
                       failed=sum(t.state is TrialState.FAIL for t in finished) - timed_out,
                       timed_out=timed_out), finished
