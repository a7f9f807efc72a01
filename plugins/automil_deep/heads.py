"""What a network's bag outputs mean, one head per task: the loss a training step minimizes, the score of the
held-out bags reported to the driver's pruner (higher is better), and how the outputs of several networks
(seeds) combine into one prediction.

- :class:`Classes`: class logits, cross-entropy (classification).
- :class:`TimeBins`: discrete-time survival, a hazard logit per time bin, negative log-likelihood.
- :class:`Cox`: one log-risk, Cox's partial likelihood over the bags of a batch (Breslow's ties).
- :class:`Values`: one standardized value, mean squared error (regression).

A head holds the targets of every bag of a fit; a loss reads those of the bags ``bags`` (positions in the
fit's bags), in the order of the outputs' rows.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

__all__ = ["Classes", "Cox", "Head", "TimeBins", "Values", "bin_survival", "breslow", "cox_loss", "harrell",
           "time_bins", "time_bins_nll"]


class Head:
    """A task's head; see the module. ``must_hold``: a bag of it in every training batch (``None``: any
    batch will do)."""

    must_hold: np.ndarray | None = None

    def loss(self, heads: list[torch.Tensor], bags: np.ndarray) -> torch.Tensor:
        """The mean over the supervised heads (deep supervision, DSMIL's two streams) of their loss."""
        return sum(self.head_loss(output, bags) for output in heads) / len(heads)

    def head_loss(self, output: torch.Tensor, bags: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def score(self, output: np.ndarray, bags: np.ndarray) -> float:
        raise NotImplementedError

    @staticmethod
    def combine(outputs: list[torch.Tensor]) -> torch.Tensor:
        """One prediction from the networks' outputs (each network's heads averaged first): their mean."""
        return torch.stack(outputs).mean(dim=0)


class Classes(Head):
    """Class logits; cross-entropy, each bag's loss weighted by ``weight`` of its class (None: 1), divided
    by the bags (not the weights): a step's gradient is on the scale of the unweighted loss's, and the mean
    over an epoch is the loss of a class-balanced sample. Reported: the balanced accuracy."""

    def __init__(self, y: np.ndarray, weight: np.ndarray | None, device: torch.device):
        self.y = y
        self.labels = torch.from_numpy(y).to(device)
        self.weight = None if weight is None else torch.as_tensor(weight, dtype=torch.float32, device=device)

    def head_loss(self, output, bags):
        labels = self.labels[torch.from_numpy(bags).to(self.labels.device)]
        if self.weight is None:
            return nn.functional.cross_entropy(output, labels)
        return (nn.functional.cross_entropy(output, labels, reduction="none") * self.weight[labels]).mean()

    def score(self, output, bags):
        from sklearn.metrics import balanced_accuracy_score

        return float(balanced_accuracy_score(self.y[bags], output.argmax(axis=1)))

    @staticmethod
    def combine(outputs):
        """The log of the networks' averaged class probabilities, in float64."""
        log_probabilities = torch.stack([torch.log_softmax(output.double(), dim=1) for output in outputs])
        return torch.logsumexp(log_probabilities, dim=0) - math.log(len(outputs))


class TimeBins(Head):
    """Discrete-time survival: ``len(cuts) + 1`` time bins, the bag's hazard in bin ``k`` the sigmoid of
    its ``k``-th output. Loss: :func:`time_bins_nll`. Combined: the networks' averaged survival at each
    bin's end (:func:`bin_survival`). Reported: Harrell's C of the risk ``-sum_k S_k``."""

    def __init__(self, time: np.ndarray, event: np.ndarray, cuts: np.ndarray, device: torch.device):
        self.time, self.event = time, event
        self.bins = torch.from_numpy(np.searchsorted(cuts, time, side="right")).to(device)
        self.events = torch.from_numpy(event.astype(np.float32)).to(device)

    def head_loss(self, output, bags):
        where = torch.from_numpy(bags).to(self.bins.device)
        return time_bins_nll(output, self.bins[where], self.events[where])

    def score(self, output, bags):
        survival = bin_survival(torch.from_numpy(output)).numpy()
        return harrell(self.time[bags], self.event[bags], -survival.sum(axis=1))

    @staticmethod
    def combine(outputs):
        return torch.stack([bin_survival(output.double()) for output in outputs]).mean(dim=0)


class Cox(Head):
    """One log-risk per bag; Cox's partial likelihood over a batch's bags (:func:`cox_loss`), so every
    training batch holds an event (``must_hold``). Reported: Harrell's C of the log-risk."""

    def __init__(self, time: np.ndarray, event: np.ndarray):
        self.time, self.event = time, event
        self.must_hold = event

    def head_loss(self, output, bags):
        return cox_loss(output[:, 0], self.time[bags], self.event[bags])

    def score(self, output, bags):
        return harrell(self.time[bags], self.event[bags], output[:, 0])


class Values(Head):
    """One value per bag, the standardized target; mean squared error. Reported: R^2 of the held-out bags."""

    def __init__(self, target: np.ndarray, device: torch.device):
        self.target = target
        self.targets = torch.from_numpy(target.astype(np.float32)).to(device)

    def head_loss(self, output, bags):
        return nn.functional.mse_loss(output[:, 0], self.targets[torch.from_numpy(bags).to(self.targets.device)])

    def score(self, output, bags):
        from sklearn.metrics import r2_score

        return float(r2_score(self.target[bags], output[:, 0]))


def time_bins(event_times: np.ndarray, n_bins: int) -> np.ndarray:
    """The cuts between ``n_bins`` time bins: the quantiles of the training bags' event times, so that each
    bin holds about as many events (cuts that coincide, on tied times, are one: fewer bins). The first bin
    starts at 0, the last has no end."""
    cuts = np.unique(np.quantile(event_times, np.arange(1, n_bins) / n_bins))
    return cuts[(cuts > 0) & (cuts < event_times.max())]


def time_bins_nll(logits: torch.Tensor, bins: torch.Tensor, events: torch.Tensor) -> torch.Tensor:
    """The mean negative log-likelihood of discrete-time survival (bags of a batch: ``logits`` (B, T) hazard
    logits, ``bins`` (B,) each bag's time bin, ``events`` (B,) 1 observed, 0 censored). An event in bin k
    contributes ``h_k * S_{k-1}``, its survival to the bin's start times the bin's hazard; a censored bag
    contributes ``S_{k-1}``: it was known alive when its bin began, and of the rest of its bin nothing is
    known (``S_{-1} = 1``: a bag censored in the first bin contributes nothing)."""
    log_alive = nn.functional.logsigmoid(-logits)  # log(1 - h_j)
    before = torch.cumsum(log_alive, dim=1) - log_alive  # log S_{j-1}
    at = bins[:, None]
    likelihood = before.gather(1, at)[:, 0] + events * nn.functional.logsigmoid(logits).gather(1, at)[:, 0]
    return -likelihood.mean()


def bin_survival(logits: torch.Tensor) -> torch.Tensor:
    """``S_k``, the survival to the end of each time bin, from hazard logits (B, T)."""
    return torch.exp(torch.cumsum(nn.functional.logsigmoid(-logits), dim=1))


def cox_loss(risk: torch.Tensor, time: np.ndarray, event: np.ndarray) -> torch.Tensor:
    """Cox's negative log partial likelihood of the bags of a batch, divided by their events:
    ``-sum_{i: event} (r_i - log sum_{j: t_j >= t_i} exp(r_j)) / n_events`` with ``risk`` the log-risks ``r``.
    Tied times take Breslow's approximation: every bag of a tie is in the risk set of each of its events.
    A batch without an event has no likelihood: 0 (with a gradient of 0). O(n log n): the risk sets are the
    prefixes of the bags sorted by decreasing time."""
    order = np.argsort(-time, kind="stable")
    descending = time[order]
    # a tie's risk set ends at its last bag in that order: the bags whose time is >= the tie's
    ends = len(time) - np.searchsorted(descending[::-1], descending, side="left") - 1
    log_sets = torch.logcumsumexp(risk[torch.from_numpy(order).to(risk.device)], dim=0)
    observed = np.flatnonzero(event[order])
    if not len(observed):
        return risk.sum() * 0.0
    where = torch.from_numpy(order[observed]).to(risk.device)
    return -(risk[where] - log_sets[torch.from_numpy(ends[observed]).to(risk.device)]).sum() / len(observed)


def breslow(risk: np.ndarray, time: np.ndarray, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Breslow's baseline cumulative hazard from the training bags' log-risks: the distinct event times and
    ``H_0`` at each, ``sum_{t_i <= t, event} 1 / sum_{j: t_j >= t_i} exp(r_j)``; a bag's survival is then
    ``exp(-H_0(t) exp(r))``. The sums are taken of the risks shifted by their largest (no overflow on large
    log-risks), the shift put back at the end."""
    relative = np.exp(risk - risk.max())
    times = np.unique(time[event])
    at_risk = np.array([relative[time >= t].sum() for t in times])
    deaths = np.array([np.count_nonzero(event & (time == t)) for t in times])
    return times, np.cumsum(deaths / at_risk) * np.exp(-risk.max())


def harrell(time: np.ndarray, event: np.ndarray, risk: np.ndarray) -> float:
    """Harrell's concordance of ``risk`` (scikit-survival's); 0.5 where no pair is comparable (no event)."""
    from sksurv.metrics import concordance_index_censored

    if not event.any():
        return 0.5
    return float(concordance_index_censored(event.astype(bool), time, risk)[0])
