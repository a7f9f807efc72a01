"""The survival learner contract: a bag's risk of an early event and its survival curve, from right-censored
times (``event`` true where the event was observed, false where the follow-up ended first)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from automil.bags import Bags
from automil.endpoints import LabelError, survival_labels, task_of
from automil.learner import BagInput, labelled

__all__ = ["BagSurvivalModel", "survival_fields"]


class BagSurvivalModel(BagInput, BaseEstimator):
    """Base class of a learner that predicts time to an event from bags: the labels are checked once, here.

    A subclass stores its parameters in ``__init__`` (nothing else) and implements

    - ``_fit(bags, time, event)``: ``bags`` validated :class:`~automil.Bags`, ``time`` float times (>= 0),
      ``event`` booleans (at least one true);
    - ``_predict(bags)``: the risk, shape ``(n_bags,)``: higher means an earlier event (only its order counts);
    - ``_predict_survival(bags, times)``: ``P(T > t)`` for every bag and time, shape ``(n_bags, len(times))``.

    The labels are survival labels (``automil.endpoints.survival_labels(time, event)``: a structured array with the
    fields ``event`` and ``time``, scikit-survival's layout). Sparse and streamed bags: see
    :class:`~automil.learner.BagInput`.
    """

    task = "survival"

    def fit(self, bags, y=None):
        """Fit on bags (``Bags`` or a list of 2-D arrays) and their survival labels; returns ``self``."""
        bags = self._fitting_bags(bags, y)
        time, event = survival_fields(bags.y, bags)
        self.n_features_in_ = bags.n_features
        self._fit(bags, time, event)
        return self

    def predict(self, bags) -> np.ndarray:
        """The risk of each bag, shape ``(n_bags,)``: higher means an earlier event."""
        bags = self._check_predict(bags)
        return self._bag_values(self._predict(bags), "_predict", bags)

    def predict_survival(self, bags, times) -> np.ndarray:
        """The probability that each bag's event comes after each of ``times``, shape ``(n_bags, len(times))``;
        non-increasing along increasing times."""
        times = np.asarray(times, dtype=np.float64)
        if times.ndim != 1 or not np.isfinite(times).all() or (times < 0).any():
            raise ValueError(f"times must be a 1-D array of finite times >= 0, got {times!r}")
        bags = self._check_predict(bags)
        curves = np.asarray(self._predict_survival(bags, times), dtype=np.float64)
        name = f"{type(self).__name__}._predict_survival"
        if curves.shape != (bags.n_bags, len(times)):
            raise ValueError(f"{name} returned shape {curves.shape} for {bags.n_bags} bags and {len(times)} "
                             f"times; expected {(bags.n_bags, len(times))}")
        order = np.argsort(times, kind="stable")
        # Rounding may lift a value by an ulp; anything more is a broken curve, named rather than mended.
        rises = np.diff(curves[:, order], axis=1) > 1e-9
        bad = ~np.isfinite(curves).all(axis=1) | (curves < -1e-9).any(axis=1) | (curves > 1 + 1e-9).any(axis=1) \
            | rises.any(axis=1)
        if bad.any():
            raise ValueError(f"{name} returned for {bags.bag_name(int(np.argmax(bad)))} a curve that is not a "
                             "survival function (a value outside [0, 1], NaN, or a rise over time)")
        return np.clip(curves, 0.0, 1.0)


def survival_fields(y, bags: Bags | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The times and event flags of survival labels, checked as :func:`~automil.endpoints.survival_labels`
    checks them: an error names the first bad bag."""
    if task_of(y) != "survival":
        raise ValueError(f"a survival model needs survival labels (fields 'event' and 'time': "
                         f"automil.endpoints.survival_labels(time, event)), got labels of dtype "
                         f"{np.asarray(y).dtype}")
    try:
        labels = survival_labels(y["time"], y["event"])
    except LabelError as error:
        raise ValueError(labelled(error, bags)) from None
    return labels["time"], labels["event"]
