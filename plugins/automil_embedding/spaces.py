"""Optuna search spaces of the embedded-space learners and their first trials (the estimators' defaults as
points of the spaces). Every point builds a valid estimator: conditional parameters are asked only for
the classifier (or head) that uses them, and codebook sizes are clipped to the training instances at fit time.
A space asks for the parameters of its embedding, then for those of the model the trial's task calls for
(``trial.user_attrs["task"]``): a classifier, a survival head or a regression head."""

from __future__ import annotations

from automil.spaces import max_features, max_features_kind
from automil_embedding.heads import REGRESSION_HEADS, SURVIVAL_HEADS

# Statistic sets, as Optuna categories (joined by "+"); the order inside a set is the column order.
STATISTIC_SETS = ("mean", "max", "mean+max", "mean+max+min", "mean+std", "mean+max+min+std")


def _forest(trial) -> dict:
    kind = max_features_kind(trial)
    return {"n_estimators": trial.suggest_int("n_estimators", 50, 500, log=True),
            "max_features": max_features(trial, low=0.05, kind=kind),
            "min_samples_leaf": trial.suggest_int("min_samples_leaf", 1, 10, log=True)}


def _boosting(trial) -> dict:
    return {"learning_rate": trial.suggest_float("learning_rate", 0.01, 0.3, log=True),
            "max_iter": trial.suggest_int("max_iter", 50, 500, log=True),
            "max_leaf_nodes": trial.suggest_int("max_leaf_nodes", 4, 64, log=True)}


def _margin(trial) -> dict:
    return {"C": trial.suggest_float("C", 1e-3, 1e3, log=True)}


def _rbf(trial) -> dict:
    return {**_margin(trial), "gamma": trial.suggest_float("gamma", 1e-3, 1e2, log=True)}


_CLASSIFIER_SPACES = {"random-forest": _forest, "extra-trees": _forest, "hist-gradient-boosting": _boosting,
                      "logistic-regression": _margin, "linear-svm": _margin, "rbf-svm": _rbf}


def _survival_head(trial) -> dict:
    """The Cox model's penalty stops above the fractions where its fit on more columns than bags overflows."""
    head = trial.suggest_categorical("head", list(SURVIVAL_HEADS))
    if head == "coxnet":
        return {"head": head, "penalty": trial.suggest_float("penalty", 0.02, 0.5, log=True),
                "l1_ratio": trial.suggest_float("l1_ratio", 0.1, 1.0)}
    return {"head": head, "n_estimators": trial.suggest_int("n_estimators", 50, 500, log=True),
            "min_samples_leaf": trial.suggest_int("min_samples_leaf", 2, 20, log=True),
            "max_features": max_features(trial, low=0.05)}


def _regression_head(trial) -> dict:
    head = trial.suggest_categorical("head", list(REGRESSION_HEADS))
    if head == "ridge":
        return {"head": head, "alpha": trial.suggest_float("alpha", 1e-3, 1e3, log=True)}
    return {"head": head, "learning_rate": trial.suggest_float("learning_rate", 0.01, 0.3, log=True),
            "n_estimators": trial.suggest_int("n_estimators", 50, 500, log=True),
            "max_depth": trial.suggest_int("max_depth", 2, 5)}


def _model(trial, classifier_space) -> dict:
    """The parameters of the model the trial's task calls for: ``classifier_space``'s for classification."""
    task = trial.user_attrs.get("task", "classification")
    return {"survival": _survival_head, "regression": _regression_head}.get(task, classifier_space)(trial)


def _bag_stats_classifier(trial) -> dict:
    classifier = trial.suggest_categorical("classifier", list(_CLASSIFIER_SPACES))
    return {"classifier": classifier, **_CLASSIFIER_SPACES[classifier](trial)}


def bag_stats_space(trial) -> dict:
    statistics = trial.suggest_categorical("statistics", list(STATISTIC_SETS))
    return {"statistics": tuple(statistics.split("+")), **_model(trial, _bag_stats_classifier)}


def miles_space(trial) -> dict:
    return {"gamma": trial.suggest_float("gamma", 1e-2, 1e2, log=True),
            **_model(trial, lambda trial: {"C": trial.suggest_float("C", 1e-2, 1e2, log=True)})}


def codebook_space(trial) -> dict:
    return {"n_codewords": trial.suggest_int("n_codewords", 1, 64, log=True),
            **_model(trial, lambda trial: {"C": trial.suggest_float("C", 1e-3, 1e3, log=True)})}


def vlad_space(trial) -> dict:
    """The codebook space, and whether the code holds the bag's share of instances per cell (``counts``)."""
    return {**codebook_space(trial), "counts": trial.suggest_categorical("counts", [False, True])}


def witness_subspace_space(trial) -> dict:
    return {"n_directions": trial.suggest_int("n_directions", 1, 16, log=True),
            "tail": trial.suggest_float("tail", 1e-3, 0.1, log=True),
            "shrinkage": trial.suggest_float("shrinkage", 1e-3, 1.0, log=True),
            **_model(trial, lambda trial: {"C": trial.suggest_float("C", 1e-3, 1e2, log=True)}),
            "centre": trial.suggest_categorical("centre", ["bag", "none"])}


# The estimators' defaults as points of the spaces above, by learner: the first trial of every new study. The
# defaults were chosen on data sets the accuracy page does not report (experiments/embedding_defaults.py).
FIRST_TRIALS = {"bag-stats": {"statistics": "mean+max+min+std", "classifier": "extra-trees",
                              "max_features_kind": "sqrt", "n_estimators": 300, "min_samples_leaf": 1},
                "miles": {"gamma": 1.0, "C": 1.0},
                "mivlad": {"n_codewords": 8, "C": 1.0, "counts": True},
                "mifv": {"n_codewords": 2, "C": 1.0},
                # one direction: chosen on the cohorts regime's generated cohorts (experiments/cohort_regime.py)
                "witness-subspace": {"n_directions": 1, "tail": 0.01, "shrinkage": 1.0, "C": 1.0, "centre": "bag"}}
