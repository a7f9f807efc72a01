"""The learner's Optuna search space and its first trial (the estimator's defaults as a point of the space)."""


def embedded_meanmax_space(trial):
    return {"C": trial.suggest_float("C", 1e-3, 1e3, log=True)}


# By learner name: every new study tries these parameters first, so even one trial runs the defaults.
FIRST_TRIALS = {"embedded-meanmax": {"C": 1.0}}
