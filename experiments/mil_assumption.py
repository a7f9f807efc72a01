"""The MIL-assumption table of docs/algorithms.md: every registered learner at its defaults through the
algorithmic unit tests of :mod:`automil.mil_assumption` (Raff & Holt, NeurIPS 2023).

    python experiments/mil_assumption.py [--learners sil nsk ...] [--seeds 0 1 2]

Prints markdown rows: the learner, whether it declares the standard assumption, the presence and threshold
tests' balanced accuracies (mean over the seeds; pass at >= 0.8), the order test (a bag's score under
reordering) and the largest share of predictions a fit on reordered training bags changes.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import automil
from automil.mil_assumption import ORDER_TOLERANCE, PASS_ACCURACY, assumption_report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    specs = automil.learners()
    names = args.learners or list(specs)
    print("| learner | declares standard MIL | presence | threshold | instance order | refit on reordered bags |")
    print("|---|---|---:|---:|---|---:|")
    for name in names:
        reports = [assumption_report(specs[name], seed) for seed in args.seeds]
        presence = np.mean([r["presence"] for r in reports])
        threshold = np.mean([r["threshold"] for r in reports])
        order = max(r["order_score_change"] for r in reports)
        refit = max(r["refit_changed"] for r in reports)
        mark = lambda value: f"{value:.2f}" + (" pass" if value >= PASS_ACCURACY else " fail")  # noqa: E731
        print(f"| {name} | {'yes' if specs[name].standard_mil else 'no'} | {mark(presence)} | {mark(threshold)} "
              f"| {'pass' if order <= ORDER_TOLERANCE else f'fail ({order:.2g})'} | {100 * refit:.0f}% |", flush=True)


if __name__ == "__main__":
    main()
