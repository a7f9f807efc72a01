"""Status lines of ``automil tune`` on a terminal: the command line's listener of the driver."""

from __future__ import annotations

import sys
import time

from automil.track.records import LearnerResult
from automil.tune.listener import StudyProgress
from automil.tune.trial_states import best_trial, trial_counts

__all__ = ["Progress"]


class Progress:
    """Status lines on a terminal: one rewritten line per trial, one kept line per finished learner
    (a :class:`automil.tune.listener.Listener`)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.time()

    def message(self, line: str):
        self._clear()
        print(f"automil: {line}", file=self.stream, flush=True)

    def trial(self, study: StudyProgress):
        if not self.live:
            return
        counts, _ = trial_counts(study.trials)
        best = best_trial(study.trials)
        where = "all folds" if study.split is None else f"outer split {study.split + 1}/{study.folds}"
        total = "" if study.n_trials is None else f"/{study.n_trials}"
        score = "-" if best is None else f"{best.value:.3f}"
        text = (f"  {study.learner} ({where}): trial {counts['trials']}{total}, best {study.metric} "
                f"{score}, {counts['trials_timed_out']} T/O, {_clock(time.time() - self.start)}")
        self.stream.write("\r\033[K" + text[:150])
        self.stream.flush()

    def tuned(self, study: StudyProgress):
        counts, _ = trial_counts(study.trials)
        best = best_trial(study.trials)
        score = "-" if best is None else f"{best.value:.3f}"
        self.message(f"{study.learner}: tuned, {counts['trials']} trials ({counts['trials_pruned']} pruned, "
                     f"{counts['trials_timed_out']} T/O, {counts['trials_failed']} failed), best tuning "
                     f"{study.metric} {score} [{_clock(time.time() - self.start)}]")

    def learner_done(self, result: LearnerResult):
        self._clear()
        figure = "-" if result.balanced_accuracy is None else f"{result.balanced_accuracy:.3f}"
        print(f"  {result.learner}: {result.status}, {result.trials} trials ({result.trials_timed_out} T/O), "
              f"{result.headline} BACC {figure} [{_clock(time.time() - self.start)}]", file=self.stream,
              flush=True)

    def _clear(self):
        if self.live:
            self.stream.write("\r\033[K")


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
