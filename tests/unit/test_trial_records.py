"""Rules on trial records made by hand: what counts toward the budget, the counts, the best."""

import os
import subprocess
import sys
import time
from datetime import datetime, timedelta

from automil.records import TrialCounts, TrialRecord, TrialState
from automil.tune.backend.optuna_trials import STALE_AFTER_SECONDS, best_trial, counts_toward_budget, trial_counts
from automil.tune.workers.processes import process_identity


def _dead_process_identity():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    identity = process_identity(child.pid)
    child.wait()
    return identity


def test_running_trials_count_while_their_process_lives_and_not_once_it_died():
    alive = TrialRecord(0, TrialState.RUNNING,
                        attrs={"worker": process_identity(os.getpid()), "heartbeat": time.time()})
    dead = TrialRecord(1, TrialState.RUNNING, attrs={"worker": _dead_process_identity(), "heartbeat": time.time()})
    assert counts_toward_budget(alive) and not counts_toward_budget(dead)


def test_a_trial_of_another_host_is_judged_by_its_heartbeat():
    recent = TrialRecord(0, TrialState.RUNNING, attrs={"worker": "elsewhere:1:1", "heartbeat": time.time()})
    old = TrialRecord(1, TrialState.RUNNING, attrs={"worker": "elsewhere:1:1",
                                           "heartbeat": time.time() - 2 * STALE_AFTER_SECONDS})
    assert counts_toward_budget(recent) and not counts_toward_budget(old)


def test_a_trial_asked_but_never_annotated_is_abandoned_after_the_stale_delay():
    start = datetime.now() - timedelta(seconds=2 * STALE_AFTER_SECONDS)
    assert not counts_toward_budget(TrialRecord(0, TrialState.RUNNING, start=start))
    assert counts_toward_budget(TrialRecord(1, TrialState.RUNNING, start=datetime.now()))


def test_queued_interrupted_and_stale_trials_do_not_count():
    assert not counts_toward_budget(TrialRecord(0, TrialState.WAITING))
    assert not counts_toward_budget(TrialRecord(1, TrialState.FAIL, attrs={"interrupted": True}))
    assert not counts_toward_budget(TrialRecord(2, TrialState.FAIL, attrs={"stale": True}))
    assert counts_toward_budget(TrialRecord(3, TrialState.PRUNED))


def test_counts_split_time_outs_from_failures_and_count_the_stopped_apart():
    trials = [TrialRecord(0, TrialState.COMPLETE, 0.7), TrialRecord(1, TrialState.PRUNED),
              TrialRecord(2, TrialState.FAIL, attrs={"timed_out": True}),
              TrialRecord(3, TrialState.FAIL, attrs={"error": "boom"}),
              TrialRecord(4, TrialState.FAIL, attrs={"interrupted": True}), TrialRecord(5, TrialState.WAITING),
              TrialRecord(6, TrialState.COMPLETE, 0.9)]
    counts, finished = trial_counts(trials)
    assert counts == TrialCounts(trials=5, complete=2, pruned=1, failed=1, timed_out=1, stopped=1)
    assert [t.number for t in finished] == [0, 1, 2, 3, 6]


def test_the_best_trial_is_the_highest_completed_value_the_earliest_among_equals():
    trials = [TrialRecord(0, TrialState.COMPLETE, 0.8), TrialRecord(1, TrialState.PRUNED, 0.95),
              TrialRecord(2, TrialState.COMPLETE, 0.9), TrialRecord(3, TrialState.COMPLETE, 0.9)]
    assert best_trial(trials).number == 2
    assert best_trial([TrialRecord(0, TrialState.FAIL)]) is None
