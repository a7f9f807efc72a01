"""The embedded-space learners' survival and regression heads on generated bags whose risk or target grows
with the share of witness instances (automil.task_checks.outcome_bags), and the bag covariates they append."""

import numpy as np
import optuna
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import r2_score
from sksurv.metrics import concordance_index_censored

import automil
from automil import Bags
from automil.endpoints import regression_labels, survival_labels
from automil.task_checks import outcome_bags
from automil_embedding.heads import REGRESSION_HEADS, SURVIVAL_HEADS

LEARNERS = ("bag-stats", "mivlad", "mifv", "miles")


def _fit(learner, task, train, **params):
    return automil.get_learner(learner).build(task=task, **params).fit(train, train.y)


def _concordance(y, risk) -> float:
    return concordance_index_censored(y["event"], y["time"], risk)[0]


def _chance_ceiling(y, seed=0, draws=1000) -> float:
    """The 99th percentile of the concordance of random risks on the labels ``y``: what a model must beat to
    be told from chance at the 1% level (the null distribution computed, not assumed)."""
    rng = np.random.default_rng(seed)
    return float(np.quantile([_concordance(y, rng.random(len(y))) for _ in range(draws)], 0.99))


@pytest.mark.parametrize("head", SURVIVAL_HEADS)
@pytest.mark.parametrize("learner", LEARNERS)
def test_each_survival_head_orders_held_out_bags_better_than_chance(learner, head):
    train, test = outcome_bags(100, "survival", seed=0), outcome_bags(80, "survival", seed=1)
    model = _fit(learner, "survival", train, head=head)
    risk = model.predict(test)
    assert _concordance(test.y, risk) > _chance_ceiling(test.y)
    times = np.quantile(train.y["time"][train.y["event"]], [0.25, 0.5, 0.75])
    curves = model.predict_survival(test, times)
    assert curves.shape == (test.n_bags, 3) and (np.diff(curves, axis=1) <= 0).all()
    # the curves tell the risk's story: the riskier a bag, the lower its survival at the median event time
    assert spearmanr(risk, curves[:, 1]).statistic < -0.5


@pytest.mark.parametrize("head", REGRESSION_HEADS)
@pytest.mark.parametrize("learner", LEARNERS)
def test_each_regression_head_explains_held_out_variance(learner, head):
    train, test = outcome_bags(100, "regression", seed=0), outcome_bags(80, "regression", seed=1)
    model = _fit(learner, "regression", train, head=head)
    assert r2_score(test.y["target"], model.predict(test)) > 0


def _with_covariate(bags: Bags, task: str, seed: int) -> Bags:
    """The same bags with a covariate (an age, in years) that carries as much of the outcome as the witnesses:
    the outcome drawn again from the witness share plus the standardized age."""
    rng = np.random.default_rng(seed)
    share = np.add.reduceat(bags.instance_y.astype(np.float64), bags.offsets[:-1]) / bags.sizes
    age = rng.normal(60.0, 10.0, bags.n_bags)
    signal = 2.0 * share + (age - 60.0) / 10.0
    if task == "survival":
        event_time = rng.exponential(np.exp(-2.0 * signal))
        follow_up = rng.uniform(0.1, 1.0, bags.n_bags)
        y = survival_labels(np.minimum(event_time, follow_up), event_time <= follow_up)
    elif task == "regression":
        y = regression_labels(signal + rng.normal(0.0, 0.2, bags.n_bags))
    else:
        y = (signal > np.median(signal)).astype(np.int64)
    return Bags(bags.X, bags.offsets, y, covariates=age[:, None], covariate_names=["age"])


def _score(task, y, model, bags) -> float:
    if task == "survival":
        return _concordance(y, model.predict(bags))
    if task == "regression":
        return r2_score(y["target"], model.predict(bags))
    return float(np.mean(model.predict(bags) == y))


@pytest.mark.parametrize("task", ["classification", "survival", "regression"])
@pytest.mark.parametrize("learner", LEARNERS)
def test_covariates_enter_the_fit_and_carry_their_signal(learner, task):
    train = _with_covariate(outcome_bags(100, "regression", seed=0), task, seed=2)
    test = _with_covariate(outcome_bags(80, "regression", seed=1), task, seed=3)
    without = Bags(train.X, train.offsets, train.y), Bags(test.X, test.offsets, test.y)
    spec = automil.get_learner(learner)
    with_age = spec.build(task=task).fit(train, train.y)
    blind = spec.build(task=task).fit(without[0], without[0].y)
    assert _score(task, test.y, with_age, test) > _score(task, test.y, blind, without[1]) + 0.05
    with pytest.raises(ValueError, match="was fitted on bags with 1 covariates, but these bags have 0"):
        with_age.predict(without[1])


@pytest.mark.parametrize("task", ["survival", "regression"])
@pytest.mark.parametrize("learner", LEARNERS)
def test_the_search_space_asks_for_the_head_of_the_trial_task(learner, task):
    spec = automil.get_learner(learner)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    heads = set()
    for _ in range(6):
        trial = study.ask()
        trial.set_user_attr("task", task)
        params = spec.search_space(trial)
        assert not {"C", "classifier"} & set(params), params  # no classifier's parameter
        heads.add(params["head"])
        assert isinstance(spec.build(task=task, **params), spec.estimator_for(task))
    assert heads == set(SURVIVAL_HEADS if task == "survival" else REGRESSION_HEADS)


def test_an_unknown_head_is_an_error_naming_the_choices():
    train = outcome_bags(20, "survival")
    with pytest.raises(ValueError, match=r"head must be one of \('coxnet', 'random-survival-forest'\), got 'cox'"):
        _fit("bag-stats", "survival", train, head="cox")
