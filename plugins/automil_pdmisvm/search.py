"""Optuna search spaces of the pdMISVM learners (algorithms.md 2.6, 3.6 and 14)."""

from __future__ import annotations

import math

# 2.8: mu grows as mu0 * rho^k and is never capped; trials whose final mu would pass this bound are
# refused before any fit (they would overflow or end in a meaningless penalty).
MU_BOUND = 1e250


# The registered learners' defaults on top of the estimator classes' own (reasons in __init__.py).
INEXACT_DEFAULTS = {"mu0": 1e-6}
KERNEL_DEFAULTS = {"ell": "auto", "gamma": 1.0}

# The estimators' defaults as points of the spaces below: the first trial of every new study.
LINEAR_FIRST_TRIAL = {"C": 1.0, "mu0": 1e-3, "rho": 1.2, "maxiter": 1000, "tol": 1e-6}
INEXACT_FIRST_TRIAL = {**LINEAR_FIRST_TRIAL, **INEXACT_DEFAULTS}
KERNEL_FIRST_TRIAL = {**LINEAR_FIRST_TRIAL, "gamma": KERNEL_DEFAULTS["gamma"], "ell_scale": 1.0}  # ell "auto"


def linear_space(trial) -> dict:
    """C, mu0, rho, maxiter and tol; raises ``optuna.TrialPruned`` when ``mu0 * rho^maxiter > 1e250``."""
    params = {
        "C": trial.suggest_float("C", 1e-3, 1e10, log=True),
        "mu0": trial.suggest_float("mu0", 1e-10, 1e-2, log=True),
        "rho": trial.suggest_float("rho", 1.01, 1.5, log=True),
        "maxiter": trial.suggest_int("maxiter", 200, 3000, log=True),
        "tol": trial.suggest_float("tol", 1e-8, 1e-4, log=True),
    }
    if math.log(params["mu0"]) + params["maxiter"] * math.log(params["rho"]) > math.log(MU_BOUND):
        import optuna

        raise optuna.TrialPruned(f"mu0 * rho^maxiter = {params['mu0']:.3g} * {params['rho']:.4g}^"
                                 f"{params['maxiter']} exceeds {MU_BOUND:g} (mu would overflow)")
    return params


def kernel_space(trial) -> dict:
    """The linear space plus the kernel exponent gamma and the length scale ell = scale * sqrt(d)."""
    params = linear_space(trial)
    params["gamma"] = trial.suggest_float("gamma", 0.5, 2.0)
    scale = trial.suggest_float("ell_scale", 0.1, 10.0, log=True)
    params["ell"] = scale * math.sqrt(trial.user_attrs["n_features"])
    return params
