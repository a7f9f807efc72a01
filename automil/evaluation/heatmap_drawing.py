"""Where a model finds the evidence: every instance's score drawn at its position (``coords``), one picture and
one table per bag (per slide of a bag pooling several). What ``automil predict --heatmaps`` writes."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.bags import Bags
from automil.evaluation.prediction import BagPrediction

__all__ = ["HeatmapFiles", "instance_evidence", "write_heatmaps"]

_UNSAFE = re.compile(r"[^\w.-]+")


@dataclass(frozen=True)
class HeatmapFiles:
    """What was written for one bag: its table, and its picture (``None`` without coords)."""

    bag: str
    table: Path
    picture: Path | None


def instance_evidence(model, bags: Bags, predictions: list[BagPrediction]) -> tuple[np.ndarray, list]:
    """Every instance's score from the learner's ``instance_scores``, shape ``(n_instances,)``, and the class
    it is the score of, per bag: the second class for two (the same scale on every bag: "how tumour-like"),
    else the bag's predicted class."""
    if not hasattr(model, "instance_scores"):
        raise ValueError(f"{_described(model)} gives no instance scores, so there is nothing to draw: heatmaps "
                         f"need a model of a learner with instance scores ({', '.join(_scoring_learners())}) "
                         "or an ensemble with one among its members")
    scores = np.asarray(model.instance_scores(bags), dtype=np.float64)
    classes = list(np.asarray(model.classes_))
    shown = [classes[-1] if len(classes) == 2 else p.label for p in predictions]
    columns = np.array([classes.index(c) for c in shown])
    return scores[np.arange(bags.n_instances), np.repeat(columns, bags.sizes)], shown


def _described(model) -> str:
    """The model as the user chose it: its learner's class, or the ensemble and its members."""
    if hasattr(model, "calibrators"):  # an Ensemble, through Calibrated or not
        return "the ensemble" + (f" of {', '.join(map(str, model.names))}" if model.names else "")
    return type(getattr(model, "estimator_", model)).__name__


def _scoring_learners() -> list[str]:
    """The registered learners whose models give instance scores."""
    from automil import plugins

    return sorted((spec.name for spec in plugins.learners().values() if spec.instance_scores), key=str.lower)


def write_heatmaps(model, bags: Bags, predictions: list[BagPrediction], out) -> list[HeatmapFiles]:
    """For every bag, ``OUT/<bag>.csv`` (``instance, x, y, score``; ``instance, score`` without coords) and,
    when the bags have coords, ``OUT/<bag>.png``: the scores at their positions on one colour scale per
    bag, the bag's label, prediction and score in the title. A bag of several slides (``--bag-by``) is drawn
    slide by slide, ``OUT/<slide>.csv`` and ``.png`` (each slide's coords are its own)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    evidence, shown = instance_evidence(model, bags, predictions)
    written = []
    for i, prediction in enumerate(predictions):
        name = f"bag-{i}" if bags.names is None else str(bags.names[i])
        for piece, rows in _pieces(bags, i, name):
            stem = _UNSAFE.sub("_", piece) or f"bag-{i}"
            coords = None if bags.coords is None else bags.coords[rows]
            table = out / f"{stem}.csv"
            _write_table(table, evidence[rows], coords)
            picture = None
            if coords is not None:
                picture = out / f"{stem}.png"
                title = _title(name if piece == name else f"{piece} of {name}", prediction)
                _draw(picture, coords, evidence[rows], title, f"instance score of {shown[i]}")
            written.append(HeatmapFiles(name, table, picture))
    return written


def _pieces(bags: Bags, i: int, name: str) -> list[tuple[str, slice]]:
    """The rows of bag ``i`` drawn as one picture each: the bag's, or each of its slides' (consecutive rows)."""
    start, stop = int(bags.offsets[i]), int(bags.offsets[i + 1])
    if bags.instance_slides is None:
        return [(name, slice(start, stop))]
    slides = bags.instance_slides[start:stop]
    bounds = [start, *(start + np.flatnonzero(np.diff(slides)) + 1), stop]
    return [(str(bags.slide_names[slides[a - start]]), slice(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _write_table(path: Path, scores: np.ndarray, coords: np.ndarray | None) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        if coords is None:
            writer.writerow(("instance", "score"))
            writer.writerows((j, f"{s:.6g}") for j, s in enumerate(scores))
        else:
            writer.writerow(("instance", "x", "y", "score"))
            writer.writerows((j, _number(x), _number(y), f"{s:.6g}")
                             for j, ((x, y), s) in enumerate(zip(coords, scores, strict=True)))


def _title(name: str, prediction: BagPrediction) -> str:
    score = "" if prediction.scores is None else f" ({prediction.scores[str(prediction.label)]:.3g})"
    truth = "" if prediction.truth is None else f"label {prediction.truth}, "
    return f"{name}\n{truth}predicted {prediction.label}{score}"


def _draw(path: Path, coords: np.ndarray, scores: np.ndarray, title: str, label: str) -> None:
    """The scores as a grid of patches: each instance fills the cell of its coords (the patch step is the
    smallest gap between distinct coordinates), the rest of the slide is left blank."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no window, a figure freed with its object

    step = _step(coords)
    origin = coords.min(axis=0)
    cells = np.rint((coords - origin) / step).astype(np.int64)
    grid = np.full((cells[:, 1].max() + 1, cells[:, 0].max() + 1), np.nan)
    grid[cells[:, 1], cells[:, 0]] = scores
    width, height = grid.shape[1] * step, grid.shape[0] * step
    figure = Figure(figsize=(6.4, 6.4 * height / width + 0.6))
    axes = figure.subplots()
    image = axes.imshow(grid, cmap="magma", interpolation="nearest", vmin=scores.min(), vmax=scores.max(),
                        extent=(origin[0], origin[0] + width, origin[1] + height, origin[1]))
    axes.set_facecolor("0.85")  # no tissue: grey, outside the colour scale
    axes.set_title(title, fontsize=10)
    axes.set_xlabel("x (pixels)")
    axes.set_ylabel("y (pixels)")
    figure.colorbar(image, ax=axes, label=label, shrink=0.8)
    figure.savefig(path, dpi=80, bbox_inches="tight")


def _step(coords: np.ndarray) -> float:
    gaps = [np.diff(np.unique(coords[:, axis])) for axis in range(2)]
    gaps = np.concatenate([g[g > 0] for g in gaps])
    return float(gaps.min()) if gaps.size else 1.0


def _number(value) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"
