"""The calibration figures of held-out bags (:class:`~automil.records.calibration.CalibrationFigures`): the
calibration map fitted on out-of-fold scores of the training bags only, the conformal quantile on a held-apart
model's scores of its calibration bags, then the calibration error, Brier score, log-loss and the conformal
sets' coverage measured on bags none of them saw. No fit of a learner: scores in, figures out."""

from __future__ import annotations

import functools

import numpy as np
from scipy.special import expit, softmax
from threadpoolctl import ThreadpoolController

from automil.evaluation.calibrated import CalibrationBags, HeldApart, calibration_map, conformity, logits
from automil.evaluation.conformal import prediction_sets
from automil.records.calibration import BIN_WIDTH, LEVELS, CalibrationFigures, ReliabilityBin, level_key

__all__ = ["raw_probabilities", "reliability_bins", "brier_score", "log_loss", "expected_calibration_error",
           "held_out_figures", "split_figures", "pooled"]

_BINS = round(1 / BIN_WIDTH)


@functools.cache
def _threads() -> ThreadpoolController:
    """The process's thread pools, found once (finding them takes some 20 ms; limiting them, none)."""
    return ThreadpoolController()


def raw_probabilities(scores, probabilities: bool) -> np.ndarray:
    """Scores (as :func:`~automil.evaluation.prediction.bag_scores` gives them) mapped to [0, 1] without a
    calibration map, shape ``(n_bags, n_classes)``: probabilities as they are, decision scores through the
    logistic function (two classes) or softmax (more). :func:`held_out_figures` takes decision scores that
    are probabilities already as probabilities."""
    scores = np.asarray(scores, dtype=np.float64)
    if not probabilities:
        scores = softmax(scores, axis=1) if scores.ndim == 2 else expit(scores)
    return scores if scores.ndim == 2 else np.column_stack([1 - scores, scores])


def _probability_like(*scores) -> bool:
    """Whether decision scores are probabilities already (every one in [0, 1], each row summing to 1 for more
    than two classes): a learner whose ``decision_function`` is its classifier's ``predict_proba`` (bag-stats
    with a forest), whose raw scores the logistic function would squeeze into [0.5, 0.73]."""
    arrays = [np.asarray(s, dtype=np.float64) for s in scores]
    if not all(((a >= 0) & (a <= 1)).all() for a in arrays):
        return False
    return all(a.ndim == 1 or np.allclose(a.sum(axis=1), 1.0) for a in arrays)


def reliability_bins(proba, y_index) -> list[ReliabilityBin]:
    """The reliability diagram's non-empty bins of the predicted class's probability (top-label). By hand,
    not scikit-learn's ``calibration_curve``: it returns neither the bags of a bin nor which bin, and
    pooling outer folds and weighting the ECE need both."""
    proba, y_index = np.asarray(proba, dtype=np.float64), np.asarray(y_index)
    confidence = proba.max(axis=1)
    correct = (proba.argmax(axis=1) == y_index).astype(np.float64)
    which = np.minimum((confidence * _BINS).astype(int), _BINS - 1)
    bags = np.bincount(which, minlength=_BINS)
    sums = np.bincount(which, weights=confidence, minlength=_BINS), np.bincount(which, weights=correct, minlength=_BINS)
    return [ReliabilityBin(round(b * BIN_WIDTH, 10), int(bags[b]), float(sums[0][b] / bags[b]),
                           float(sums[1][b] / bags[b])) for b in np.flatnonzero(bags)]


# Brier score and log-loss as scikit-learn's ``brier_score_loss`` and ``log_loss`` define them (the tests hold
# them equal), in numpy: their input checks take some 20 ms a call, a hundred times the arithmetic, and the final
# evaluation needs four for every learner's every outer fold.
def brier_score(proba, y_index) -> float:
    """The mean squared distance of ``proba`` from the one-hot true classes, halved for two classes (the classic
    binary score; scikit-learn's ``scale_by_half="auto"``)."""
    proba = np.asarray(proba, dtype=np.float64)
    onehot = np.eye(proba.shape[1])[np.asarray(y_index)]
    return float(np.square(proba - onehot).sum(axis=1).mean() / (2 if proba.shape[1] == 2 else 1))


