"""The driver's cost per trial (storage writes, worker IPC, pruner, sampler) next to the fits themselves.

    python benchmarks/driver_overhead.py [--dataset digits-bags] [--learner sil] [--n-trials 30]

1. Tunes one learner (protocol ``tuned``, no tracking) into a temporary journal and splits each trial's
   wall time (Optuna's start to completion) into the work done in the worker (fit + predict, timed there)
   and the rest: the driver's overhead. Target (docs/published.md, section 4): under 0.3 s or 5%
   of the trial.
2. The pieces: one worker round trip, starting and preloading a worker (paid once per worker and after a
   kill), against starting an interpreter per fit; one journal write with automil's lock and sync policy
   against Optuna's default journal backend.
"""

from __future__ import annotations

import argparse
import operator
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def trial_overhead(dataset: str, learner: str, n_trials: int, storage: str):
    import optuna

    from automil.tune import TuneOptions, tune
    from automil.tune.backend.optuna_storage import open_storage
    from automil.tune.studies.creation import study_name

    options = TuneOptions(n_trials=n_trials, timeout=None, protocol="tuned", repeats=1, track=False,
                          storage=storage)
    start = time.perf_counter()
    tune(dataset, [learner], options)
    total = time.perf_counter() - start
    study = optuna.load_study(study_name=study_name(dataset, learner), storage=open_storage(storage))
    rows = []
    for trial in study.trials:
        if trial.datetime_complete is None:
            continue
        wall = (trial.datetime_complete - trial.datetime_start).total_seconds()
        work = sum(trial.user_attrs.get("fit_seconds", [])) + sum(trial.user_attrs.get("predict_seconds", []))
        rows.append((wall, work, wall - work, len(trial.user_attrs.get("fit_seconds", [])), trial.state.name))
    return rows, total


def worker_costs(repeats: int = 200):
    from automil.tune.workers.fits import load_learners
    from automil.tune.workers.isolation import FitWorker

    start = time.perf_counter()
    worker = FitWorker(threads=1, preload=load_learners)
    worker.set_data(1)
    worker.call(operator.add, 1, timeout=600)
    start_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        worker.call(operator.add, 1, timeout=60)
    round_trip = (time.perf_counter() - start) / repeats
    worker.close()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from automil.tune.workers.fits import load_learners; load_learners()"],
                   check=True)
    interpreter = time.perf_counter() - start
    return start_seconds, round_trip, interpreter


def journal_write_costs(directory: Path, writes: int = 100):
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    from automil.tune.backend.optuna_storage import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    costs = {}
    default = JournalStorage(JournalFileBackend(str(directory / "optuna.journal")))
    for name, storage in (("automil", open_storage(f"journal:{directory / 'automil.journal'}")),
                          ("optuna default", default)):
        study = optuna.create_study(storage=storage, study_name="bench")
        trial = study.ask()
        start = time.perf_counter()
        for i in range(writes):
            trial.set_user_attr(f"a{i}", i)
        costs[name] = (time.perf_counter() - start) / writes
        start = time.perf_counter()
        study.tell(trial, 1.0)
        costs[name + " (tell)"] = time.perf_counter() - start
    return costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="digits-bags")
    parser.add_argument("--learner", default="sil")
    parser.add_argument("--n-trials", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows, total = trial_overhead(args.dataset, args.learner, args.n_trials,
                                     f"journal:{tmp / 'tune.journal'}")
        walls, works, overheads = ([r[i] for r in rows] for i in range(3))
        per_fold = statistics.median(o / max(r[3], 1) for o, r in zip(overheads, rows))
        print(f"{args.learner} on {args.dataset}: {len(rows)} trials in {total:.1f} s "
              f"(states: {', '.join(sorted({r[4] for r in rows}))})")
        print(f"  trial wall time      median {statistics.median(walls):.3f} s, "
              f"mean {statistics.mean(walls):.3f} s")
        print(f"  fits + predictions   median {statistics.median(works):.3f} s (timed in the worker)")
        print(f"  driver overhead      median {statistics.median(overheads):.3f} s, mean "
              f"{statistics.mean(overheads):.3f} s, max {max(overheads):.3f} s per trial")
        print(f"                       {per_fold * 1e3:.1f} ms per fold; "
              f"{100 * sum(overheads) / sum(walls):.1f}% of all trial time")
        start_seconds, round_trip, interpreter = worker_costs()
        print(f"worker start + preload {start_seconds:.2f} s (once per worker, and after a kill)")
        print(f"worker round trip      {round_trip * 1e3:.2f} ms per task; a fresh interpreter per fit "
              f"would cost {interpreter:.2f} s ({interpreter / round_trip:.0f}x)")
        costs = journal_write_costs(tmp)
        print(f"journal attribute write: automil {costs['automil'] * 1e3:.2f} ms, Optuna's default backend "
              f"{costs['optuna default'] * 1e3:.2f} ms ({costs['optuna default'] / costs['automil']:.1f}x); "
              f"tell: {costs['automil (tell)'] * 1e3:.1f} ms vs "
              f"{costs['optuna default (tell)'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
