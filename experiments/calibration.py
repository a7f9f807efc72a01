"""Calibration and conformal coverage of a learner's defaults, measured on outer folds the calibration never saw.

    python experiments/calibration.py DATA [DATA ...] [--learner mivlad] [--folds 5] [--inner 5] [--seed 0]
                                [--labels CSV] [--groups COLUMN]

For every outer fold (grouped when the data has groups) the learner's defaults are fitted on the other folds,
and calibrated as ``automil tune`` calibrates the model it registers: the calibration map from out-of-fold
scores of those training bags (an inner CV over them, grouped the same way), the prediction sets from the
held-apart model, the defaults fitted on the training bags less one inner fold (the inner CV's model of that
fold), whose scores of that fold are the conformity scores and which scores the outer fold
(:func:`automil.evaluation.calibrated.calibrate_model`). On the outer fold's bags it scores:

- the expected calibration error (top-label, 10 equal-width bins of the predicted class's probability),
  Brier score and log-loss of the calibrated probabilities, beside the same of the raw scores mapped to
  [0, 1] (decision scores through the logistic function, or softmax for more classes; probabilities as
  they are);
- the empirical coverage and mean set size of the conformal sets at 0.8, 0.9 and 0.95, marginal and
  class-conditional (Mondrian), with the band the guarantee allows: between the coverage and coverage +
  1 / (n + 1) in expectation (n the calibration bags held apart, patients with groups), give or take the
  binomial standard error of the test bags.

Prints one markdown table per data set: the mean over the outer folds.
"""

from __future__ import annotations

import argparse

import numpy as np

import automil
from automil.evaluation.calibrated import CalibrationBags, calibration_map, conformity, gives_probabilities, logits
from automil.evaluation.calibration_figures import held_out_figures
from automil.evaluation.conformal import prediction_sets
from automil.evaluation.folds import bag_folds, fold_splits, held_apart_split
from automil.evaluation.prediction import bag_scores
from automil.evaluation.standardized import Standardized
from automil.records.calibration import LEVELS, level_key


def inner_cv(spec, bags, inner: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    """The learner's defaults' scores of every bag from an inner CV over ``bags`` (grouped when they are), the
    inner fold assignment and each fold's model (fitted on the other folds)."""
    assignment = bag_folds(bags.y, inner, seed, bags.groups)
    scores, models = None, []
    for train, test in fold_splits(assignment):
        model = Standardized(spec.build(**spec.defaults, random_state=seed)).fit(bags.subset(train))
        fold = bag_scores(model, bags.subset(test))
        scores = np.empty((bags.n_bags, *fold.shape[1:])) if scores is None else scores
        scores[test] = fold
        models.append(model)
    return scores, assignment, models


def outer_fold(spec, bags, train, test, inner: int, seed: int) -> dict:
    """The figures of one outer fold: the model fitted on ``train``, calibrated on its inner out-of-fold scores
    and given the sets of its held-apart model as ``automil tune`` does
    (:func:`~automil.evaluation.calibration_figures.held_out_figures`), scored on ``test``; Mondrian coverage
    beside the marginal."""
    training, testing = bags.subset(train), bags.subset(test)
    model = Standardized(spec.build(**spec.defaults, random_state=seed)).fit(training)
    classes, probabilities = np.asarray(model.classes_), gives_probabilities(model)
    oof, assignment, models = inner_cv(spec, training, inner, seed)
    _, calibration, _ = held_apart_split(assignment)
    # the held-apart model: the inner fold's model, fitted on the training bags less that fold (as tune refits it)
    held_apart = models[int(assignment[calibration[0]])]
    sets = CalibrationBags(oof[calibration], training.y[calibration],
                           None if training.groups is None else training.groups[calibration])
    set_scores = bag_scores(held_apart, testing)
    held_out = held_out_figures(oof, training.y, bag_scores(model, testing), testing.y, classes, probabilities,
                                sets=sets, set_scores=set_scores)
    figures = {"n_calibration": held_out.calibration_bags, "n_test": testing.n_bags}
    for name, prefix in (("raw", "raw_"), ("calibrated", "")):
        for figure, key in (("ECE", "ece"), ("Brier", "brier"), ("log-loss", "log_loss")):
            figures[f"{name} {figure}"] = getattr(held_out, prefix + key)
    calibrator = calibration_map(oof, training.y, classes, probabilities)
    conformal = conformity(calibrator, sets, classes, probabilities)
    proba = calibrator.predict_proba(logits(set_scores, probabilities))
    y_index = np.searchsorted(classes, testing.y)
    for coverage in LEVELS:
        key = level_key(coverage)
        figures[f"coverage {coverage:g}"] = held_out.coverage[key]
        figures[f"size {coverage:g}"] = held_out.set_size[key]
        figures[f"class coverage {coverage:g}"] = min(c for c in held_out.class_coverage[key] if c is not None)
        made = prediction_sets(proba, conformal, coverage, mondrian=True)
        covered = made[np.arange(len(y_index)), y_index]
        figures[f"coverage {coverage:g} mondrian"] = covered.mean()
        figures[f"size {coverage:g} mondrian"] = made.sum(axis=1).mean()
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
        unit = "patients" if bags.groups is not None else "bags"
        print(f"\n{data}: {bags.n_bags} bags ({grouped}), {args.learner} at its defaults, {args.folds} outer folds "
              f"(about {n_test:.0f} test bags each), calibrated on {args.inner}-fold out-of-fold scores of the "
              f"training bags, sets from a model fitted without one inner fold (about {n_cal:.0f} {unit} held apart)")
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
