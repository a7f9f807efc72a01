"""The survival and regression learner bases: their labels checked with one clear line each, their
predictions checked as the classifier's scores are, and a spec's tasks naming the estimator of each."""

import numpy as np
import pytest

from automil import BagClassifier, BagRegressor, Bags, BagSurvivalModel, LearnerSpec

SURVIVAL = [("event", "?"), ("time", "<f8")]


class ExponentialRisk(BagSurvivalModel):
    """Risk = the bag mean of feature 0; survival exp(-exp(risk) t / median time): a proportional-hazards
    curve, or a rising one when ``broken``."""

    def __init__(self, broken=False):
        self.broken = broken

    def _fit(self, bags, time, event):
        self.scale_ = float(np.median(time[event]))

    def _predict(self, bags):
        return bags.means()[:, 0]

    def _predict_survival(self, bags, times):
        hazard = np.outer(np.exp(self._predict(bags)), np.asarray(times)) / self.scale_
        return 1 - np.exp(-hazard) if self.broken else np.exp(-hazard)


class MeanTarget(BagRegressor):
    def _fit(self, bags, target):
        self.slope_ = float(np.polyfit(bags.means()[:, 0], target, 1)[0])

    def _predict(self, bags):
        return self.slope_ * bags.means()[:, 0]


class Majority(BagClassifier):
    def _fit(self, bags, y):
        self.majority_ = int(np.bincount(y).argmax())

    def _decision_function(self, bags):
        return np.full(bags.n_bags, 1.0 if self.majority_ else -1.0)


