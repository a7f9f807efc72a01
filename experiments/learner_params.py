"""A learner's estimator parameters for a point of its search space, on given bags: the mapping the driver
makes through ``search_space(trial)`` (Optuna's parameter names in, the estimator's out), without a study in a
storage. The portfolio's matrix, the cohorts' defaults alone, the shipped fit costs and the probe's error all
fit a learner at a fixed point; this is the one place they turn that point into parameters."""

from __future__ import annotations


def estimator_params(spec, params: dict, bags) -> dict:
    """The learner's estimator parameters for the Optuna ``params`` on ``bags`` (its space maps one to the
    other, and may read the data's facts); raises ``optuna.TrialPruned`` when the space refuses them on this
    data."""
    import optuna

    study = optuna.create_study()
    study.enqueue_trial(params)
    trial = study.ask()
    for key, value in {"n_features": bags.n_features, "n_instances": bags.n_instances,
                       "n_classes": len(bags.classes)}.items():
        trial.set_user_attr(key, value)
    return spec.search_space(trial)
