"""The deep learners' survival and regression heads (automil_deep.heads, automil_deep.outcomes): the losses
against a direct computation and scikit-survival's Cox model, a network learning a risk that grows with the
share of witness instances, a value, and a signal carried by the clinical covariates alone."""

import pickle

import numpy as np
import pytest

pytest.importorskip("torch")

import optuna  # noqa: E402
import torch  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402
from sksurv.linear_model import CoxPHSurvivalAnalysis  # noqa: E402
from sksurv.metrics import concordance_index_censored  # noqa: E402
from sksurv.util import Surv  # noqa: E402

from automil import Bags, get_learner  # noqa: E402
from automil.epochs import epoch_listener, time_limit  # noqa: E402
from automil_deep.heads import breslow, cox_loss, time_bins, time_bins_nll  # noqa: E402
from automil_deep.training import Batches, matrix_rows  # noqa: E402

# small networks, trained long enough to learn these sets in a second or two each (one thread: see below)
SMALL = {"hidden": 32, "epochs": 30, "random_state": 0}


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # two threads on tiny networks only wait on each other


def _cohort(n_bags, seed, n_covariates=0):
    """Bags of 8 to 12 Gaussian instances, up to half of them witnesses (shifted along feature 0); the share
    of witnesses of each bag, and covariates drawn apart from the instances."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(8, 13, n_bags)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    X = rng.normal(size=(offsets[-1], 8))
    share = np.empty(n_bags)
    for i, (start, size) in enumerate(zip(offsets[:-1], sizes)):
        witnesses = rng.integers(0, size // 2 + 1)
        X[start:start + witnesses, 0] += 3.0
        share[i] = witnesses / size
    return X, offsets, share, rng.normal(size=(n_bags, n_covariates)), rng


def _survival(n_bags, seed, risk_of=lambda share, covariates: 5.0 * share, n_covariates=0):
    """Proportional hazards: exponential times of rate exp(risk), censored by exponential times (about a third
    of the bags); the bags and each one's true risk."""
    X, offsets, share, covariates, rng = _cohort(n_bags, seed, n_covariates)
    risk = risk_of(share, covariates)
    time, censoring = rng.exponential(np.exp(-risk)), rng.exponential(1.0, n_bags)
    labels = Surv.from_arrays(time <= censoring, np.minimum(time, censoring))
    return Bags(X, offsets, labels, covariates=covariates if n_covariates else None), risk


def _harrell(bags, risk) -> float:
    return concordance_index_censored(bags.y["event"], bags.y["time"], risk)[0]


def _chance_bound(bags, risk, rng) -> float:
    """The 99th percentile of Harrell's C of ``risk`` given to the bags in a random order: a concordance above
    it is a ranking that 99 in 100 random ones do not reach on these bags."""
    return float(np.quantile([_harrell(bags, rng.permutation(risk)) for _ in range(200)], 0.99))


def test_the_cox_loss_is_the_breslow_partial_likelihood_over_each_events_risk_set():
    risk = torch.tensor([0.3, -1.2, 0.8, 0.1, 2.0, -0.4, 0.0], dtype=torch.float64)
    time = np.array([5.0, 3.0, 3.0, 8.0, 3.0, 1.0, 5.0])  # ties at 3 (two events, one censored) and at 5
    event = np.array([True, True, False, True, True, False, False])
    r = risk.numpy()
    direct = [r[i] - np.log(sum(np.exp(r[j]) for j in range(7) if time[j] >= time[i])) for i in range(7) if event[i]]
    np.testing.assert_allclose(float(cox_loss(risk, time, event)), -np.mean(direct), rtol=1e-12)
    # no event, no likelihood: 0, with a gradient the optimizer can take
    assert float(cox_loss(risk, time, np.zeros(7, dtype=bool))) == 0.0
    # scikit-survival's Cox model (Breslow's ties) maximizes the same likelihood: its gradient is 0 at its optimum
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    time = np.round(rng.exponential(np.exp(-X @ [1.0, -0.5])), 1) + 0.1
    event = rng.random(40) < 0.7
    assert len(np.unique(time)) < 40  # ties
    fitted = CoxPHSurvivalAnalysis(alpha=0.0, ties="breslow").fit(X, Surv.from_arrays(event, time))
    coef = torch.tensor(fitted.coef_, requires_grad=True)
    cox_loss(torch.from_numpy(X) @ coef, time, event).backward()
    np.testing.assert_allclose(coef.grad.numpy(), 0.0, atol=1e-8)
    # and Breslow's baseline gives its survival curves
    times, hazard = breslow(X @ fitted.coef_, time, event)
    theirs = np.array([curve(times) for curve in fitted.predict_survival_function(X)])
    np.testing.assert_allclose(np.exp(-np.outer(np.exp(X @ fitted.coef_), hazard)), theirs, atol=1e-12)


def test_the_time_bins_nll_of_an_event_and_a_censored_bag_is_their_hand_computed_likelihood():
    logits = torch.tensor([[0.2, -0.5, 1.0], [-1.0, 0.4, 0.3]], dtype=torch.float64)
    h = torch.sigmoid(logits).numpy()
    # bag 0: an event in bin 1 (alive through bin 0, then the event); bag 1: censored in bin 2 (known alive
    # through bins 0 and 1)
    event_likelihood = (1 - h[0, 0]) * h[0, 1]
    censored_likelihood = (1 - h[1, 0]) * (1 - h[1, 1])
    loss = time_bins_nll(logits, torch.tensor([1, 2]), torch.tensor([1.0, 0.0], dtype=torch.float64))
    np.testing.assert_allclose(float(loss), -(np.log(event_likelihood) + np.log(censored_likelihood)) / 2, rtol=1e-12)
    # the bins hold about as many events each; tied times merge cuts
    cuts = time_bins(np.arange(1.0, 101.0), 4)
    np.testing.assert_allclose(cuts, [25.75, 50.5, 75.25])
    np.testing.assert_array_equal(time_bins(np.array([1.0, 1.0, 1.0, 1.0, 2.0]), 4), [1.0])


