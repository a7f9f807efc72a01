"""Meta-features of hand-made bags, their distance and the nearest choice."""

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from automil.bags import Bags
from automil.tune.studies.meta_features import MetaFeatures, distance, meta_features, nearest


def _facts(**changes) -> MetaFeatures:
    base = {"n_bags": 100, "n_instances": 700, "mean_bag_size": 7.0, "n_features": 230, "n_classes": 2,
            "sparsity": 0.0}
    return MetaFeatures(**{**base, **changes})


def test_meta_features_of_dense_bags_count_bags_instances_classes_and_zero_entries():
    X = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 3.0], [0.0, 4.0], [5.0, 6.0]])
    bags = Bags(X, np.array([0, 2, 3, 5]), y=np.array(["a", "b", "c"]))
    facts = meta_features(bags)
    assert facts == MetaFeatures(n_bags=3, n_instances=5, mean_bag_size=5 / 3, n_features=2, n_classes=3,
                                 sparsity=4 / 10)
    assert json.loads(json.dumps(facts.to_dict())) == facts.to_dict(), "stored as a study attribute"
    assert all(type(value) in (int, float) for value in facts.to_dict().values())


def test_sparse_bags_count_the_stored_nonzeros_not_the_explicit_zeros():
    X = sp.csr_matrix(np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]]))
    X.data[0] = 0.0  # an explicit zero stays in the structure
    bags = Bags(X, np.array([0, 1, 2]), y=np.array([0, 1]))
    facts = meta_features(bags)
    assert (facts.n_instances, facts.n_features, facts.sparsity) == (2, 4, 7 / 8)


def test_a_record_round_trips_through_its_dict_and_a_foreign_one_is_refused():
    facts = _facts()
    assert MetaFeatures.from_dict(facts.to_dict()) == facts
    with pytest.raises(ValueError, match="not a meta-feature record"):
        MetaFeatures.from_dict({"n_bags": 3})


def test_distance_counts_ratios_so_ten_times_more_bags_is_equally_far_at_any_size():
    # log1p is log up to the +1: 10 -> 100 and 100 -> 1000 bags differ by log(10) within 0.1.
    small = distance(_facts(n_bags=10), _facts(n_bags=100))
    large = distance(_facts(n_bags=100), _facts(n_bags=1000))
    assert small == pytest.approx(math.log(101 / 11)) and large == pytest.approx(math.log(1001 / 101))
    assert abs(small - large) < 0.1
    assert distance(_facts(), _facts()) == 0.0
    assert distance(_facts(), _facts(sparsity=1.0)) == pytest.approx(math.log(2))


def test_distance_is_symmetric_and_sums_the_squares_of_every_meta_feature():
    a, b = _facts(n_features=10, n_classes=3), _facts(n_features=1000, n_classes=2)
    expected = math.hypot(math.log(1001 / 11), math.log(4 / 3))
    assert distance(a, b) == pytest.approx(expected) == pytest.approx(distance(b, a))


def test_nearest_ranks_candidates_by_distance_then_name():
    here = _facts()
    candidates = {"far": _facts(n_features=5000), "near": _facts(n_bags=120), "twin-b": _facts(n_bags=80),
                  "twin-a": _facts(n_bags=80)}
    assert nearest(here, candidates)[:1] == ["near"]  # 120 is nearer 100 than 80 is on the log scale
    assert nearest(here, candidates) == ["near", "twin-a", "twin-b", "far"]
    assert nearest(here, {}) == []
