"""Search-space pieces that learners of several plugins share, written once (Optuna define-by-run)."""

from __future__ import annotations

__all__ = ["max_features", "max_features_kind"]


def max_features_kind(trial) -> str:
    """How many features a tree considers at a split: ``"sqrt"``, ``"log2"`` or a ``"fraction"`` of them."""
    return trial.suggest_categorical("max_features_kind", ["sqrt", "log2", "fraction"])


def max_features(trial, low: float, kind: str | None = None):
    """A forest's ``max_features``: the kind, or for ``"fraction"`` a fraction of the features in ``[low, 1]``.

    ``kind`` is :func:`max_features_kind`'s answer when the space asked it earlier (asked here otherwise):
    a seeded sampler draws parameters in the order they are asked, so a space keeps its order to keep its
    points.
    """
    kind = kind or max_features_kind(trial)
    return trial.suggest_float("max_features_fraction", low, 1.0) if kind == "fraction" else kind
