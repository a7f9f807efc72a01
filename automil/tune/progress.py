"""Status lines of ``automil tune`` on a terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sys
import time

from automil.tune.trial_states import best_trial, trial_counts

if TYPE_CHECKING:
    from automil.tune.plan import Plan, Unit

__all__ = ["Progress", "Silent"]


class Progress:
    """Status lines on a terminal: one rewritten line per trial, one kept line per finished learner."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.time()

    def __call__(self, line: str):
        self._clear()
        print(f"automil: {line}", file=self.stream, flush=True)

    def trial(self, unit: Unit, study, plan: Plan):
        if not self.live:
            return
        counts, _ = trial_counts(study)
        best = best_trial(study)
        where = "all folds" if unit.split is None else f"outer split {unit.split + 1}/{plan.options.folds}"
        total = "" if plan.options.n_trials is None else f"/{plan.options.n_trials}"
        score = "-" if best is None else f"{best.value:.3f}"
        text = (f"  {unit.learner} ({where}): trial {counts['trials']}{total}, best {plan.options.metric} "
                f"{score}, {counts['trials_timed_out']} T/O, {_clock(time.time() - self.start)}")
        self.stream.write("\r\033[K" + text[:150])
        self.stream.flush()

    def tuned(self, unit: Unit, study, plan: Plan):
        counts, _ = trial_counts(study)
        best = best_trial(study)
        score = "-" if best is None else f"{best.value:.3f}"
        self(f"{unit.learner}: tuned, {counts['trials']} trials ({counts['trials_pruned']} pruned, "
             f"{counts['trials_timed_out']} T/O, {counts['trials_failed']} failed), best tuning "
             f"{plan.options.metric} {score} [{_clock(time.time() - self.start)}]")

    def learner_done(self, row: dict):
        self._clear()
        figure = "-" if row.get("balanced_accuracy") is None else f"{row['balanced_accuracy']:.3f}"
        print(f"  {row['learner']}: {row['status']}, {row['trials']} trials ({row['trials_timed_out']} T/O), "
              f"{row['headline']} BACC {figure} [{_clock(time.time() - self.start)}]", file=self.stream,
              flush=True)

    def _clear(self):
        if self.live:
            self.stream.write("\r\033[K")


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


class Silent(Progress):
    """Progress that says nothing: ``tune`` called as a library, and its helper processes."""

    def __init__(self):
        pass

    def __call__(self, line: str):
        pass

    def trial(self, unit, study, plan):
        pass

    def tuned(self, unit, study, plan):
        pass

    def learner_done(self, row: dict):
        pass
