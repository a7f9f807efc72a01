"""Accuracy of the SVM family on musk1, elephant, fox and tiger against the figures in docs/published.md.

Protocol (the misvm peer's, docs/published.md, section 3): one stratified 10-fold CV over bags (seed 0),
instances standardized with the training folds' mean and standard deviation
(automil.evaluation.standardized.Standardized),
fixed parameters: linear C=1; RBF C=10 with gamma=1/d. The full table and the notes on every difference are in
docs/accuracy-svm.md, made with

    python -m pytest tests/plugins/test_svm_accuracy.py -m accuracy -s
"""

import multiprocessing

import numpy as np
import pytest

DATASETS = ("musk1", "elephant", "fox", "tiger")
LEARNERS = ("sil", "mi-svm", "MI-SVM", "nsk", "smil", "sbmil")
SETTINGS = {"linear": {"kernel": "linear", "C": 1.0}, "rbf": {"kernel": "rbf", "C": 10.0}}
# The peer applies the papers' bag rule, a cut at 0; SIL and sMIL fit their cut by default (issue 14).
PUBLISHED_RULE = {"sil": {"threshold": 0.0}, "smil": {"threshold": 0.0}}

# misvm (the library behind the pdMISVM paper's baselines) on this very protocol, %: docs/published.md, section 3.
PEER = {
    ("sil", "linear"): (76.1, 72.5, 57.5, 74.5), ("sil", "rbf"): (85.7, 74.5, 60.5, 75.5),
    ("mi-svm", "linear"): (77.0, 79.0, 60.0, 75.5), ("mi-svm", "rbf"): (85.7, 73.0, 56.0, 74.0),
    ("MI-SVM", "linear"): (74.8, 81.5, 55.5, 84.0), ("MI-SVM", "rbf"): (86.9, 80.0, 61.0, 84.5),
    ("nsk", "linear"): (82.8, 78.5, 52.5, 78.5), ("nsk", "rbf"): (88.0, 83.0, 59.0, 82.5),
    ("smil", "linear"): (61.9, 67.5, 44.5, 64.5), ("smil", "rbf"): (58.7, 52.0, 50.0, 54.5),
    ("sbmil", "linear"): (68.0, 61.5, 50.5, 61.0), ("sbmil", "rbf"): (70.7, 67.0, 50.5, 64.5),
}

# The floor of every cell is the peer's accuracy minus 3 points (docs/published.md, section 4: within 3
# points of the peer run on the same folds). Cells below that carry their own floor and the reason
# (docs/accuracy-svm.md explains each in full); the floor then guards against regressions.
EXCEPTIONS = {
    # sMIL divides C by the class counts (docs/algorithms.md 8, 16.5); the peer ran misvm with scale_C=False,
    # which drops that division, so at C = 1 or 10 our sMIL is regularized several hundred times harder
    # and mostly predicts the negative class. sbMIL inherits the difference through its stage 1.
    ("sbmil", "linear", "musk1"): 60.0,
    # mi-SVM is a local search over instance labels: solvers that differ within their tolerances (misvm's
    # QP and bias rule vs liblinear) land on different fixed points; 5 points is 1.7 standard errors here.
    ("mi-svm", "linear", "elephant"): 71.0,
}
# Where that C convention leaves sMIL at chance, no floor above chance holds, so those cells are strict
# expected failures: they fail the run the day they reach the peer less 3 points. Seed-0 folds and
# deterministic solvers: the same figures every run. sMIL's regression guard is its default bag cut,
# test_sil_and_smil_defaults_never_predict_one_class below (at least 57%, chance plus 2 standard errors).
AT_CHANCE = {
    ("smil", "linear", "elephant"): "53.0% (peer 67.5): the negative class for every bag of 3 of the 10 folds",
    ("smil", "rbf", "musk1"): "48.9% (peer 58.7): every bag negative on every fold",
    ("smil", "rbf", "tiger"): "50.0% (peer 54.5): every bag negative on every fold",
}


def _cell(learner: str, setting: str, dataset: str):
    # musk1 (476 instances) by default; the three sets of about 1300 instances on demand (pytest -m slow):
    # the whole table was a minute and a half of the default run.
    marks = [] if dataset == "musk1" else [pytest.mark.slow]
    if (learner, setting, dataset) in AT_CHANCE:
        marks.append(pytest.mark.xfail(strict=True, reason="sMIL's C is divided by the class counts, the peer's "
                                       f"is not: {AT_CHANCE[learner, setting, dataset]}"))
    return pytest.param(learner, setting, dataset, marks=marks, id=f"{learner}-{setting}-{dataset}")


