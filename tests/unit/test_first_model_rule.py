"""The cohorts regime (``automil/tune/portfolio/members.py``) and the parts of the first model a run at scale commits
to (``automil/tune/final/first_model.py``) that need no run: its parameters, and the rule that keeps it."""

import json

import h5py
import numpy as np
import pytest

from automil import Bags, load_bags, plugins
from automil.records import LearnerResult, ModelRecord, NestedFigure, OuterSplit
from automil.tune.final.first_model import FirstModel, keeps, replaced_row, shipped_row, sub_bag_size
from automil.tune.portfolio.members import (
    COHORT_MEAN_BAG_SIZE,
    COHORTS,
    Member,
    grouped,
    members_for,
    read_portfolio,
    regime_of,
    regimes,
    regimes_of,
)
from automil.tune.studies.meta_features import meta_features


def test_slides_of_thousands_of_patches_are_a_cohort_grouped_or_not():
    for in_groups in (False, True):
        assert regime_of({"mean_bag_size": COHORT_MEAN_BAG_SIZE, "grouped": in_groups}) == COHORTS
        assert regime_of({"mean_bag_size": COHORT_MEAN_BAG_SIZE - 1, "grouped": in_groups}) != COHORTS
    assert regimes_of({"mean_bag_size": 10_000.0, "grouped": True}) == (COHORTS, "slides by patient", "large bags")
    assert regimes_of({"mean_bag_size": 10_000.0}) == (COHORTS, "large bags")


def test_a_folder_of_large_slides_takes_the_cohorts_members_witness_subspace_among_them(tmp_path):
    folder, rng, rows = tmp_path / "20x_256px_0px_overlap" / "features_uni_v1", np.random.default_rng(0), []
    folder.mkdir(parents=True)
    for case in range(3):
        for slide, patches in enumerate((2000, 2300)):  # slides of thousands of patches, two a case
            name = f"case-{case}-slide-{slide}"
            with h5py.File(folder / f"{name}.h5", "w") as f:
                f.create_dataset("features", data=rng.standard_normal((patches, 4), dtype=np.float32))
                f.create_dataset("coords", data=np.zeros((patches, 2), dtype=np.int64))
            rows.append(f"case-{case},{name},{'tumor' if case % 2 else 'normal'}")
    (tmp_path / "slides.csv").write_text("case_id,slide_id,label\n" + "\n".join(rows) + "\n")
    bags = load_bags(str(folder), labels=str(tmp_path / "slides.csv"), groups="case_id")
    facts = {**meta_features(bags).to_dict(), "grouped": grouped(bags)}
    assert facts["grouped"] and regime_of(facts) == COHORTS
    learners = plugins.learners()
    members = members_for(facts, learners)
    assert members == tuple(m for m in read_portfolio()[COHORTS] if m.learner in learners)
    assert "witness-subspace" in {m.learner for m in members}
    assert members != members_for({**facts, "mean_bag_size": 150.0}, learners)  # not slides by patient's


def test_a_cohort_none_of_whose_members_run_takes_those_of_slides_by_patient_then_large_bags(tmp_path):
    path = tmp_path / "portfolio.json"
    path.write_text(json.dumps({"regimes": [
        {"name": "large bags", "members": [{"learner": "sil", "params": {"C": 1.0}}]},
        {"name": "slides by patient", "members": [{"learner": "abmil", "params": {"gated": True}}]},
        {"name": COHORTS, "members": [{"learner": "witness-subspace", "params": {"tail": 0.01}}]}]}))
    for in_groups, fallback in ((True, "abmil"), (False, "sil")):
        facts = {"mean_bag_size": 10_000.0, "grouped": in_groups}
        assert [m.learner for m in members_for(facts, ["sil", "abmil"], str(path))] == [fallback]
        assert members_for(facts, ["sil", "abmil", "witness-subspace"], str(path))[0].learner == "witness-subspace"


