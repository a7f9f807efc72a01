"""Accuracy against cost: the points no other point beats on every objective (the Pareto front)."""

from __future__ import annotations

import numpy as np

__all__ = ["non_dominated", "cheapest_near_best"]


def non_dominated(points, maximize) -> np.ndarray:
    """Indices of the points that no other point dominates, in their given order.

    A point dominates another when it is at least as good on every objective and better on one.
    Duplicates dominate neither each other, so equal points are all kept. ``points`` is ``(n, m)``;
    ``maximize`` says per objective whether larger is better. Quadratic in ``n``, vectorized: fronts
    are drawn from the trials of one study (tens to hundreds).
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2:
        raise ValueError(f"points must be a 2-D array (points x objectives), got shape {points.shape}")
    sign = np.where(np.asarray(maximize, dtype=bool), 1.0, -1.0)
    if sign.shape != (points.shape[1],):
        raise ValueError(f"maximize has {sign.size} entries for {points.shape[1]} objectives")
    if not np.isfinite(points).all():
        raise ValueError("points must be finite (a trial without a score has no place on a front)")
    gains = points * sign  # larger is better on every column
    at_least = (gains[:, None, :] >= gains[None, :, :]).all(axis=2)  # [i, j]: i at least as good as j
    better = (gains[:, None, :] > gains[None, :, :]).any(axis=2)
    dominated = (at_least & better).any(axis=0)
    return np.flatnonzero(~dominated)


def cheapest_near_best(score, cost, tolerance: float = 0.01) -> int | None:
    """Index of the cheapest point whose ``score`` is within ``tolerance`` of the best score (ties: the
    better score, then the first); ``None`` without points. Applied to a front, it answers "how much
    faster can I be for at most one point of accuracy?"."""
    score, cost = np.asarray(score, dtype=float), np.asarray(cost, dtype=float)
    if score.size == 0:
        return None
    near = np.flatnonzero(score >= score.max() - tolerance - 1e-12)
    return int(near[np.lexsort((near, -score[near], cost[near]))[0]])