def _dataset_table(dataset: str) -> dict:
    """Accuracy (%) of every learner and kernel setting on one dataset, and the fit time in seconds."""
    import automil
    from automil.evaluation.cross_validation import cross_validated_predictions

    bags = automil.load_bags(dataset)
    table = {}
    for name in LEARNERS:
        spec = automil.get_learner(name)
        for setting, params in SETTINGS.items():
            estimator = spec.build(**params, **PUBLISHED_RULE.get(name, {}))
            predicted, _, seconds = cross_validated_predictions(estimator, bags)
            table[name, setting] = (100.0 * np.mean(predicted == bags.y), seconds)
    return table


@pytest.fixture(scope="module")
def accuracy(data_dir, request):
    # Only the datasets of the tests that run (musk1 by default); one dataset per task on both cores; the
    # fork start method keeps the test's environment.
    wanted = [d for d in DATASETS if any(getattr(item, "callspec", None) and item.module is request.module
                                         and "accuracy" in item.fixturenames
                                         and item.callspec.params.get("dataset") == d
                                         for item in request.session.items)]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        tables = dict(zip(wanted, pool.map(_dataset_table, wanted)))
    rows = ["| learner | kernel | " + " | ".join(wanted) + " | fit+predict s |",
            "|---|---|" + "---|" * (len(wanted) + 1)]
    for (name, setting), peer in PEER.items():
        cells = [f"{tables[d][name, setting][0]:.1f} ({peer[DATASETS.index(d)]:.1f})" for d in wanted]
        seconds = sum(tables[d][name, setting][1] for d in wanted)
        rows.append(f"| {name} | {setting} | " + " | ".join(cells) + f" | {seconds:.1f} |")
    print("\nautomil accuracy % (misvm peer, docs/published.md, section 3)\n" + "\n".join(rows))
    return {key: value[0] for d in wanted for key, value in
            (((name, setting, d), tables[d][name, setting]) for name, setting in PEER)}


@pytest.mark.accuracy
@pytest.mark.parametrize(("learner", "setting", "dataset"),
                         [_cell(learner, setting, dataset) for dataset in DATASETS for learner, setting in PEER])
def test_accuracy_is_within_three_points_of_the_peer_or_above_its_documented_floor(accuracy, learner,
                                                                                    setting, dataset):
    peer = PEER[learner, setting][DATASETS.index(dataset)]
    floor = EXCEPTIONS.get((learner, setting, dataset), peer - 3.0)
    got = accuracy[learner, setting, dataset]
    assert got >= floor, f"{learner} ({setting}) on {dataset}: {got:.1f}% < floor {floor:.1f}% (peer {peer}%)"


# SIL's and sMIL's defaults (the bag cut fitted on the training bags) on the sets where the published cut
# at 0 gives one class for (nearly) every test fold: SIL and sMIL on digits-bags (10% witness rate), sMIL
# with the RBF kernel on the classic sets. The published rule on the same folds is the peer: 50.0, 51.0
# (digits-bags) and 48.9, 50.0, 50.0, 50.0 (RBF musk1 ... tiger), one class on 9 or 10 of the 10 folds
# (experiments/default_choices.py, docs/accuracy-svm.md). The floor is chance plus 2 standard errors of a 10-fold
# accuracy on 200 bags (2 x 3.5 points), and no fold may be one class; the fitted cut measures 59.0 (fox)
# to 82.0 on these cells.
ONE_CLASS_CASES = [("sil", "digits-bags", {}), ("smil", "digits-bags", {}),
                   *[("smil", name, SETTINGS["rbf"]) for name in DATASETS]]


@pytest.mark.accuracy
@pytest.mark.parametrize(("learner", "dataset", "params"), ONE_CLASS_CASES,
                         ids=[f"{n}-{d}-{p.get('kernel', 'linear')}" for n, d, p in ONE_CLASS_CASES])
def test_sil_and_smil_defaults_never_predict_one_class(data_dir, learner, dataset, params):
    import automil
    from automil.evaluation.cross_validation import cross_validated_predictions

    bags = automil.load_bags(dataset)
    predicted, folds, _ = cross_validated_predictions(automil.get_learner(learner).build(**params), bags)
    one_class = [f for f in np.unique(folds) if len(np.unique(predicted[folds == f])) == 1]
    assert not one_class, f"{learner} on {dataset}: every bag of fold(s) {one_class} got the same class"
    accuracy = 100.0 * np.mean(predicted == bags.y)
    assert accuracy >= 57.0, f"{learner} on {dataset}: {accuracy:.1f}% < 57% (published cut: 50%)"
