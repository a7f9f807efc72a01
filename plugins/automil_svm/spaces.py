"""Optuna search spaces of the SVM family (docs/algorithms.md 14): define-by-run, one function per learner."""

from __future__ import annotations


def kernel_space(trial) -> dict:
    """C log-uniform in [1e-3, 1e3]; the kernel; ``gamma = g / d`` with g log-uniform in [1e-3, 1e2]
    (RBF only, docs/algorithms.md 1.7); the degree in {2, 3} (polynomial only). Shared by all six learners."""
    params = {"C": trial.suggest_float("C", 1e-3, 1e3, log=True),
              "kernel": trial.suggest_categorical("kernel", ["linear", "rbf", "poly"])}
    if params["kernel"] == "rbf":
        params["gamma"] = trial.suggest_float("g", 1e-3, 1e2, log=True) / trial.user_attrs["n_features"]
    elif params["kernel"] == "poly":
        params["degree"] = trial.suggest_categorical("degree", [2, 3])
    return params


def instance_kernel_space(trial) -> dict:
    """The kernel space of the learners that hold the dense kernel over all training instances (SIL, mi-SVM,
    MI-SVM, sbMIL): a non-linear kernel on more instances than that matrix allows is refused at once, with
    its size, before any fit (NSK and sMIL combine instances and need no such matrix)."""
    params = kernel_space(trial)
    n = trial.user_attrs.get("n_instances")
    if params["kernel"] != "linear" and n is not None:
        from automil_svm.svm_problem import dense_gram_refusal

        refusal = dense_gram_refusal(n, params["kernel"], "smo")
        if refusal is not None:
            import optuna

            raise optuna.TrialPruned(refusal)
    return params


def sil_space(trial) -> dict:
    """The kernel space plus class weighting by bag counts (SIL labels every instance by its bag, so the
    side with the larger bags outweighs the other; one-vs-rest on K classes makes every side unequal)."""
    return {**instance_kernel_space(trial),
            "class_weight": trial.suggest_categorical("class_weight", [None, "balanced"])}


def nsk_space(trial) -> dict:
    return {**kernel_space(trial),
            "normalization": trial.suggest_categorical("normalization", ["none", "averaging", "featurespace"])}


def smil_space(trial) -> dict:
    return {**kernel_space(trial), "bag_score": trial.suggest_categorical("bag_score", ["max", "mean"])}


def sbmil_space(trial) -> dict:
    return {**instance_kernel_space(trial), "eta": trial.suggest_float("eta", 0.0, 1.0)}


# The estimators' defaults as points of the spaces above: the first trial of every new study.
_DEFAULT = {"C": 1.0, "kernel": "linear"}
FIRST_TRIALS = {"sil": {**_DEFAULT, "class_weight": None}, "mi-svm": _DEFAULT, "MI-SVM": _DEFAULT,
                "nsk": {**_DEFAULT, "normalization": "averaging"}, "smil": {**_DEFAULT, "bag_score": "max"},
                "sbmil": {**_DEFAULT, "eta": 0.1},
                "migraph": {"C": 10.0, "kernel": "rbf", "g": 1.0}}