def test_a_portfolio_file_bounds_its_cohorts_and_names_their_members(tmp_path):
    path = tmp_path / "portfolio.json"
    path.write_text(json.dumps({"regimes": [
        {"name": "large bags", "members": [{"learner": "sil", "params": {"C": 1.0}}]},
        {"name": COHORTS, "min_mean_bag_size": 100, "members": [{"learner": "abmil", "params": {"gated": True}}]}]}))
    assert {r.name: r.min_mean_bag_size for r in regimes(str(path))}[COHORTS] == 100.0
    assert regime_of({"mean_bag_size": 150.0}, str(path)) == COHORTS
    assert regime_of({"mean_bag_size": 150.0}) == "large bags"  # automil's own bound
    assert members_for({"mean_bag_size": 150.0}, ["sil", "abmil"], str(path)) == (Member("abmil", {"gated": True}),)
    assert members_for({"mean_bag_size": 150.0}, ["sil"], str(path)) == (Member("sil", {"C": 1.0}),)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"regimes": [{"name": COHORTS, "min_mean_bag_size": "many", "members": []}]}))
    with pytest.raises(ValueError, match="min_mean_bag_size 'many' is not a number of instances"):
        read_portfolio(str(bad))


def _bags(sizes) -> Bags:
    rng = np.random.default_rng(0)
    return Bags.from_list([rng.standard_normal((n, 4)) for n in sizes], np.arange(len(sizes)) % 2)


def test_a_network_samples_half_the_median_bag_and_other_learners_keep_their_parameters():
    from automil.tune.final.first_model import first_params

    bags = _bags([100, 300, 5000, 401, 80])
    assert sub_bag_size(bags.sizes) == 150
    point = read_portfolio()["slides by patient"][-1]
    assert point.learner == "abmil" and "max_instances" not in point.params
    params = first_params(plugins.get_learner("abmil"), point, bags)
    assert params["max_instances"] == 150
    assert {k: v for k, v in params.items() if k != "max_instances"} == point.params
    stats = next(m for m in read_portfolio()["large bags"] if m.learner == "bag-stats")
    assert "max_instances" not in first_params(plugins.get_learner("bag-stats"), stats, bags)


def _first(inner: float | None, registered: str | None = "models:/automil-x/1") -> FirstModel:
    row = LearnerResult(learner="first-model", model=ModelRecord(uri="models:/m-1", registered=registered))
    return FirstModel("abmil", {}, inner, 0.8, 0.7, 0.5, row, registered)


def _chosen(inner: float | None, uri: str | None = "models:/m-2") -> LearnerResult:
    split = OuterSplit(inner=inner, accuracy=0.8, balanced_accuracy=0.8)
    return LearnerResult(learner="mi-net", nested=NestedFigure(outer_splits=[split]), model=ModelRecord(uri=uri))


def test_the_final_choice_replaces_the_first_model_only_when_the_automil_rows_split_chooses_it():
    assert not keeps(_first(0.80), _chosen(0.81), "mi-net")
    assert keeps(_first(0.80), _chosen(0.81), "first-model")  # the split preferred the first model
    assert keeps(_first(0.80), _chosen(0.81), None)  # nothing above chance in the split
    assert keeps(_first(0.80), None, None)  # the final evaluation chose nothing
    assert keeps(_first(0.80), _chosen(0.95, uri=None), "mi-net")  # nor has a model to replace it with
    assert not keeps(_first(0.80, registered=None), _chosen(0.10), "mi-net")  # never registered: ships nothing
    assert not keeps(None, _chosen(0.10), None)


def test_the_first_models_row_says_whether_it_shipped():
    first = _first(0.80)
    kept = shipped_row(first, _chosen(0.79))
    assert kept.model.selected and kept.model.registered == first.registered
    assert kept.error == ("abmil, the portfolio's first member: the shipped model, registered first: the final "
                          "choice, mi-net, has the inner score 0.790, not preferred to its 0.800")
    replaced = replaced_row(first, _chosen(0.9))
    assert not replaced.model.selected
    assert replaced.error.startswith("abmil, the portfolio's first member: replaced: the final choice, mi-net, "
                                    "has the inner score 0.900")
