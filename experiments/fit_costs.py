"""Every built-in learner's defaults timed on two sizes of one generated large-bag task: the fit costs automil
ships (``automil/tune/portfolio/fit_costs.json``) to know, before a run spends a learner's fair share, whether
that share can hold the learner's first trial.

    python experiments/fit_costs.py [--out automil/tune/portfolio/fit_costs.json] [--fit-timeout 60]
    python experiments/fit_costs.py --learner migraph [--learner nsk]   # re-time these, keep the others
    python experiments/fit_costs.py --check 64000 [--features 96] [--learner NAME]   # their error on other data

The task: bags of 40 to 120 instances of 64 features, 3% witnesses shifted by the generators' default 3 standard
deviations (the regime where a trial on all the bags is costly, as hard as the matrix's tasks: a solver's iterations
grow as the classes come closer), at ``SIZES`` instances. Each learner's defaults (its first trial's parameters, as
the space maps them on that data) are fitted on all the bags of each size in a killable worker of one thread, as a
run's fits are, after an untimed warm-up fit on four bags that pays its one-time costs (imports, compilation). A fit
that passes ``--fit-timeout`` is stored as that many seconds and ``timed_out``: a lower bound at its size only, from
which a run predicts nothing, and the larger size is not tried. Takes about three minutes on 2 cores; run it on an
idle machine, since the seconds are the product.

``--check N`` writes nothing: it times every learner on a task of about ``N`` instances of ``--features`` features
drawn with another seed, and prints each prediction of the shipped costs beside the fit it predicts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from portfolio import BUILT_IN, MilTask

from automil.tune.portfolio.members import estimator_params

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "automil" / "tune" / "portfolio" / "fit_costs.json"
# Instances of the two sizes: a factor 4 apart, so that a learner's growth shows between them.
SIZES = (4_000, 16_000)
FEATURES = 64
BAG_SIZE = 80


def sized_task(instances: int, features: int = FEATURES, seed: int = 0) -> MilTask:
    return MilTask("presence", instances // BAG_SIZE, BAG_SIZE, features, 0.03, seed=instances + seed)


def time_learner(worker, spec, fit_timeout: float, tasks: list[MilTask]) -> dict:
    """The learner's fit seconds on the ``tasks`` (as far as it finishes) and whether the last timed out."""
    import optuna

    from automil.tune.schedule.probe import bag_pairs
    from automil.tune.workers.fits import fit_predict, import_for
    from automil.tune.workers.isolation import FitError, FitMemoryExceeded, FitTimeout, WorkerDied

    import_for(worker, (spec.name,))
    entry = {"instances": [], "pairs": [], "seconds": [], "timed_out": False}
    for task in tasks:
        bags = task.bags()
        worker.set_data(bags)
        try:
            params = estimator_params(spec, spec.first_trial, bags)
        except optuna.TrialPruned as refused:
            return {**entry, "refused": str(refused)}
        everything = np.arange(bags.n_bags)
        try:
            worker.call(fit_predict, spec.name, params, np.concatenate([everything[bags.y == c][:2] for c in (0, 1)]),
                        None, 0, timeout=fit_timeout)  # untimed: imports, compilation
            seconds = round(worker.call(fit_predict, spec.name, params, everything, None, 0,
                                        timeout=fit_timeout).fit_seconds, 3)
        except FitTimeout:
            seconds, entry["timed_out"] = fit_timeout, True
        except (FitError, FitMemoryExceeded, WorkerDied) as error:
            return {**entry, "failed": str(error)[:300]}
        entry["instances"].append(int(bags.n_instances))
        entry["pairs"].append(bag_pairs(bags.sizes))
        entry["seconds"].append(seconds)
        if entry["timed_out"]:
            return entry
    return entry


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--fit-timeout", type=float, default=60.0)
    parser.add_argument("--check", type=int, help="instances of a task to check the shipped costs on")
    parser.add_argument("--features", type=int, default=FEATURES)
    parser.add_argument("--learner", action="append",
                        help="only this learner: re-timed, keeping the table's others, or checked")
    args = parser.parse_args(argv)
    if args.check:
        return check(args)

    import optuna

    from automil import plugins
    from automil.tune.options import TuneOptions
    from automil.tune.workers.fits import fit_worker

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    specs = sorted((s for s in plugins.learners().values() if s.plugin in BUILT_IN
                    and (not args.learner or s.name in args.learner)), key=lambda s: s.name.lower())
    worker = fit_worker(TuneOptions(jobs=2))  # one thread, as each of a run's two workers on 2 cores
    kept = Path(args.out) if Path(args.out).exists() else OUT  # --learner keeps the others of this table
    learners = json.loads(kept.read_text())["learners"] if args.learner else {}
    try:
        for spec in specs:
            start = time.time()
            learners[spec.name] = time_learner(worker, spec, args.fit_timeout, [sized_task(n) for n in SIZES])
            print(f"{spec.name:18s} {learners[spec.name]}  [{time.time() - start:.0f} s]", flush=True)
    finally:
        worker.close()
    Path(args.out).write_text(json.dumps({
        "built_by": "python experiments/fit_costs.py", "features": FEATURES, "threads": 1,
        "machine": machine(), "learners": dict(sorted(learners.items(), key=lambda item: item[0].lower()))},
        indent=1) + "\n")


def machine() -> str:
    """The cores and processor the costs were timed on."""
    cpuinfo = Path("/proc/cpuinfo")
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
              if line.startswith("model name")] if cpuinfo.exists() else []
    return f"{os.cpu_count()} cores, {models[0] if models else platform.processor() or platform.machine()}"


def check(args):
    """Each learner's shipped cost predicting its fit on a task it was not timed on, beside the fit."""
    import optuna

    from automil import plugins
    from automil.tune.options import TuneOptions
    from automil.tune.portfolio.fit_costs import fit_cost
    from automil.tune.schedule.probe import predicted_trial_seconds
    from automil.tune.workers.fits import fit_worker

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    task = sized_task(args.check, args.features, seed=1)
    bags = task.bags()
    print(f"{task.name}: {bags.n_instances} instances of {bags.n_features} features; "
          f"predicted and measured seconds of one fit of the defaults on all its bags")
    worker = fit_worker(TuneOptions(jobs=2))
    ratios = []
    try:
        for spec in sorted(plugins.learners().values(), key=lambda s: s.name.lower()):
            cost = fit_cost(spec.name)
            if spec.plugin not in BUILT_IN or cost is None or (args.learner and spec.name not in args.learner):
                continue
            predicted = predicted_trial_seconds(cost, spec.fit_growth, [bags.sizes], bags.n_features,
                                                pairwise=spec.pair_bytes > 0)
            measured = time_learner(worker, spec, args.fit_timeout, [task])
            if not measured["seconds"]:
                print(f"{spec.name:18s} {predicted:9.1f} {'failed':>9s}", flush=True)
                continue
            seconds, bound = measured["seconds"][-1], ">" if measured["timed_out"] else " "
            if not measured["timed_out"]:
                ratios.append(predicted / seconds)
            print(f"{spec.name:18s} {predicted:9.1f} {bound}{seconds:8.1f}  ratio {predicted / seconds:5.2f}",
                  flush=True)
    finally:
        worker.close()
    ratios = np.array(ratios)
    within = np.mean(np.abs(np.log2(ratios)) <= 1)
    print(f"predicted / measured over {len(ratios)} learners that finished: median {np.median(ratios):.2f}, "
          f"range {ratios.min():.2f} to {ratios.max():.2f}, within a factor 2 for {within:.0%}")


if __name__ == "__main__":
    sys.exit(main())
