"""mi-SVM and MI-SVM, the two heuristics of Andrews, Tsochantaridis & Hofmann (NIPS 2002;
docs/algorithms.md 5 and 6): mi-SVM relabels instances (maximum pattern margin), MI-SVM picks one witness per
positive bag (maximum bag margin). Every step is a plain SVM solved by liblinear or libsvm."""

from __future__ import annotations

import numbers
import time
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from automil import bag_max, kernels, time_left
from automil_svm.ovr import (
    CLASS_WEIGHT_PARAMETER,
    COMMON_PARAMETERS,
    SOLVER_PARAMETER,
    MaxInstanceMixin,
    OneVsRestBagSVM,
    learner_doc,
)
from automil_svm.svm_problem import instance_examples

_ITERATION_PARAMETERS = """\
    max_iters : int, default=50
        Cap on the number of SVM solves; the SVM of the last solve is kept.
    restarts : int, default=0
        Extra runs from random starting points; the run with the smallest primal objective
        ``1/2 ||w||^2 + sum_i C_i xi_i`` of its last SVM is kept.
    random_state : int or None, default=None
        Seeds the random starting points of the restarts."""

_INIT_PARAMETER = """\
    init : {"instance_mean", "feature_mean"}, default="instance_mean"
        Where a positive bag starts (restarts: a random convex combination instead of the mean).
        "instance_mean" is Andrews et al.'s: the mean of the bag's raw instances, mapped into the kernel's
        feature space, ``phi(mean(x))``. "feature_mean" is the mean of the mapped instances,
        ``mean(phi(x))`` (the set-kernel view). They coincide for the linear kernel."""

_ITERATION_ATTRIBUTES = """\
    n_iter_ : ndarray of shape (n_models,)
        SVM solves made by the kept run of each one-vs-rest problem.
    converged_ : ndarray of bool of shape (n_models,)
        Whether that run reached its fixed point before ``max_iters``.
    objective_ : ndarray of shape (n_models,)
        The primal objective of that run's last SVM.
    time_limited_params_ : dict
        When a driver's fit ran out of time (:func:`automil.time_left`): ``max_iters`` (and ``restarts=0``),
        the solves of the first run when it stopped before a solve that would not end in time (its last SVM
        kept), or ``restarts``, those whole before a restart was cut (the cut one dropped); the fewest over
        the one-vs-rest problems. Empty otherwise."""

_REFERENCE = """\
    S. Andrews, I. Tsochantaridis and T. Hofmann, "Support vector machines for multiple-instance
    learning", NIPS 2002."""


class Run(NamedTuple):
    """One run of a heuristic from one starting point: its last SVM, solves made, whether it reached its
    fixed point, the primal objective of its last SVM, and whether it stopped because its time ran out."""

    solution: object
    n_iter: int
    converged: bool
    objective: float
    out_of_time: bool = False


def out_of_time(end: float | None, started: float, solves: int) -> bool:
    """Whether another solve, and as long again for what follows the last (the bag threshold, the fit's
    predictions), at the mean seconds of the ``solves`` since ``started``, would pass ``end``."""
    return end is not None and time.monotonic() + 2 * (time.monotonic() - started) / solves > end


