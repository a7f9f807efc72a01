"""Warm start across datasets: the source chosen from studies in a real journal storage, its point checked
against the current space, and end to end through the driver on real data files and worker processes."""

import subprocess
import sys

import numpy as np
import optuna
import pytest
from driver_support import load_in_process, plugin_env, plugin_site
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from automil.data.datasets import dataset_name, load_bags
from automil.tune.backend.optuna_storage import open_storage
from automil.tune.driver import tune
from automil.tune.listener import Silent
from automil.tune.options import TuneOptions
from automil.tune.studies.meta_features import MetaFeatures
from automil.tune.studies.warm_start import WARM_START_ATTR, warm_start, warm_start_note

SPACE = {"C": FloatDistribution(1e-2, 1e2, log=True), "kernel": CategoricalDistribution(["linear", "rbf"])}
HERE = MetaFeatures(n_bags=200, n_instances=1300, mean_bag_size=6.5, n_features=230, n_classes=2, sparsity=0.1)


def _study(storage, dataset, learner="svm", split=None, features=HERE, labels=None, trials=(), space=SPACE):
    """A study as ``prepare_studies`` leaves it, holding ``trials`` (params, value) on ``space``; its labels
    digest is its dataset's name unless given."""
    name = f"{dataset}/{learner}" if split is None else f"{dataset}/{learner}/outer-{split}"
    study = optuna.create_study(storage=storage, study_name=name, direction="maximize")
    attrs = {"dataset": dataset, "learner": learner, "labels_digest": labels or dataset,
             "meta_features": features.to_dict()}
    for key, value in {**attrs, **({} if split is None else {"split": split})}.items():  # as prepared: no
        study.set_user_attr(key, value)  # split key on a main study
    for params, value in trials:
        study.add_trial(create_trial(params=params, distributions={k: space[k] for k in params}, value=value,
                                     state=TrialState.COMPLETE if value is not None else TrialState.FAIL))
    return study


def _note(study):
    """What the driver tells the user about ``study``'s stored decision."""
    return warm_start_note("svm", study.user_attrs.get(WARM_START_ATTR))


def _queued(study):
    return [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.WAITING]


@pytest.fixture
def storage(tmp_path):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return open_storage(f"journal:{tmp_path / 'studies.journal'}")


def test_the_best_point_of_the_nearest_other_dataset_is_queued_once_after_the_defaults(storage):
    near = HERE.__class__(**{**HERE.to_dict(), "n_bags": 180, "n_instances": 1200, "mean_bag_size": 6.7})
    far = HERE.__class__(**{**HERE.to_dict(), "n_features": 6000, "sparsity": 0.99})
    _study(storage, "near", features=near, trials=[({"C": 3.0, "kernel": "rbf"}, 0.8),
                                                   ({"C": 0.1, "kernel": "linear"}, 0.7)])
    _study(storage, "far", features=far, trials=[({"C": 50.0, "kernel": "linear"}, 0.95)])
    _study(storage, "near", split=0, trials=[({"C": 0.02, "kernel": "linear"}, 0.99)])  # an outer split: not a source
    _study(storage, "near", learner="other", trials=[({"C": 0.03, "kernel": "rbf"}, 0.99)])
    target = _study(storage, "here")
    assert not warm_start(target, "svm", "here", storage) and _note(target) is None, "nothing before the defaults"
    target.add_trial(create_trial(params={"C": 1.0, "kernel": "linear"}, distributions=SPACE, value=0.6))
    assert warm_start(target, "svm", "here", storage) and _note(target) == "warm start for svm from near/svm"
    [queued] = _queued(target)
    assert queued.system_attrs["fixed_params"] == {"C": 3.0, "kernel": "rbf"}
    assert queued.user_attrs["warm_start_from"] == "near/svm"
    assert warm_start(target, "svm", "here", storage)  # a rerun queues nothing more
    assert len(_queued(target)) == 1


