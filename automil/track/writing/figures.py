"""The pictures logged with a study: confusion matrix, reliability diagram, Kaplan-Meier curves, optimization
history, parameter importances, witness instances and coefficients of image-like bags (pdMISVM paper, figures
6 and 7).

Every function returns a ``matplotlib.figure.Figure`` built without pyplot, so nothing here touches the
global backend of the caller (it renders with Agg when saved).
"""

from __future__ import annotations

import re

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from automil.evaluation.pareto import non_dominated
from automil.evaluation.survival_figures import kaplan_meier_split
from automil.records import TIMED_OUT, TrialState
from automil.records.calibration import BIN_WIDTH

__all__ = ["confusion_matrix_figure", "reliability_figure", "kaplan_meier_figure", "KAPLAN_MEIER",
           "optimization_history_figure", "param_importances_figure", "witness_figure", "coefficients_figure",
           "image_shape", "pareto_figure"]

KAPLAN_MEIER = "figures/kaplan_meier.png"  # on a survival study's run: its held-out patients' curves
_PIXEL_NAME = re.compile(r"pixel_(\d+)_(\d+)$")


def image_shape(bags) -> tuple[int, int] | None:
    """``(rows, columns)`` when every feature is a pixel named ``pixel_<row>_<column>`` (scikit-learn's
    digits, hence digits-bags) and they fill the grid in row-major order; else ``None``."""
    names = getattr(bags, "feature_names", None)
    if names is None or len(names) == 0 or getattr(bags, "is_sparse", False):
        return None
    cells = [_PIXEL_NAME.match(str(name)) for name in names]
    if not all(cells):
        return None
    rows = [int(m.group(1)) for m in cells]
    columns = [int(m.group(2)) for m in cells]
    shape = (max(rows) + 1, max(columns) + 1)
    expected = [(r, c) for r in range(shape[0]) for c in range(shape[1])]
    return shape if list(zip(rows, columns)) == expected else None


def confusion_matrix_figure(matrix, classes, title: str) -> Figure:
    """Counts with true classes as rows, predicted as columns, each cell annotated."""
    matrix = np.asarray(matrix)
    k = len(classes)
    fig = Figure(figsize=(max(3.2, 1.2 + 0.8 * k), max(3.0, 1.0 + 0.8 * k)), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(matrix, cmap="Blues")
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set(xticks=range(k), yticks=range(k), xticklabels=[str(c) for c in classes],
           yticklabels=[str(c) for c in classes], xlabel="predicted", ylabel="true", title=title)
    threshold = matrix.max() / 2 if matrix.size else 0
    for (i, j), count in np.ndenumerate(matrix):
        ax.text(j, i, f"{count:g}", ha="center", va="center",
                color="white" if count > threshold else "black")
    return fig


def reliability_figure(bins, raw_bins, title: str) -> Figure:
    """The reliability diagram of held-out bags: in each bin of the predicted class's probability
    (``bins``: dicts or records with ``low``, ``bags``, ``confidence``, ``accuracy``), the share of bags
    whose predicted class is right against the mean probability given it, calibrated (blue) and from the
    raw scores (grey, ``raw_bins``); on the diagonal is calibrated. Below, how many bags each bin holds."""
    fig = Figure(figsize=(4.6, 5.4), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 1], sharex=True)
    top.plot([0, 1], [0, 1], ":", color="grey", linewidth=1, label="perfectly calibrated")
    for part, colour, label in ((raw_bins, "tab:gray", "raw scores"), (bins, "tab:blue", "calibrated probabilities")):
        rows = [b if isinstance(b, dict) else vars(b) for b in part]
        if rows:
            top.plot([r["confidence"] for r in rows], [r["accuracy"] for r in rows], "o-", color=colour,
                     label=label)
            bottom.bar([r["low"] + BIN_WIDTH / 2 for r in rows], [r["bags"] for r in rows], width=BIN_WIDTH * 0.9,
                       color=colour, alpha=0.5)
    top.set(xlim=(0, 1), ylim=(0, 1), ylabel="share of bags predicted right", title=title)
    top.legend(loc="upper left", fontsize="small")
    bottom.set(xlabel="probability of the predicted class", ylabel="bags")
    return fig


