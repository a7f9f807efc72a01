"""Grouped splits: a patient's slides never on both sides of any split automil makes (the tuning folds and
the repeats, the inner splits of nested cross-validation, the deep learners' early-stopping bags, MIDF's
inner folds), and a folds file that splits a group refused with its name."""

import json

import numpy as np
import pytest

import automil
from automil.data.datasets import load_bags
from automil.evaluation.folds import bag_folds, fold_splits, split_groups
from automil.evaluation.folds_file import RunFolds, read_fold_file
from automil_datasets.slides import write_slide_set


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    written = write_slide_set(tmp_path_factory.mktemp("slides"), "clam", n_cases=18, n_features=5, seed=7, pt=False)
    return load_bags(written.features)


def _assert_no_group_on_both_sides(splits, groups):
    for train, test in splits:
        shared = set(groups[train]) & set(groups[test])
        assert not shared, f"group {sorted(shared)[0]} on both sides"


@pytest.mark.parametrize("seed", range(5))
def test_grouped_folds_keep_a_group_in_one_fold_and_every_class_in_every_training_set(slides, seed):
    folds = bag_folds(slides.y, 4, seed, slides.groups)
    assert split_groups(folds, slides.groups) is None
    for fold in range(4):
        assert set(slides.y[folds != fold]) == set(slides.y)
    ungrouped = bag_folds(slides.y, 4, seed)  # what the groups prevent: slides of a case in several folds
    assert split_groups(ungrouped, slides.groups) is not None


@pytest.mark.parametrize("protocol", ["nested", "tuned"])
def test_no_split_of_either_protocol_puts_a_group_on_both_sides(slides, protocol):
    folds = RunFolds.drawn("slides", slides, n_folds=4, seed=1, n_repeats=3)
    splits = fold_splits(folds.tuning) + [s for r in folds.repeats for s in fold_splits(r)]
    if protocol == "nested":  # each outer split's inner folds, what its studies tune on
        splits += [s for i in range(4) for s in fold_splits(folds.tuning, exclude=i)]
    _assert_no_group_on_both_sides(splits, slides.groups)


def test_the_deep_learners_early_stopping_bags_keep_groups_apart(slides):
    pytest.importorskip("torch")
    from automil_deep.estimators import ABMILClassifier

    codes = np.unique(slides.y, return_inverse=True)[1]
    for seed in range(5):
        train, validation = ABMILClassifier(validation_fraction=0.25)._held_out(codes, seed, slides.groups)
        assert len(validation) > 0
        _assert_no_group_on_both_sides([(train, validation)], slides.groups)


def test_midf_draws_its_inner_folds_over_the_groups(slides, monkeypatch):
    import automil_forests.midf as midf
    from automil.evaluation.standardized import Standardized

    drawn = []

    def recording(y, n_splits, seed, groups=None):  # the real split, its result kept to be checked
        drawn.append(bag_folds(y, n_splits, seed, groups))
        return drawn[-1]

    monkeypatch.setattr(midf, "bag_folds", recording)
    Standardized(automil.plugins.get_learner("midf").build(n_estimators=4, max_layers=1, n_folds=3,
                                                           random_state=0)).fit(slides)
    assert drawn and all(split_groups(folds, slides.groups) is None for folds in drawn)


def test_folds_json_records_the_groups_and_reads_back_the_same_folds(slides, tmp_path):
    folds = RunFolds.drawn("slides", slides, n_folds=3, seed=2, n_repeats=2)
    path = tmp_path / "folds.json"
    path.write_text(folds.to_json())
    data = json.loads(path.read_text())
    assert data["groups"] == {g: [str(n) for n, h in zip(slides.names, slides.groups) if h == g]
                              for g in dict.fromkeys(slides.groups)}
    again = read_fold_file(path).run_folds("slides", slides, 2)
    np.testing.assert_array_equal(again.tuning, folds.tuning)
    ungrouped = slides.with_labels(slides.y)
    ungrouped.groups = None  # data read without its table's case_id: the file's groups still hold
    assert read_fold_file(path).run_folds("slides", ungrouped, 2).groups is not None


def test_a_folds_file_that_splits_a_group_is_refused_with_the_group(slides, tmp_path):
    folds = RunFolds.drawn("slides", slides, n_folds=3, seed=2, n_repeats=1)
    data = json.loads(folds.to_json())
    first, second = data["tuning"][0], data["tuning"][1]
    group = slides.groups[list(slides.names).index(first[0])]
    second.append(first.pop(0))  # one slide of the group's moves to another fold
    path = tmp_path / "folds.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=rf"folds.json: the tuning folds split group '{group}' \(its bags are in "
                                         r"test folds 0, 1\)"):
        read_fold_file(path).run_folds("slides", slides, 1)
    del data["groups"]  # the data's own groups refuse it too
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"split group '{group}'"):
        read_fold_file(path).run_folds("slides", slides, 1)


def test_too_few_groups_for_the_folds_is_an_error_naming_both():
    with pytest.raises(ValueError, match="needs at least 4 groups; the bags have 3"):
        bag_folds(np.array([0, 1, 0, 1, 0, 1]), 4, 0, np.array(list("aabbcc")))
