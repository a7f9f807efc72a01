"""ROC AUC of bag scores against scikit-learn's, and heatmaps of instance scores at their coords (a learner's
or an ensemble's)."""

import csv

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import automil
from automil.data.datasets import load_bags
from automil.evaluation.calibrated import calibrate_model
from automil.evaluation.heatmap_drawing import write_heatmaps
from automil.evaluation.metrics import fold_scores, roc_auc, score
from automil.evaluation.prediction import bag_scores, predict_bags
from automil.evaluation.standardized import Standardized
from automil.tune.final.ensemble_selection import Ensemble, calibrate, calibrated
from automil_datasets.slides import CLASSES, in_witness_region, write_slide_set


def test_binary_auc_of_string_classes_is_scikit_learns_for_one_column_and_two():
    rng = np.random.default_rng(0)
    y = np.array(["LUAD", "LUSC"])[rng.integers(0, 2, 60)]
    margin = rng.normal(size=60) + (y == "LUSC")
    expected = roc_auc_score(y == "LUSC", margin)
    assert roc_auc(y, margin, ["LUAD", "LUSC"]) == pytest.approx(expected)
    assert roc_auc(y, np.column_stack([-margin, margin]), ["LUAD", "LUSC"]) == pytest.approx(expected)
    assert 0.5 < expected < 1.0


def test_multiclass_auc_is_scikit_learns_one_vs_rest_macro():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 90)
    logits = rng.normal(size=(90, 3)) + np.eye(3)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    expected = roc_auc_score(y, proba, multi_class="ovr", average="macro")
    assert roc_auc(y, proba, [0, 1, 2]) == pytest.approx(expected)
    assert score(y, proba, "roc_auc") == pytest.approx(expected)  # what ensemble selection ranks by


def test_a_fold_of_one_class_has_no_auc_and_fold_scores_log_it_beside_acc_and_bacc():
    assert roc_auc(np.array([1, 1, 1]), np.array([0.1, 0.5, 0.9]), [0, 1]) is None
    scores = fold_scores([0, 1, 1, 0], [0, 1, 0, 0], np.array([0.2, 0.9, 0.4, 0.3]), [0, 1])
    assert scores.roc_auc == pytest.approx(roc_auc_score([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.3]))
    assert scores.accuracy == 0.75 and fold_scores([0, 1], [0, 1]).roc_auc is None


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    written = write_slide_set(tmp_path_factory.mktemp("slides"), "trident", n_cases=12, n_features=8, seed=5)
    bags = load_bags(written.features, labels=written.labels)
    model = Standardized(automil.plugins.get_learner("pdmisvm").build()).fit(bags)
    return bags, model, predict_bags(model, bags)


def test_predictions_name_the_classes(fitted):
    bags, model, predictions = fitted
    assert list(model.classes_) == list(CLASSES)
    assert {p.label for p in predictions} <= set(CLASSES) and set(predictions[0].scores) == set(CLASSES)


def test_heatmaps_are_a_picture_and_a_table_per_bag_with_the_scores_at_their_coords(fitted, tmp_path):
    bags, model, _ = fitted
    bags = bags.subset(np.arange(10))  # pictures take a while to draw: ten are enough
    predictions = predict_bags(model, bags)
    assert {p.truth for p in predictions} == set(CLASSES)
    written = write_heatmaps(model, bags, predictions, tmp_path)
    assert [w.bag for w in written] == list(bags.names)
    scores = model.instance_scores(bags)[:, 1]  # the score of tumor_tissue, the second class
    region_mean, elsewhere_mean = [], []
    for i, files in enumerate(written):
        assert files.picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with open(files.table) as f:
            rows = list(csv.DictReader(f))
        rows_of_bag = slice(bags.offsets[i], bags.offsets[i + 1])
        coords = np.array([[float(r["x"]), float(r["y"])] for r in rows])
        np.testing.assert_array_equal(coords, bags.coords[rows_of_bag])
        table_scores = np.array([float(r["score"]) for r in rows])
        np.testing.assert_allclose(table_scores, scores[rows_of_bag], rtol=1e-5)
        if bags.y[i] == CLASSES[1]:
            region = in_witness_region(coords)
            region_mean.append(table_scores[region].mean())
            elsewhere_mean.append(table_scores[~region].mean())
    # the drawn evidence sits where the generator put the witnesses
    assert np.all(np.array(region_mean) > np.array(elsewhere_mean))


def test_without_coords_a_heatmap_is_the_table_alone_by_instance_index(fitted, tmp_path):
    bags, model, predictions = fitted
    plain = automil.Bags(bags.X, bags.offsets, bags.y, names=bags.names)
    written = write_heatmaps(model, plain, predictions, tmp_path)
    assert all(w.picture is None for w in written) and not list(tmp_path.glob("*.png"))
    with open(written[0].table) as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["instance", "score"] and [int(r[0]) for r in rows[1:]] == list(range(bags.sizes[0]))


@pytest.fixture(scope="module")
def bag_level(fitted):
    bags = fitted[0]
    return Standardized(automil.plugins.get_learner("bag-stats").build()).fit(bags)


def _logged_ensemble(members, names, weights, bags):
    """An ensemble as ``automil tune`` logs it (calibrated), on maps fitted to the training bags' scores."""
    ensemble = Ensemble(members, [calibrate(bag_scores(m, bags), bags.y) for m in members], weights, names)
    return calibrate_model(ensemble, bag_scores(ensemble, bags), bags.y)


def test_a_chosen_ensemble_draws_its_members_calibrated_instance_scores(fitted, bag_level, tmp_path):
    bags, model, _ = fitted
    chosen = _logged_ensemble([model, bag_level], ["pdmisvm", "bag-stats"], [0.6, 0.4], bags)
    plain = automil.Bags(bags.X, bags.offsets, bags.y, names=bags.names)  # tables alone: pictures take a while
    written = write_heatmaps(chosen, plain, predict_bags(chosen, plain), tmp_path)
    # bag-stats has no instance scores, so pdmisvm's calibrated ones are the ensemble's, at its whole weight
    expected = calibrated(chosen.calibrators[0], model.instance_scores(bags)[:, 1])[:, 1]
    for i in (0, len(written) - 1):
        with open(written[i].table) as f:
            table_scores = np.array([float(r["score"]) for r in csv.DictReader(f)])
        np.testing.assert_allclose(table_scores, expected[bags.offsets[i]:bags.offsets[i + 1]], rtol=1e-5)


def test_a_model_without_instance_scores_has_no_heatmap_and_the_error_names_the_learners_with_them(
        fitted, bag_level, tmp_path):
    bags = fitted[0]
    ensemble = _logged_ensemble([bag_level], ["bag-stats"], [1.0], bags)
    for model, described in ((bag_level, "BagStats"), (ensemble, "the ensemble of bag-stats")):
        with pytest.raises(ValueError, match=f"^{described} gives no instance scores.*[(].*mi-svm.*pdmisvm.*[)]"):
            write_heatmaps(model, bags, predict_bags(model, bags), tmp_path)
