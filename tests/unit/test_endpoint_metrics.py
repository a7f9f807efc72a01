"""Survival and regression folds scored as scikit-survival, scikit-learn and scipy score them, on the same
predictions; and their chance levels and standard errors: a random risk or value is not above chance, a true
one is."""

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import mean_absolute_error, r2_score, root_mean_squared_error
from sksurv.metrics import concordance_index_censored, concordance_index_ipcw, integrated_brier_score

from automil.endpoints import TASK_METRICS, evaluation_times, label_counts, regression_labels, survival_labels
from automil.evaluation.chance import above_chance, chance_level, score_stderr
from automil.evaluation.metrics import METRICS, FoldScores, fold_scores, one_class, task_metrics


def proportional_hazards(n, seed, beta=1.0, censoring=1.5):
    """Bags' true log-hazards ``x`` and their survival labels (exponential times, exponential censoring)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    time, censor = rng.exponential(np.exp(-beta * x)), rng.exponential(censoring, n)
    return x, survival_labels(np.minimum(time, censor), time <= censor)


def survival_curves(risk, times):
    """Exponential survival probabilities of the true model at ``times``, one row a bag."""
    return np.exp(-np.outer(np.exp(risk), times))


def test_survival_folds_are_scored_as_scikit_survival_scores_them():
    x, y = proportional_hazards(200, seed=0)
    train, test, risk = y[:150], y[150:], x[150:]
    assert test["time"].max() < train["time"].max()  # every test bag inside the training follow-up
    times = evaluation_times(train, test)
    curves = survival_curves(risk, times)
    scores = fold_scores(test, risk, curves, y_train=train)
    assert scores.concordance == pytest.approx(concordance_index_censored(test["event"], test["time"], risk)[0])
    assert scores.uno_concordance == pytest.approx(concordance_index_ipcw(train, test, risk)[0])
    assert scores.integrated_brier == pytest.approx(integrated_brier_score(train, test, curves, times))
    assert scores.accuracy is None and scores.r2 is None and not scores.one_class
    assert fold_scores(test, risk).uno_concordance is None and fold_scores(test, risk).integrated_brier is None


def test_test_bags_past_the_training_follow_up_are_left_to_the_bags_it_covers():
    x, y = proportional_hazards(120, seed=1)
    order = np.argsort(y["time"])
    train, test = y[order[:90]], y[order[30:]]  # the longest-followed bags are test bags only
    risk = x[order[30:]]
    times = evaluation_times(train, test)
    curves = survival_curves(risk, times)
    kept = test["time"] <= train["time"].max()
    scores = fold_scores(test, risk, curves, y_train=train)
    assert not kept.all()
    assert scores.uno_concordance == pytest.approx(
        concordance_index_ipcw(train, test, risk, tau=train["time"].max())[0])
    assert scores.integrated_brier == pytest.approx(integrated_brier_score(train, test[kept], curves[kept], times))


def test_part_of_a_fold_scored_at_the_whole_folds_times_keeps_the_times_inside_its_own_range():
    x, y = proportional_hazards(200, seed=6)
    train, test, risk = y[:120], y[120:], x[120:]
    times = evaluation_times(train, test)
    curves = survival_curves(risk, times)
    block = np.argsort(test["time"])[:40]  # the earlier half of the fold: the later times fall outside it
    scores = fold_scores(test[block], risk[block], curves[block], y_train=train, times=times)
    inside = (times > test["time"][block].min()) & (times < test["time"][block].max())
    assert 2 <= inside.sum() < len(times)
    assert scores.integrated_brier == pytest.approx(
        integrated_brier_score(train, test[block], curves[block][:, inside], times[inside]))
    assert scores.concordance == pytest.approx(
        concordance_index_censored(test["event"][block], test["time"][block], risk[block])[0])


def test_a_worse_survival_model_scores_worse():
    x, y = proportional_hazards(300, seed=2)
    train, test, risk = y[:200], y[200:], x[200:]
    times = evaluation_times(train, test)
    true = fold_scores(test, risk, survival_curves(risk, times), y_train=train)
    noise = np.random.default_rng(2).normal(size=100)
    noisy = fold_scores(test, noise, survival_curves(noise, times), y_train=train)
    assert true.concordance > noisy.concordance and true.uno_concordance > noisy.uno_concordance
    assert true.integrated_brier < noisy.integrated_brier


def test_degenerate_survival_folds_have_no_concordance_and_a_constant_risk_is_one_class():
    train = survival_labels([1.0, 2.0, 3.0, 4.0], [1, 1, 0, 1])
    no_event = np.array([(False, 1.5), (False, 2.5)], dtype=train.dtype)
    scores = fold_scores(no_event, [0.1, 0.2], y_train=train)
    assert scores.concordance is None and scores.uno_concordance is None
    constant = fold_scores(train, np.zeros(4))
    assert constant.one_class and constant.concordance == pytest.approx(0.5)
    assert one_class(train, [3.0, 3.0, 3.0, 3.0]) and not one_class(train[:1], [3.0])
    with pytest.raises(ValueError, match="one row for each of the 4 bags"):
        fold_scores(train, np.arange(4.0), np.ones((3, 2)), y_train=train)


def test_regression_folds_are_scored_as_scikit_learn_and_scipy_score_them():
    rng = np.random.default_rng(3)
    target = rng.normal(size=80)
    predicted = target + rng.normal(scale=0.8, size=80)
    scores = fold_scores(regression_labels(target), predicted)
    assert scores.r2 == pytest.approx(r2_score(target, predicted))
    assert scores.mae == pytest.approx(mean_absolute_error(target, predicted))
    assert scores.rmse == pytest.approx(root_mean_squared_error(target, predicted))
    assert scores.spearman == pytest.approx(spearmanr(target, predicted).statistic)
    assert scores.concordance is None and scores.balanced_accuracy is None and not scores.one_class
    constant = fold_scores(regression_labels(target), np.full(80, target.mean()))
    assert constant.one_class and constant.spearman is None and constant.r2 == pytest.approx(0.0)


def test_classification_folds_are_scored_as_before_and_each_task_names_its_metrics():
    scores = fold_scores(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0]), np.array([0.1, 0.9, 0.4, 0.3]), [0, 1])
    assert (scores.accuracy, scores.balanced_accuracy, scores.roc_auc) == (0.75, 0.75, 1.0)
    assert scores == FoldScores(accuracy=0.75, balanced_accuracy=0.75, roc_auc=1.0)
    assert task_metrics([0, 1]) == METRICS == TASK_METRICS["classification"]
    assert task_metrics(survival_labels([1.0], [1])) == ("concordance", "uno_concordance", "integrated_brier")
    assert task_metrics(regression_labels([1.0])) == ("r2", "spearman", "mae", "rmse")


def test_chance_levels_of_the_new_metrics():
    y = survival_labels([1.0, 2.0], [1, 0])
    assert chance_level("concordance", y) == chance_level("uno_concordance", y) == 0.5
    assert chance_level("r2", regression_labels([1.0])) == chance_level("spearman", None) == 0.0
    with pytest.raises(ValueError, match="no chance level for metric 'integrated_brier'"):
        chance_level("integrated_brier", y)


def _spread_and_claims(metric, draw, reps=300):
    """The spread of ``metric`` over ``reps`` draws of ``(labels, prediction)``, its mean standard error, and
    the share of draws that claimed to be above chance."""
    values, errors, claims = [], [], []
    for seed in range(reps):
        y, prediction = draw(seed)
        value = getattr(fold_scores(y, prediction), metric)
        error = score_stderr(metric, value, label_counts(y))
        values.append(value)
        errors.append(error)
        claims.append(above_chance(value, error, chance_level(metric, y)))
    return np.std(values), np.mean(errors), np.mean(claims)


@pytest.mark.parametrize("metric, n, draw_labels", [
    ("concordance", 80, lambda n, rng: proportional_hazards(n, int(rng.integers(1 << 30)))[1]),
    ("spearman", 60, lambda n, rng: regression_labels(rng.normal(size=n))),
])
def test_a_random_prediction_is_not_above_chance_and_the_error_is_its_spread(metric, n, draw_labels):
    def draw(seed):
        rng = np.random.default_rng(seed)
        return draw_labels(n, rng), rng.normal(size=n)

    spread, error, claims = _spread_and_claims(metric, draw)
    assert 0.9 * spread < error < 1.25 * spread
    assert claims <= 0.05


def test_a_random_value_has_no_r2_above_chance_even_at_its_best_scale():
    def draw(seed):
        rng = np.random.default_rng(seed)
        target = rng.normal(size=60)
        noise = rng.normal(size=60)
        scale = max(np.corrcoef(target, noise)[0, 1], 0.0)  # the scale that gives a random value its best R^2
        return regression_labels(target), target.mean() + scale * (noise - noise.mean())

    assert _spread_and_claims("r2", draw)[2] <= 0.05


@pytest.mark.parametrize("metric", ["concordance", "uno_concordance"])
def test_a_true_risk_is_above_chance_and_a_random_one_is_not(metric):
    x, y = proportional_hazards(300, seed=4)
    train, test = y[:150], y[150:]
    counts = label_counts(test)
    true = getattr(fold_scores(test, x[150:], y_train=train), metric)
    random = getattr(fold_scores(test, np.random.default_rng(4).normal(size=150), y_train=train), metric)
    assert above_chance(true, score_stderr(metric, true, counts), 0.5)
    assert not above_chance(random, score_stderr(metric, random, counts), 0.5)
    assert score_stderr(metric, 0.5, counts) > score_stderr(metric, true, counts)


@pytest.mark.parametrize("metric", ["r2", "spearman"])
def test_a_true_value_is_above_chance(metric):
    rng = np.random.default_rng(5)
    target = rng.normal(size=100)
    scores = fold_scores(regression_labels(target + rng.normal(size=100)), target)
    value = getattr(scores, metric)
    assert above_chance(value, score_stderr(metric, value, [100]), 0.0)
    assert score_stderr(metric, value, [400]) < score_stderr(metric, value, [100])


def test_uno_concordance_is_given_a_wider_error_the_more_bags_are_censored():
    assert score_stderr("uno_concordance", 0.6, [20, 80]) > score_stderr("uno_concordance", 0.6, [20, 5]) > \
        score_stderr("concordance", 0.6, [20, 5])
    assert score_stderr("concordance", 0.6, [1, 40]) == 0.5
