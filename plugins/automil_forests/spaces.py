"""Optuna search spaces of the forest learners (docs/algorithms.md 14): small, since the defaults work."""

from __future__ import annotations

from automil.spaces import max_features


def _max_features(trial):
    return max_features(trial, low=0.1)


def _max_depth(trial, low):
    limited = trial.suggest_categorical("max_depth_limited", [False, True])
    return trial.suggest_int("max_depth", low, 30) if limited else None


def mirf_space(trial) -> dict:
    """ID3-MI trees with either gain weighting, or instance-level CART trees labelled by their bag (with 300
    trees the instance-level forest MIRF generalizes, docs/accuracy-forests.md)."""
    params = {"n_estimators": trial.suggest_int("n_estimators", 25, 500, log=True),
              "max_features": _max_features(trial), "max_depth": _max_depth(trial, 3),
              "tree": trial.suggest_categorical("tree", ["id3-mi", "instance"])}
    if params["tree"] == "id3-mi":
        params["split_weights"] = trial.suggest_categorical("split_weights", ["instances", "children"])
    return params


def blrt_space(trial) -> dict:
    return {"n_estimators": trial.suggest_int("n_estimators", 25, 500, log=True),
            "max_features": _max_features(trial),
            "n_rules": trial.suggest_int("n_rules", 1, 64, log=True),
            "min_samples": trial.suggest_int("min_samples", 1, 10),
            "max_depth": _max_depth(trial, 1)}


def midf_space(trial) -> dict:
    # docs/algorithms.md 14 searches 25-200 trees per forest of a level; a level here predicts through its 3 fold
    # models, so each fold model's forests get a third of that (the same trees per level)
    return {"n_estimators": trial.suggest_int("n_estimators", 8, 67),
            "max_layers": trial.suggest_int("max_layers", 1, 10),
            "patience": trial.suggest_categorical("patience", [1, 2, 3])}


# The estimators' defaults as points of the spaces above, by learner: the first trial of every new study.
_FOREST = {"n_estimators": 100, "max_features_kind": "sqrt", "max_depth_limited": False}
FIRST_TRIALS = {"mirf": {**_FOREST, "tree": "id3-mi", "split_weights": "instances"},
                "blrt": {**_FOREST, "n_rules": 16, "min_samples": 1},
                "midf": {"n_estimators": 17, "max_layers": 10, "patience": 1}}