def log_loss(proba, y_index) -> float:
    """The mean negative log-probability of the true classes (``proba`` rows summing to 1)."""
    proba = np.asarray(proba, dtype=np.float64)
    return float(-np.log(np.clip(proba[np.arange(len(proba)), np.asarray(y_index)], 1e-15, None)).mean())


def expected_calibration_error(bins: list[ReliabilityBin]) -> float:
    """The bag-weighted mean gap between accuracy and confidence over the ``bins``."""
    total = sum(b.bags for b in bins)
    return float(sum(b.bags * abs(b.accuracy - b.confidence) for b in bins) / total) if total else float("nan")


def held_out_figures(calibration_scores, calibration_y, test_scores, test_y, classes, probabilities: bool,
                     raw=None, sets: CalibrationBags | None = None, set_scores=None) -> CalibrationFigures:
    """The figures of held-out bags with scores ``test_scores`` and labels ``test_y``, the calibration map fitted
    on out-of-fold ``calibration_scores`` of training bags labelled ``calibration_y`` exactly as the logged
    model's (:func:`~automil.evaluation.calibrated.calibrate_model`). ``raw``: the held-out bags' uncalibrated
    probabilities, when they are not :func:`raw_probabilities` of their scores (an ensemble's average).
    With the calibration bags ``sets`` of a held-apart model and its ``set_scores`` of the held-out bags, the
    coverage of its prediction sets too (the figures have none without). ``ValueError`` when a class has no
    calibration bag."""
    classes = np.asarray(classes)
    with _threads().limit(limits=1):  # a fit of one or two parameters: more BLAS threads only wait on each other
        calibrator = calibration_map(calibration_scores, calibration_y, classes, probabilities)
        proba = calibrator.predict_proba(logits(test_scores, probabilities))
    if raw is None:
        raw = raw_probabilities(test_scores, probabilities or _probability_like(calibration_scores, test_scores))
    raw = np.asarray(raw, dtype=np.float64)
    y_index = np.searchsorted(classes, np.asarray(test_y))
    figures = {}
    for prefix, p in (("", proba), ("raw_", raw)):
        p = np.clip(p, 1e-12, 1.0)
        p = p / p.sum(axis=1, keepdims=True)
        bins = reliability_bins(p, y_index)
        figures |= {f"{prefix}reliability": bins, f"{prefix}ece": expected_calibration_error(bins),
                    f"{prefix}brier": brier_score(p, y_index), f"{prefix}log_loss": log_loss(p, y_index)}
    class_bags = np.bincount(y_index, minlength=len(classes))
    if sets is not None:
        figures |= _set_figures(calibrator, sets, set_scores, y_index, classes, probabilities)
    return CalibrationFigures(held_out_bags=len(y_index), class_bags=class_bags.tolist(), **figures)


def _set_figures(calibrator, sets: CalibrationBags, set_scores, y_index, classes, probabilities: bool) -> dict:
    """The coverage figures of :class:`CalibrationFigures` of the prediction sets of held-out bags (true class
    indices ``y_index``) scored ``set_scores`` by the held-apart model whose calibration bags are ``sets``."""
    conformal = conformity(calibrator, sets, classes, probabilities)
    proba = calibrator.predict_proba(logits(set_scores, probabilities))
    class_bags = np.bincount(y_index, minlength=len(classes))
    made = {level_key(c): prediction_sets(proba, conformal, c) for c in LEVELS}
    covered = {key: s[np.arange(len(y_index)), y_index] for key, s in made.items()}
    return dict(calibration_bags=float(conformal.weights.sum()),
                coverage={key: float(c.mean()) for key, c in covered.items()},
                set_size={key: float(s.sum(axis=1).mean()) for key, s in made.items()},
                abstention={key: float((s.sum(axis=1) > 1).mean()) for key, s in made.items()},
                class_coverage={key: [float(c[y_index == k].mean()) if class_bags[k] else None
                                      for k in range(len(classes))] for key, c in covered.items()})