def _bags(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return Bags.from_list([rng.normal(size=(int(rng.integers(2, 5)), 3)) for _ in range(n)],
                          names=[f"case-{i}" for i in range(n)])


def _survival(n=12, seed=0):
    rng = np.random.default_rng(seed)
    y = np.empty(n, dtype=SURVIVAL)
    y["time"], y["event"] = rng.exponential(10.0, n), rng.random(n) < 0.7
    y["event"][0] = True
    return y


def test_a_survival_model_predicts_a_risk_per_bag_and_non_increasing_curves():
    bags, y = _bags(), _survival()
    model = ExponentialRisk().fit(bags, y)
    np.testing.assert_allclose(model.predict(bags), bags.means()[:, 0])
    times = np.array([8.0, 1.0, 4.0, 0.0])  # in any order: a curve is non-increasing along sorted times
    curves = model.predict_survival(bags.to_list(), times)
    assert curves.shape == (12, 4)
    order = np.argsort(times)
    assert (np.diff(curves[:, order], axis=1) <= 0).all()
    np.testing.assert_allclose(curves[:, 3], 1.0)  # nobody has had the event at time 0


@pytest.mark.parametrize(("labels", "message"), [
    (np.arange(12) % 2, "needs survival labels .*dtype int64"),
    (np.zeros(12, dtype=SURVIVAL), "no event among the 12 labels: every one is censored"),
    ("negative", r"^bag 5 .'case-5'.: time -1 is negative$"),
    ("nan", r"^bag 5 .'case-5'.: time is missing$"),
    ("event 2", r"^bag 5 .'case-5'.: event 2 is neither 0 \(censored\) nor 1 \(observed\)$"),
], ids=["classes", "all-censored", "negative-time", "nan-time", "event-2"])
def test_a_survival_model_refuses_bad_labels_naming_the_bag(labels, message):
    if isinstance(labels, str):
        y = _survival()
        if labels == "event 2":
            y = np.array(list(zip(y["event"].astype(int), y["time"])), dtype=[("event", "i8"), ("time", "f8")])
            y["event"][5] = 2
        else:
            y["time"][5] = -1.0 if labels == "negative" else np.nan
        labels = y
    with pytest.raises(ValueError, match=message):
        ExponentialRisk().fit(_bags(), labels)


def test_a_survival_curve_that_rises_or_a_bad_time_is_an_error_naming_it():
    bags = _bags()
    broken = ExponentialRisk(broken=True).fit(bags, _survival())
    with pytest.raises(ValueError, match=r"ExponentialRisk._predict_survival returned for bag 0 .'case-0'. a "
                                         r"curve that is not a survival function"):
        broken.predict_survival(bags, [1.0, 2.0])
    with pytest.raises(ValueError, match="times must be a 1-D array of finite times >= 0"):
        ExponentialRisk().fit(bags, _survival()).predict_survival(bags, [1.0, -2.0])


def test_a_regressor_takes_regression_labels_or_plain_numbers_and_names_a_bad_target():
    bags = _bags()
    target = 2.0 * bags.means()[:, 0]
    labels = np.array([(t,) for t in target], dtype=[("target", "<f8")])
    np.testing.assert_allclose(MeanTarget().fit(bags, labels).predict(bags), target)
    assert MeanTarget().fit(bags, target).score(bags, labels) == pytest.approx(1.0)
    bad = target.copy()
    bad[4] = np.nan
    with pytest.raises(ValueError, match="^bag 4 .'case-4'.: target is missing$"):
        MeanTarget().fit(bags, bad)
    with pytest.raises(ValueError, match="needs regression labels .*event"):
        MeanTarget().fit(bags, _survival())
    with pytest.raises(ValueError, match="^bag 0 .'case-0'.: target .*'a'.* is not a number$"):
        MeanTarget().fit(bags, np.array(list("abcdefghijkl")))
    with pytest.raises(ValueError, match="one number per bag, got labels of dtype float64 and shape .12, 2."):
        MeanTarget().fit(bags, np.zeros((12, 2)))


def test_the_bases_check_predictions_and_inputs_as_the_classifier_does():
    bags = _bags()

    class NaNRisk(ExponentialRisk):
        def _predict(self, bags):
            risk = super()._predict(bags)
            risk[3] = np.nan
            return risk

    with pytest.raises(ValueError, match=r"NaNRisk._predict returned a non-finite value \(NaN or inf\) for bag 3"):
        NaNRisk().fit(bags, _survival()).predict(bags)
    fitted = ExponentialRisk().fit(bags, _survival())
    with pytest.raises(ValueError, match="bags have 2 features, but ExponentialRisk was fitted with 3"):
        fitted.predict([np.zeros((2, 2))])
    sparse = Bags(__import__("scipy.sparse").sparse.csr_matrix(bags.X), bags.offsets)
    with pytest.raises(ValueError, match="MeanTarget does not accept sparse instances"):
        MeanTarget().fit(sparse, np.arange(12.0))
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        MeanTarget().predict(bags)


def test_a_spec_builds_the_estimator_of_each_task_it_serves_and_refuses_the_others():
    spec = LearnerSpec(name="mean", estimator=Majority, search_space=lambda trial: {},
                       tasks=("classification", "survival", "regression"),
                       estimators={"survival": ExponentialRisk, "regression": MeanTarget})
    assert isinstance(spec.build(), Majority)  # classification stays the default
    assert spec.build(task="survival", broken=True).broken
    assert isinstance(spec.build(task="regression"), MeanTarget)
    survival_only = LearnerSpec(name="risk", estimator=ExponentialRisk, search_space=lambda trial: {},
                                tasks=("survival",))
    assert survival_only.estimator_for("survival") is ExponentialRisk
    with pytest.raises(ValueError, match="learner 'risk' does not serve classification .it serves survival."):
        survival_only.build()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"estimator": ExponentialRisk}, "its classification estimator ExponentialRisk is not a BagClassifier"),
    ({"estimator": Majority, "tasks": ("classification", "survival")},
     "its survival estimator Majority is not a BagSurvivalModel"),
    ({"estimator": Majority, "estimators": {"regression": MeanTarget}}, "has an estimator for regression, which"),
    ({"estimator": Majority, "tasks": ("ranking",)}, "tasks must be a non-empty tuple of"),
    ({"estimator": Majority, "tasks": ()}, "tasks must be a non-empty tuple of"),
], ids=["survival-as-classifier", "classifier-as-survival", "idle-estimator", "unknown-task", "no-task"])
def test_a_spec_whose_tasks_and_estimators_disagree_is_refused_at_registration(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LearnerSpec(name="odd", search_space=lambda trial: {}, **kwargs)
