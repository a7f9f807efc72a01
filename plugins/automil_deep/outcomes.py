"""The deep learners' survival and regression: the bag embedding a network pools feeds a survival head
(discrete-time hazards over time bins, or Cox's log-risk) or a regression head (a standardized value).

Survival (right-censored times): by default the times are cut into bins at the quantiles of the training
bags' event times and the network gives a hazard per bin, trained on the discrete-time negative
log-likelihood (:func:`~automil_deep.heads.time_bins_nll`); the risk is minus the sum of the survival at the
bins' ends, and a survival curve joins those values linearly in time. With ``survival_loss="cox"`` it gives
one log-risk, trained on Cox's partial likelihood over batches of several bags that each hold an event
(:func:`~automil_deep.heads.cox_loss`), and its curves take Breslow's baseline hazard from the training bags.
"""

from __future__ import annotations

import numpy as np

from automil import BagRegressor, BagSurvivalModel
from automil_deep.learning import DeepMIL

__all__ = ["DeepMILRegressor", "DeepMILSurvival", "SURVIVAL_LOSSES"]

SURVIVAL_LOSSES = ("nll", "cox")
# The time bins of n_bins=None: about the square root of the training events (4 at 16 events, 10 at 100),
# from 4 to 20, so that a bin holds more events the more there are, yet every bin a few.
BINS_RANGE = (4, 20)


class DeepMILSurvival(DeepMIL, BagSurvivalModel):
    """A deep learner's survival model (see the module).

    Parameters
    ----------
    survival_loss : {"nll", "cox"}, default="nll"
        The discrete-time negative log-likelihood over time bins, or Cox's partial likelihood.
    n_bins : int or None, default=None
        The time bins of ``"nll"`` (at least 2; tied event times may merge some). ``None``: the square root
        of the training events, from 4 to 20.
    cox_batch_size : int, default=32
        Bags per training step of ``"cox"`` (in place of ``batch_size``): a bag's risk set is the bags of its
        batch that outlive it, so a batch is larger than a classifier's. A batch with no event joins the
        next.
    **common
        See :class:`~automil_deep.learning.DeepMIL`; early stopping keeps the weights of the lowest
        held-out loss, and the driver's pruner hears the held-out bags' Harrell's C.

    Attributes
    ----------
    time_cuts_ : ndarray or None
        ``"nll"``: the cuts between the time bins.
    last_event_ : float
        The latest training event time, where an ``"nll"`` curve reaches its last bin's survival.
    baseline_ : tuple of ndarray or None
        ``"cox"``: the distinct training event times and Breslow's baseline cumulative hazard at each.
    """

    def __init__(self, *, survival_loss="nll", n_bins=None, cox_batch_size=32, **common):
        super().__init__(**common)
        self.survival_loss = survival_loss
        self.n_bins = n_bins
        self.cox_batch_size = cox_batch_size

    def _fit(self, bags, time, event):
        from automil_deep.heads import Cox, TimeBins, breslow, time_bins

        if self.survival_loss not in SURVIVAL_LOSSES:
            raise ValueError(f"survival_loss={self.survival_loss!r}: use one of {SURVIVAL_LOSSES}")
        self.time_cuts_, self.baseline_, self.last_event_ = None, None, float(time[event].max())
        if self.survival_loss == "nll":
            n_bins = self.n_bins
            if n_bins is None:
                n_bins = int(np.clip(round(np.sqrt(event.sum())), *BINS_RANGE))
            elif isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer) or n_bins < 2:
                raise ValueError(f"n_bins={n_bins!r}: give a whole number of time bins of at least 2 (or None)")
            self.time_cuts_ = time_bins(time[event], n_bins)

            def head(train, device):
                return TimeBins(time, event, self.time_cuts_, device)
        else:
            def head(train, device):
                return Cox(time, event)
        self._train(bags, self._strata(time, event), head)
        if self.survival_loss == "cox":
            self.baseline_ = breslow(self._predict(bags), time, event)

    def _strata(self, time, event):
        """Event x time above the median, balanced in the held-out bags; the event alone where one of the
        four would hold fewer bags than the split's folds."""
        strata = 2 * event.astype(np.int64) + (time > np.median(time))
        if np.bincount(strata, minlength=4).min() < self._validation_folds():
            return event.astype(np.int64)
        return strata

    def _step_bags(self):
        return self.cox_batch_size if self.survival_loss == "cox" else self.batch_size

    def _n_outputs(self):
        return 1 if self.survival_loss == "cox" else len(self.time_cuts_) + 1

    def _combine(self, outputs):
        from automil_deep.heads import Head, TimeBins

        return (TimeBins if self.survival_loss == "nll" else Head).combine(outputs)

    def _predict(self, bags):
        outputs = self._outputs(bags, instance_scores=False)[0]
        return outputs[:, 0] if self.survival_loss == "cox" else -outputs.sum(axis=1)

    def _predict_survival(self, bags, times):
        outputs = self._outputs(bags, instance_scores=False)[0]
        if self.survival_loss == "cox":
            event_times, hazard = self.baseline_
            passed = np.searchsorted(event_times, times, side="right")
            baseline = np.concatenate(([0.0], hazard))[passed]
            return np.exp(-np.exp(outputs[:, :1]) * baseline[None, :])
        ends = np.concatenate(([0.0], self.time_cuts_, [self.last_event_]))
        curves = np.column_stack((np.ones(len(outputs)), outputs))
        return np.array([np.interp(times, ends, curve) for curve in curves])


class DeepMILRegressor(DeepMIL, BagRegressor):
    """A deep learner's regression: one output, trained on the mean squared error of the target standardized
    with the training bags' mean and standard deviation, and turned back at prediction. Early stopping
    keeps the weights of the lowest held-out loss; the driver's pruner hears the held-out bags' R^2.

    Parameters
    ----------
    **common
        See :class:`~automil_deep.learning.DeepMIL`; the held-out bags are balanced on the target's quartiles.

    Attributes
    ----------
    target_mean_, target_scale_ : float
        The training targets' standardization.
    """

    def _fit(self, bags, target):
        from automil_deep.heads import Values

        self.target_mean_, std = float(target.mean()), float(target.std())
        self.target_scale_ = std if std > 0 else 1.0
        standardized = (target - self.target_mean_) / self.target_scale_
        # the target's quartiles, or fewer where a quantile would hold fewer bags than the split's folds
        n_strata = int(np.clip(len(target) // max(self._validation_folds(), 1), 1, 4))
        strata = np.searchsorted(np.quantile(target, np.arange(1, n_strata) / n_strata), target, side="right")
        self._train(bags, strata, lambda train, device: Values(standardized, device))

    def _n_outputs(self):
        return 1

    @staticmethod
    def _combine(outputs):
        from automil_deep.heads import Head

        return Head.combine(outputs)

    def _predict(self, bags):
        return self._outputs(bags, instance_scores=False)[0][:, 0] * self.target_scale_ + self.target_mean_