def test_a_point_outside_the_current_space_is_skipped_with_a_note_naming_it(storage):
    wider = {**SPACE, "C": FloatDistribution(1e-2, 1e3, log=True)}  # its space depended on its data
    _study(storage, "near", trials=[({"C": 500.0, "kernel": "rbf"}, 0.8)], space=wider)
    target = _study(storage, "here", trials=[({"C": 1.0, "kernel": "linear"}, 0.6)])
    assert warm_start(target, "svm", "here", storage) and not _queued(target)
    note = _note(target)
    assert note.startswith("warm start for svm from near/svm skipped: parameter C = 500.0 lies outside")
    assert target.user_attrs[WARM_START_ATTR]["skipped"] in note


def test_a_parameter_this_study_has_not_met_is_dropped_and_the_rest_is_queued(storage):
    _study(storage, "near", trials=[({"C": 3.0, "kernel": "rbf"}, 0.8)])
    target = _study(storage, "here")
    target.add_trial(create_trial(params={"kernel": "linear"}, distributions={"kernel": SPACE["kernel"]},
                                  value=0.6))  # a space whose C appears only with rbf
    warm_start(target, "svm", "here", storage)
    assert _queued(target)[0].system_attrs["fixed_params"] == {"kernel": "rbf"}


def test_sources_are_the_same_learner_on_another_dataset_with_a_completed_trial_and_never_the_same_bags(storage):
    _study(storage, "failed", features=HERE.__class__(**{**HERE.to_dict(), "n_bags": 201}),
           trials=[({"C": 2.0, "kernel": "rbf"}, None)])  # nearest, but nothing completed
    _study(storage, "renamed-copy", labels="here", trials=[({"C": 4.0, "kernel": "rbf"}, 0.9)])  # these bags
    _study(storage, "far", features=HERE.__class__(**{**HERE.to_dict(), "n_bags": 20}),
           trials=[({"C": 5.0, "kernel": "rbf"}, 0.7)])
    target = _study(storage, "here", trials=[({"C": 1.0, "kernel": "linear"}, 0.6)])
    warm_start(target, "svm", "here", storage)
    assert _note(target) == "warm start for svm from far/svm"


def test_no_source_is_decided_once_and_says_nothing(storage):
    target = _study(storage, "here", trials=[({"C": 1.0, "kernel": "linear"}, 0.6)])
    assert warm_start(target, "svm", "here", storage) and _note(target) is None
    assert target.user_attrs[WARM_START_ATTR] == {"source": None}
    _study(storage, "later", trials=[({"C": 3.0, "kernel": "rbf"}, 0.8)])
    assert warm_start(target, "svm", "here", storage) and not _queued(target) and _note(target) is None


def test_no_warm_start_on_the_command_line_turns_the_option_off():
    from automil.cli.main import build_parser

    parse = build_parser().parse_args
    assert parse(["tune", "--dataset", "fox"]).warm_start is True
    assert parse(["tune", "--dataset", "fox", "--no-warm-start"]).warm_start is False


# ---- end to end -------------------------------------------------------------------------------------------

def _write_mill(path, seed, n_bags, n_features):
    """A MILL text file of ``n_bags`` bags; class-1 bags hold an instance shifted in feature 0."""
    rng = np.random.default_rng(seed)
    lines = []
    for b in range(n_bags):
        label = b % 2
        bag = rng.standard_normal((int(rng.integers(3, 9)), n_features))
        bag[0, 0] += 3.0 * label
        lines += [f"i{b}_{i},bag-{b},{label}," + ",".join(f"{v:.4f}" for v in row) for i, row in enumerate(bag)]
    path.write_text("\n".join(lines) + "\n")


class Notes(Silent):
    """A listener that keeps the driver's status lines."""

    def __init__(self):
        self.lines = []

    def message(self, line: str):
        self.lines.append(line)


