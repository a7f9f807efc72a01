"""Training and applying a network on bags: mini-batches of bags of similar size, padded with masks, each
bag cut to a few random runs of its instances per step, the next batch read while one trains; Adam with
weight decay on the loss of the task's head (:mod:`automil_deep.heads`), early stopping on held-out bags, on
the CPU or a CUDA device, in a seeded, thread-capped run that leaves torch's global state as it was."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from automil import report_epoch, run_positions
from automil_deep.heads import Classes, Head
from automil_deep.reading import prefetched

__all__ = ["Batches", "Epoch", "Training", "evaluate", "fit_network", "matrix_rows", "minimum_epochs", "resolve_device",
           "seeded_torch"]

# Padded instances per prediction batch (also early stopping's held-out pass of every epoch): large enough to
# amortize the per-call overhead, small enough that a batch's activations stay tens of MB. At 2^16 a fit of
# abmil or MI-Net on 1,500 bags of 96 features peaked 90 to 115 MB higher and its prediction 95 to 145 MB
# higher, and took as long (benchmarks/deep_memory.py; docs/benchmarks-deep.md, "A network's prediction batches").
PREDICT_CELLS = 1 << 14
# Pairs of instances per prediction batch of a network whose memory grows with the square of a bag (exact
# self-attention, TransMIL: about 40 bytes a pair): a batch of about 170 MB, however large its bags (at 2^24,
# TransMIL's prediction of 91 bags of 275 instances peaked 500 MB higher than at 2^22 or 2^20). A bag of
# more instances than its square root is a batch of its own.
PREDICT_PAIRS = 1 << 22
# An epoch counts as better only when it lowers the best validation loss by this share: a learning rate too
# small to matter then stops after `patience` epochs instead of creeping down for all of them.
MIN_IMPROVEMENT = 1e-3
# Training batches are cut from pools of this many batches' worth of shuffled bags, each pool sorted by bag
# size: batches of similar sizes (little padding) whose make-up still changes every epoch (fastai's
# SortishSampler takes 50 too).
POOL_BATCHES = 50
# Early stopping neither stops nor keeps weights before this many epochs (or a quarter of ``epochs``, the
# larger): on a few dozen held-out bags the loss is often lowest after 1 to 3 epochs, while the network still
# predicts the class shares, and a network trained that long scores near chance (docs/deep.md, "Cohorts").
MIN_EPOCHS = 10
# Bytes of float32 rows a batch reads (and scales) at once: a prediction batch of a wide matrix holds its
# padded float32 tensor, not a second copy of it too.
READ_BYTES = 1 << 24
# Early stopping's held-out bags are scored each epoch on at most this many times ``max_instances`` instances
# a bag (2,048 at the default), the same sample every epoch so that the losses compare: on slides of 10,000
# patches, scoring every patch of the held-out slides was a third of an epoch in memory (more read from the
# run's file) and TransMIL ran out of memory. Prediction scores every instance.
VALIDATION_FACTOR = 4
# The seed of that sample (its own, so the training's random stream is the same whether bags are cut or not).
VALIDATION_SEED = 0
CPU = torch.device("cpu")


class Batches:
    """Bags cut into padded ``(X, mask)`` batches of chosen bags on ``device``, each batch's instances read as
    it is made: the bags stay where they are (in memory, or in the run's mapped matrix), and only a batch is
    ever copied, as float32, to the device.

    Parameters
    ----------
    read : callable
        ``read(bags, positions)``: the instances at ``positions`` inside the bags ``bags`` (1-D integer arrays
        of one length) as rows of ``n_features``, in any float dtype; e.g. :func:`matrix_rows`, or
        ``StreamedBags.take``.
    sizes : ndarray of shape (n_bags,)
    n_features : int
    device : torch.device, default=cpu
    pairs : bool, default=False
        The network's memory grows with the square of a bag's instances: prediction batches are bounded by
        their bags' instance pairs (``PREDICT_PAIRS``) as well as their cells (``PREDICT_CELLS``).
    prefetch : int, default=1
        Batches read ahead in a thread while the caller works on the current one
        (:func:`~automil_deep.reading.prefetched`): the same batches in the same order, one more held per
        batch ahead. 0 reads each batch when it is asked for.
    covariates : ndarray of shape (n_bags, k), optional
        The bags' clinical covariates (standardized), which the network reads beside their instances.
    """

    def __init__(self, read, sizes: np.ndarray, n_features: int, device: torch.device = CPU, pairs: bool = False,
                 prefetch: int = 1, covariates: np.ndarray | None = None):
        self.read = read
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.n_features = int(n_features)
        self.device = device
        self.pairs = pairs
        self.prefetch = prefetch
        self.covariates = None if covariates is None else torch.as_tensor(covariates, dtype=torch.float32,
                                                                             device=device)

    def inputs(self, part: np.ndarray, X: torch.Tensor, mask: torch.Tensor) -> tuple:
        """What the network takes for the bags ``part`` read as ``X`` and ``mask``: those two, and the bags'
        covariates when there are any."""
        if self.covariates is None:
            return X, mask
        return X, mask, self.covariates[torch.from_numpy(np.asarray(part)).to(self.device)]

    def _ahead(self, batches):
        return prefetched(batches, self.prefetch) if self.prefetch else batches

    def batch(self, index: np.ndarray, max_instances: int | None = None,
              rng: np.random.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The bags ``index`` padded to the longest: ``X`` (B, N, D) with zero rows past each bag's end and
        ``mask`` (B, N). A bag of more than ``max_instances`` instances is cut to that many, drawn with
        ``rng`` as a few contiguous runs of rows (:func:`automil.run_positions`) in their
        order. Only the instances used are read, at most ``READ_BYTES`` of float32 per ``read`` (which may
        scale them), into a float32 batch whatever the stored dtype (float16 is upcast)."""
        sizes = self.sizes[index] if max_instances is None else np.minimum(self.sizes[index], max_instances)
        positions = np.arange(sizes.max())
        mask = positions[None, :] < sizes[:, None]
        chosen = np.broadcast_to(positions, mask.shape).copy()
        for row in np.flatnonzero(self.sizes[index] > sizes):  # only bags over the cap draw from rng
            chosen[row, :sizes[row]] = run_positions(self.sizes[index[row]], sizes[row], rng)
        X = np.zeros(mask.shape + (self.n_features,), dtype=np.float32)
        cells = np.flatnonzero(mask)  # (bag, position) of every instance read, bag after bag
        bags, positions = np.asarray(index)[cells // mask.shape[1]], chosen.reshape(-1)[cells]
        ends = np.cumsum(sizes)
        begins = ends - sizes
        step = max(1, READ_BYTES // (4 * self.n_features))
        for start in range(0, len(cells), step):
            stop = min(start + step, len(cells))
            block = self.read(bags[start:stop], positions[start:stop])
            # each bag's part of the block is a slice of its row of X: copied as slices, not scattered
            for row in range(np.searchsorted(ends, start, side="right"), np.searchsorted(begins, stop)):
                low, high = max(begins[row], start), min(ends[row], stop)
                X[row, low - begins[row]:high - begins[row]] = block[low - start:high - start]
        return torch.from_numpy(X).to(self.device), torch.from_numpy(mask).to(self.device)

    def training_batches(self, index: np.ndarray, batch_size: int, max_instances: int | None,
                         rng: np.random.Generator, must_hold: np.ndarray | None = None):
        """One epoch's ``(index part, X, mask)`` over the bags ``index`` in random order, batches of bags of
        similar (capped) size, each bag cut to at most ``max_instances`` instances; read ahead (``prefetch``).
        With ``must_hold`` (a flag per bag: an observed event, which a Cox loss's risk sets need), a batch with
        no flagged bag joins the next batch of its size order (the last such, the one before it)."""
        return self._ahead(self._training_batches(index, batch_size, max_instances, rng, must_hold))

    def _training_batches(self, index, batch_size, max_instances, rng, must_hold):
        order = rng.permutation(index)
        sizes = self.sizes if max_instances is None else np.minimum(self.sizes, max_instances)
        pool = POOL_BATCHES * batch_size
        parts = []
        for start in range(0, len(order), pool):
            chunk = order[start:start + pool]
            chunk = chunk[np.argsort(sizes[chunk], kind="stable")]
            parts.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
        if must_hold is not None:
            parts = holding(parts, must_hold)
        for k in rng.permutation(len(parts)):
            yield (parts[k], *self.batch(parts[k], max_instances, rng))

    def prediction_batches(self, index: np.ndarray, max_instances: int | None = None, seed: int = VALIDATION_SEED):
        """``(index part, X, mask)`` over ``index`` in order of size, so that little padding is computed, each
        batch within ``PREDICT_CELLS`` (and ``PREDICT_PAIRS``): every instance, or at most ``max_instances`` of a
        bag, drawn from a generator seeded with ``seed`` (the same sample every call); read ahead
        (``prefetch``)."""
        return self._ahead(self._prediction_batches(index, max_instances, seed))

    def _prediction_batches(self, index, max_instances, seed):
        sizes = self.sizes if max_instances is None else np.minimum(self.sizes, max_instances)
        index = index[np.argsort(sizes[index], kind="stable")]
        rng = np.random.default_rng(seed)
        start = 0
        while start < len(index):
            # bags sorted by size: the last bag of a batch is its longest
            longest, count = sizes[index[start:]], np.arange(1, len(index) - start + 1)
            within = longest * count <= PREDICT_CELLS
            if self.pairs:
                within &= longest ** 2 * count <= PREDICT_PAIRS
            fits = np.flatnonzero(within)
            stop = start + max(1, len(fits))
            yield (index[start:stop], *self.batch(index[start:stop], max_instances, rng))
            start = stop


def holding(parts: list[np.ndarray], must_hold: np.ndarray) -> list[np.ndarray]:
    """``parts`` (bag positions) merged so that every part holds a bag flagged in ``must_hold``: a part with
    none joins the parts after it up to one that holds one; parts left over at the end join the last merged
    part (or, when no bag is flagged, make one part)."""
    merged, waiting = [], []
    for part in parts:
        waiting.append(part)
        if must_hold[part].any():
            merged.append(np.concatenate(waiting))
            waiting = []
    if waiting:
        merged = merged[:-1] + [np.concatenate(merged[-1:] + waiting)]
    return merged


def matrix_rows(X: np.ndarray, offsets: np.ndarray):
    """``read`` for :class:`Batches` of bags laid end to end in the matrix ``X`` at ``offsets``: a fancy index
    per read, so a mapped ``X`` is read only where a batch looks."""
    starts = np.asarray(offsets, dtype=np.int64)[:-1]
    return lambda bags, positions: X[starts[bags] + positions]


def resolve_device(device: str) -> torch.device:
    """The torch device a learner's ``device`` names: ``"auto"`` is CUDA when torch sees a GPU, else the CPU.

    Raises
    ------
    ValueError
        For a name torch does not know, a device other than the CPU or CUDA, or CUDA asked for where torch
        has none.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device={device!r} is not a device: use 'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if resolved.type not in ("cpu", "cuda"):
        raise ValueError(f"device={device!r}: the deep learners run on 'cpu' or 'cuda' (or 'auto')")
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            raise ValueError(f"device={device!r} but CUDA is not available here (torch {torch.__version__}, "
                             f"{build}, sees no GPU); use device='auto' or 'cpu'")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r} but torch sees {torch.cuda.device_count()} CUDA device(s)")
    return resolved


def minimum_epochs(min_epochs: int | None, epochs: int) -> int:
    """The epochs that run before early stopping may stop or keep weights: ``min_epochs``, else the larger
    of ``MIN_EPOCHS`` and ``epochs // 4``; never more than ``epochs``."""
    chosen = max(MIN_EPOCHS, epochs // 4) if min_epochs is None else int(min_epochs)
    return max(1, min(chosen, epochs))


@torch.no_grad()
def evaluate(network: nn.Module, batches: Batches, index: np.ndarray, head: Head | None = None,
             instance_scores: bool = True, max_instances: int | None = None):
    """Outputs ``(len(index), K)`` (averaged over the network's supervised heads), instance scores per bag (a
    list of ``(n_i, K)`` arrays in the order of ``index``; ``None`` each when not ``instance_scores``: bag
    scores alone hold nothing per instance), and with a ``head`` its loss on the bags, all at once (a Cox
    loss's risk set is every bag of ``index``). With ``max_instances``, each bag is scored on that many of its
    instances at most (the same ones every call), and has no instance scores."""
    network.eval()
    index = np.asarray(index)
    scores = [None] * len(index)
    where = {bag: position for position, bag in enumerate(index)}
    positions, outputs = [], []
    instance_scores = instance_scores and max_instances is None
    for part, X, mask in batches.prediction_batches(index, max_instances):
        heads, part_scores = network(*batches.inputs(part, X, mask))
        positions.extend(where[bag] for bag in part)
        outputs.append(heads)
        if instance_scores:
            part_scores = part_scores.cpu().numpy()
            for row, bag in enumerate(part):
                scores[where[bag]] = part_scores[row, :batches.sizes[bag]]
    order = torch.from_numpy(np.argsort(positions)).to(batches.device)  # the batches' rows back in index's order
    heads = [torch.cat(parts)[order] for parts in zip(*outputs)]
    loss = None if head is None else float(head.loss(heads, index))
    return torch.stack(heads).mean(dim=0).double().cpu().numpy(), scores, loss


class Training(NamedTuple):
    """What :func:`fit_network` did: the validation loss of every epoch run (empty without validation bags),
    the epochs of the weights kept, the epochs run, whether the time ran out before training ended, and the
    mean seconds of an epoch run."""

    validation_loss: list[float]
    kept: int
    run: int
    out_of_time: bool
    epoch_seconds: float


class Epoch(NamedTuple):
    """One epoch of :func:`fit_network`, as its ``on_epoch`` sees it: its number (from 1), its seconds
    (training and held-out pass), the mean training loss of its bags, the held-out bags' logits and loss
    (``None`` without held-out bags), and whether its weights are now the ones early stopping keeps."""

    number: int
    seconds: float
    train_loss: float
    validation_logits: np.ndarray | None
    validation_loss: float | None
    kept: bool


def fit_network(network: nn.Module, batches: Batches, y: np.ndarray | Head, train: np.ndarray,
                validation: np.ndarray, *, learning_rate, weight_decay, epochs, batch_size, max_instances, patience,
                rng, min_epochs: int = 1, class_weight: np.ndarray | None = None, report: bool = True,
                end: float | None = None, after: float = 1.0, after_each_kept: float = 0.0,
                on_epoch: Callable[[Epoch], None] | None = None) -> Training:
    """Adam on the ``train`` bags, each cut to a random ``max_instances`` of its instances at every step, on
    the loss of ``y``: a task's :class:`~automil_deep.heads.Head`, or the bags' class indices (cross-entropy,
    each bag's loss weighted by ``class_weight`` of its class, None: 1). After each epoch the loss on the
    ``validation`` bags (at most ``VALIDATION_FACTOR x max_instances`` instances of each, the same every
    epoch), and with ``report`` the head's score of them (the balanced accuracy of classes, Harrell's C of a
    survival head, R^2 of a regression head) reported
    to the driver (:func:`automil.report_epoch`, which may stop the fit). From epoch ``min_epochs`` on, the
    weights of the best validation epoch are kept, and training stops after ``patience`` epochs without a
    better one; the epochs before never stop it and are never kept.

    With an ``end`` (a ``time.monotonic()`` time), training also stops, keeping the best weights so far (or
    the last, before ``min_epochs``), when another epoch would leave less than ``after`` epochs' time, plus
    ``after_each_kept`` per epoch of the weights it would keep, before ``end``: what must follow the training
    (a prediction, the caller's training again on every bag). An epoch's time is the mean of those run.

    ``on_epoch``, when given, is called with each :class:`Epoch` as it ends (a script's log of the epochs, a
    copy of the weights kept by some time)."""
    # foreach: one kernel per update over all parameters instead of one per tensor (the step's cost on small nets)
    optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate, weight_decay=weight_decay, foreach=True)
    head = y if isinstance(y, Head) else Classes(y, class_weight, batches.device)
    losses, best, best_state, best_epochs, waited = [], np.inf, None, epochs, 0
    started, run, out_of_time = time.monotonic(), 0, False
    for epoch in range(epochs):
        if epoch and end is not None:
            each = (time.monotonic() - started) / epoch
            keep = epoch + 1 if best_state is None else best_epochs  # the weights kept after the next epoch
            if time.monotonic() + each * (1 + after + after_each_kept * keep) > end:
                out_of_time = True
                break
        run, epoch_started, train_sum = epoch + 1, time.monotonic(), torch.zeros((), device=batches.device)
        network.train()
        for part, X, mask in batches.training_batches(train, batch_size, max_instances, rng, head.must_hold):
            heads, _ = network(*batches.inputs(part, X, mask))
            optimizer.zero_grad()
            step_loss = head.loss(heads, part)
            step_loss.backward()
            optimizer.step()
            train_sum += step_loss.detach() * len(part)  # on the device: no wait for it at each step
        train_loss = float(train_sum) / max(len(train), 1)
        if len(validation) == 0:
            if on_epoch is not None:
                on_epoch(Epoch(run, time.monotonic() - epoch_started, train_loss, None, None, False))
            continue
        logits, _, loss = evaluate(network, batches, validation, head, instance_scores=False,
                                   max_instances=None if max_instances is None else VALIDATION_FACTOR * max_instances)
        losses.append(loss)
        if report:  # the driver's pruner may stop a fit whose held-out bags score below other trials' here
            report_epoch(epoch, head.score(logits, validation))
        # a NaN loss never compares lower, so diverged weights are never the ones kept
        kept = epoch + 1 >= min_epochs and loss < best * (1 - MIN_IMPROVEMENT)
        if kept:
            best, best_epochs, waited = loss, epoch + 1, 0
            best_state = {name: value.clone() for name, value in network.state_dict().items()}
        if on_epoch is not None:
            on_epoch(Epoch(run, time.monotonic() - epoch_started, train_loss, logits, loss, kept))
        if epoch + 1 >= min_epochs and not kept:
            waited += 1
            if waited >= patience:
                break
    if best_state is not None:
        network.load_state_dict(best_state)
    elif out_of_time:
        best_epochs = run  # stopped before early stopping kept any weights: the last ones stay
    network.eval()
    return Training(losses, best_epochs, run, out_of_time, (time.monotonic() - started) / max(run, 1))


def thread_count() -> int:
    """The threads this process may use: the worker's share (``OMP_NUM_THREADS``, which automil's fit
    workers set), else torch's own default."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else torch.get_num_threads()


@contextlib.contextmanager
def seeded_torch(seed: int, device: torch.device = CPU):
    """Torch seeded with ``seed``, deterministic kernels and the process's thread share, restored on exit
    (a fit changes nothing another learner in the same worker sees). On a CUDA device the device's generator
    is seeded and restored too, and a kernel with no deterministic version warns instead of failing."""
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    cuda = device.type == "cuda"
    torch.set_num_threads(thread_count())  # the CPU side of a GPU fit too: batching, the optimizer's steps
    torch.use_deterministic_algorithms(True, warn_only=cuda)
    try:
        with torch.random.fork_rng(devices=[device.index or 0] if cuda else []):
            torch.manual_seed(seed)
            yield
    finally:
        torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
        torch.set_num_threads(threads)