def split_figures(bags, order, test, oof, scores, probabilities: bool, raw=None,
                  held_apart: HeldApart | None = None) -> CalibrationFigures | None:
    """:func:`held_out_figures` of the ``test`` bags of ``bags`` (their ``scores``, and ``raw`` probabilities
    when given), calibrated on the out-of-fold scores ``oof`` of the bags ``order``; with a ``held_apart`` fit
    that scored them and its calibration bags, the coverage of its sets (grouped as the bags are). Bags a fit
    left without a score are left out; ``None`` when no held-out bag has one, or the calibration bags miss a
    class."""
    oof, scores = np.asarray(oof, dtype=np.float64), np.asarray(scores, dtype=np.float64)
    kept = np.isfinite(oof.reshape(len(oof), -1)).all(axis=1)
    scored = np.isfinite(scores.reshape(len(scores), -1)).all(axis=1)
    if not scored.any():
        return None
    order, test = np.asarray(order)[kept], np.asarray(test)[scored]
    sets = None if held_apart is None else held_apart.bags(bags)
    try:
        return held_out_figures(oof[kept], bags.y[order], scores[scored], bags.y[test], bags.classes, probabilities,
                                None if raw is None else np.asarray(raw)[scored], sets,
                                None if held_apart is None else held_apart.scores[test])
    except ValueError:
        return None


def pooled(splits: list[CalibrationFigures | None]) -> CalibrationFigures | None:
    """The figures of every held-out bag of the ``splits`` at once (``None`` ones left out; ``None`` without
    any): each bag weighs the same, so Brier score, log-loss, coverage, set size and abstention are the
    splits' bag-weighted means, the bins are merged and the ECE computed from them, and ``calibration_bags``
    is the splits' mean. Coverage only when every split has it: a part of the bags is no measure of it."""
    splits = [s for s in splits if s is not None]
    if not splits:
        return None
    bags = np.array([s.held_out_bags for s in splits], dtype=np.float64)
    class_bags = np.sum([s.class_bags for s in splits], axis=0)

    def mean(values) -> float:
        return float(np.dot(bags, values) / bags.sum())

    def class_mean(key: str) -> list[float | None]:
        covered = np.sum([np.nan_to_num(np.array(s.class_coverage[key], dtype=np.float64)) * s.class_bags
                          for s in splits], axis=0)
        return [float(c / n) if n else None for c, n in zip(covered, class_bags, strict=True)]

    figures = {}
    for prefix in ("", "raw_"):
        bins = _merged([getattr(s, f"{prefix}reliability") for s in splits])
        figures |= {f"{prefix}reliability": bins, f"{prefix}ece": expected_calibration_error(bins),
                    f"{prefix}brier": mean([getattr(s, f"{prefix}brier") for s in splits]),
                    f"{prefix}log_loss": mean([getattr(s, f"{prefix}log_loss") for s in splits])}
    if all(s.coverage for s in splits):
        keys = list(splits[0].coverage)
        figures |= dict(calibration_bags=float(np.mean([s.calibration_bags for s in splits])),
                        coverage={k: mean([s.coverage[k] for s in splits]) for k in keys},
                        set_size={k: mean([s.set_size[k] for s in splits]) for k in keys},
                        abstention={k: mean([s.abstention[k] for s in splits]) for k in keys},
                        class_coverage={k: class_mean(k) for k in keys})
    return CalibrationFigures(held_out_bags=int(bags.sum()), class_bags=class_bags.astype(int).tolist(), **figures)


def _merged(parts: list[list[ReliabilityBin]]) -> list[ReliabilityBin]:
    """The bins of several sets of bags, as one set's: bags summed, means weighted by bags."""
    merged = {}
    for part in parts:
        for b in part:
            bags, confidence, accuracy = merged.get(b.low, (0, 0.0, 0.0))
            merged[b.low] = (bags + b.bags, confidence + b.bags * b.confidence, accuracy + b.bags * b.accuracy)
    return [ReliabilityBin(low, bags, confidence / bags, accuracy / bags)
            for low, (bags, confidence, accuracy) in sorted(merged.items())]
