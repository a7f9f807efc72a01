"""Greedy forward selection of a portfolio on a matrix of tasks x configurations, and its leave-one-task-out
regret: the construction of auto-sklearn 2.0's portfolios and of TabRepo's zero-shot ones, on MIL tasks.

A portfolio's value on a task is that of its best member there (the run then tunes and chooses among its
members), so each step adds the configuration that most raises the mean over tasks of the best member's
normalized score. Scores are normalized per task between chance (0.5 balanced accuracy on two classes) and
the best configuration of the task, so that easy and hard tasks weigh alike; a task no configuration lifts
above chance says nothing and is left out. A cell that failed, timed out or is missing counts as chance.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CHANCE", "normalized", "greedy_portfolio", "leave_one_task_out"]

CHANCE = 0.5  # balanced accuracy of a two-class guess
# A step must add at least this much of the normalized mean to be taken: less is noise of the matrix.
MIN_GAIN = 1e-3


def normalized(scores: np.ndarray) -> np.ndarray:
    """Scores (tasks x configurations, NaN: no score) mapped per task to [0, 1] between chance and the
    task's best; rows of tasks that nothing lifts above chance are dropped."""
    filled = np.where(np.isfinite(scores), scores, CHANCE)
    best = filled.max(axis=1)
    informative = best > CHANCE + 1e-9
    lifted = np.clip(filled[informative] - CHANCE, 0.0, None)
    return lifted / (best[informative, None] - CHANCE)


def greedy_portfolio(scores: np.ndarray, seconds: np.ndarray, size: int) -> list[int]:
    """The columns of the portfolio, in the order they were added (the order a run tries them): each step
    the configuration that most raises the mean normalized score of the portfolio's best member; ties go
    to the configuration of fewer mean seconds. Stops at ``size`` members or when no step gains
    ``MIN_GAIN``."""
    norm = normalized(scores)
    if not len(norm):
        return []
    timed = np.isfinite(seconds)
    cost = np.where(timed.any(axis=0), np.where(timed, seconds, 0.0).sum(axis=0) / np.maximum(timed.sum(axis=0), 1),
                    np.inf)
    chosen: list[int] = []
    current = np.zeros(len(norm))
    for _ in range(min(size, scores.shape[1])):
        gains = np.maximum(norm, current[:, None]).mean(axis=0) - current.mean()
        gains[chosen] = -np.inf
        best = max(range(len(gains)), key=lambda j: (round(gains[j], 9), -cost[j], -j))
        if gains[best] < MIN_GAIN:
            break
        chosen.append(best)
        current = np.maximum(current, norm[:, best])
    return chosen


def leave_one_task_out(scores: np.ndarray, seconds: np.ndarray, size: int,
                       defaults: dict[str, int]) -> dict[str, tuple[float, float]]:
    """Each task held out in turn: the portfolio chosen on the other tasks, scored on the held-out one by
    the regret of its best member (points of the metric below the task's best configuration).

    Returns ``{label: (mean regret, mean seconds)}`` for ``portfolio``, ``best defaults`` (the one learner
    whose defaults are best on the other tasks), ``every learner's defaults`` (all of them run, as a schedule
    that can afford them all does) and each learner of ``defaults`` (name: column of its defaults) alone;
    seconds are the members' cell seconds summed."""
    filled = np.where(np.isfinite(scores), scores, CHANCE)
    secs = np.where(np.isfinite(seconds), seconds, 0.0)
    best = filled.max(axis=1)
    columns = list(defaults.values())
    rows: dict[str, list[tuple[float, float]]] = {}
    for task in range(len(scores)):
        others = [i for i in range(len(scores)) if i != task]
        members = greedy_portfolio(scores[others], seconds[others], size) or columns[:1]
        single = max(columns, key=lambda j: filled[others, j].mean())
        for label, chosen in (("portfolio", members), ("best defaults", [single]),
                              ("every learner's defaults", columns), *((n, [j]) for n, j in defaults.items())):
            rows.setdefault(label, []).append((best[task] - filled[task, chosen].max(), secs[task, chosen].sum()))
    return {label: (float(np.mean([r for r, _ in values])), float(np.mean([s for _, s in values])))
            for label, values in rows.items()}
