"""The learner contract: a scikit-learn-style estimator on bags, and the spec a plugin registers."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from automil.bags import Bags, as_bags
from automil.endpoints import TASKS, LabelError
from automil.streamed_bags import read_dtype

__all__ = ["BagClassifier", "BagInput", "LearnerSpec", "Published", "SEED", "labelled"]

# The base class of each task's estimators: a base says its task in its ``task`` attribute.
_BASES = {"classification": "BagClassifier (automil.learner)", "survival": "BagSurvivalModel (automil.survival)",
          "regression": "BagRegressor (automil.regression)"}

# The random_state of an estimator built from a spec when neither its defaults nor the caller set one, so
# that an untuned evaluation repeats (the driver passes its own seed).
SEED = 0


class BagInput:
    """The bag checks every automil estimator shares, whatever it predicts (a class, a risk, a value).

    Learners accept sparse bags only when the class sets ``accepts_sparse = True``. A learner that reads its
    bags one at a time, or a block of bags at a time (``bags.blocks()``, ``bags[i]``, ``bags.take``), never
    ``bags.X`` whole, sets ``accepts_streamed = True``: the folds of the run's mapped instances then reach it
    as :class:`~automil.streamed_bags.StreamedBags`, so a cohort larger than memory is never gathered.
    """

    accepts_sparse = False
    accepts_streamed = False

    def _fitting_bags(self, bags, y) -> Bags:
        """The training bags, labelled and checked (``fit`` sets ``n_features_in_`` once the labels pass)."""
        bags = self._check_bags(as_bags(bags, y), fitting=True)
        if bags.y is None:
            raise ValueError("fit needs bag labels: pass y, or Bags built with labels")
        return bags

    def _check_predict(self, bags) -> Bags:
        check_is_fitted(self, "n_features_in_")
        bags = self._check_bags(as_bags(bags), fitting=False)
        if bags.n_features != self.n_features_in_:
            raise ValueError(f"bags have {bags.n_features} features, but {type(self).__name__} was fitted "
                             f"with {self.n_features_in_}")
        return bags

    def _check_bags(self, bags: Bags, fitting: bool) -> Bags:
        if bags.is_sparse and not self.accepts_sparse:
            raise ValueError(f"{type(self).__name__} does not accept sparse instances; densify them "
                             "(bags.X.toarray()) if they fit in memory")
        if isinstance(bags, Bags) and not bags.is_sparse and read_dtype(bags.X.dtype) != bags.X.dtype:
            bags = bags.with_instances(bags.X.astype(read_dtype(bags.X.dtype)))  # float16 given unstandardized
        return bags

    def _bag_values(self, values, method: str, bags: Bags) -> np.ndarray:
        """One finite float per bag from ``method`` (a risk, a value), else an error naming the bag."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (bags.n_bags,):
            raise ValueError(f"{type(self).__name__}.{method} returned shape {values.shape} for {bags.n_bags} "
                             f"bags; expected ({bags.n_bags},)")
        finite = np.isfinite(values)
        if not finite.all():
            raise ValueError(f"{type(self).__name__}.{method} returned a non-finite value (NaN or inf) for "
                             f"{bags.bag_name(int(np.argmin(finite)))}")
        return values

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = self.accepts_sparse
        return tags