def test_a_study_on_a_second_dataset_tries_the_first_ones_best_point_after_its_defaults(tmp_path, fresh_plugins):
    monkeypatch = fresh_plugins  # the built-in plugins come back after the test
    # In this process, with real worker processes and a real sqlite storage that already holds a far
    # source: test-bags is tuned without warm start, then wide.mill with it (its main study and outer splits).
    load_in_process(monkeypatch, tmp_path / "records")
    monkeypatch.chdir(tmp_path)
    _write_mill(tmp_path / "wide.mill", seed=1, n_bags=30, n_features=9)
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    far = MetaFeatures(n_bags=5000, n_instances=90000, mean_bag_size=18.0, n_features=9, n_classes=2, sparsity=0.9)
    study = optuna.create_study(storage=storage, study_name="far/onefeature", direction="maximize")
    for key, value in {"dataset": "far", "learner": "onefeature", "meta_features": far.to_dict()}.items():
        study.set_user_attr(key, value)
    study.add_trial(create_trial(params={"feature": 3}, distributions={"feature": IntDistribution(0, 8)}, value=0.9))
    budget = {"n_trials": 2, "timeout": None, "folds": 3, "repeats": 1, "jobs": 1, "storage": storage,
              "track": False}
    notes = Notes()
    tune("test-bags", ["onefeature"], TuneOptions(**budget, protocol="tuned", warm_start=False), notes)
    cold = optuna.load_study(study_name="test-bags/onefeature", storage=storage)
    assert len(cold.trials) == 2 and not any("warm_start_from" in t.user_attrs for t in cold.trials)
    assert "warm_start" not in cold.user_attrs and not any("warm start" in line for line in notes.lines)
    assert cold.best_trial.params != {"feature": 4}, "the test needs a source whose best is not its defaults"

    tune("wide.mill", ["onefeature"], TuneOptions(**budget, protocol="nested"), notes)
    assert [line for line in notes.lines if "warm start" in line] == \
           ["warm start for onefeature from test-bags/onefeature"], "once, naming the nearest source"
    wide = dataset_name("wide.mill", load_bags("wide.mill"))  # a file's studies carry its stem and digest
    for name in [f"{wide}/onefeature", *(f"{wide}/onefeature/outer-{i}" for i in range(3))]:
        trials = sorted(optuna.load_study(study_name=name, storage=storage).trials, key=lambda t: t.number)
        assert trials[0].params == {"feature": 4} and "warm_start_from" not in trials[0].user_attrs, name
        assert trials[1].user_attrs["warm_start_from"] == "test-bags/onefeature", name
        assert trials[1].params == cold.best_trial.params and trials[1].state == TrialState.COMPLETE, name


def test_the_warm_start_is_told_once_whichever_jobs_process_made_it(tmp_path):
    # The real command line with two tuning processes: a helper's own lines go nowhere, so the main process
    # tells every learner's warm start from the studies when tuning ends.
    _write_mill(tmp_path / "wide.mill", seed=1, n_bags=30, n_features=9)
    env = plugin_env(plugin_site(), tmp_path / "records")
    common = ["--learner", "onefeature", "--learner", "centroid", "--n-trials", "2", "--folds", "3",
              "--repeats", "1", "--timeout", "none", "--no-track", "--no-ensemble",
              "--storage", f"journal:{tmp_path / 'studies.journal'}"]

    def tune_cli(dataset, *args):
        done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", dataset, *common, *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return [line.strip() for line in (done.stdout + done.stderr).splitlines() if "warm start" in line]

    assert tune_cli("test-bags", "--jobs", "1", "--protocol", "tuned") == []  # nothing to start from
    lines = tune_cli(str(tmp_path / "wide.mill"), "--jobs", "2", "--protocol", "nested")
    for learner in ("centroid", "onefeature"):  # once each (centroid's source point was tried: skipped)
        said = [line for line in lines if line.startswith(f"automil: warm start for {learner} from ")]
        assert len(said) == 1 and f"from test-bags/{learner}" in said[0], lines
    assert len(lines) == 2, lines
