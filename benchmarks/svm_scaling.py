"""Fit time of the SVM family's linear learners against the number of bags, and against a dense QP.

Data: the pdMISVM paper's synthetic bags (``make_synthetic_bags``, d = 10, two classes, 3-5 instances per
bag). Every learner runs with its defaults and ``kernel="linear", C=1``. For N = 100, 200, ..., 3200 bags
the script prints the fit time (best of ``--repeats``) and the log-log slope of fit time against N
(target: at most 1.5, docs/published.md, section 4).

The QP column solves the *same dual* (the learner's first SVM problem: same examples, targets, bounds
and margins, with the equality constraint of an unregularized bias) with cvxopt's dense interior-point
``qp``, the solver misvm uses; cvxopt is needed only here (``pip install cvxopt``). A dense QP on m
examples costs O(m^3) time and O(m^2) memory, so it is timed directly up to ``--qp-max-examples``
examples; beyond that the time at N = 3200 is extrapolated from the two largest measured sizes with
their log-log slope in m, capped at 3 (the O(m^3) of the dense factorizations; the measured slopes are
usually higher, so the cap favours the QP), printed as "~". For the iterative learners one QP solve is compared with our
whole fit (all iterations), and for sbMIL the QP is its stage-2 instance SVM alone: both favour the QP.

    python benchmarks/svm_scaling.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

import automil
from automil_datasets.synthetic import make_synthetic_bags
from automil_svm.sparse_mil import positive_bag_margins
from automil_svm.svm_problem import bag_examples, instance_examples

LEARNERS = ("sil", "mi-svm", "MI-SVM", "nsk", "smil", "sbmil")


def fit_seconds(name: str, bags, repeats: int) -> float:
    spec = automil.get_learner(name)
    best = np.inf
    for _ in range(repeats):
        estimator = spec.build(kernel="linear", C=1.0)
        start = time.perf_counter()
        estimator.fit(bags)
        best = min(best, time.perf_counter() - start)
    return best


def first_dual(name: str, bags):
    """``(Z, t, rho, C)`` of the learner's first SVM dual (docs/algorithms.md 4-9) with C = 1."""
    t_bag = np.where(bags.y == 1, 1.0, -1.0)
    negative_rows = bags.instance_rows(np.flatnonzero(t_bag < 0))
    positive_bags = np.flatnonzero(t_bag > 0)
    sizes = bags.sizes[positive_bags]
    if name in ("sil", "mi-svm", "sbmil"):  # all instances with their bag's label
        t = t_bag[bags.bag_index]
        return bags.X, t, np.ones_like(t), np.ones_like(t)
    if name == "nsk":  # bags, averaging normalization
        R = bag_examples(bags, np.arange(bags.n_bags), 1.0 / bags.sizes)
        return R @ bags.X, t_bag, np.ones_like(t_bag), np.ones_like(t_bag)
    R = sp.vstack((instance_examples(negative_rows, bags.n_instances),
                   bag_examples(bags, positive_bags, 1.0 / sizes)), format="csr")
    n_neg, n_pos = len(negative_rows), len(positive_bags)
    t = np.concatenate((-np.ones(n_neg), np.ones(n_pos)))
    if name == "MI-SVM":  # negative instances and positive bag means
        return R @ bags.X, t, np.ones_like(t), np.ones_like(t)
    rho = np.concatenate((np.ones(n_neg), positive_bag_margins(sizes)))  # sMIL
    return R @ bags.X, t, rho, np.concatenate((np.full(n_neg, 1.0 / n_neg), np.full(n_pos, 1.0 / n_pos)))


def qp_seconds(Z, t, rho, C) -> float:
    """Time of cvxopt's dense QP on ``min 1/2 a'Qa - rho'a, 0 <= a <= C, t'a = 0`` (Gram included)."""
    import cvxopt
    from cvxopt import solvers

    solvers.options["show_progress"] = False
    m = len(t)
    start = time.perf_counter()
    Q = (Z @ Z.T) * np.outer(t, t)
    box = cvxopt.spmatrix(np.concatenate((-np.ones(m), np.ones(m))).tolist(), list(range(2 * m)),
                          list(range(m)) * 2)
    solvers.qp(cvxopt.matrix(Q), cvxopt.matrix(-rho), box, cvxopt.matrix(np.concatenate((np.zeros(m), C))),
               cvxopt.matrix(t, (1, m)), cvxopt.matrix(0.0))
    return time.perf_counter() - start


