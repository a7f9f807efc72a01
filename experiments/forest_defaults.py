"""Would choosing MIRF's defaults (its ``first_trial``) by accuracy beat them? A few candidate settings, each a
point of MIRF's search space, scored on every kind of shared data (image regions, molecules, text, generated
bags), and the rule "the best mean" evaluated leave-one-data-set-out: for each data set, the candidate with the
best mean on the *other* sets, scored on that set. Those held-out figures are what the rule is worth on data it
did not see, against the defaults' row (the first candidate). The instance-level forest (scikit-learn's, 300
trees, on instances labelled by their bag) is printed beside them for reference; it is not a candidate.

    python experiments/forest_defaults.py --out rows.jsonl [--datasets musk1 ...] [--candidates ...] [--seeds 0 1]
    python experiments/forest_defaults.py --summary rows.jsonl [more.jsonl ...]

A run appends one JSON line per (candidate, data set, seed) as it goes, so a long run can be split over
processes by data set and summarized from all their files. Score: balanced accuracy % of the out-of-fold
predictions of one stratified 5-fold CV over bags per seed (the tuner's metric), one thread per fit.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from forest_accuracy import load  # experiments/ is on sys.path when this script runs
from forest_baseline import instance_forest_predict
from sklearn.metrics import balanced_accuracy_score

import automil
from automil import bag_folds, fold_splits
from automil.evaluation.cross_validation import cross_validated_predictions

DATASETS = ("elephant", "fox", "tiger", "sival", "musk1", "musk2", "hockey", "synthetic", "digits-bags")
CANDIDATES = {
    "id3-mi, instances, 100": {"tree": "id3-mi", "split_weights": "instances", "n_estimators": 100},
    "id3-mi, children, 100": {"tree": "id3-mi", "split_weights": "children", "n_estimators": 100},
    "id3-mi, instances, 300": {"tree": "id3-mi", "split_weights": "instances", "n_estimators": 300},
    "id3-mi, children, 300": {"tree": "id3-mi", "split_weights": "children", "n_estimators": 300},
    "instance, 100": {"tree": "instance", "n_estimators": 100},
    "instance, 300": {"tree": "instance", "n_estimators": 300},
}
REFERENCE = "instance forest (scikit-learn), 300"
N_FOLDS = 5


def mirf_score(bags, seed: int, **params) -> float:
    estimator = automil.get_learner("mirf").build(random_state=seed, n_jobs=1, **params)
    predicted, _, _ = cross_validated_predictions(estimator, bags, N_FOLDS, seed)
    return 100 * balanced_accuracy_score(bags.y, predicted)


def reference_score(bags, seed: int) -> float:
    predicted = np.empty(bags.n_bags, dtype=bags.y.dtype)
    for fold, (train, test) in enumerate(fold_splits(bag_folds(bags.y, N_FOLDS, seed, bags.groups))):
        predicted[test] = instance_forest_predict(bags.subset(train), bags.subset(test), 300, seed * N_FOLDS + fold)
    return 100 * balanced_accuracy_score(bags.y, predicted)


def measure(args):
    with Path(args.out).open("a") as out:
        for name in args.datasets:
            bags = load(name)
            for seed in args.seeds:
                for candidate in [*args.candidates, REFERENCE]:
                    start = time.process_time()
                    score = (reference_score(bags, seed) if candidate == REFERENCE
                             else mirf_score(bags, seed, **CANDIDATES[candidate]))
                    row = {"dataset": name, "candidate": candidate, "seed": seed, "balanced_accuracy": score,
                           "cpu_seconds": time.process_time() - start}
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(row, flush=True)


def best_mean(table: dict[str, dict[str, float]], datasets: list[str]) -> str:
    """The rule: the candidate (not the reference) with the best mean over ``datasets``."""
    return max((c for c in table if c != REFERENCE), key=lambda c: np.mean([table[c][d] for d in datasets]))


def summarize(paths: list[str]):
    """The table over the (data set, seed) pairs that every candidate and the reference completed."""
    scores = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            scores[row["candidate"], row["dataset"], row["seed"]] = row["balanced_accuracy"]
    names = [*CANDIDATES, REFERENCE]
    complete = defaultdict(list)
    for dataset, seed in sorted({(d, s) for _, d, s in scores}):
        if all((c, dataset, seed) in scores for c in names):
            complete[dataset].append(seed)
    datasets = [d for d in DATASETS if complete[d]]
    table = {c: {d: float(np.mean([scores[c, d, s] for s in complete[d]])) for d in datasets} for c in names}
    print("seeds per data set: " + ", ".join(f"{d} {len(complete[d])}" for d in datasets) + "\n")
    print("| MIRF setting | " + " | ".join(datasets) + " | mean |")
    print("|---|" + "---:|" * (len(datasets) + 1))
    for c in names:
        print(f"| {c} | " + " | ".join(f"{table[c][d]:.1f}" for d in datasets)
              + f" | {np.mean(list(table[c].values())):.1f} |")
    if len(datasets) < 2:
        return
    chosen = {held: best_mean(table, [d for d in datasets if d != held]) for held in datasets}
    held_out = [table[chosen[d]][d] for d in datasets]
    print("| **chosen without the set** | " + " | ".join(f"**{s:.1f}**" for s in held_out)
          + f" | **{np.mean(held_out):.1f}** |")
    print()
    for d in datasets:
        print(f"- {d}: chosen on the others: {chosen[d]}")
    print(f"\nThe rule on every set: {best_mean(table, datasets)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", help="append the measured rows to this JSON-lines file")
    parser.add_argument("--summary", nargs="+", help="summarize these JSON-lines files instead of measuring")
    args = parser.parse_args()
    if args.summary:
        summarize(args.summary)
    elif args.out:
        measure(args)
    else:
        parser.error("give --out to measure or --summary to summarize")


if __name__ == "__main__":
    main()
