"""The bag data model: construction, fold selection and the errors that name the bag."""

import numpy as np
import pytest
import scipy.sparse as sp

from automil import Bags, as_bags


def three_bags():
    return [np.arange(6.0).reshape(2, 3), np.full((1, 3), 7.0), np.ones((3, 3))]


def test_from_list_keeps_every_instance_in_one_contiguous_matrix():
    bags = Bags.from_list(three_bags(), ["a", "b", "a"])
    assert bags.X.shape == (6, 3) and bags.X.flags.c_contiguous and bags.X.dtype == np.float64
    assert list(bags.offsets) == [0, 2, 3, 6]
    assert list(bags.sizes) == [2, 1, 3]
    assert list(bags.bag_index) == [0, 0, 1, 2, 2, 2]
    assert list(bags.classes) == ["a", "b"]
    np.testing.assert_array_equal(bags[1], [[7.0, 7.0, 7.0]])
    np.testing.assert_array_equal(bags[-1], np.ones((3, 3)))


def test_subset_gathers_the_chosen_bags_in_order_with_labels_and_instance_labels():
    bags = Bags.from_list(three_bags(), [0, 1, 0])
    bags = Bags(bags.X, bags.offsets, bags.y, instance_y=np.arange(6), names=["p", "q", "r"])
    part = bags.subset([2, 0])
    assert list(part.sizes) == [3, 2]
    np.testing.assert_array_equal(part[0], bags[2])
    np.testing.assert_array_equal(part[1], bags[0])
    assert list(part.instance_y) == [3, 4, 5, 0, 1]
    assert list(part.names) == ["r", "p"] and list(part.y) == [0, 0]


def test_to_list_round_trips():
    original = three_bags()
    for got, want in zip(Bags.from_list(original).to_list(), original):
        np.testing.assert_array_equal(got, want)


def test_sparse_instances_stay_sparse():
    parts = [sp.random(2, 50, density=0.1, format="csr", random_state=i) for i in range(3)]
    bags = Bags.from_list(parts, [0, 1, 1])
    assert bags.is_sparse and bags.X.shape == (6, 50)
    assert (bags.subset([1]).X != parts[1]).nnz == 0


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_value_is_an_error_naming_bag_instance_and_feature(value):
    bags = three_bags()
    bags[2][1, 2] = value
    with pytest.raises(ValueError, match=r"bag 2 .*non-finite.*instance 1, feature 2"):
        Bags.from_list(bags, [0, 1, 0])


def test_non_finite_sparse_value_is_an_error_naming_the_bag():
    parts = [sp.csr_matrix(np.eye(2, 4)) for _ in range(3)]
    parts[1] = sp.csr_matrix(np.array([[0, np.nan, 0, 0]]))
    with pytest.raises(ValueError, match="bag 1"):
        Bags.from_list(parts)


def test_empty_bag_is_an_error_naming_it():
    bags = three_bags()
    bags[1] = np.empty((0, 3))
    with pytest.raises(ValueError, match=r"bag 1 \('second'\) is empty"):
        Bags.from_list(bags, names=["first", "second", "third"])


def test_bags_of_different_widths_are_an_error_naming_the_bag():
    bags = three_bags()
    bags[2] = np.ones((2, 4))
    with pytest.raises(ValueError, match="bag 2 has 4 features but bag 0 has 3"):
        Bags.from_list(bags)


def test_label_count_must_match_bag_count():
    with pytest.raises(ValueError, match="got 2 labels for 3 bags"):
        Bags.from_list(three_bags(), [0, 1])


def test_one_dimensional_bag_and_single_matrix_are_explained():
    with pytest.raises(ValueError, match="bag 0 is 1-D"):
        Bags.from_list([np.ones(3)])
    with pytest.raises(ValueError, match="one 2-D array"):
        as_bags(np.ones((4, 3)))


def test_offsets_must_cover_every_instance():
    with pytest.raises(ValueError, match="end at n_instances=4"):
        Bags(np.ones((4, 2)), [0, 2, 3])


def test_source_is_named_in_errors():
    with pytest.raises(ValueError, match=r"^fox\.data: bag 0"):
        Bags(np.full((1, 2), np.nan), [0, 1], source="fox.data")


@pytest.mark.parametrize(("dtype", "stored"), [(np.float32, np.float32), (np.float64, np.float64),
                                                (np.int64, np.float64), (np.float16, np.float16)])
def test_float32_and_float16_instances_keep_their_dtype_and_the_rest_become_float64(dtype, stored):
    X = np.arange(8).reshape(4, 2).astype(dtype)
    assert Bags(X, [0, 2, 4]).X.dtype == stored
    assert Bags.from_list([X[:2], X[2:]]).X.dtype == stored
    assert Bags.from_list([X[:2], X[2:].astype(np.float64)]).X.dtype == np.float64  # mixed: the wider


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_float32_value_is_named_with_its_bag(bad):
    X = np.zeros((5, 3), dtype=np.float32)
    X[3, 2] = bad
    with pytest.raises(ValueError, match=r"bag 1 has a non-finite value .* in instance 1, feature 2"):
        Bags(X, [0, 2, 5])
