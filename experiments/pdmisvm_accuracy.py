"""pdMISVM accuracy without tuning: one stratified 10-fold CV (seed 0) per data set, features standardized on
the training folds' instances (zero sd -> 1). The table of docs/accuracy-pdmisvm.md.

Run: python experiments/pdmisvm_accuracy.py [--settings learner|code|readme] [--learners a,b] [dataset ...]

- ``learner`` (default): the registered learners' defaults (what ``automil`` uses untuned);
- ``code``: the reference code's defaults (C=1, mu0=1e-3, rho=1.2 for both variants);
- ``readme``: the (C, mu0) the authors' README lists per data set (docs/algorithms.md 2.6), for context only:
  they were chosen on the published folds, so they are not a fair score.

``--learners`` compares other registered learners on the same folds (``learner`` settings only), e.g.
``--learners pdmisvm,mi-svm sival`` for the multi-class target of docs/published.md, section 4.
"""

from __future__ import annotations

import argparse

import numpy as np

import automil
from automil.evaluation.cross_validation import cross_validated_predictions

DATASETS = ("musk1", "musk2", "elephant", "fox", "tiger", "digits-bags")
LEARNERS = ("pdmisvm", "pdmisvm-inexact")
# docs/algorithms.md 2.6: the authors' tuned (C, mu0) with rho = 1.2; digits-bags stands in for MNIST-bags.
README_SETTINGS = {
    "pdmisvm": {"musk2": (1e3, 1e-5), "elephant": (1e-3, 1e-3), "fox": (100, 1e-3), "tiger": (1e-3, 1e-3),
                "digits-bags": (1, 1e-3)},
    "pdmisvm-inexact": {"musk2": (1e10, 1e-10), "elephant": (0.01, 1e-6), "fox": (1e3, 1e-6),
                        "tiger": (10, 1e-6), "digits-bags": (1e8, 1e-5)},
}


def build(learner: str, dataset: str, settings: str):
    """The unfitted estimator, or ``None`` where the README lists no setting."""
    spec = automil.get_learner(learner)
    if settings == "learner":
        return spec.build()
    if settings == "code":
        return spec.estimator()
    if dataset not in README_SETTINGS.get(learner, {}):
        return None
    C, mu0 = README_SETTINGS[learner][dataset]
    return spec.estimator(C=C, mu0=mu0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", choices=("learner", "code", "readme"), default="learner")
    parser.add_argument("--learners", default=",".join(LEARNERS))
    parser.add_argument("datasets", nargs="*", default=DATASETS)
    args = parser.parse_args()
    learners = args.learners.split(",")
    print(f"settings: {args.settings}")
    print(f"| data set | {' | '.join(learners)} | fit + predict seconds, 10 folds ({' / '.join(learners)}) |")
    print(f"|---|{'---|' * len(learners)}---|")
    for name in args.datasets:
        bags = automil.load_bags(name)
        cells, times = [], []
        for learner in learners:
            estimator = build(learner, name, args.settings)
            accuracy, seconds = None, None
            if estimator is not None:
                predicted, _, seconds = cross_validated_predictions(estimator, bags)
                accuracy = float(np.mean(predicted == bags.y))
            cells.append("-" if accuracy is None else f"{100 * accuracy:.1f}")
            times.append("-" if seconds is None else f"{seconds:.1f}")
        print(f"| {name} | {' | '.join(cells)} | {' / '.join(times)} |", flush=True)


if __name__ == "__main__":
    main()
