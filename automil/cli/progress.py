"""What ``automil tune`` shows while it runs: the command line's listener of the driver.

On a terminal, live bars (tqdm, which Optuna already installs: no new dependency): one per learner with
its trials done and planned, its best tuning score and its phase in the budget, and one for the tuning
budget; elsewhere (CI logs, a pipe) a plain line before every trial. The lines of finished learners are
kept in both.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from automil.endpoints import LABELS
from automil.records import LearnerResult, TrackingBacklog
from automil.tune.backend.optuna_trials import best_trial, trial_counts
from automil.tune.listener import Standing, StudyProgress

__all__ = ["Progress"]


class Progress:
    """Progress of ``automil tune`` on ``stream`` (default stderr), live on a terminal, plain lines
    elsewhere (a :class:`automil.tune.listener.Listener`)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.time()
        self.bars = {}

    def message(self, line: str):
        self._write(f"automil: {line}")

    def standing(self, standing: Standing):
        if self.live:
            self._draw(standing)
            return
        if standing.running is None:
            return
        now = next(s for s in standing.learners if s.learner == standing.running)
        scored = [s for s in standing.learners if s.best is not None]
        leader = max(scored, key=lambda s: s.best) if scored else None
        left = "" if standing.left is None else f", {_clock(standing.left)} left"
        print(f"  [{_clock(standing.elapsed)}{left}] {now.learner} ({now.phase}): trial {now.trials + 1}"
              f"{'' if now.planned is None else f'/{now.planned}'}, best {_score(now.best)}; leader "
              f"{'-' if leader is None else f'{leader.learner} {_score(leader.best)}'} ({standing.metric})",
              file=self.stream, flush=True)

    def tuned(self, study: StudyProgress):
        self._close()
        counts, _ = trial_counts(study.trials)
        best = best_trial(study.trials)
        self.message(f"{study.learner}: tuned, {counts.trials} trials on all folds ({counts.pruned} "
                     f"pruned, {counts.timed_out} T/O, {counts.failed} failed), best tuning "
                     f"{study.metric} {_score(None if best is None else best.value)} "
                     f"[{_clock(time.time() - self.start)}]")

    def learner_done(self, result: LearnerResult):
        self._close()
        metric = "balanced_accuracy" if result.task == "classification" else result.metric  # survival: its C
        value = getattr(result.headline, metric)
        figure = "-" if value is None else f"{value:.3f}"
        work = (f"{len(result.members)} member(s)" if result.members
                else f"{result.counts.trials} trials ({result.counts.timed_out} T/O)")
        print(f"  {result.learner}: {result.status}, {work}, {result.headline.kind} {LABELS[metric]} {figure} "
              f"[{_clock(time.time() - self.start)}]", file=self.stream, flush=True)

    def unlogged(self, backlog: TrackingBacklog):
        self._close()
        directory = Path(backlog.path).parent
        self.message(f"{backlog.records} MLflow record(s) not logged ({backlog.tracking_uri} did not answer: "
                     f"{backlog.reason}); they are kept in {backlog.path}; once the server answers, log them "
                     f"with: automil track replay {directory}")

    def _draw(self, standing: Standing):
        from tqdm import tqdm

        if not self.bars:
            total = None if standing.left is None else round(standing.elapsed + standing.left)
            self.bars["budget"] = tqdm(total=total, desc="budget", unit="s", file=self.stream, position=0,
                                       leave=False, bar_format="{desc:>16} |{bar}| {n:.0f}/{total:.0f} s")
            width = max(len(s.learner) for s in standing.learners)
            for position, s in enumerate(standing.learners, 1):
                self.bars[s.learner] = tqdm(total=s.planned, desc=s.learner.rjust(width), unit="trial",
                                            file=self.stream, position=position, leave=False,
                                            bar_format="{desc} |{bar}| {n}/{total} {postfix}")
        budget = self.bars["budget"]
        budget.n = standing.elapsed
        budget.set_description_str("running " + (standing.running or "-")[:8], refresh=False)
        budget.refresh()
        for s in standing.learners:
            bar = self.bars[s.learner]
            bar.n = s.trials
            bar.set_postfix_str(f"best {_score(s.best)} {s.phase}", refresh=False)
            bar.refresh()

    def _write(self, line: str):
        if self.bars:
            from tqdm import tqdm

            tqdm.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def _close(self):
        for bar in self.bars.values():
            bar.close()
        self.bars = {}


def _score(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
