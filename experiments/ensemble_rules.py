"""Selection rules of the ensemble compared on saved runs: the nested BACC each rule would give, from the
learners' stored scores in a journal that ``experiments/ensemble.py --storage-dir DIR`` kept (no tuning again).

    python experiments/ensemble_rules.py --dataset musk2 --dataset digits-bags --storage-dir /tmp/ensb2
    python experiments/ensemble_rules.py --dataset fox --storage journal:/tmp/results-run/automil.journal

For outer split ``i`` every rule selects on the out-of-fold scores of each learner's best trial of sub-study
``i`` (Platt-calibrated as in automil) and combines the outer refits' scores of fold ``i``, as the ``ensemble``
row does. Rules: ``log-loss`` (automil's :func:`automil.tune.final.ensemble_selection.select`); ``metric``, the
greedy selection
maximizing balanced accuracy of the average (the rule before it); ``metric+gain``, which stops when no
addition raises it by 0.01; ``bagged-*``, Caruana et al. (2004) section 4: the rule on 20 random halves of
the learners, weights averaged; ``sorted-init``, Caruana et al.'s sorted initialization: the climb on the
log-loss starts from the ``INIT`` candidates of least log-loss, equally weighted; ``top-3``, those three
alone, equally weighted; ``inner-best``, the single candidate of least inner log-loss (what choosing one
learner on the inner folds gives, the honest counterpart of the best single learner's figure, which is a
maximum over the outer folds). Two columns are not rules but bounds, chosen on the outer folds they score:
``outer-best``, the single learner of best calibrated nested BACC, and ``outer-pair``, the best fixed
weighted average of two learners (weights on a 0.1 grid), both over the learners tuned in every outer
split: how far above the best single learner any combination could reach on these folds.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import optuna

from automil import load_bags
from automil.evaluation.metrics import log_loss, score
from automil.records import TrialAttr
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.backend.optuna_trials import best_trial, records
from automil.tune.final.ensemble_row import NESTED_SCORES, out_of_fold_order
from automil.tune.final.ensemble_selection import ROUNDS, calibrate, calibrated, select
from automil.tune.final.evaluation import StoredResult

METRIC = "balanced_accuracy"


def by_metric(probas, y_index, min_gain=None) -> np.ndarray:
    """Greedy forward selection with replacement maximizing the metric (ties: chosen, then earlier)."""
    counts, total, last = np.zeros(len(probas), dtype=np.int64), np.zeros(probas.shape[1:]), None
    for step in range(ROUNDS):
        values = np.array([score(y_index, (total + p) / (step + 1), METRIC) for p in probas])
        if min_gain is not None and last is not None and values.max() < last + min_gain:
            break
        tied = np.flatnonzero(values == values.max())
        chosen = tied[counts[tied] > 0]
        pick = int(chosen[0] if chosen.size else tied[0])
        counts[pick], last = counts[pick] + 1, values.max()
        total += probas[pick]
    return counts / counts.sum()


def bagged(rule, probas, y_index, n_bags=20, seed=0) -> np.ndarray:
    """``rule`` on ``n_bags`` random halves of the candidates, weights averaged (Caruana et al., section 4)."""
    rng, weights = np.random.default_rng(seed), np.zeros(len(probas))
    for _ in range(n_bags):
        half = np.sort(rng.choice(len(probas), max(1, len(probas) // 2), replace=False))
        weights[half] += rule(probas[half], y_index)
    return weights / n_bags


INIT = 3  # sorted initialization: the candidates the climb starts from


def by_log_loss(probas, y_index) -> np.ndarray:
    """The candidates ordered by their own log-loss, least first (ties: earlier)."""
    return np.argsort([log_loss(y_index, p) for p in probas], kind="stable")


def sorted_init(probas, y_index, init=INIT, climb=True) -> np.ndarray:
    """The ``init`` candidates of least log-loss, equally weighted, then (``climb``) automil's greedy climb
    on the log-loss of the average for the remaining rounds."""
    counts = np.zeros(len(probas), dtype=np.int64)
    counts[by_log_loss(probas, y_index)[:init]] = 1
    return select(probas, y_index, METRIC, start=counts) if climb else counts / counts.sum()


RULES = {"log-loss": lambda p, y: select(p, y, METRIC),
         "metric": by_metric,
         "metric+gain": lambda p, y: by_metric(p, y, min_gain=0.01),
         "bagged-log-loss": lambda p, y: bagged(lambda q, z: select(q, z, METRIC), p, y),
         "bagged-metric": lambda p, y: bagged(by_metric, p, y),
         "sorted-init": sorted_init,
         "top-3": lambda p, y: sorted_init(p, y, climb=False),
         "inner-best": lambda p, y: sorted_init(p, y, init=1, climb=False)}


def compare(dataset: str, storage_url: str) -> dict:
    storage = open_storage(storage_url)
    names = sorted(n.split("/")[1] for n in optuna.get_all_study_names(storage) if n.count("/") == 1
                   and n.startswith(f"{dataset}/"))
    mains = {n: optuna.load_study(study_name=f"{dataset}/{n}", storage=storage) for n in names}
    results = {n: StoredResult.read(m) for n, m in mains.items()}
    results = {n: r for n, r in results.items()  # learners of the final evaluation with nested scores
               if r is not None and NESTED_SCORES in r.scores}
    mains = {n: mains[n] for n in results}
    names = list(mains)
    y = np.asarray(load_bags(dataset).y)
    classes = np.unique(y)
    assignment = np.asarray(mains[names[0]].user_attrs["fold_assignment"])
    nested = {n: r.scores[NESTED_SCORES] for n, r in results.items()}
    figures = {n: r.row.nested.balanced_accuracy for n, r in results.items()}
    folds = {rule: [] for rule in RULES}
    outer = []  # per outer split: y index of its test bags, each learner's calibrated probabilities of them
    for i in range(int(assignment.max()) + 1):
        order = out_of_fold_order(assignment, i)
        y_index = np.searchsorted(classes, y[order])
        members = []
        for n in names:
            best = best_trial(records(optuna.load_study(study_name=f"{dataset}/{n}/outer-{i}", storage=storage)))
            oof = None if best is None else best.attrs.get(TrialAttr.OOF_SCORES)
            if oof is not None and len(oof) == len(order):
                calibrator = calibrate(np.asarray(oof, dtype=np.float64), y[order])
                members.append((n, calibrator, calibrated(calibrator, np.asarray(oof, dtype=np.float64))))
        members.sort(key=lambda m: -score(y_index, m[2], METRIC))  # best first, as automil ranks them
        test = np.flatnonzero(assignment == i)
        test_index = np.searchsorted(classes, y[test])
        test_probas = {n: calibrated(c, nested[n][test]) for n, c, _ in members}
        outer.append((test_index, test_probas))
        for rule, choose in RULES.items():
            weights = choose(np.asarray([m[2] for m in members]), y_index)
            proba = sum(w * test_probas[n] for (n, _, _), w in zip(members, weights, strict=True))
            folds[rule].append(score(test_index, proba, METRIC))
    return {"dataset": dataset, "best_single": max(v for v in figures.values() if v is not None),
            **{rule: float(np.mean(v)) for rule, v in folds.items()}, **bounds(outer)}


def bounds(outer) -> dict:
    """``outer-best`` and ``outer-pair`` (see the module's docstring) from each outer split's test labels and
    learners' calibrated probabilities."""
    names = sorted(set.intersection(*(set(probas) for _, probas in outer)))
    if not names:
        return {"outer-best": np.nan, "outer-pair": np.nan}

    def nested_bacc(weights: dict) -> float:
        return float(np.mean([score(y_index, sum(w * probas[n] for n, w in weights.items()), METRIC)
                              for y_index, probas in outer]))

    pairs = [nested_bacc({a: w, b: 1 - w}) for a, b in itertools.combinations(names, 2)
             for w in np.linspace(0.1, 0.9, 9)]
    best = max(nested_bacc({n: 1.0}) for n in names)
    return {"outer-best": best, "outer-pair": max([best, *pairs])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--storage-dir", help="where experiments/ensemble.py kept DATASET.journal")
    where.add_argument("--storage", help="one storage holding every dataset's studies (e.g. automil run's)")
    args = parser.parse_args()
    columns = [*RULES, "outer-best", "outer-pair"]
    print(f"{'dataset':12s} {'best single':>11s} " + " ".join(f"{column:>15s}" for column in columns))
    for dataset in args.dataset:
        c = compare(dataset, args.storage or f"journal:{Path(args.storage_dir) / f'{dataset}.journal'}")
        print(f"{dataset:12s} {100 * c['best_single']:11.1f} "
              + " ".join(f"{100 * c[column]:15.1f}" for column in columns), flush=True)


if __name__ == "__main__":
    main()