def test_every_training_batch_of_a_cox_head_holds_an_event():
    sizes = np.random.default_rng(0).integers(1, 20, 200)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    batches = Batches(matrix_rows(np.zeros((offsets[-1], 1), dtype=np.float32), offsets), sizes, 1)
    event = np.zeros(200, dtype=bool)
    event[::17] = True  # 12 events among 200 bags: most batches of 8 hold none
    parts = [part for part, _, _ in batches.training_batches(np.arange(200), 8, None, np.random.default_rng(1),
                                                            must_hold=event)]
    assert all(event[part].any() for part in parts)
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(200))  # every bag, once


@pytest.mark.parametrize(("learner", "params"), [("abmil", {"survival_loss": "nll"}),
                                                 ("mi-net", {"survival_loss": "cox", "pooling": "mean"})])
def test_a_survival_head_learns_a_risk_that_grows_with_the_share_of_witnesses(learner, params):
    train, _ = _survival(120, 0)
    test, true_risk = _survival(80, 1)
    heard = []
    with epoch_listener(lambda epoch, score: heard.append(score) and False):
        model = get_learner(learner).build(task="survival", **SMALL, **params).fit(train)
    assert heard and all(0.0 <= score <= 1.0 for score in heard)  # the held-out bags' Harrell's C
    risk = model.predict(test)
    assert _harrell(test, risk) > max(0.6, _chance_bound(test, risk, np.random.default_rng(0)))
    assert _harrell(test, true_risk) > _harrell(test, risk) - 0.1  # and near what the true risk reaches
    times = np.quantile(train.y["time"], [0.1, 0.3, 0.5, 0.7, 0.9])
    curves = model.predict_survival(test, times)  # the base class holds them to non-increasing, in [0, 1]
    # the riskier half of the bags survives less, on average, at every time
    riskier = risk > np.median(risk)
    assert (curves[riskier].mean(axis=0) < curves[~riskier].mean(axis=0)).all()
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict_survival(test, times), curves)


@pytest.mark.parametrize("loss", ["nll", "cox"])
def test_a_survival_fit_whose_time_ran_out_keeps_its_first_epoch_and_still_gives_curves(loss):
    train, _ = _survival(40, 0)
    with time_limit(0.0):  # no time left at all: one epoch, and no second training on every bag
        model = get_learner("abmil").build(task="survival", survival_loss=loss, hidden=16).fit(train)
    assert model.time_limited_params_ == {"epochs": 1, "min_epochs": 1}
    curves = model.predict_survival(train, np.quantile(train.y["time"], [0.2, 0.5, 0.8]))
    assert curves.shape == (40, 3) and np.isfinite(model.predict(train)).all()


def test_a_bad_survival_setting_is_named():
    train, _ = _survival(20, 0)
    for params, named in [({"survival_loss": "aft"}, "survival_loss='aft'"), ({"n_bins": 1}, "n_bins=1")]:
        with pytest.raises(ValueError, match=named):
            get_learner("mi-net").build(task="survival", **params).fit(train)


def test_a_regression_head_learns_a_value_and_gives_it_in_the_targets_units():
    X, offsets, share, _, rng = _cohort(120, 0)
    train = Bags(X, offsets, 50.0 + 10.0 * share + rng.normal(0.0, 0.5, 120))
    X, offsets, share, _, rng = _cohort(80, 1)
    target = 50.0 + 10.0 * share + rng.normal(0.0, 0.5, 80)
    model = get_learner("abmil").build(task="regression", **SMALL).fit(train)
    predicted = model.predict(Bags(X, offsets))
    assert r2_score(target, predicted) > 0.3
    assert abs(predicted.mean() - target.mean()) < 1.0


@pytest.mark.parametrize("task", ["survival", "regression"])
def test_a_signal_in_the_covariates_alone_is_learned(task):
    # instances of no use (no witness share counts): the first covariate decides, the second is noise
    if task == "survival":
        def labelled(n_bags, seed):
            return _survival(n_bags, seed, lambda share, covariates: 1.5 * covariates[:, 0], n_covariates=2)[0]
    else:
        def labelled(n_bags, seed):
            X, offsets, _, covariates, rng = _cohort(n_bags, seed, 2)
            return Bags(X, offsets, 3.0 * covariates[:, 0] + rng.normal(0.0, 0.5, n_bags), covariates=covariates)
    train, test = labelled(120, 2), labelled(80, 3)
    model = get_learner("dsmil").build(task=task, **SMALL).fit(train)
    assert model.covariate_mean_.shape == (2,)
    predicted = model.predict(test)
    if task == "survival":
        assert _harrell(test, predicted) > max(0.65, _chance_bound(test, predicted, np.random.default_rng(0)))
    else:
        assert r2_score(test.y, predicted) > 0.3
    blind = Bags(test.X, test.offsets, test.y)  # the same bags without their covariates
    with pytest.raises(ValueError, match="fitted with 2 covariates; these bags have 0"):
        model.predict(blind)


def test_the_search_spaces_add_the_survival_heads_parameters_to_survival_trials_only():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for task in ("classification", "survival", "regression"):
        seen = set()
        for _ in range(12):
            trial = study.ask()
            trial.set_user_attr("task", task)
            params = get_learner("transmil").search_space(trial)
            seen |= set(params)
            get_learner("transmil").build(task=task, **params)  # every point of the space builds
        head = {"survival_loss", "n_bins", "cox_batch_size"}
        assert (seen >= head) if task == "survival" else not (seen & head)