def qp_at(name: str, data: dict, N_last: int, max_examples: int) -> tuple[float, str]:
    """QP time at ``N_last`` bags: measured if small enough, else extrapolated in m from measured sizes."""
    measured = []
    for N in sorted(data):
        Z, t, rho, C = first_dual(name, data[N])
        if len(t) > max_examples:
            break
        measured.append((len(t), qp_seconds(Z, t, rho, C)))
    m_last = len(first_dual(name, data[N_last])[1])
    if measured[-1][0] == m_last:
        return measured[-1][1], f"measured, m={m_last}"
    (m0, s0), (m1, s1) = measured[-2], measured[-1]
    measured_slope = np.log(s1 / s0) / np.log(m1 / m0)
    slope = min(measured_slope, 3.0)
    return s1 * (m_last / m1) ** slope, (f"~ from {s1:.1f} s at m={m1} to m={m_last} with slope {slope:.2f} "
                                         f"(measured {measured_slope:.2f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fits per size; the best time is kept")
    parser.add_argument("--qp-max-examples", type=int, default=3500,
                        help="largest QP solved directly (dense m x m; larger ones are extrapolated)")
    parser.add_argument("--no-qp", action="store_true", help="skip the cvxopt comparison")
    parser.add_argument("--max-bags", type=int, default=3200,
                        help="largest N (sizes double from 100); the QP comparison stays at N=3200")
    args = parser.parse_args(argv)
    sizes = [N for N in (100 * 2**k for k in range(20)) if N <= args.max_bags]

    data = {N: make_synthetic_bags(N, n_features=10, n_classes=2, seed=0) for N in sizes}
    for name in LEARNERS:  # compile the numba functions outside the timings
        automil.get_learner(name).build(kernel="linear").fit(data[sizes[0]])
    times = {name: [fit_seconds(name, data[N], args.repeats) for N in sizes] for name in LEARNERS}

    print(f"fit seconds, linear kernel, C=1, d=10, synthetic bags (instances: "
          f"{', '.join(str(data[N].n_instances) for N in sizes)})")
    # The whole range, and its upper half alone: small fits are dominated by fixed costs, which flatten
    # the first slope; the second shows the growth at the larger sizes.
    upper = slice(len(sizes) // 2, None)
    print("| learner | " + " | ".join(f"N={N}" for N in sizes) + f" | slope | slope N>={sizes[upper][0]} |")
    print("|---|" + "---|" * (len(sizes) + 2))
    for name in LEARNERS:
        slope = np.polyfit(np.log(sizes), np.log(times[name]), 1)[0]
        slope_upper = np.polyfit(np.log(sizes[upper]), np.log(times[name][upper]), 1)[0]
        print(f"| {name} | " + " | ".join(f"{s:.4f}" for s in times[name]) + f" | {slope:.2f} | "
              f"{slope_upper:.2f} |")
    if args.no_qp:
        return
    N_qp = min(3200, sizes[-1])
    ours = {name: times[name][sizes.index(N_qp)] for name in LEARNERS}
    print(f"\nN={N_qp}: automil fit vs one dense QP solve of the same dual (cvxopt)")
    print("| learner | automil s | QP s | QP / automil | QP time |")
    print("|---|---|---|---|---|")
    qp_data = {N: data[N] for N in sizes if N <= N_qp}
    for name in LEARNERS:
        qp, how = qp_at(name, qp_data, N_qp, args.qp_max_examples)
        print(f"| {name} | {ours[name]:.4f} | {qp:.1f} | {qp / ours[name]:.0f}x | {how} |")


if __name__ == "__main__":
    main()
