"""Training and applying a network on bags: padded mini-batches with masks, Adam with weight decay, early
stopping on held-out bags, and a seeded, thread-capped run that leaves torch's global state as it was."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import torch
from sklearn.metrics import balanced_accuracy_score
from torch import nn

from automil import report_epoch

__all__ = ["Batches", "evaluate", "fit_network", "seeded_torch"]

# Padded instances per prediction batch: large enough to amortize the per-call overhead, small enough that a
# batch of (B, N, D) activations stays a few MB.
PREDICT_CELLS = 1 << 16
# An epoch counts as better only when it lowers the best validation loss by this share: a learning rate too
# small to matter then stops after `patience` epochs instead of creeping down for all of them.
MIN_IMPROVEMENT = 1e-3


class Batches:
    """Bags as one float32 matrix and offsets, cut into padded ``(X, mask)`` batches of chosen bags.

    Parameters
    ----------
    X : ndarray of shape (n_instances, n_features)
    offsets : ndarray of shape (n_bags + 1,)
    """

    def __init__(self, X: np.ndarray, offsets: np.ndarray):
        self.X = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.sizes = np.diff(self.offsets)

    def batch(self, index: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """The bags ``index`` padded to the longest: ``X`` (B, N, D) with zero rows past each bag's end and
        ``mask`` (B, N)."""
        sizes = self.sizes[index]
        positions = np.arange(sizes.max())
        mask = positions[None, :] < sizes[:, None]
        rows = self.offsets[index][:, None] + np.minimum(positions[None, :], sizes[:, None] - 1)
        mask = torch.from_numpy(mask)
        return self.X[torch.from_numpy(rows)] * mask[..., None], mask

    def prediction_batches(self, index: np.ndarray):
        """``(index part, X, mask)`` over ``index`` in order of size, so that little padding is computed."""
        index = index[np.argsort(self.sizes[index], kind="stable")]
        start = 0
        while start < len(index):
            # bags sorted by size: the last bag of a batch is its longest
            fits = np.flatnonzero(self.sizes[index[start:]] * np.arange(1, len(index) - start + 1) <= PREDICT_CELLS)
            stop = start + max(1, len(fits))
            yield (index[start:stop], *self.batch(index[start:stop]))
            start = stop


def network_loss(logits: list[torch.Tensor], y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the supervised heads (deep supervision, DSMIL's two streams)."""
    return sum(nn.functional.cross_entropy(head, y) for head in logits) / len(logits)


@torch.no_grad()
def evaluate(network: nn.Module, batches: Batches, index: np.ndarray, y: np.ndarray | None = None):
    """Logits ``(len(index), K)`` (averaged over heads), instance scores per bag (a list of ``(n_i, K)``
    arrays in the order of ``index``), and the mean loss when labels ``y`` of the bags are given."""
    network.eval()
    logits = [None] * len(index)
    scores = [None] * len(index)
    where = {bag: position for position, bag in enumerate(index)}
    total = 0.0
    for part, X, mask in batches.prediction_batches(np.asarray(index)):
        heads, instance_scores = network(X, mask)
        if y is not None:
            labels = torch.from_numpy(y[[where[bag] for bag in part]])
            total += float(network_loss(heads, labels)) * len(part)
        mean = torch.stack(heads).mean(dim=0).numpy()
        for row, bag in enumerate(part):
            logits[where[bag]] = mean[row]
            scores[where[bag]] = instance_scores[row, :batches.sizes[bag]].numpy()
    loss = total / len(index) if y is not None else None
    return np.array(logits, dtype=np.float64), scores, loss


def fit_network(network: nn.Module, batches: Batches, y: np.ndarray, train: np.ndarray, validation: np.ndarray,
                *, learning_rate, weight_decay, epochs, batch_size, patience, rng) -> tuple[list[float], int]:
    """Adam on the ``train`` bags; after each epoch the loss on the ``validation`` bags, and their balanced
    accuracy reported to the driver (:func:`automil.report_epoch`, which may stop the fit). The weights of the
    best validation epoch are kept; training stops after ``patience`` epochs without a better one. Returns
    the validation loss of every epoch run (empty without validation bags: then all epochs run) and the
    number of epochs of the weights kept."""
    # foreach: one kernel per update over all parameters instead of one per tensor (the step's cost on small nets)
    optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate, weight_decay=weight_decay, foreach=True)
    labels = torch.from_numpy(y)
    losses, best, best_state, best_epochs, waited = [], np.inf, None, epochs, 0
    for epoch in range(epochs):
        network.train()
        order = rng.permutation(train)
        for start in range(0, len(order), batch_size):
            part = order[start:start + batch_size]
            X, mask = batches.batch(part)
            heads, _ = network(X, mask)
            optimizer.zero_grad()
            network_loss(heads, labels[torch.from_numpy(part)]).backward()
            optimizer.step()
        if len(validation) == 0:
            continue
        logits, _, loss = evaluate(network, batches, validation, y[validation])
        losses.append(loss)
        # the driver's pruner may stop a fit whose held-out bags score below other trials' at this epoch
        report_epoch(epoch, balanced_accuracy_score(y[validation], logits.argmax(axis=1)))
        # a NaN loss never compares lower, so diverged weights are never the ones kept
        if loss < best * (1 - MIN_IMPROVEMENT):
            best, best_epochs, waited = loss, epoch + 1, 0
            best_state = {name: value.clone() for name, value in network.state_dict().items()}
        else:
            waited += 1
            if waited >= patience:
                break
    if best_state is not None:
        network.load_state_dict(best_state)
    network.eval()
    return losses, best_epochs


def thread_count() -> int:
    """The threads this process may use: the worker's share (``OMP_NUM_THREADS``, which automil's fit
    workers set), else torch's own default."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else torch.get_num_threads()


@contextlib.contextmanager
def seeded_torch(seed: int):
    """Torch seeded with ``seed``, deterministic kernels and the process's thread share, restored on exit
    (a fit changes nothing another learner in the same worker sees)."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(thread_count())
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)
