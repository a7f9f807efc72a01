"""Trials per second of 1, 2, 4, 8 ``automil tune`` processes sharing one study on PostgreSQL.

    python benchmarks/storage_throughput.py --url postgresql+psycopg2://USER:PASSWORD@HOST/DB [--workers 1 2 4 8]
        [--trials-per-worker 25] [--dataset NAME_OR_FILE] [--learner embedded-meanmax]

Each worker count gets a fresh database on the server of ``--url`` (dropped afterwards) and starts that
many ``automil tune`` commands at once (``--jobs 1`` each, protocol ``tuned``, 2 folds, no tracking, no
ensemble), one study of ``workers x trials-per-worker`` trials. Without ``--dataset`` the data is a small
generated file (40 bags of 3 instances in 5 features), so that a trial's fits take milliseconds and the
rate shows what the driver and the database cost, not the learner. The rate is read from the study itself:
the trials that finished while every worker was tuning (from the latest first trial start to the earliest
last trial end of the workers) over that window, so that process start-up and the final evaluation do
not count. Also printed: each worker's mean trial time, and trials stored twice (must be 0).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections import defaultdict


@contextlib.contextmanager
def fresh_database(url: str):
    import sqlalchemy as sa

    name = f"automil_bench_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def run_workers(storage: str, workers: int, n_trials: int, dataset: str, learner: str) -> None:
    command = [sys.executable, "-m", "automil.cli", "tune", "--dataset", dataset, "--learner", learner,
               "--n-trials", str(n_trials), "--storage", storage, "--no-track", "--no-ensemble", "--folds", "2",
               "--repeats", "1", "--protocol", "tuned", "--timeout", "none", "--jobs", "1"]
    with tempfile.TemporaryDirectory(prefix="automil-throughput-") as workdir:
        processes = [subprocess.Popen(command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True) for _ in range(workers)]
        for process in processes:
            _, err = process.communicate()
            if process.returncode != 0:
                raise SystemExit(f"a worker failed (exit {process.returncode}):\n{err}")


def measure(storage: str, dataset: str, learner: str) -> dict:
    import optuna

    from automil.data.datasets import dataset_name, load_bags
    from automil.tune.backend.optuna_storage import open_storage
    from automil.tune.studies.creation import study_name

    name = study_name(dataset_name(dataset, load_bags(dataset)), learner)
    trials = [t for t in optuna.load_study(study_name=name, storage=open_storage(storage)).trials
              if t.datetime_complete is not None]
    by_worker = defaultdict(list)
    for trial in trials:
        by_worker[trial.user_attrs.get("worker")].append(trial)
    start = max(min(t.datetime_start for t in own) for own in by_worker.values())
    end = min(max(t.datetime_complete for t in own) for own in by_worker.values())
    inside = [t for t in trials if t.datetime_start >= start and t.datetime_complete <= end]
    window = (end - start).total_seconds()
    durations = [(t.datetime_complete - t.datetime_start).total_seconds() for t in trials]
    numbers = [t.number for t in trials]
    return {"trials": len(trials), "window_s": window, "in_window": len(inside),
            "trials_per_s": len(inside) / window if window > 0 else float("nan"),
            "mean_trial_s": statistics.mean(durations), "duplicated": len(numbers) - len(set(numbers))}


def small_bags(path: str) -> str:
    """A MILL text file of 40 bags of 3 instances in 5 features; class-1 bags hold a shifted instance."""
    import numpy as np

    rng = np.random.default_rng(0)
    lines = []
    for b in range(40):
        bag = rng.standard_normal((3, 5))
        bag[0, 0] += 3.0 * (b % 2)
        lines += [f"i{b}_{i},bag-{b},{b % 2}," + ",".join(f"{v:.4f}" for v in row) for i, row in enumerate(bag)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("AUTOMIL_TEST_POSTGRES_URL"),
                        help="a PostgreSQL URL whose user may create databases (default: $AUTOMIL_TEST_POSTGRES_URL)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--trials-per-worker", type=int, default=25)
    parser.add_argument("--dataset", help="registered name or bag file (default: a small generated file)")
    parser.add_argument("--learner", default="embedded-meanmax")
    args = parser.parse_args()
    if not args.url:
        raise SystemExit("give --url (or set AUTOMIL_TEST_POSTGRES_URL; `bash .ci/postgres.sh start` prints one)")
    scratch = tempfile.TemporaryDirectory(prefix="automil-throughput-data-")
    dataset = args.dataset or small_bags(os.path.join(scratch.name, "small.mill"))
    print(f"{args.learner} on {args.dataset or 'a small generated file'}, 2 folds, "
          f"{args.trials_per_worker} trials per worker; {os.cpu_count()} cores")
    print(f"{'workers':>7} {'trials':>6} {'window s':>9} {'in window':>9} {'trials/s':>8} {'mean trial s':>12} "
          f"{'duplicated':>10}")
    for workers in args.workers:
        with fresh_database(args.url) as storage:
            run_workers(storage, workers, workers * args.trials_per_worker, dataset, args.learner)
            row = measure(storage, dataset, args.learner)
        print(f"{workers:>7} {row['trials']:>6} {row['window_s']:>9.1f} {row['in_window']:>9} "
              f"{row['trials_per_s']:>8.2f} {row['mean_trial_s']:>12.2f} {row['duplicated']:>10}", flush=True)


if __name__ == "__main__":
    main()
