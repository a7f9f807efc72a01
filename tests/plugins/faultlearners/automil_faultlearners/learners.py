"""The learners; pids go to ``$AUTOMIL_TEST_RECORDS`` so that tests can signal the fit in progress."""

import os
import time
from pathlib import Path

import numpy as np

import automil

# How far Leaky goes when nothing stops it: far past any cap the tests set, far below the machine.
LEAK_CEILING_BYTES = 3 * 2**30
LEAK_STEP_BYTES = 32 * 2**20


def _record_pid(kind: str):
    directory = os.environ.get("AUTOMIL_TEST_RECORDS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        name = Path(directory) / f"{kind}-{os.getpid()}-{time.monotonic_ns()}"
        # written whole, then renamed: the tests poll for *.pid files and must never read a half-written one
        name.with_suffix(".tmp").write_text(str(os.getpid()))
        os.replace(name.with_suffix(".tmp"), name.with_suffix(".pid"))


class MeanMargin(automil.BagClassifier):
    """A trivial binary learner: the largest feature 0 in the bag, minus the training mean."""

    def _fit(self, bags, y):
        self.offset_ = float(bags.X[:, 0].mean())

    def _decision_function(self, bags):
        return np.maximum.reduceat(bags.X[:, 0], bags.offsets[:-1]) - self.offset_


def napper_space(trial):
    return {"seconds": trial.suggest_float("seconds", 0.2, 0.3)}


class Napper(MeanMargin):
    """Sleeps ``seconds`` in fit: long enough for a test to signal the worker mid-fit."""

    def __init__(self, seconds=0.3):
        self.seconds = seconds

    def _fit(self, bags, y):
        _record_pid("fit")
        time.sleep(self.seconds)
        super()._fit(bags, y)


def leaky_space(trial):
    # Even trial numbers leak, odd ones fit normally: the study must go on past the killed fits. (The
    # parameter is set, not suggested: Optuna's categorical choices cannot change from trial to trial.)
    trial.suggest_float("unused", 0.0, 1.0)
    return {"leak": trial.number % 2 == 0}


class Leaky(MeanMargin):
    """With ``leak=True``, fit allocates (and touches) memory in steps until it is killed."""

    def __init__(self, leak=False):
        self.leak = leak

    def _fit(self, bags, y):
        super()._fit(bags, y)
        if not self.leak:
            return
        _record_pid("leak")
        hoard = []
        while len(hoard) * LEAK_STEP_BYTES < LEAK_CEILING_BYTES:
            hoard.append(np.ones(LEAK_STEP_BYTES // 8))
            time.sleep(0.005)
        raise MemoryError("leaky reached its ceiling: nothing stopped it")


def bad_space(*modes):
    def space(trial):
        return {"mode": trial.suggest_categorical("mode", list(modes))}

    return space


class BadShape(MeanMargin):
    """Fits fine; ``decision_function`` breaks the contract as ``mode`` says."""

    def __init__(self, mode="nan"):
        self.mode = mode

    def _decision_function(self, bags):
        margin = super()._decision_function(bags)
        if self.mode == "short":
            return margin[:-1]
        if self.mode == "wide":
            return np.column_stack([margin, -margin, margin, margin])
        margin = margin.copy()
        margin[::2] = np.nan if self.mode == "nan" else np.inf
        return margin
