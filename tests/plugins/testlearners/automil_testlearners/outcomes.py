"""Survival and regression test learners and sets: small, fast and honest (their figures come from real fits),
so that the driver's tests of those tasks run in seconds."""

import numpy as np

import automil
from automil.endpoints import regression_labels, survival_labels
from automil.regression import BagRegressor
from automil.survival import BagSurvivalModel

N_BAGS = 80


def _witness_bags(rng, n_bags: int):
    """Bags of 4-9 instances in 4 features and each bag's share of witness instances (feature 0 shifted by +3)."""
    bags, shares = [], rng.uniform(0.0, 0.8, n_bags)
    for share in shares:
        bag = rng.standard_normal((int(rng.integers(4, 10)), 4))
        witnesses = rng.random(len(bag)) < share
        bag[witnesses, 0] += 3.0
        bags.append(bag)
    return bags, np.array([np.mean(bag[:, 0] > 1.5) for bag in bags])


def make_survival_bags():
    """80 bags whose event time is exponential with a hazard growing with the bag's witness share (a
    proportional-hazards model), about a quarter of them censored at a uniform follow-up."""
    rng = np.random.default_rng(11)
    bags, share = _witness_bags(rng, N_BAGS)
    event_time = rng.exponential(1.0 / np.exp(6.0 * share))
    follow_up = rng.uniform(0.05, 0.8, N_BAGS)
    y = survival_labels(np.minimum(event_time, follow_up), event_time <= follow_up)
    return automil.Bags.from_list(bags, y, names=[f"patient-{i:03d}" for i in range(N_BAGS)], source="survival-bags")


def make_regression_bags():
    """80 bags whose target is twice the bag's witness share plus noise."""
    rng = np.random.default_rng(12)
    bags, share = _witness_bags(rng, N_BAGS)
    y = regression_labels(2.0 * share + 0.2 * rng.standard_normal(N_BAGS))
    return automil.Bags.from_list(bags, y, names=[f"sample-{i:03d}" for i in range(N_BAGS)], source="regression-bags")


def _features(bags) -> np.ndarray:
    """Each bag's mean and maximum of its instances."""
    starts = bags.offsets[:-1]
    sums = np.add.reduceat(bags.X, starts, axis=0)
    return np.hstack([sums / np.diff(bags.offsets)[:, None], np.maximum.reduceat(bags.X, starts, axis=0)])


def ridge_space(trial):
    return {"alpha": trial.suggest_float("alpha", 0.01, 10.0, log=True)}


class MeanCox(BagSurvivalModel):
    """A penalized Cox model (scikit-survival's) of the bags' mean and maximum instance."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def _fit(self, bags, time, event):
        from sksurv.linear_model import CoxPHSurvivalAnalysis

        y = survival_labels(time, event)
        self.model_ = CoxPHSurvivalAnalysis(alpha=self.alpha).fit(_features(bags), y)

    def _predict(self, bags):
        return self.model_.predict(_features(bags))

    def _predict_survival(self, bags, times):
        return np.array([f(times) for f in self.model_.predict_survival_function(_features(bags))])


class ConstantRisk(MeanCox):
    """Every bag the same risk: the degenerate fit the driver flags."""

    def _predict(self, bags):
        return np.zeros(bags.n_bags)


class MeanRidge(BagRegressor):
    """A ridge regression of the bags' mean and maximum instance."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def _fit(self, bags, target):
        from sklearn.linear_model import Ridge

        self.model_ = Ridge(alpha=self.alpha).fit(_features(bags), target)

    def _predict(self, bags):
        return self.model_.predict(_features(bags))


class ConstantValue(MeanRidge):
    """Every bag the training targets' mean."""

    def _fit(self, bags, target):
        self.mean_ = float(np.mean(target))

    def _predict(self, bags):
        return np.full(bags.n_bags, self.mean_)
