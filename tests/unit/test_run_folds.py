"""``folds.json`` read and written on bags built by hand: the round trip, and one clear error per problem."""

import json

import numpy as np
import pytest

from automil import Bags
from automil.evaluation.folds_file import RunFolds, bag_keys, read_fold_file
from automil.tune.options import TuneOptions, read_study_file

NAMES = [f"bag{i}" for i in range(8)]
Y = np.array([0, 1] * 4)
TUNING = [["bag0", "bag1", "bag2"], ["bag3", "bag4", "bag5"], ["bag6", "bag7"]]
REPEAT = [["bag0", "bag3", "bag6"], ["bag1", "bag2", "bag7"], ["bag4", "bag5"]]


def bags(names=NAMES, y=Y) -> Bags:
    return Bags.from_list([np.full((2, 3), i, dtype=float) for i in range(len(y))], y, names=names)


def folds_file(tmp_path, **changes) -> str:
    data = {"format": "automil-folds", "version": 1, "dataset": "hand", "folds": 3, "tuning": TUNING,
            "repeats": [REPEAT, TUNING], **changes}
    path = tmp_path / "folds.json"
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return str(path)


def test_drawn_folds_written_and_read_back_are_the_same_folds_bag_by_bag(tmp_path):
    drawn = RunFolds.drawn("hand", bags(), 2, seed=3, n_repeats=3)
    path = tmp_path / "folds.json"
    path.write_text(drawn.to_json())
    read = read_fold_file(path).run_folds("hand", bags(), n_repeats=10)
    assert read.tuning.tolist() == drawn.tuning.tolist() and read.source == str(path)
    assert [r.tolist() for r in read.repeats] == [r.tolist() for r in drawn.repeats]
    assert read.digest == drawn.digest and read.to_json() == drawn.to_json()


def test_a_run_takes_the_number_of_folds_and_at_most_its_repeats_from_the_file(tmp_path):
    given = read_fold_file(folds_file(tmp_path))
    options = TuneOptions(folds_file=given.path, repeats=10).with_fold_file(given)
    assert (options.folds, options.repeats) == (3, 2)
    assert TuneOptions(folds_file=given.path, repeats=1).with_fold_file(given).repeats == 1
    assert len(given.run_folds("hand", bags(), n_repeats=1).repeats) == 1
    with pytest.raises(ValueError, match=r"holds 3 folds and --folds says 6"):
        TuneOptions(folds_file=given.path, folds=6).with_fold_file(given)


def test_without_tuning_folds_the_studies_use_the_first_repeats(tmp_path):
    read = read_fold_file(folds_file(tmp_path, tuning=None)).run_folds("hand", bags(), n_repeats=2)
    assert read.tuning.tolist() == read.repeats[0].tolist() == [0, 1, 1, 0, 2, 2, 0, 1]


def test_bags_without_names_or_with_a_name_twice_are_named_by_position():
    assert bag_keys(bags(names=None)) == [str(i) for i in range(8)]
    assert bag_keys(bags(names=["a", "a", *NAMES[2:]])) == [str(i) for i in range(8)]


@pytest.mark.parametrize("changes, problem", [
    ({"format": "something"}, r'not an automil folds file \(expected "format": "automil-folds"\)'),
    ({"version": 2}, r"folds file version 2; this automil reads version 1"),
    ({"folds": 1}, r'"folds" must be the number of folds, 2 or more; got 1'),
    ({"repeats": []}, r'"repeats" must be a list of repeats, at least one'),
    ({"repeats": [REPEAT[:2]]}, r'repeat 0 has 2 folds, "folds" says 3'),
    ({"tuning": [["bag0", 1], *TUNING[1:]]}, r"fold 0 of the tuning folds must be a list of bag names"),
    ({"tuning": [[], *TUNING[1:]]}, r"fold 0 of the tuning folds holds no bag"),
    ({"repeats": [[["bag0", "bag3"], ["bag6", "bag3"], ["bag1"]]]}, r"bag 'bag3' is in test folds 0 and 1 of repeat 0"),
])
def test_a_malformed_folds_file_is_one_error_naming_the_file_and_the_problem(tmp_path, changes, problem):
    path = folds_file(tmp_path, **changes)
    with pytest.raises(ValueError, match=f"^{path}: {problem}"):
        read_fold_file(path)


@pytest.mark.parametrize("changes, problem", [
    ({"tuning": [["bag0", "bag1", "nobag"], *TUNING[1:]]},
     r"fold 0 of the tuning folds names 'nobag', not a bag of hand"),
    ({"repeats": [[REPEAT[0], REPEAT[1], ["bag4"]]]}, r"bag 'bag5' of hand is in no test fold of repeat 0"),
    ({"repeats": [[["bag1", "bag3", "bag5", "bag7"], ["bag0", "bag2"], ["bag4", "bag6"]]]},
     r"fold 0 of repeat 0 holds every bag of class 1, so its training bags have none to learn it from"),
])
def test_folds_that_do_not_fit_the_data_are_one_error_naming_the_file_and_the_bag(tmp_path, changes, problem):
    path = folds_file(tmp_path, **changes)
    with pytest.raises(ValueError, match=f"^{path}: {problem}"):
        read_fold_file(path).run_folds("hand", bags(), n_repeats=2)


@pytest.mark.parametrize("text, problem", [("{not json", r"not a JSON folds file"), ("[1, 2]", r"not an automil")])
def test_a_file_that_is_not_a_folds_object_says_so(tmp_path, text, problem):
    path = tmp_path / "folds.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"^{path}: {problem}"):
        read_fold_file(path)
    with pytest.raises(ValueError, match=r"cannot read the folds file .*missing\.json: No such file"):
        read_fold_file(tmp_path / "missing.json")


def test_a_study_files_folds_file_is_relative_to_the_study_file(tmp_path):
    (tmp_path / "studies").mkdir()
    study = tmp_path / "studies" / "s.toml"
    study.write_text('[options]\nfolds_file = "folds/musk1.json"\n[[study]]\ndataset = "musk1"\n')
    [(_, _, options)] = read_study_file(study)
    assert options.folds_file == str(tmp_path / "studies" / "folds" / "musk1.json") and options.folds is None
    [(_, _, options)] = read_study_file(study, {"folds_file": "given.json"})  # the command line's, as given
    assert options.folds_file == "given.json"
