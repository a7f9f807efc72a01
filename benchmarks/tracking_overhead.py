"""What logging one Optuna trial to MLflow costs (target: under 50 ms on average,
docs/published.md, section 4).

Builds finished trials the way the driver leaves them (6 folds of ACC/BACC, fit and predict seconds,
three hyperparameters) and logs them with ``Tracker.log_trial`` into a fresh sqlite store, then logs
them again (the idempotent no-op a resumed study triggers). Prints milliseconds per trial.

    python benchmarks/tracking_overhead.py [--trials 200] [--folds 6] [--tracking-uri URI]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import optuna

from automil import LearnerSpec
from automil.track import Tracker
from automil.tune.backend.optuna_trials import trial_record


def finished_trials(n_trials: int, n_folds: int, seed: int = 0):
    """Trials shaped like the driver's: params, per-fold scores and timings in user attributes."""
    rng = np.random.default_rng(seed)
    distributions = {"C": optuna.distributions.FloatDistribution(1e-3, 1e3, log=True),
                     "kernel": optuna.distributions.CategoricalDistribution(["linear", "rbf"]),
                     "max_iter": optuna.distributions.IntDistribution(10, 500)}
    trials = []
    for number in range(n_trials):
        acc = rng.uniform(0.5, 0.9, n_folds)
        bacc = acc - rng.uniform(0, 0.02, n_folds)
        attrs = {"n_features": 230, "n_classes": 2, "learner": "bench", "plugin": "bench",
                 "dataset": "fox", "seed": 0, "fold_accuracy": acc.tolist(),
                 "fold_balanced_accuracy": bacc.tolist(), "accuracy": acc.mean(),
                 "balanced_accuracy": bacc.mean(), "accuracy_std": acc.std(),
                 "balanced_accuracy_std": bacc.std(), "fit_seconds": rng.uniform(0.1, 2, n_folds).tolist(),
                 "predict_seconds": rng.uniform(0.01, 0.1, n_folds).tolist(), "timed_out": False}
        trial = optuna.trial.create_trial(
            params={"C": float(rng.uniform(1e-3, 1e3)), "kernel": "rbf", "max_iter": int(rng.integers(10, 500))},
            distributions=distributions, value=float(bacc.mean()), user_attrs=attrs)
        trial.number = number
        trials.append(trial)
    return trials


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--folds", type=int, default=6)
    parser.add_argument("--tracking-uri", default=None,
                        help="store to log into (default: a sqlite file in a temporary directory)")
    args = parser.parse_args(argv)
    trials = finished_trials(args.trials, args.folds)
    spec = LearnerSpec(name="bench", estimator=object, search_space=lambda trial: {}, plugin="bench")
    with tempfile.TemporaryDirectory() as tmp:
        uri = args.tracking_uri or f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        start = time.perf_counter()
        tracker = Tracker(uri)
        parent = tracker.study_run("fox/bench", "fox", spec, {"automil.protocol": "nested"})
        setup = time.perf_counter() - start

        costs, cpu = [], time.process_time()
        for trial in trials:
            start = time.perf_counter()
            tracker.log_trial(parent, trial_record(trial), "fox/bench")
            costs.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu

        fresh = Tracker(uri)  # a resumed process: nothing cached, every trial already in the store
        again = []
        for trial in trials:
            start = time.perf_counter()
            fresh.log_trial(parent, trial_record(trial), "fox/bench")
            again.append(time.perf_counter() - start)

    ms = 1000 * np.array(costs)
    print(f"store: {'sqlite (temporary file)' if args.tracking_uri is None else args.tracking_uri}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"store and parent run set-up: {setup:.2f} s (once per process)")
    print(f"log_trial, {args.trials} new trials of {args.folds} folds: mean {ms.mean():.1f} ms, "
          f"median {np.median(ms):.1f} ms, p95 {np.percentile(ms, 95):.1f} ms, max {ms.max():.1f} ms")
    print(f"CPU time of this process per new trial: {1000 * cpu / args.trials:.1f} ms (the rest of the wall "
          "time is waiting on the store: sqlite commits, or other processes on a loaded machine)")
    print(f"log_trial again on a fresh Tracker (already logged, resume): mean "
          f"{1000 * statistics.fmean(again):.1f} ms")
    print(f"ratio mean / 50 ms target: {ms.mean() / 50:.2f}")


if __name__ == "__main__":
    main()