class BagClassifier(BagInput, ClassifierMixin, BaseEstimator):
    """Base class of every automil learner: validation and label encoding, done once for all.

    A subclass stores its parameters in ``__init__`` (nothing else) and implements

    - ``_fit(bags, y)``: ``bags`` is validated :class:`~automil.Bags`, ``y`` the labels encoded as
      ``0..K-1`` (int array); ``self.classes_`` is already set;
    - ``_decision_function(bags)``: shape ``(n_bags, K)``, or ``(n_bags,)`` for a binary learner with
      one margin ``f`` (the base turns it into the columns ``[-f, f]``);
    - optionally ``_predict_proba(bags)`` (shape ``(n_bags, K)``), ``_witness(bags)`` and
      ``_instance_scores(bags)`` (shape ``(n_instances, K)``, or ``(n_instances,)`` for one binary margin).

    Sparse and streamed bags: see :class:`BagInput`.
    """

    task = "classification"

    def fit(self, bags, y=None):
        """Fit on bags (``Bags`` or a list of 2-D arrays) and bag labels; returns ``self``."""
        bags = self._fitting_bags(bags, y)
        self.classes_, codes = np.unique(bags.y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"only one class ({self.classes_[0]!r}) in the training labels: "
                             "a classifier needs at least two")
        self.n_features_in_ = bags.n_features
        self._fit(bags, codes.astype(np.int64))
        return self

    def decision_function(self, bags) -> np.ndarray:
        """Bag scores, shape ``(n_bags, n_classes)``: higher means more likely that class."""
        bags = self._check_predict(bags)
        # A plugin's scores are checked here, where every caller (the driver included) gets them: a wrong
        # shape or a NaN would otherwise turn into plausible-looking labels through argmax.
        scores = self._class_columns(self._decision_function(bags), "_decision_function", bags.n_bags, "bags")
        finite = np.isfinite(scores).all(axis=1)
        if not finite.all():
            raise ValueError(f"{type(self).__name__}._decision_function returned a non-finite score (NaN or "
                             f"inf) for {bags.bag_name(int(np.argmin(finite)))}")
        return scores

    def predict(self, bags) -> np.ndarray:
        """Bag labels: the arg-max column of ``decision_function`` (first on ties, so a binary margin
        of exactly 0 is the negative class)."""
        scores = self.decision_function(bags)
        return self.classes_[np.argmax(scores, axis=1)]

    def witness(self, bags) -> np.ndarray:
        """For each bag, the position inside the bag of the instance that decides its score for the
        predicted class; shape ``(n_bags,)``."""
        if not hasattr(self, "_witness"):
            raise AttributeError(f"{type(self).__name__} is a bag-level learner and has no witness")
        return np.asarray(self._witness(self._check_predict(bags)), dtype=np.int64)

    @available_if(lambda self: hasattr(self, "_instance_scores"))
    def instance_scores(self, bags) -> np.ndarray:
        """Each instance's score for each class, shape ``(n_instances, n_classes)`` (a binary learner's
        single margin ``f`` becomes ``[-f, f]``): what the driver scores against instance labels."""
        bags = self._check_predict(bags)
        return self._class_columns(self._instance_scores(bags), "_instance_scores", bags.n_instances, "instances")

    @available_if(lambda self: hasattr(self, "_predict_proba"))
    def predict_proba(self, bags) -> np.ndarray:
        """Class probabilities per bag, shape ``(n_bags, n_classes)``."""
        return np.asarray(self._predict_proba(self._check_predict(bags)), dtype=np.float64)

    # ---- validation --------------------------------------------------------------------------------
    def _class_columns(self, scores, method: str, n_rows: int, rows: str) -> np.ndarray:
        """``scores`` returned by ``method`` for ``n_rows`` bags or instances as one float column per class
        (a binary learner's 1-D margin ``f`` becomes ``[-f, f]``); any other shape is an error naming it."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 1:
            scores = np.column_stack((-scores, scores))
        expected = (n_rows, len(self.classes_))
        if scores.shape != expected:
            raise ValueError(f"{type(self).__name__}.{method} returned scores of shape {scores.shape} (a 1-D margin "
                             f"counts as 2 columns) for {n_rows} {rows} and {expected[1]} classes; expected {expected}")
        return scores


def labelled(error: LabelError, bags: Bags | None) -> str:
    """A bad label's error naming its bag (by name where the bags have names)."""
    if error.position is None:
        return error.reason
    return f"{bags.bag_name(error.position) if bags is not None else f'bag {error.position}'}: {error.reason}"


@dataclass(frozen=True)
class Published:
    """A learner's accuracy as its paper (or a later re-run) printed it, to set automil's figures beside.

    ``accuracy`` maps a dataset name (automil's) to the bag accuracy in percent; ``paper`` says who printed
    it (authors, venue, year) and ``protocol`` how it was measured (usually tuned and reported on the same
    folds, so optimistic). ``automil report --published`` shows them.
    """

    paper: str
    accuracy: dict[str, float]
    protocol: str = "10-fold cross-validation, parameters set per data set"


