"""A run with a portfolio: its learners run first, in its order, each from its portfolio point, with the
defaults queued after it; large bags in groups of several from the grouped regime's point; --no-portfolio and a
file that is not a portfolio. Real worker processes, a real
sqlite storage, the test plugin's learners."""

import json

import optuna
import pytest
from driver_support import load_in_process
from test_warm_start import _write_mill

from automil.cli.main import build_parser
from automil.data.datasets import dataset_name, load_bags
from automil.tune.driver import tune
from automil.tune.options import TuneOptions
from automil.tune.portfolio.members import read_portfolio


def _portfolio(path, members):
    path.write_text(json.dumps({"regimes": [{"name": "small bags", "members": members},
                                            {"name": "large bags", "members": []}]}))
    return str(path)


def test_the_portfolios_learner_runs_first_from_its_point_then_its_defaults(tmp_path, fresh_plugins):
    load_in_process(fresh_plugins, tmp_path / "records")
    fresh_plugins.chdir(tmp_path)
    _write_mill(tmp_path / "bags.mill", seed=1, n_bags=30, n_features=9)
    portfolio = _portfolio(tmp_path / "portfolio.json", [{"learner": "onefeature", "params": {"feature": 0}}])
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    options = TuneOptions(n_trials=2, timeout=None, folds=3, repeats=1, jobs=1, storage=storage, track=False,
                          protocol="nested", warm_start=False, ensemble=False, portfolio=portfolio)
    # without the portfolio centroid would go first: both of unknown cost, by name
    tune("bags.mill", ["centroid", "onefeature"], options)
    name = dataset_name("bags.mill", load_bags("bags.mill"))
    firsts = {}
    for learner in ("centroid", "onefeature"):
        for study_name in [f"{name}/{learner}", *(f"{name}/{learner}/outer-{i}" for i in range(3))]:
            trials = sorted(optuna.load_study(study_name=study_name, storage=storage).trials, key=lambda t: t.number)
            if learner == "onefeature":  # every study of it: the portfolio's point, then the defaults
                assert [t.params for t in trials] == [{"feature": 0}, {"feature": 4}], study_name
                assert trials[1].user_attrs["portfolio"] is True
        firsts[learner] = min(t.datetime_start for t in optuna.load_study(
            study_name=f"{name}/{learner}", storage=storage).trials)
    assert firsts["onefeature"] < firsts["centroid"]


def _bag_folder(folder, cases: bool):
    """24 bags of 40 instances (large bags) in a bag folder; with ``cases``, two bags a case (``case_id``)."""
    import numpy as np

    folder.mkdir()
    rng = np.random.default_rng(0)
    rows = ["bag,label" + (",case_id" if cases else "")]
    for b in range(24):
        bag = rng.standard_normal((40, 9))
        bag[0, 0] += 3.0 * (b % 2)
        np.save(folder / f"bag-{b}.npy", bag)
        rows.append(f"bag-{b},{b % 2}" + (f",case-{b // 4}-{b % 2}" if cases else ""))
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    return str(folder)


@pytest.mark.parametrize("cases, point", [(True, {"feature": 2}), (False, {"feature": 1})])
def test_large_bags_in_groups_of_several_start_from_the_grouped_regimes_point(tmp_path, fresh_plugins, cases, point):
    load_in_process(fresh_plugins, tmp_path / "records")
    fresh_plugins.chdir(tmp_path)
    data = _bag_folder(tmp_path / "slides", cases)
    portfolio = tmp_path / "portfolio.json"
    portfolio.write_text(json.dumps({"regimes": [
        {"name": "large bags", "members": [{"learner": "onefeature", "params": {"feature": 1}}]},
        {"name": "slides by patient", "members": [{"learner": "onefeature", "params": {"feature": 2}}]}]}))
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    options = TuneOptions(n_trials=1, timeout=None, folds=3, repeats=1, jobs=1, storage=storage, track=False,
                          protocol="nested", warm_start=False, ensemble=False, portfolio=str(portfolio))
    tune(data, ["onefeature"], options)
    name = dataset_name(data, load_bags(data))
    trials = optuna.load_study(study_name=f"{name}/onefeature", storage=storage).trials
    assert min(trials, key=lambda t: t.number).params == point


def test_no_portfolio_and_a_portfolio_file_on_the_command_line():
    parse = build_parser().parse_args
    assert parse(["tune", "--dataset", "fox"]).portfolio == "shipped"
    assert parse(["tune", "--dataset", "fox", "--no-portfolio"]).portfolio is None
    assert parse(["tune", "--dataset", "fox", "--portfolio", "mine.json"]).portfolio == "mine.json"


@pytest.mark.parametrize("content, says", [
    ("{not json", "JSONDecodeError"),
    ('{"regimes": [{"name": "huge bags", "members": []}]}', "unknown regime 'huge bags'"),
    ('{"regimes": [{"name": "small bags", "members": [{"learner": "sil"}]}]}', "KeyError: 'params'"),
])
def test_a_file_that_is_not_a_portfolio_is_one_error_naming_it(tmp_path, content, says):
    path = tmp_path / "mine.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="mine.json is not a portfolio") as error:
        read_portfolio(str(path))
    assert says in str(error.value)


def test_a_missing_portfolio_file_is_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="--portfolio: no such file"):
        TuneOptions(portfolio=str(tmp_path / "none.json")).check()
