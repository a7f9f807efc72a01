"""The deep learners at their defaults on generated slide cohorts, beside the max-pooling oracle.

A cohort is written by ``automil_datasets.slides.write_slide_set`` (CLAM layout): ``--cases`` patients of 2
or 3 slides each (110 cases: about 270 slides), ~160 patches of ``--features`` features a slide, every slide
of a tumour case holding a disc of witness patches of ``--witness-radius`` patches (1: 5 patches, about 3 %
of a slide) shifted along one direction, and a per-patient offset on every patch. Each learner runs 5-fold CV
grouped by patient (``automil.bag_folds(y, 5, seed, groups)``, instances standardized on the training folds,
the learner at its defaults with ``random_state`` = the CV seed); a cell is the ROC AUC of the positive
class's probability, the mean over the 5 test folds, and the number of folds in which every slide was given
one class. The oracle scores a slide by its largest patch projection on the generator's tumour direction
(the first draw of the generator's seeded random stream), without training, on the same folds.

    OMP_NUM_THREADS=1 python experiments/deep_cohorts.py [--learners abmil dsmil transmil] [--cohorts 0 1]
        [--witness-radius 1] [--cv-seeds 0] [--set learning_rate=2e-3 min_epochs=1 ...]

``--set`` overrides a default of every learner run (e.g. ``min_epochs=1 class_weight=None
learning_rate=2e-3`` is the training before the minimum epochs and the class weights).
"""

from __future__ import annotations

import argparse
import ast
import tempfile
import time

import numpy as np
from sklearn.metrics import roc_auc_score

import automil
from automil.evaluation.standardized import Standardized
from automil_datasets.slides import CLASSES, write_slide_set

N_FOLDS = 5
POSITIVE = CLASSES[1]  # tumor_tissue


def cohort(root, seed: int, n_cases: int, n_features: int, witness_radius: float):
    """The cohort's bags (grouped by case) and the generator's tumour direction."""
    written = write_slide_set(root, "clam", n_cases, n_features, seed, pt=False, witness_radius=witness_radius)
    bags = automil.load_bags(written.features, labels=str(written.labels), groups="case_id")
    direction = np.random.default_rng(seed).standard_normal(n_features)  # write_slide_set's first draw
    return bags, direction / np.linalg.norm(direction)


def fold_aucs(y, scores, folds) -> np.ndarray:
    positive = np.asarray(y) == POSITIVE
    return np.array([roc_auc_score(positive[folds == f], scores[folds == f]) for f in range(N_FOLDS)])


def learner_cell(name: str, bags, folds, seed: int, settings: dict) -> tuple[np.ndarray, int, float, list]:
    """Per-fold ROC AUC, folds predicted as one class, seconds, and the epochs each fold's fit ran."""
    estimator = automil.get_learner(name).build(random_state=seed, **settings)
    scores = np.empty(bags.n_bags)
    one_class, epochs = 0, []
    start = time.process_time()
    for f in range(N_FOLDS):
        train, test = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
        model = Standardized(estimator).fit(bags.subset(train))
        positive = list(model.classes_).index(POSITIVE)
        proba = model.predict_proba(bags.subset(test))
        scores[test] = proba[:, positive]
        one_class += len(np.unique(proba.argmax(axis=1))) == 1
        epochs.append(model.estimator_.n_epochs_)
    return fold_aucs(bags.y, scores, folds), one_class, time.process_time() - start, epochs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="*", default=["abmil", "dsmil", "transmil"])
    parser.add_argument("--cohorts", type=int, nargs="+", default=[1], help="generator seeds")
    parser.add_argument("--cases", type=int, default=110)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--witness-radius", type=float, default=1.0)
    parser.add_argument("--cv-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    settings = {k: ast.literal_eval(v) for k, v in (item.split("=", 1) for item in args.set)}
    print(f"5-fold CV grouped by case, ROC AUC mean over folds (folds predicted one class; CPU s; epochs per "
          f"fold); settings {settings or 'defaults'}", flush=True)
    for seed in args.cohorts:
        with tempfile.TemporaryDirectory() as root:
            bags, direction = cohort(root, seed, args.cases, args.features, args.witness_radius)
        oracle = np.maximum.reduceat(np.asarray(bags.X, dtype=np.float64) @ direction, bags.offsets[:-1])
        print(f"cohort seed {seed}: {bags.n_bags} slides, {len(np.unique(bags.groups))} cases, "
              f"{int((bags.y == POSITIVE).sum())} tumour, {bags.n_instances} patches, "
              f"witness radius {args.witness_radius}")
        for cv_seed in args.cv_seeds:
            folds = automil.bag_folds(bags.y, N_FOLDS, cv_seed, bags.groups)
            print(f"  cv seed {cv_seed}: oracle {fold_aucs(bags.y, oracle, folds).mean():.3f}", flush=True)
            for name in args.learners:
                aucs, one_class, seconds, epochs = learner_cell(name, bags, folds, cv_seed, settings)
                print(f"  cv seed {cv_seed}: {name:9s} {aucs.mean():.3f} ({one_class} one-class; {seconds:.0f} s;"
                      f" epochs {epochs}) folds {np.round(aucs, 2).tolist()}", flush=True)


if __name__ == "__main__":
    main()
