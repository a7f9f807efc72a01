"""The survival and regression heads of the embedded-space learners: the vectors the classifiers see (the
embedding, then the bag's covariates) fed to scikit-survival's penalized Cox model or random survival forest,
or to scikit-learn's ridge or gradient boosting. Which head is a parameter, so tuning chooses it.

scikit-survival loads when a survival head is fitted, not when the plugin registers its learners; its models
take dense vectors (one row per bag: a sparse embedding fits densified)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from automil import BagRegressor, BagSurvivalModel
from automil_embedding.embedded import BagVectors, dense

__all__ = ["EmbeddedRegressor", "EmbeddedSurvival", "REGRESSION_HEADS", "SURVIVAL_HEADS", "curves_at"]

SURVIVAL_HEADS = ("coxnet", "random-survival-forest")
REGRESSION_HEADS = ("ridge", "gradient-boosting")
# The penalized Cox model follows a path of this many penalties, from the smallest that keeps every coefficient
# at zero down to ``penalty`` times it: warm starts along the path converge where a lone small penalty on more
# columns than bags does not (scikit-survival's coordinate descent then overflows).
COX_PATH = 30


class EmbeddedSurvival(BagVectors, BagSurvivalModel):
    """A survival head on the bag vectors; the risk is the head's (the Cox model's linear predictor, the
    forest's summed cumulative hazard), the curves its step functions.

    Parameters
    ----------
    head : {"coxnet", "random-survival-forest"}
        scikit-survival's ``CoxnetSurvivalAnalysis`` (elastic net, Breslow baseline) on standardized vectors,
        or ``RandomSurvivalForest``.
    penalty : float
        [coxnet] The penalty as a fraction of the smallest that keeps every coefficient at zero
        (``alpha_min_ratio``): the same meaning on data of any size.
    l1_ratio : float
        [coxnet] The L1 share of the elastic net (1: lasso, which picks few columns, as MILES's 1-norm SVM).
    n_estimators, min_samples_leaf, max_features
        [random-survival-forest] Trees, bags per leaf, columns tried per split.
    random_state : int or None
    n_jobs : int or None
        [random-survival-forest] Parallel tree building.
    """

    def __init__(self, head="coxnet", penalty=0.1, l1_ratio=0.5, n_estimators=200, min_samples_leaf=5,
                 max_features="sqrt", random_state=None, n_jobs=None):
        self.head = head
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit(self, bags, time, event):
        from sksurv.util import Surv

        if self.head not in SURVIVAL_HEADS:
            raise ValueError(f"head must be one of {SURVIVAL_HEADS}, got {self.head!r}")
        self.head_ = self._make_head().fit(dense(self._fit_vectors(bags)), Surv.from_arrays(event, time))

    def _make_head(self):
        from sksurv.ensemble import RandomSurvivalForest
        from sksurv.linear_model import CoxnetSurvivalAnalysis

        if self.head == "coxnet":
            return make_pipeline(StandardScaler(), CoxnetSurvivalAnalysis(
                n_alphas=COX_PATH, alpha_min_ratio=self.penalty, l1_ratio=self.l1_ratio, fit_baseline_model=True))
        return RandomSurvivalForest(n_estimators=self.n_estimators, min_samples_leaf=self.min_samples_leaf,
                                    max_features=self.max_features, random_state=self.random_state,
                                    n_jobs=self.n_jobs)

    def _predict(self, bags):
        return self.head_.predict(dense(self._vectors(bags)))

    def _predict_survival(self, bags, times):
        return curves_at(self.head_.predict_survival_function(dense(self._vectors(bags))), times)


class EmbeddedRegressor(BagVectors, BagRegressor):
    """A regression head on the bag vectors.

    Parameters
    ----------
    head : {"ridge", "gradient-boosting"}
        scikit-learn's ``Ridge`` on standardized vectors, or ``GradientBoostingRegressor`` (squared error).
    alpha : float
        [ridge] The L2 penalty.
    learning_rate, n_estimators, max_depth
        [gradient-boosting] Shrinkage, boosting rounds, depth of each tree.
    random_state : int or None
    """

    def __init__(self, head="ridge", alpha=1.0, learning_rate=0.1, n_estimators=100, max_depth=3,
                 random_state=None):
        self.head = head
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.random_state = random_state

    def _fit(self, bags, target):
        if self.head not in REGRESSION_HEADS:
            raise ValueError(f"head must be one of {REGRESSION_HEADS}, got {self.head!r}")
        Z = self._fit_vectors(bags)
        if self.head == "ridge":
            head = make_pipeline(StandardScaler(with_mean=not sp.issparse(Z)), Ridge(alpha=self.alpha))
        else:
            head = GradientBoostingRegressor(learning_rate=self.learning_rate, n_estimators=self.n_estimators,
                                             max_depth=self.max_depth, random_state=self.random_state)
        self.head_ = head.fit(Z, target)

    def _predict(self, bags):
        return self.head_.predict(self._vectors(bags))


def curves_at(functions, times) -> np.ndarray:
    """The values of scikit-survival's survival step functions at ``times``, one row per function: a step's
    value from its time on, 1 before the first (no event has happened yet)."""
    times = np.asarray(times, dtype=np.float64)
    rows = []
    for function in functions:
        step = np.searchsorted(function.x, times, side="right") - 1
        rows.append(np.where(step >= 0, function.a * function.y[np.maximum(step, 0)] + function.b, 1.0))
    return np.array(rows).reshape(len(rows), len(times))
