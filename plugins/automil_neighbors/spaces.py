"""Optuna search space of Citation-kNN and its first trial (docs/algorithms-beyond-svm.md 19)."""

from __future__ import annotations


def citation_knn_space(trial) -> dict:
    """References R in [1, 10], citers C in [0, 20] (C = 0 is the plain bag kNN; the paper's best, R = 2 and
    C = 4, is inside) and the bag distance."""
    return {"references": trial.suggest_int("references", 1, 10),
            "citers": trial.suggest_int("citers", 0, 20),
            "hausdorff": trial.suggest_categorical("hausdorff", ["minimal", "maximal"])}


# The paper's setting on both MUSK sets, as a point of the space above: the first trial of every study (the
# minimal distance is also the better one on elephant, fox and tiger: docs/algorithms-beyond-svm.md 19.3).
FIRST_TRIALS = {"citation-knn": {"references": 2, "citers": 4, "hausdorff": "minimal"}}
