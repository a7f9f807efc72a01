"""Optuna search spaces of the pdMISVM learners (docs/algorithms.md 2.6, 3.6 and 14)."""

from __future__ import annotations

import math

# 2.8: mu grows as mu0 * rho^k and is never capped (the reference ADMM does not cap it, and capping would
# change the fitted models). The space keeps every point below this bound instead: the upper end of
# maxiter depends on mu0 and rho, so no sampled point overflows and none is refused.
MU_BOUND = 1e250
MAXITER_RANGE = (200, 3000)


# The registered learners' defaults on top of the estimator classes' own, by learner (reasons in __init__.py).
DEFAULTS = {"pdmisvm": {}, "pdmisvm-inexact": {"mu0": 1e-6}, "pdmisvm-kernel": {"ell": "auto", "gamma": 1.0}}

# The learners' defaults as points of the spaces below, by learner: the first trial of every new study
# (ell_scale 1.0 is ell "auto").
_LINEAR = {"C": 1.0, "mu0": 1e-3, "rho": 1.2, "maxiter": 1000, "tol": 1e-6}
FIRST_TRIALS = {"pdmisvm": _LINEAR,
                "pdmisvm-inexact": {**_LINEAR, **DEFAULTS["pdmisvm-inexact"]},
                "pdmisvm-kernel": {**_LINEAR, "gamma": DEFAULTS["pdmisvm-kernel"]["gamma"], "ell_scale": 1.0}}


def maxiter_limit(mu0: float, rho: float) -> int:
    """The most iterations for which ``mu0 * rho^(maxiter - 1)``, the last penalty, stays within MU_BOUND;
    never below the range's low end (at mu0 <= 1e-2 and rho <= 1.5 the limit is 1432 or more)."""
    limit = math.floor((math.log(MU_BOUND) - math.log(mu0)) / math.log(rho)) + 1
    return max(MAXITER_RANGE[0], min(MAXITER_RANGE[1], limit))


def linear_space(trial) -> dict:
    """C, mu0, rho, maxiter and tol; maxiter's upper end is :func:`maxiter_limit` of the sampled mu0 and
    rho, so mu never passes MU_BOUND (more iterations would only add penalty, never a new model)."""
    params = {
        "C": trial.suggest_float("C", 1e-3, 1e10, log=True),
        "mu0": trial.suggest_float("mu0", 1e-10, 1e-2, log=True),
        "rho": trial.suggest_float("rho", 1.01, 1.5, log=True),
    }
    params["maxiter"] = trial.suggest_int("maxiter", MAXITER_RANGE[0], maxiter_limit(params["mu0"], params["rho"]),
                                          log=True)
    params["tol"] = trial.suggest_float("tol", 1e-8, 1e-4, log=True)
    return params


def kernel_space(trial) -> dict:
    """The linear space plus the kernel exponent gamma and the length scale ell = scale * sqrt(d). On data
    whose Gram matrices would not fit (``MAX_GRAM_MB``), every trial is refused at once with the estimate."""
    n = trial.user_attrs.get("n_instances")
    if n is not None:
        from automil_pdmisvm.kernel import MAX_GRAM_MB, gram_megabytes

        classes = trial.user_attrs["n_classes"]
        needed = gram_megabytes(n, [n // classes] * classes)  # classes of equal size: an estimate
        if needed > MAX_GRAM_MB:
            import optuna

            raise optuna.TrialPruned(f"{n} instances need about {needed / 1024:.0f} GiB of Gram matrices (more "
                                     f"than {MAX_GRAM_MB / 1024:.0f} GiB): use pdmisvm or pdmisvm-inexact")
    params = linear_space(trial)
    params["gamma"] = trial.suggest_float("gamma", 0.5, 2.0)
    scale = trial.suggest_float("ell_scale", 0.1, 10.0, log=True)
    params["ell"] = scale * math.sqrt(trial.user_attrs["n_features"])
    return params