@dataclass(frozen=True)
class LearnerSpec:
    """What a plugin registers for one learner.

    Parameters
    ----------
    name : str
        The name users type (``automil tune --learner NAME``).
    estimator : type
        The estimator class; ``estimator(**params)`` builds it.
    search_space : callable
        ``search_space(trial) -> dict`` of estimator parameters, define-by-run with an Optuna trial;
        ``n_features``, ``n_classes`` and ``n_instances`` of the data are in ``trial.user_attrs`` when it
        is called.
    description : str
        One line shown by ``automil learners``.
    multiclass : bool
        Handles more than two classes.
    sparse : bool
        Accepts sparse instances.
    standard_mil : bool
        Follows the standard MIL assumption (a bag is positive iff it holds a positive instance); the
        contract suite then runs the algorithmic unit tests of Raff & Holt (2023).
    ordered : bool
        Reads the order of a bag's instances (a position encoding, as TransMIL's): the contract suite then
        does not hold it to the instance-order check.
    defaults : dict
        Parameters used when a learner is evaluated without tuning, on top of the class defaults (of the
        estimator of every task it serves). A
        ``random_state`` need not be one: :meth:`build` seeds every estimator that takes it.
    first_trial : dict
        Optuna parameters (the names ``search_space`` suggests) of the first trial of every new study:
        the learner's defaults, so that even a budget of one trial tries the setting known to work.
        Empty: the sampler chooses from the start.
    fit_growth : float or None
        How the time of a fit at ``first_trial`` grows with the training instances (bags of the same
        sizes): ``a`` in ``seconds ~ n_instances ** a`` (1 linear, 2 quadratic). On large data the driver
        fits the defaults on two samples of bags before fitting them on all, to stop a learner that
        cannot finish within its share of the budget; ``None``: the exponent is measured from the samples.
    memory_factor : float
        The memory of a fit beside its standardized training instances, as a multiple of them: the
        learner's working set (a float64 copy of float32 instances is 2, embeddings of the bags little, a
        matrix of instance pairs far more). ``automil tune --memory`` does not start a learner whose fit on
        every bag is estimated above the budget (``(1 + memory_factor)`` x the instances' bytes, plus a
        worker process).
    pair_bytes : float
        Bytes a fit holds for each pair of instances of one bag, when its memory grows with the square of a
        bag (exact self-attention: TransMIL about 40); ``--memory`` adds it times the largest bag's
        instances squared, and its shipped fit cost is extrapolated in its bags' instance pairs, as its work
        grows too. 0 for the learners whose memory is linear in their bags.
    anytime : bool
        Its fits end within the time the driver gives them (:func:`automil.time_left`), keeping what they
        learned and saying how far they got (``time_limited_params_``: the deep learners' epochs, the forests'
        trees): the cost probe does not stop it, since a fit of it never runs past its share.
    imports : tuple of str
        Modules a fit worker imports before its first fit of this learner, outside the fit's time limit (and
        its replacements at their start): a heavy library the estimator imports lazily (so that listing
        learners stays fast), whose import would otherwise count against that fit. A worker that never
        fits the learner never imports them.
    published : Published or None
        The accuracies its paper printed on known datasets, for ``automil report --published``.
    tasks : tuple of str
        The tasks it serves, of ``"classification"``, ``"survival"`` and ``"regression"``: the driver skips
        it for any other.
    estimators : dict
        The estimator class of each task that ``estimator`` does not serve (a
        :class:`~automil.survival.BagSurvivalModel` for survival, a :class:`~automil.regression.BagRegressor`
        for regression); ``estimator`` serves the others. ``search_space`` finds the task of its trial in
        ``trial.user_attrs["task"]``.
    plugin : str
        Filled in by the registry: the plugin that registered the learner.
    """

    name: str
    estimator: type
    search_space: Callable[[Any], dict]
    description: str = ""
    multiclass: bool = True
    sparse: bool = False
    standard_mil: bool = False
    ordered: bool = False
    defaults: dict = field(default_factory=dict)
    first_trial: dict = field(default_factory=dict)
    fit_growth: float | None = None
    memory_factor: float = 2.0
    pair_bytes: float = 0.0
    anytime: bool = False
    imports: tuple[str, ...] = ()
    published: Published | None = None
    tasks: tuple[str, ...] = ("classification",)
    estimators: dict[str, type] = field(default_factory=dict)
    plugin: str = ""

    def __post_init__(self):
        unknown = [task for task in (*self.tasks, *self.estimators) if task not in TASKS]
        if unknown or not self.tasks:
            raise ValueError(f"learner {self.name!r}: tasks must be a non-empty tuple of {TASKS}, got "
                             f"tasks={self.tasks!r} and estimators for {tuple(self.estimators)}")
        idle = [task for task in self.estimators if task not in self.tasks]
        if idle:
            raise ValueError(f"learner {self.name!r} has an estimator for {idle[0]}, which its tasks "
                             f"{self.tasks!r} do not name")
        for task in self.tasks:
            estimator = self.estimator_for(task)
            if getattr(estimator, "task", "classification") != task:
                raise ValueError(f"learner {self.name!r}: its {task} estimator {estimator.__name__} is not a "
                                 f"{_BASES[task]}")

    @property
    def witness(self) -> bool:
        """Whether the learner explains a bag by one instance (``witness(bags)``)."""
        return hasattr(self.estimator, "_witness")

    @property
    def instance_scores(self) -> bool:
        """Whether the learner scores every instance (``instance_scores(bags)``), what heatmaps draw."""
        return hasattr(self.estimator, "_instance_scores")

    def estimator_for(self, task: str) -> type:
        """The estimator class that serves ``task``; an error when the learner does not serve it."""
        if task not in self.tasks:
            raise ValueError(f"learner {self.name!r} does not serve {task} (it serves {', '.join(self.tasks)})")
        return self.estimators.get(task, self.estimator)

    def build(self, task: str = "classification", **params):
        """An unfitted estimator for ``task`` with the spec's defaults overridden by ``params``; an estimator
        that takes a ``random_state`` gets :data:`SEED` unless one of them sets it."""
        estimator = self.estimator_for(task)
        params = {**self.defaults, **params}
        if "random_state" in inspect.signature(estimator).parameters:
            params.setdefault("random_state", SEED)
        return estimator(**params)