class _AndrewsSVM(MaxInstanceMixin, OneVsRestBagSVM):
    """The shared parameters, restarts and fitted attributes of the two heuristics; ``_iterate`` runs one
    from a starting point (``rng=None``: the deterministic start of the paper). In a driver's fit the
    one-vs-rest problems share the time left (:func:`automil.time_left`) equally, and a run stops before a
    solve that would not end in its part: a killed fit has nothing, a run stopped early has its last SVM."""

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None, max_iters=50, restarts=0, random_state=None):
        super().__init__(kernel, C, gamma, degree, scale_C, solver, class_weight)
        self.max_iters = max_iters
        self.restarts = restarts
        self.random_state = random_state

    def _check_params(self, bags):
        for name, low in (("max_iters", 1), ("restarts", 0)):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"{type(self).__name__}: {name} must be an integer >= {low}, got {value!r}")

    def _begin_fit(self, bags):
        self._runs = []
        self._rng = np.random.default_rng(self.random_state)
        left = time_left()
        self._end = None if left is None else time.monotonic() + left
        self.time_limited_params_ = {}

    def _fit_binary(self, bags, t, space):
        problems_left = (1 if len(self.classes_) == 2 else len(self.classes_)) - len(self._runs)
        end = None if self._end is None else time.monotonic() + (self._end - time.monotonic()) / problems_left
        runs = []
        for start in range(self.restarts + 1):
            run = self._iterate(bags, t, space, start, end)
            if start == 0 or not run.out_of_time:  # a restart cut short is dropped: the runs kept are whole
                runs.append(run)
            if run.out_of_time:  # no restart follows: a refit with these parameters makes the same runs
                limited = {"max_iters": run.n_iter, "restarts": 0} if start == 0 else {"restarts": start - 1}
                for name, value in limited.items():
                    self.time_limited_params_[name] = min(value, self.time_limited_params_.get(name, value))
                break
        best = min(runs, key=lambda run: run.objective)
        self._runs.append((best.n_iter, best.converged, best.objective))
        return space.scorer(best.solution)

    def _end_fit(self):
        n_iter, converged, objective = zip(*self._runs)
        self.n_iter_ = np.array(n_iter, dtype=np.int64)
        self.converged_ = np.array(converged, dtype=bool)
        self.objective_ = np.array(objective)
        del self._runs, self._rng, self._end


def relabel_positive_bags(scores, positive, offsets):
    """mi-SVM's label update (docs/algorithms.md 5, step 3) for the instances of the positive bags.

    ``scores`` are the instances' training decision values, ``positive`` flags the positive bags and
    ``offsets`` delimit all bags. Returns +1 where ``f(x) >= 0`` (``sign(0) = +1``), then forces each
    positive bag's arg-max instance to +1; negative-bag instances stay -1.
    """
    index = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    labels = np.where((scores >= 0) & positive[index], 1.0, -1.0)
    _, where = bag_max(offsets, scores)
    top = offsets[:-1] + where
    labels[top[positive]] = 1.0
    return labels


