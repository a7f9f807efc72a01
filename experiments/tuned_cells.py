"""Why a tuned cell ends below its paper or its peer: the tuner's search replayed on the tuner's folds.

    python experiments/tuned_cells.py --learner nsk --dataset elephant tiger [--trials 25] [--seeds 5] [--repeats 3]
                                [--setting kernel=rbf,C=10,g=1 ...]

For each data set: the study's search replayed outside the driver, once per TPE seed 0..seeds-1 (the
registered search space, its first trial, the mean balanced accuracy over the 6 tuning folds of seed 0, as
`automil tune` scores a trial; no pruning, no warm start), then the chosen parameters and every
``--setting`` (``g`` is gamma times d, as in the spaces) re-evaluated by repeated 6-fold CV on the repeat
folds of seed 0 (the paper-protocol figure of docs/results.md). Prints markdown rows: the tuning score, the
repeated-CV accuracy and balanced accuracy, and the mean over the searches. ``--trials 0``: the settings
only (a grid).
"""

from __future__ import annotations

import argparse
import os
import warnings
from pathlib import Path

import numpy as np

import automil
from automil.evaluation.folds import bag_folds, fold_splits, repeat_seeds
from automil.evaluation.metrics import fold_scores
from automil.evaluation.standardized import Standardized

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
N_FOLDS = 6


def cv_scores(spec, params: dict, bags, assignment) -> tuple[float, float]:
    """Mean accuracy and balanced accuracy over the folds of ``assignment``."""
    scores = [fold_scores(bags.y[test], Standardized(spec.build(**params)).fit(bags.subset(train))
                          .predict(bags.subset(test))) for train, test in fold_splits(assignment)]
    return (float(np.mean([s.accuracy for s in scores])),
            float(np.mean([s.balanced_accuracy for s in scores])))


def parse_setting(text: str, n_features: int) -> dict:
    params = {}
    for item in text.split(","):
        key, value = item.split("=")
        if key == "g":
            params["gamma"] = float(value) / n_features
            continue
        if value in ("True", "False"):
            params[key] = value == "True"
            continue
        try:
            params[key] = float(value) if key == "C" else int(value)
        except ValueError:
            params[key] = value
    return params


def replay_study(spec, bags, n_trials: int, seed: int):
    """The driver's search on the tuning folds: first trial, then TPE (``seed``); the study."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tuning = bag_folds(bags.y, N_FOLDS, 0)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    if spec.first_trial:
        study.enqueue_trial(spec.first_trial)

    def objective(trial):
        trial.set_user_attr("n_features", bags.n_features)
        trial.set_user_attr("n_instances", bags.n_instances)
        params = spec.search_space(trial)
        trial.set_user_attr("params", {k: v for k, v in params.items()})
        return cv_scores(spec, params, bags, tuning)[1]

    study.optimize(objective, n_trials=n_trials)
    return study


def rounded(params: dict) -> dict:
    return {k: float(f"{v:.3g}") if isinstance(v, float) else v for k, v in params.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learner", required=True)
    parser.add_argument("--dataset", nargs="+", required=True)
    parser.add_argument("--trials", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=1, help="replay the search with TPE seeds 0..N-1")
    parser.add_argument("--setting", nargs="*", default=[], help="fixed settings to set beside the tuned one")
    args = parser.parse_args()
    os.environ.setdefault("AUTOMIL_DATA_DIR", str(SHARED_DATA))
    warnings.simplefilter("ignore")
    spec = automil.get_learner(args.learner)
    print("| data set | parameters | tuning BACC | repeated ACC | repeated BACC |")
    print("|---|---|---:|---:|---:|")
    for name in args.dataset:
        bags = automil.load_bags(name)
        repeats = [bag_folds(bags.y, N_FOLDS, s) for s in repeat_seeds(0, args.repeats)]
        tuning = bag_folds(bags.y, N_FOLDS, 0)
        rows = []
        for seed in range(args.seeds if args.trials else 0):
            best = replay_study(spec, bags, args.trials, seed).best_trial
            rows.append((f"tuned, {args.trials} trials, TPE seed {seed}: {rounded(best.user_attrs['params'])}",
                         best.user_attrs["params"], best.value))
        for text in args.setting:
            params = parse_setting(text, bags.n_features)
            rows.append((text, params, cv_scores(spec, params, bags, tuning)[1]))
        tuned = []
        for label, params, tuning_score in rows:
            repeated = np.array([cv_scores(spec, params, bags, r) for r in repeats]).mean(axis=0)
            if label.startswith("tuned"):
                tuned.append((tuning_score, *repeated))
            print(f"| {name} | {label} | {100 * tuning_score:.1f} | {100 * repeated[0]:.1f} "
                  f"| {100 * repeated[1]:.1f} |", flush=True)
        if len(tuned) > 1:
            mean = 100 * np.mean(tuned, axis=0)
            print(f"| {name} | **tuned, mean of {len(tuned)} seeds** | {mean[0]:.1f} | {mean[1]:.1f} | {mean[2]:.1f} |")


if __name__ == "__main__":
    main()
