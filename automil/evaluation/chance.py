"""What a metric scores by chance on given bag labels: the level a score must pass, by its own uncertainty,
before it says that a learner learned something."""

from __future__ import annotations

import numpy as np

__all__ = ["chance_level", "above_chance", "CHANCE_SIGMAS"]

# A score is above chance when it passes chance by this many of its standard errors (about 95% one-sided
# confidence with the normal approximation; 2 is the margin the budget's contenders use too).
CHANCE_SIGMAS = 2.0


def chance_level(metric: str, y) -> float:
    """The score of a prediction that ignores the bags: balanced accuracy ``1 / classes``, ROC AUC 0.5,
    accuracy the share of the most frequent class (always predicting it)."""
    _, counts = np.unique(np.asarray(y), return_counts=True)
    if metric == "balanced_accuracy":
        return 1.0 / max(len(counts), 1)
    if metric == "roc_auc":
        return 0.5
    if metric == "accuracy":
        return float(counts.max() / counts.sum())
    raise ValueError(f"no chance level for metric {metric!r}")


def above_chance(score: float | None, stderr: float, chance: float) -> bool:
    """Whether ``score`` passes ``chance`` by ``CHANCE_SIGMAS`` standard errors ``stderr``."""
    return score is not None and score - CHANCE_SIGMAS * stderr > chance