class MiSVM(_AndrewsSVM):
    __doc__ = learner_doc(
        """mi-SVM (lower-case mi): instance-level labels, maximum pattern margin.

    Alternates between an SVM on all instances and relabelling the instances of positive bags by the sign
    of their score (each positive bag keeps at least its best instance positive), until no label changes
    or ``max_iters`` solves (docs/algorithms.md 5). Bag score ``max_{x in B} f(x)``; witness the arg-max.
    The instance kernel is computed once and reused by every solve.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER, _ITERATION_PARAMETERS),
        attributes=(_ITERATION_ATTRIBUTES,), references=_REFERENCE)

    def _iterate(self, bags, t, space, start, end=None) -> Run:
        index = bags.bag_index
        positive = t > 0
        C = self._example_C(self._bag_weights(t)[index], bags.n_instances)
        labels = t[index]  # step 1: instances of positive bags start positive
        if start > 0:  # a restart: random labels in positive bags
            labels = np.where(positive[index] & (self._rng.random(len(labels)) < 0.5), -1.0, labels)
        started, stopped = time.monotonic(), False
        for n_iter in range(1, self.max_iters + 1):
            if n_iter > 1 and out_of_time(end, started, n_iter - 1):
                n_iter, stopped = n_iter - 1, True
                break
            solution = space.solve(None, labels, C)  # step 2
            new = relabel_positive_bags(space.scores(solution), positive, bags.offsets)  # step 3
            changed = np.count_nonzero(new != labels)
            solved_labels, labels = labels, new
            if changed == 0:  # step 4
                break
        return Run(solution, n_iter, changed == 0, space.objective(solution, None, solved_labels, C), stopped)


class MISVM(_AndrewsSVM):
    __doc__ = learner_doc(
        """MI-SVM (upper-case MI): bag-level, maximum bag margin; one witness per positive bag.

    Each positive bag is represented by one instance, its witness (first the mean of its instances, see
    ``init``, then the arg-max instance of the current SVM); every negative instance is an example.
    Solves until the witnesses stop changing (at least two solves) or ``max_iters`` solves
    (docs/algorithms.md 6). Bag score ``max_{x in B} f(x)``; witness the arg-max. With ``scale_C`` the
    number of examples is ``L_n + X_p`` (negative instances plus positive bags).

    Andrews et al. give the instances of a negative bag one shared slack (a group constraint
    ``sum_{j in I} alpha_j <= C``); libsvm cannot express it, so here every negative instance has its own
    slack and bound ``[0, C]``. The two problems coincide when every negative bag is a single instance.""",
        parameters=(COMMON_PARAMETERS, SOLVER_PARAMETER, CLASS_WEIGHT_PARAMETER, _ITERATION_PARAMETERS,
                    _INIT_PARAMETER),
        attributes=(_ITERATION_ATTRIBUTES,), references=_REFERENCE)

    def __init__(self, kernel="linear", C=1.0, gamma="auto", degree=3, scale_C=False, solver="auto",
                 class_weight=None, max_iters=50, restarts=0, random_state=None, init="instance_mean"):
        super().__init__(kernel, C, gamma, degree, scale_C, solver, class_weight, max_iters, restarts,
                         random_state)
        self.init = init

    def _check_params(self, bags):
        super()._check_params(bags)
        if self.init not in ("instance_mean", "feature_mean"):
            raise ValueError(f"MISVM: init must be 'instance_mean' or 'feature_mean', got {self.init!r}")

    def _training_points(self, bags):
        """Step 1's starting points: start 0 weighs a bag's instances equally, every restart draws
        weights U(0, 1), normalized per bag. In raw space (``init="instance_mean"``, a nonlinear kernel)
        the weighted means of all bags join the training instances, start after start."""
        rng = np.random.default_rng(self.random_state)
        mix = [np.ones(bags.n_instances)] + [rng.random(bags.n_instances) for _ in range(self.restarts)]
        self._start_weights = [w / np.repeat(np.add.reduceat(w, bags.offsets[:-1]), bags.sizes) for w in mix]
        if self.kernel == "linear" or self.init == "feature_mean":
            self._start_rows = None
            return bags.X
        self._start_rows = bags.n_instances + bags.n_bags * np.arange(len(mix))
        means = [kernels.bag_matrix(bags.offsets) @ sp.diags(w) @ bags.X for w in self._start_weights]
        return sp.vstack((bags.X, *means), format="csr") if sp.issparse(bags.X) else np.vstack((bags.X, *means))

    def _end_fit(self):
        super()._end_fit()
        del self._start_weights, self._start_rows

    def _iterate(self, bags, t, space, start, end=None) -> Run:
        negative_rows = bags.instance_rows(np.flatnonzero(t < 0))
        positive_bags = np.flatnonzero(t > 0)
        positive_rows = bags.instance_rows(positive_bags)
        sizes = bags.sizes[positive_bags]
        n_neg, n_pos = len(negative_rows), len(positive_bags)
        targets = np.concatenate((-np.ones(n_neg), np.ones(n_pos)))
        weights = self._bag_weights(t)
        C = self._example_C(np.concatenate((weights[bags.bag_index[negative_rows]], weights[positive_bags])),
                            n_neg + n_pos)
        local_offsets = np.concatenate(([0], np.cumsum(sizes)))
        # Step 1: a positive bag is first represented by a weighted mean of its instances (_training_points)
        if self._start_rows is None:  # in the kernel's feature space: a combination of the instances
            starts = sp.csr_matrix((self._start_weights[start][positive_rows], positive_rows, local_offsets),
                                   shape=(n_pos, space.n))
        else:  # in raw space: the appended points
            starts = instance_examples(self._start_rows[start] + positive_bags, space.n)
        R = sp.vstack((instance_examples(negative_rows, space.n), starts), format="csr")
        selectors, started, stopped = None, time.monotonic(), False
        for n_iter in range(1, self.max_iters + 1):
            if n_iter > 1 and out_of_time(end, started, n_iter - 1):
                n_iter, stopped = n_iter - 1, True
                break
            solved = R
            solution = space.solve(solved, targets, C)  # step 2
            scores = space.scores(solution)[positive_rows]
            witnesses = positive_rows[local_offsets[:-1] + bag_max(local_offsets, scores)[1]]  # step 3
            converged = selectors is not None and np.array_equal(witnesses, selectors)  # step 4
            if converged:
                break
            selectors = witnesses
            R = instance_examples(np.concatenate((negative_rows, witnesses)), space.n)
        return Run(solution, n_iter, converged, space.objective(solution, solved, targets, C), stopped)
