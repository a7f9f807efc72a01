"""Calibration and conformal coverage of a learner's defaults, measured on outer folds the calibration never saw.

    python bench/calibration.py DATA [DATA ...] [--learner mivlad] [--folds 5] [--inner 5] [--seed 0]
                                [--labels CSV] [--groups COLUMN]

For every outer fold (grouped when the data has groups) the learner's defaults are fitted on the other folds,
and the calibration map and conformity scores come, as for the model ``automil tune`` registers, from
out-of-fold scores of those training bags (an inner CV over them, grouped the same way:
:func:`automil.evaluation.calibrated.calibrate_model`). On the outer fold's bags it scores:

- the expected calibration error (top-label, 10 equal-width bins of the predicted class's probability),
  Brier score and log-loss of the calibrated probabilities, beside the same of the raw scores mapped to
  [0, 1] (decision scores through the logistic function, or softmax for more classes; probabilities as
  they are);
- the empirical coverage and mean set size of the conformal sets at 0.8, 0.9 and 0.95, marginal and
  class-conditional (Mondrian), with the band the guarantee allows: between the coverage and coverage +
  1 / (n + 1) in expectation (n the calibration bags), give or take the binomial standard error of the
  test bags.

Prints one markdown table per data set: the mean over the outer folds.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import expit, softmax
from sklearn.metrics import brier_score_loss, log_loss

import automil
from automil.evaluation.calibrated import calibrate_model
from automil.evaluation.folds import bag_folds, fold_splits
from automil.evaluation.prediction import bag_scores
from automil.evaluation.standardized import Standardized

COVERAGES = (0.8, 0.9, 0.95)
BINS = 10


def expected_calibration_error(proba: np.ndarray, y_index: np.ndarray) -> float:
    """Top-label ECE: the bag-weighted mean gap between accuracy and confidence over 10 equal-width bins."""
    confidence, predicted = proba.max(axis=1), proba.argmax(axis=1)
    correct = predicted == y_index
    bins = np.minimum((confidence * BINS).astype(int), BINS - 1)
    return float(sum(abs(correct[bins == b].mean() - confidence[bins == b].mean()) * np.mean(bins == b)
                     for b in np.unique(bins)))


def raw_probabilities(model, bags) -> np.ndarray:
    """The model's scores mapped to [0, 1] without calibration, shape ``(n_bags, n_classes)``."""
    scores = bag_scores(model, bags)
    if not hasattr(model, "decision_function"):
        return scores if scores.ndim == 2 else np.column_stack([1 - scores, scores])
    return softmax(scores, axis=1) if scores.ndim == 2 else np.column_stack([expit(-scores), expit(scores)])


def out_of_fold_scores(spec, bags, inner: int, seed: int) -> np.ndarray:
    """The learner's defaults' scores of every bag from an inner CV over ``bags`` (grouped when they are)."""
    assignment = bag_folds(bags.y, inner, seed, bags.groups)
    scores = None
    for train, test in fold_splits(assignment):
        model = Standardized(spec.build(**spec.defaults, random_state=seed)).fit(bags.subset(train))
        fold = bag_scores(model, bags.subset(test))
        scores = np.empty((bags.n_bags, *fold.shape[1:])) if scores is None else scores
        scores[test] = fold
    return scores


def outer_fold(spec, bags, train, test, inner: int, seed: int) -> dict:
    """The figures of one outer fold: the model fitted on ``train``, calibrated on its inner out-of-fold
    scores, scored on ``test``."""
    training, testing = bags.subset(train), bags.subset(test)
    model = Standardized(spec.build(**spec.defaults, random_state=seed)).fit(training)
    calibrated = calibrate_model(model, out_of_fold_scores(spec, training, inner, seed), training.y,
                                 training.groups)
    classes = np.asarray(model.classes_)
    y_index = np.searchsorted(classes, testing.y)
    labels = np.arange(len(classes))
    figures = {"n_calibration": training.n_bags, "n_test": testing.n_bags}
    for name, proba in (("raw", raw_probabilities(model, testing)), ("calibrated", calibrated.predict_proba(testing))):
        proba = np.clip(proba, 1e-12, 1.0)
        proba = proba / proba.sum(axis=1, keepdims=True)
        figures[f"{name} ECE"] = expected_calibration_error(proba, y_index)
        figures[f"{name} Brier"] = brier_score_loss(y_index, proba, labels=labels)
        figures[f"{name} log-loss"] = log_loss(y_index, proba, labels=labels)
    proba = calibrated.predict_proba(testing)
    for coverage in COVERAGES:
        for mondrian in (False, True):
            sets = calibrated.predict_set(testing, coverage, mondrian, proba=proba)
            covered = sets[np.arange(len(y_index)), y_index]
            key = f"{coverage:g}{' mondrian' if mondrian else ''}"
            figures[f"coverage {key}"] = covered.mean()
            figures[f"size {key}"] = sets.sum(axis=1).mean()
            figures[f"class coverage {key}"] = min(covered[y_index == k].mean() for k in np.unique(y_index))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+", help="dataset names, files or slide folders")
    parser.add_argument("--learner", default="mivlad")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--labels", help="a slide folder's labels CSV")
    parser.add_argument("--groups", help="its column of every slide's group (default: case_id when present)")
    args = parser.parse_args()
    spec = automil.get_learner(args.learner)
    for data in args.data:
        bags = automil.load_bags(data, labels=args.labels, groups=args.groups)
        assignment = bag_folds(bags.y, args.folds, args.seed, bags.groups)
        folds = [outer_fold(spec, bags, train, test, args.inner, args.seed) for train, test in fold_splits(assignment)]
        mean = {key: float(np.mean([f[key] for f in folds])) for key in folds[0]}
        n_cal, n_test = mean["n_calibration"], mean["n_test"]
        grouped = "grouped" if bags.groups is not None else "not grouped"
        print(f"\n{data}: {bags.n_bags} bags ({grouped}), {args.learner} at its defaults, {args.folds} outer folds "
              f"(about {n_test:.0f} test bags each), calibrated on {args.inner}-fold out-of-fold scores of about "
              f"{n_cal:.0f} training bags")
        print("| | ECE | Brier | log-loss |\n|---|---:|---:|---:|")
        for name in ("raw", "calibrated"):
            cells = " | ".join(f"{mean[f'{name} {figure}']:.3f}" for figure in ("ECE", "Brier", "log-loss"))
            print(f"| {name} | {cells} |")
        print("| coverage | allowed band | binomial SE | marginal | set size | worst class | Mondrian | set size "
              "| worst class |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for c in COVERAGES:
            se = np.sqrt(c * (1 - c) / (n_test * args.folds))  # of the mean over every test bag
            print(f"| {c:g} | {c:g} to {c + 1 / (n_cal + 1):.3f} | {se:.3f} | {mean[f'coverage {c:g}']:.3f} | "
                  f"{mean[f'size {c:g}']:.2f} | {mean[f'class coverage {c:g}']:.3f} | "
                  f"{mean[f'coverage {c:g} mondrian']:.3f} | {mean[f'size {c:g} mondrian']:.2f} | "
                  f"{mean[f'class coverage {c:g} mondrian']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