def kaplan_meier_figure(time, event, risk, cut, title: str = "Held-out patients") -> Figure:
    """The Kaplan-Meier curves of held-out patients split at ``cut`` (the training folds' median risk: a
    number, or one per patient), high risk above it (:func:`~automil.evaluation.survival_figures.
    kaplan_meier_split`); censored patients marked on their curve, the log-rank p-value in the title."""
    split = kaplan_meier_split(time, event, risk, cut)
    fig = Figure(figsize=(6, 4.4), layout="constrained")
    ax = fig.add_subplot()
    for curve, colour in ((split.low, "tab:blue"), (split.high, "tab:red")):
        if curve.patients == 0:
            continue
        ax.step(np.r_[0.0, curve.time], np.r_[1.0, curve.survival], where="post", color=colour,
                label=f"{curve.group}: {curve.patients} patients, {curve.events} events")
        ax.plot(curve.censored, curve.at(curve.censored), "|", color=colour, markersize=8)
    test = "log-rank test not possible (one group or no event)" if split.p_value is None else \
        f"log-rank p = {split.p_value:.3g}"
    ax.set(xlabel="time", ylabel="survival probability", ylim=(0, 1.02), xlim=(0, None), title=f"{title}\n{test}")
    ax.legend(loc="upper right", fontsize="small")
    ax.grid(True, alpha=0.3)
    return fig


