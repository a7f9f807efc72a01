"""Optuna search spaces of the deep learners: the training settings every network shares, the head of the
trial's task (``trial.user_attrs["task"]``: a survival loss and its settings), plus each network's own choice
(attention gate, pooling, deep supervision)."""

from __future__ import annotations


def training_space(trial) -> dict:
    # Adam above ~3e-3 diverges on the small benchmark sets within an epoch; below 1e-5 nothing moves in
    # the epochs allowed. Widths are powers of two so that TransMIL's 4 heads divide them.
    return {"learning_rate": trial.suggest_float("learning_rate", 1e-5, 3e-3, log=True),
            "weight_decay": trial.suggest_float("weight_decay", 1e-6, 1e-2, log=True),
            "hidden": trial.suggest_categorical("hidden", [64, 128, 256, 512]),
            "dropout": trial.suggest_float("dropout", 0.0, 0.5),
            "epochs": trial.suggest_int("epochs", 20, 200, log=True),
            "centre_bags": trial.suggest_categorical("centre_bags", [False, True]),
            **head_space(trial)}


def head_space(trial) -> dict:
    """The parameters of the task's head: none for classification and regression; for survival, the loss,
    with the time bins of the discrete-time likelihood (4 to 20, as its default from the data) or the bags of
    a Cox batch (its risk sets: larger batches, sharper estimates, fewer steps)."""
    if trial.user_attrs.get("task") != "survival":
        return {}
    loss = trial.suggest_categorical("survival_loss", ["nll", "cox"])
    if loss == "nll":
        return {"survival_loss": loss, "n_bins": trial.suggest_int("n_bins", 4, 20)}
    return {"survival_loss": loss, "cox_batch_size": trial.suggest_categorical("cox_batch_size", [16, 32, 64])}


def abmil_space(trial) -> dict:
    return {**training_space(trial), "gated": trial.suggest_categorical("gated", [False, True])}


def mi_net_space(trial) -> dict:
    return {**training_space(trial), "pooling": trial.suggest_categorical("pooling", ["max", "mean"])}


def MI_net_space(trial) -> dict:  # noqa: N802 - named after the learner MI-Net
    return {**mi_net_space(trial),
            "deep_supervision": trial.suggest_categorical("deep_supervision", [True, False])}


# The estimators' defaults as points of the spaces above: the first trial of every new study.
_TRAINING_FIRST_TRIAL = {"learning_rate": 2e-3, "weight_decay": 1e-4, "hidden": 128, "dropout": 0.25, "epochs": 50,
                        "centre_bags": False}
FIRST_TRIALS = {
    "abmil": {**_TRAINING_FIRST_TRIAL, "gated": False},
    "mi-net": {**_TRAINING_FIRST_TRIAL, "pooling": "max"},
    "MI-Net": {**_TRAINING_FIRST_TRIAL, "pooling": "max", "deep_supervision": True},
    "transmil": _TRAINING_FIRST_TRIAL,
    "dsmil": _TRAINING_FIRST_TRIAL,
}
