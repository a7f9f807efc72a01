"""What a metric scores by chance on given bag labels: the level a score must pass, by its own uncertainty,
before it says that a learner learned something."""

from __future__ import annotations

import numpy as np

__all__ = ["chance_level", "above_chance", "score_stderr", "CHANCE_SIGMAS"]

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


def score_stderr(metric: str, score: float, counts) -> float:
    """The standard error of ``score``, a figure of ``metric``, over the bags it scored (``counts``: how many
    of each class): binomial for accuracy, for balanced accuracy each class's recall taken at ``score``, and
    Hanley and McNeil's (1982) for ROC AUC, the smallest class against the others. Why: a score's spread over
    three folds estimates this with two degrees of freedom, so two learners of equal skill can differ several
    fold in it; the bags an estimate scored give its uncertainty without that noise. At chance it is the
    spread of a prediction that ignores the bags, the test of a permutation of their labels."""
    counts = np.asarray([c for c in counts if c > 0], dtype=float)
    s = min(max(float(score), 0.0), 1.0)
    if metric == "accuracy":
        return float(np.sqrt(s * (1 - s) / counts.sum()))
    if metric == "balanced_accuracy":
        return float(np.sqrt(s * (1 - s) * np.sum(1 / counts)) / len(counts))
    if metric == "roc_auc":
        rare, rest = counts.min(), counts.sum() - counts.min()
        q_rare, q_rest = s / (2 - s), 2 * s * s / (1 + s)
        return float(np.sqrt((s * (1 - s) + (rare - 1) * (q_rare - s * s) + (rest - 1) * (q_rest - s * s))
                             / (rare * rest)))
    raise ValueError(f"no standard error for metric {metric!r}")
