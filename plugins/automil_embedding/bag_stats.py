"""bag-stats: the embedding a MIL user writes by hand (per-bag mean, max, min, standard deviation) followed
by a scikit-learn classifier (or a survival or regression head); which statistics and which model are
parameters, so that tuning is a small combined algorithm selection and hyper-parameter search inside one
learner."""

from __future__ import annotations

from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVC, LinearSVC

from automil_embedding.embedded import EmbeddedClassifier, dense
from automil_embedding.heads import EmbeddedRegressor, EmbeddedSurvival
from automil_embedding.statistics import STATISTICS, bag_statistics

__all__ = ["BagStats", "BagStatsRegressor", "BagStatsSurvival", "CLASSIFIERS"]

CLASSIFIERS = ("random-forest", "extra-trees", "hist-gradient-boosting", "logistic-regression", "linear-svm",
               "rbf-svm")


class BagStatistics:
    """The embedding: the chosen statistics (the parameter ``statistics``) of each bag, side by side."""

    accepts_sparse = True
    accepts_streamed = True

    def _fit_embedding(self, bags):
        self.sparse_ = bags.is_sparse
        return self._embed(bags)

    def _embed(self, bags):
        return bag_statistics(bags, tuple(self.statistics))


class BagStats(BagStatistics, EmbeddedClassifier):
    """A scikit-learn classifier on per-bag statistics of the instances.

    Each parameter below applies to the classifiers named in brackets and is ignored by the others.
    The linear and RBF models see standardized statistics (not centred for sparse bags); the tree
    models see them as they are. Histogram gradient boosting needs dense input: the statistics of
    sparse bags are densified for it (one row per bag).

    Parameters
    ----------
    statistics : tuple of str, default=("mean", "max", "min", "std")
        Which of ``"mean"``, ``"max"``, ``"min"``, ``"std"`` to compute, concatenated in this order.
    classifier : str, default="extra-trees"
        One of ``"random-forest"``, ``"extra-trees"``, ``"hist-gradient-boosting"``,
        ``"logistic-regression"``, ``"linear-svm"``, ``"rbf-svm"``.
    n_estimators : int, default=300
        Trees [random-forest, extra-trees].
    max_features : {"sqrt", "log2"}, float or None, default="sqrt"
        Features tried per split: a rule, a fraction, or all (None) [random-forest, extra-trees].
    min_samples_leaf : int, default=1
        [random-forest, extra-trees].
    learning_rate : float, default=0.1
        [hist-gradient-boosting].
    max_iter : int, default=100
        Boosting rounds [hist-gradient-boosting].
    max_leaf_nodes : int, default=31
        [hist-gradient-boosting].
    C : float, default=1.0
        Inverse regularization strength [logistic-regression, linear-svm, rbf-svm].
    gamma : float, default=1.0
        RBF width relative to the embedding's dimension: the kernel is
        ``exp(-gamma ||z - z'||^2 / n_columns)`` on standardized statistics [rbf-svm].
    random_state : int or None, default=None
    n_jobs : int or None, default=None
        Parallel tree building [random-forest, extra-trees].

    Attributes
    ----------
    classifier_ : estimator
        The fitted scikit-learn classifier (a pipeline with its scaler for the linear and RBF models).
    """

    def __init__(self, statistics=STATISTICS, classifier="extra-trees", n_estimators=300,
                 max_features="sqrt", min_samples_leaf=1, learning_rate=0.1, max_iter=100, max_leaf_nodes=31,
                 C=1.0, gamma=1.0, random_state=None, n_jobs=None):
        self.statistics = statistics
        self.classifier = classifier
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.C = C
        self.gamma = gamma
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _fit_embedding(self, bags):
        if self.classifier not in CLASSIFIERS:
            raise ValueError(f"classifier must be one of {CLASSIFIERS}, got {self.classifier!r}")
        return super()._fit_embedding(bags)

    def _make_classifier(self, n_columns):
        forest = {"random-forest": RandomForestClassifier, "extra-trees": ExtraTreesClassifier}
        if self.classifier in forest:
            return forest[self.classifier](
                n_estimators=self.n_estimators, max_features=self.max_features,
                min_samples_leaf=self.min_samples_leaf, random_state=self.random_state, n_jobs=self.n_jobs)
        if self.classifier == "hist-gradient-boosting":
            boosting = HistGradientBoostingClassifier(
                learning_rate=self.learning_rate, max_iter=self.max_iter, max_leaf_nodes=self.max_leaf_nodes,
                early_stopping=False, random_state=self.random_state)
            return make_pipeline(FunctionTransformer(dense, accept_sparse=True), boosting) if self.sparse_ \
                else boosting
        linear = {
            "logistic-regression": lambda: LogisticRegression(C=self.C, max_iter=2000),
            "linear-svm": lambda: LinearSVC(C=self.C, random_state=self.random_state),
            "rbf-svm": lambda: SVC(C=self.C, kernel="rbf", gamma=self.gamma / n_columns),
        }[self.classifier]()
        return make_pipeline(StandardScaler(with_mean=not self.sparse_), linear)



class BagStatsSurvival(BagStatistics, EmbeddedSurvival):
    """A survival head (:class:`~automil_embedding.heads.EmbeddedSurvival`, whose parameters it takes) on per-bag
    statistics (``statistics``, as :class:`BagStats`)."""

    def __init__(self, statistics=STATISTICS, head="coxnet", penalty=0.1, l1_ratio=0.5, n_estimators=200,
                 min_samples_leaf=5, max_features="sqrt", random_state=None, n_jobs=None):
        super().__init__(head, penalty, l1_ratio, n_estimators, min_samples_leaf, max_features, random_state, n_jobs)
        self.statistics = statistics


class BagStatsRegressor(BagStatistics, EmbeddedRegressor):
    """A regression head (:class:`~automil_embedding.heads.EmbeddedRegressor`, whose parameters it takes) on
    per-bag statistics (``statistics``, as :class:`BagStats`)."""

    def __init__(self, statistics=STATISTICS, head="ridge", alpha=1.0, learning_rate=0.1, n_estimators=100,
                 max_depth=3, random_state=None):
        super().__init__(head, alpha, learning_rate, n_estimators, max_depth, random_state)
        self.statistics = statistics