def optimization_history_figure(history, direction: str = "maximize", objective: str = "objective") -> Figure:
    """Each completed trial's value and the best so far; pruned, failed and timed-out trials are marked
    along the bottom so a budget spent on time-outs shows.

    ``history`` holds ``(trial number, state, value)`` with state COMPLETE, PRUNED, FAIL or T/O.
    """
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    done = [(number, value) for number, state, value in history if state == TrialState.COMPLETE and value is not None]
    if done:
        numbers, values = map(np.asarray, zip(*done))
        best = np.maximum.accumulate(values) if direction == "maximize" else np.minimum.accumulate(values)
        ax.plot(numbers, values, "o", color="tab:blue", alpha=0.7, label="completed trial")
        ax.step(numbers, best, where="post", color="tab:red", label="best so far")
    bottom = min((value for _, value in done), default=0.0)
    marks = ((TrialState.PRUNED, "v", "tab:gray", "pruned"), (TrialState.FAIL, "x", "black", "failed"),
             (TIMED_OUT, "s", "tab:orange", "timed out"))
    for state, marker, color, label in marks:
        numbers = [number for number, s, _ in history if s == state]
        if numbers:
            ax.plot(numbers, [bottom] * len(numbers), marker, color=color, linestyle="none",
                    label=f"{label} ({len(numbers)})")
    ax.set(xlabel="trial", ylabel=objective, title="Optimization history")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if history:
        ax.legend(loc="best", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no trials", ha="center", va="center", transform=ax.transAxes)
    return fig


def pareto_figure(points: dict[str, list[tuple[float, float]]], title: str) -> Figure:
    """Accuracy against cost: every completed trial of every learner (``points[learner]`` holds
    ``(mean fit seconds, balanced accuracy)`` pairs) on a log time axis, one colour per learner. Each
    learner's Pareto front (no trial of its own both faster and at least as accurate) is ringed in black
    and joined; the front across learners is the dashed line."""
    fig = Figure(figsize=(9, 5.5), layout="constrained")
    ax = fig.add_subplot()
    palette = colormaps["tab10" if len(points) <= 10 else "tab20"]
    everything = []
    for index, (learner, pairs) in enumerate(sorted(points.items())):
        if not pairs:
            continue
        xy = np.array(pairs, dtype=float) * [1.0, 100.0]
        everything.append(xy)
        colour = palette(index % palette.N)
        front = _front(xy)
        ax.scatter(xy[:, 0], xy[:, 1], s=16, color=colour, alpha=0.55, label=f"{learner} ({len(xy)})")
        ax.plot(front[:, 0], front[:, 1], "-", color=colour, linewidth=1, drawstyle="steps-post")
        ax.scatter(front[:, 0], front[:, 1], s=42, color=colour, edgecolors="black", linewidths=0.9, zorder=3)
    if everything:
        front = _front(np.vstack(everything))
        ax.plot(front[:, 0], front[:, 1], "--", color="black", linewidth=1.2, drawstyle="steps-post",
                label="front across learners", zorder=4)
        ax.set_xscale("log")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small", frameon=False)
    else:
        ax.text(0.5, 0.5, "no completed trials", ha="center", va="center", transform=ax.transAxes)
    ax.set(xlabel="mean fit time per fold, s (log)", ylabel="balanced accuracy, % (tuning folds)", title=title)
    ax.grid(True, which="major", alpha=0.3)
    return fig


def _front(xy: np.ndarray) -> np.ndarray:
    """The points of ``(seconds, accuracy)`` rows no other beats, fastest first."""
    front = xy[non_dominated(xy, [False, True])]
    return front[np.lexsort((-front[:, 1], front[:, 0]))]


def param_importances_figure(importances: dict | None, reason: str = "") -> Figure:
    """Horizontal bars of hyperparameter importances (largest on top); ``reason`` is shown instead
    when they could not be computed (fewer than two completed trials, nothing searched)."""
    items = sorted((importances or {}).items(), key=lambda kv: kv[1])
    fig = Figure(figsize=(6, 1.5 + 0.4 * max(len(items), 1)), layout="constrained")
    ax = fig.add_subplot()
    if items:
        ax.barh([name for name, _ in items], [value for _, value in items], color="tab:blue")
        ax.set(xlabel="importance (fANOVA)", title="Hyperparameter importances")
    else:
        ax.set_axis_off()
        ax.text(0.5, 0.5, reason or "no importances", ha="center", va="center", wrap=True)
        ax.set_title("Hyperparameter importances")
    return fig


def witness_figure(bags, witness, predicted, shape, max_bags: int = 6, max_instances: int = 12) -> Figure:
    """Bags drawn as rows of instance images with the witness instance framed (pdMISVM paper, Fig. 6).

    Shows up to ``max_bags`` bags, taking them from each true class in turn, and at most
    ``max_instances`` instances of each (always including the witness). The tiles form one mosaic image
    (one axes), which keeps drawing fast.
    """
    y = np.asarray(bags.y) if bags.y is not None else np.zeros(bags.n_bags, dtype=int)
    per_class = [np.flatnonzero(y == label) for label in np.unique(y)]
    chosen = [idx[i] for i in range(max_bags) for idx in per_class if i < len(idx)][:max_bags]
    height, width = shape
    pad = 2
    mosaic = np.full((len(chosen) * (height + pad), max_instances * (width + pad)), np.nan)
    frames = []
    for row, bag in enumerate(chosen):
        instances = bags[bag]
        positions = np.arange(len(instances))
        if len(positions) > max_instances:  # keep the witness visible
            positions = np.unique(np.r_[positions[:max_instances - 1], witness[bag]])
        top = row * (height + pad)
        for column, position in enumerate(positions):
            left = column * (width + pad)
            mosaic[top:top + height, left:left + width] = instances[position].reshape(shape)
            if position == witness[bag]:
                frames.append((left, top))
    fig = Figure(figsize=(0.75 * max_instances + 2.2, 0.8 * len(chosen) + 0.8), layout="constrained")
    ax = fig.add_subplot()
    ax.imshow(mosaic, cmap="gray_r", interpolation="nearest")
    for left, top in frames:
        ax.add_patch(Rectangle((left - 0.8, top - 0.8), width + 0.6, height + 0.6, fill=False,
                               edgecolor="red", linewidth=2))
    ax.set_yticks([row * (height + pad) + height / 2 for row in range(len(chosen))],
                  [f"bag {bag}\ntrue {y[bag]}, pred. {predicted[bag]}" for bag in chosen], fontsize="small")
    ax.set_xticks([])
    ax.set_title("Bags and their witness instance (framed in red)")
    return fig


def coefficients_figure(coef, shape, classes) -> Figure:
    """Per-class weights drawn as images (pdMISVM paper, Fig. 7); red raises the class score."""
    coef = np.atleast_2d(np.asarray(coef, dtype=float))
    fig = Figure(figsize=(2.2 * coef.shape[0] + 0.8, 2.6), layout="constrained")
    axes = fig.subplots(1, coef.shape[0], squeeze=False)[0]
    limit = float(np.abs(coef).max()) or 1.0
    for ax, weights, label in zip(axes, coef, classes):
        image = ax.imshow(weights.reshape(shape), cmap="RdBu_r", vmin=-limit, vmax=limit)
        ax.set_title(f"class {label}")
        ax.set_axis_off()
    fig.colorbar(image, ax=list(axes), shrink=0.8)
    fig.suptitle("Learned coefficients per class (standardized pixels)")
    return fig

