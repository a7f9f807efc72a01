"""How far the cost probe's estimate of a trial is from the trial's real seconds, learner by learner.

    python experiments/probe_error.py DATA [DATA ...] [--learner NAME ...] [--share 240] [--cap 900] [--seed 0]

On each set, as a hold-out run tunes it (one of 4 folds of bags held out, a trial a 3-fold CV of the
others), every learner (default: the portfolio's members for the set, at their first portfolio point) has
its trial estimated by the probe a run makes (:func:`automil.tune.loop.cost_probe.probe_estimate`, its
time limits those of a fair ``--share``), then runs the trial's three fits in the same worker, each stopped
at ``--cap`` seconds (then the real seconds are a lower bound, marked ``>``). Prints one row a learner: the
estimate, the real seconds, their ratio and the probe's fits. The largest ratio measured on sets no reported run uses is
``PROBE_TOLERANCE`` (automil/tune/schedule/probe.py): how far over its share an estimate may be and the
learner still finish within it.
"""

from __future__ import annotations

import argparse

import numpy as np

from automil import load_bags, plugins
from automil.evaluation.folds import bag_folds, fold_splits
from automil.tune.loop.cost_probe import probe_estimate
from automil.tune.options import TuneOptions
from automil.tune.portfolio.members import estimator_params, members_for
from automil.tune.studies.meta_features import meta_features
from automil.tune.studies.priors import first_point
from automil.tune.workers.fits import fit_predict, fit_worker, import_for
from automil.tune.workers.isolation import FitTimeout


def trial_splits(bags, seed: int) -> list:
    """A hold-out run's trial: 3-fold CV over the bags outside the held-out quarter (indices into ``bags``)."""
    tuning = np.flatnonzero(bag_folds(bags.y, 4, seed, bags.groups) != 0)
    inner = bag_folds(bags.y[tuning], 3, seed, None if bags.groups is None else bags.groups[tuning])
    return [(tuning[train], tuning[test]) for train, test in fold_splits(inner)]


def measure(worker, spec, params: dict, bags, splits, share: float, cap: float, seed: int) -> tuple:
    """The probe's estimate, the trial's seconds and whether a fit reached ``cap``."""
    import_for(worker, (spec.name,))
    estimate = probe_estimate(spec, params, bags, worker, share, splits, seed)
    seconds, capped = 0.0, False
    for train, _ in splits:
        try:
            seconds += worker.call(fit_predict, spec.name, params, train, None, seed, timeout=cap).fit_seconds
        except FitTimeout:
            seconds, capped = seconds + cap, True
            break
    return estimate, seconds, capped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="+")
    parser.add_argument("--learner", action="append", help="a learner at its defaults (default: the portfolio's)")
    parser.add_argument("--share", type=float, default=240.0, help="the fair share the probe's limits come from")
    parser.add_argument("--cap", type=float, default=900.0, help="seconds a fit of the trial may run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    worker = fit_worker(TuneOptions(jobs=2))
    try:
        for data in args.data:
            bags = load_bags(data)
            specs = plugins.learners()
            members = members_for(meta_features(bags).to_dict(), specs)
            names = args.learner or list(dict.fromkeys(m.learner for m in members))
            splits = trial_splits(bags, args.seed)
            worker.set_data(bags)
            print(f"\n{data}: {bags.n_bags} bags, {bags.n_instances} instances, {bags.n_features} features; "
                  f"probe share {args.share:.0f} s\n")
            print("| learner | estimate (s) | trial (s) | estimate / trial | probe |\n|---|---:|---:|---:|---|")
            for name in names:
                spec = specs[name]
                params = estimator_params(spec, first_point(spec, members), bags)
                estimate, seconds, capped = measure(worker, spec, params, bags, splits, args.share, args.cap,
                                                    args.seed)
                shown = "-" if estimate is None else f"{estimate.seconds:.0f}"
                ratio = "-" if estimate is None else f"{'<' if capped else ''}{estimate.seconds / seconds:.2f}"
                measured = "-" if estimate is None else estimate.measured
                print(f"| {name} | {shown} | {'>' if capped else ''}{seconds:.0f} | {ratio} | {measured} |", flush=True)
    finally:
        worker.close()


if __name__ == "__main__":
    main()
