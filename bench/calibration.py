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

import automil
from automil.evaluation.calibrated import calibration, gives_probabilities, logits
from automil.evaluation.calibration_figures import held_out_figures
from automil.evaluation.conformal import prediction_sets
from automil.evaluation.folds import bag_folds, fold_splits
from automil.evaluation.prediction import bag_scores
from automil.evaluation.standardized import Standardized
from automil.records.calibration import LEVELS, level_key


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
    scores as ``automil tune`` calibrates (:func:`~automil.evaluation.calibration_figures.held_out_figures`),
    scored on ``test``; Mondrian coverage beside the marginal."""
    training, testing = bags.subset(train), bags.subset(test)
    model = Standardized(spec.build(**spec.defaults, random_state=seed)).fit(training)
    classes, probabilities = np.asarray(model.classes_), gives_probabilities(model)
    oof, scores = out_of_fold_scores(spec, training, inner, seed), bag_scores(model, testing)
    held_out = held_out_figures(oof, training.y, scores, testing.y, classes, probabilities, training.groups)
    figures = {"n_calibration": training.n_bags, "n_test": testing.n_bags}
    for name, prefix in (("raw", "raw_"), ("calibrated", "")):
        for figure, key in (("ECE", "ece"), ("Brier", "brier"), ("log-loss", "log_loss")):
            figures[f"{name} {figure}"] = getattr(held_out, prefix + key)
    calibrator, conformal = calibration(oof, training.y, classes, probabilities, training.groups)
    proba = calibrator.predict_proba(logits(scores, probabilities))
    y_index = np.searchsorted(classes, testing.y)
    for coverage in LEVELS:
        key = level_key(coverage)
        figures[f"coverage {coverage:g}"] = held_out.coverage[key]
        figures[f"size {coverage:g}"] = held_out.set_size[key]
        figures[f"class coverage {coverage:g}"] = min(c for c in held_out.class_coverage[key] if c is not None)
        sets = prediction_sets(proba, conformal, coverage, mondrian=True)
        covered = sets[np.arange(len(y_index)), y_index]
        figures[f"coverage {coverage:g} mondrian"] = covered.mean()
        figures[f"size {coverage:g} mondrian"] = sets.sum(axis=1).mean()
        figures[f"class coverage {coverage:g} mondrian"] = min(covered[y_index == k].mean() for k in np.unique(y_index))
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
        for c in LEVELS:
            se = np.sqrt(c * (1 - c) / (n_test * args.folds))  # of the mean over every test bag
            print(f"| {c:g} | {c:g} to {c + 1 / (n_cal + 1):.3f} | {se:.3f} | {mean[f'coverage {c:g}']:.3f} | "
                  f"{mean[f'size {c:g}']:.2f} | {mean[f'class coverage {c:g}']:.3f} | "
                  f"{mean[f'coverage {c:g} mondrian']:.3f} | {mean[f'size {c:g} mondrian']:.2f} | "
                  f"{mean[f'class coverage {c:g} mondrian']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
