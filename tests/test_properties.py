"""Property tests (hypothesis) of what users hand to automil: bags built from arbitrary arrays and data files
with arbitrary, truncated or garbled content.

The promise under test: valid input is kept exactly, and invalid input fails with a ``ValueError`` that says
where (the bag, or the file and line), never with another exception type and never by hanging.
"""

import gzip
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from automil import Bags
from automil.data.readers import FormatError, read_bags
from automil.data.readers.text import FORMATS

pytestmark = pytest.mark.timeout(120)

# No example database: nothing is written into the work tree, and every run draws afresh.
SETTINGS = settings(max_examples=40, deadline=2000, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# Finite doubles over the whole range: huge, tiny (subnormal) and signed zeros.
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
# Bag and feature names: any printable text, unicode included (surrogates cannot be encoded).
names_text = st.text(st.characters(exclude_categories=("Cs",)), min_size=0, max_size=8)


@st.composite
def ragged_bags(draw, max_bags=8, max_size=5, max_width=4):
    """A list of 2-D float arrays of one width with ragged row counts (>= 1), and bag labels."""
    width = draw(st.integers(1, max_width))
    sizes = draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_bags))
    arrays = [draw(hnp.arrays(np.float64, (n, width), elements=finite)) for n in sizes]
    labels = draw(st.lists(st.integers(-3, 3), min_size=len(sizes), max_size=len(sizes)))
    return arrays, labels


# ---- the bag model ------------------------------------------------------------------------------------
@SETTINGS
@given(ragged_bags())
def test_from_list_keeps_every_value_and_bag_boundary_of_ragged_bags(data):
    arrays, labels = data
    bags = Bags.from_list(arrays, labels)
    assert bags.n_bags == len(arrays)
    assert bags.n_instances == sum(len(a) for a in arrays) == bags.offsets[-1]
    assert list(bags.sizes) == [len(a) for a in arrays]
    assert bags.X.flags.c_contiguous and bags.X.dtype == np.float64
    for i, array in enumerate(arrays):
        np.testing.assert_array_equal(bags[i], array)
        assert (bags.bag_index[bags.offsets[i]:bags.offsets[i + 1]] == i).all()
    assert list(bags.y) == labels


@SETTINGS
@given(ragged_bags(), st.data())
def test_subset_and_instance_rows_agree_with_picking_the_bags_from_the_list(data, draw):
    arrays, labels = data
    n = len(arrays)
    # Repeats, any order, negative indices: a bootstrap sample or a fold.
    picks = draw.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=2 * n))
    names = draw.draw(st.lists(names_text, min_size=n, max_size=n))
    bags = Bags(Bags.from_list(arrays).X, Bags.from_list(arrays).offsets, labels, names=names)
    part = bags.subset(picks)
    rows = bags.instance_rows(np.asarray(picks) % n)
    expected = [arrays[i] for i in picks]
    assert part.n_bags == len(picks)
    np.testing.assert_array_equal(part.X, np.concatenate(expected))
    np.testing.assert_array_equal(bags.X[rows], part.X)
    for i, array in enumerate(expected):
        np.testing.assert_array_equal(part[i], array)
    assert list(part.y) == [labels[i] for i in picks]
    assert list(part.names) == [names[i] for i in picks]


@SETTINGS
@given(ragged_bags(), st.data())
def test_sparse_bags_hold_the_same_values_and_subsets_as_dense_bags(data, draw):
    arrays, labels = data
    n = len(arrays)
    # Sparse data: zero out most entries.
    arrays = [np.where(np.abs(a) > 1.0, a, 0.0) for a in arrays]
    picks = draw.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n))
    dense = Bags.from_list(arrays, labels)
    sparse = Bags.from_list([sp.csr_matrix(a) for a in arrays], labels)
    assert sparse.is_sparse
    np.testing.assert_array_equal(sparse.X.toarray(), dense.X)
    np.testing.assert_array_equal(sparse.subset(picks).X.toarray(), dense.subset(picks).X)
    np.testing.assert_array_equal(sparse.offsets, dense.offsets)


@SETTINGS
@given(ragged_bags(), st.data(), st.sampled_from([math.nan, math.inf, -math.inf]))
def test_a_non_finite_value_anywhere_is_a_value_error_naming_its_bag_instance_and_feature(data, draw, bad):
    arrays, labels = data
    b = draw.draw(st.integers(0, len(arrays) - 1))
    r = draw.draw(st.integers(0, len(arrays[b]) - 1))
    c = draw.draw(st.integers(0, arrays[b].shape[1] - 1))
    names = draw.draw(st.lists(names_text, min_size=len(arrays), max_size=len(arrays)))
    arrays[b][r, c] = bad
    with pytest.raises(ValueError) as error:
        Bags.from_list(arrays, labels, names=names)
    message = str(error.value)
    assert f"bag {b} ({names[b]!r})" in message
    assert f"instance {r}, feature {c}" in message


@SETTINGS
@given(ragged_bags(), st.data())
def test_an_empty_bag_is_a_value_error_naming_it(data, draw):
    arrays, labels = data
    b = draw.draw(st.integers(0, len(arrays) - 1))
    arrays[b] = arrays[b][:0]
    with pytest.raises(ValueError, match=rf"bag {b}\b.*empty"):
        Bags.from_list(arrays, labels)


@SETTINGS
@given(ragged_bags(), st.data())
def test_a_bag_of_another_width_is_a_value_error_naming_it(data, draw):
    arrays, labels = data
    assume(len(arrays) > 1)
    b = draw.draw(st.integers(1, len(arrays) - 1))
    arrays[b] = np.ones((2, arrays[0].shape[1] + 1))
    with pytest.raises(ValueError, match=rf"bag {b}\b.*features"):
        Bags.from_list(arrays, labels)


@SETTINGS
@given(ragged_bags(), st.integers(-1000, 1000))
def test_subset_with_an_index_out_of_range_is_an_index_error_not_garbage(data, index):
    arrays, labels = data
    n = len(arrays)
    assume(not -n <= index < n)
    with pytest.raises(IndexError, match="out of range"):
        Bags.from_list(arrays, labels).subset([0, index])


# ---- the file readers ---------------------------------------------------------------------------------
# Bag names in text files: no separator (comma), no line break; unicode welcome.
file_names = st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters=",%"),
                     min_size=1, max_size=6).filter(lambda s: s.strip() == s and s)


@st.composite
def file_bags(draw):
    """Bags for a file: ragged sizes, values from the whole double range, integer labels per instance."""
    arrays, _ = draw(ragged_bags(max_bags=6, max_size=4, max_width=4))
    labels = [draw(st.lists(st.integers(0, 1), min_size=len(a), max_size=len(a))) for a in arrays]
    names = draw(st.lists(file_names, min_size=len(arrays), max_size=len(arrays), unique=True))
    return arrays, labels, names


def _number(value: float) -> str:
    return repr(float(value))


def write_file(format: str, arrays, labels, names) -> tuple[str, list[int]]:
    """The file text in ``format`` and the 1-based line number of every instance."""
    lines, numbers = [], []
    if format == "spaced":
        lines.append("% a comment line, as in the benchmark files")
    if format == "mcilboost":
        lines.append(f"{sum(len(a) for a in arrays)} {arrays[0].shape[1]}")
    for b, (array, instance_labels) in enumerate(zip(arrays, labels)):
        for r, (row, label) in enumerate(zip(array, instance_labels)):
            dense = [_number(v) for v in row]
            pairs = [f"{j + 1}:{_number(v)}" for j, v in enumerate(row) if v != 0.0]
            if format == "mill":
                line = ",".join([f"{names[b]}-{r}", names[b], str(label), *dense])
            elif format == "mill-sparse":
                line = ",".join([f"{names[b]}-{r}", names[b], str(label), *pairs])
            elif format == "mil-csv":
                line = ",".join([str(max(instance_labels)), str(b), *dense])
            elif format == "spaced":
                line = " ".join([str(b), str(max(instance_labels)), str(r), str(label), *dense])
            else:
                line = " ".join([f"{r}:{b}:{label}", *pairs])
            lines.append(line)
            numbers.append(len(lines))
    return "\n".join(lines) + "\n", numbers


@pytest.mark.parametrize("format", sorted(FORMATS))
@SETTINGS
@given(data=file_bags())
def test_every_format_reads_back_exactly_what_was_written(tmp_path, format, data):
    arrays, labels, names = data
    if format in ("mill-sparse", "mcilboost"):
        # A line needs one stored value; huge and tiny values stay as they are.
        for a in arrays:
            a[:, 0] = np.where(a[:, 0] == 0.0, 1.0, a[:, 0])
    text, _ = write_file(format, arrays, labels, names)
    path = tmp_path / "bags.txt"
    path.write_text(text, encoding="utf-8")
    bags = read_bags(path, format=format)
    np.testing.assert_array_equal(_values(bags, arrays[0].shape[1]), np.concatenate(arrays))
    assert list(bags.sizes) == [len(a) for a in arrays]
    assert list(bags.y) == [max(label) for label in labels]
    if format in ("mill", "mill-sparse"):
        assert list(bags.names) == names


def _values(bags: Bags, width: int) -> np.ndarray:
    """Dense instances, padded with zero columns: a sparse file's width is its largest feature index."""
    X = bags.X.toarray() if bags.is_sparse else bags.X
    return np.pad(X, ((0, 0), (0, max(0, width - X.shape[1]))))


def _assert_clear_error(error: BaseException, path, line: int | None = None):
    """A ValueError whose message names the file (and the line when one is given)."""
    assert isinstance(error, ValueError), f"{type(error).__name__}: {error}"
    message = str(error)
    assert str(path) in message, message
    if line is not None:
        assert f"line {line}" in message, message


def _read_or_error(path, format):
    try:
        return read_bags(path, format=format), None
    except Exception as error:  # noqa: BLE001 - the test inspects whatever is raised
        return None, error


@pytest.mark.parametrize("format", [None, *sorted(FORMATS)])
@SETTINGS
@given(raw=st.binary(max_size=400), compress=st.booleans())
@example(raw=b"", compress=False)
@example(raw=b"\x1f\x8b\x08\x00garbage", compress=False)
@example(raw=b"\xff\xfe1,2,3\n", compress=False)
@example(raw=b"3 2\n0:0:1 1:2.0 2:1e999\n", compress=False)
def test_random_bytes_are_read_or_rejected_with_a_value_error_naming_the_file(tmp_path, format, raw,
                                                                               compress):
    path = tmp_path / "random.txt"
    path.write_bytes(gzip.compress(raw) if compress else raw)
    bags, error = _read_or_error(path, format)
    if error is not None:
        _assert_clear_error(error, path)
    else:
        assert isinstance(bags, Bags) and np.isfinite(bags.X.data if bags.is_sparse else bags.X).all()


# Random text made of the characters data files are made of: hits the parsers' paths far more often than
# random bytes do.
file_alphabet = st.sampled_from([*"0123456789,.:-+e% \n", "1e308", "nan", "inf", "é", "\t", "\r\n"])


@pytest.mark.parametrize("format", [None, *sorted(FORMATS)])
@SETTINGS
@given(pieces=st.lists(file_alphabet, max_size=120))
def test_random_text_of_data_file_characters_is_read_or_rejected_with_a_clear_value_error(tmp_path, format,
                                                                                          pieces):
    path = tmp_path / "text.txt"
    path.write_text("".join(pieces), encoding="utf-8")
    bags, error = _read_or_error(path, format)
    if error is not None:
        _assert_clear_error(error, path)
    else:
        assert np.isfinite(bags.X.data if bags.is_sparse else bags.X).all()


@pytest.mark.parametrize("format", sorted(FORMATS))
@SETTINGS
@given(data=file_bags(), cut=st.floats(0.0, 1.0, exclude_max=True), compress=st.booleans())
def test_a_truncated_file_is_rejected_naming_the_file_or_reads_as_a_prefix_of_the_instances(
        tmp_path, format, data, cut, compress):
    arrays, labels, names = data
    for a in arrays:
        a[:, 0] = np.where(a[:, 0] == 0.0, 1.0, a[:, 0])
    text, _ = write_file(format, arrays, labels, names)
    raw = text.encode("utf-8")
    if compress:
        raw = gzip.compress(raw)
    path = tmp_path / "cut.txt"
    path.write_bytes(raw[:int(cut * len(raw))])
    bags, error = _read_or_error(path, format)
    if error is not None:
        _assert_clear_error(error, path)
        return
    # Cut at a line end (or inside the last number of a line, which still parses): every instance but
    # the last one read is an instance of the original file, in order.
    assert not compress, "a truncated gzip stream must never read as data"
    original = np.concatenate(arrays)
    assert bags.n_instances <= len(original)
    np.testing.assert_array_equal(_values(bags, original.shape[1])[:-1], original[:bags.n_instances - 1])


garbage = st.sampled_from(["", "abc", "1.2.3", "--1", "0x1g", "nan", "inf", "-inf", "1e999", "1;5", "∞", "½"])


@pytest.mark.parametrize("format", sorted(FORMATS))
@SETTINGS
@given(data=file_bags(), where=st.data(), bad=garbage)
def test_a_garbled_feature_is_a_value_error_naming_the_file_and_its_line(tmp_path, format, data, where,
                                                                         bad):
    arrays, labels, names = data
    for a in arrays:
        a[:, 0] = np.where(a[:, 0] == 0.0, 1.0, a[:, 0])
    text, numbers = write_file(format, arrays, labels, names)
    lines = text.splitlines()
    instance = where.draw(st.integers(0, len(numbers) - 1))
    line = numbers[instance]
    # The last field of the line is a feature in every format (index:value in the sparse ones).
    head, sep, last = lines[line - 1].rpartition("," if "," in lines[line - 1] else " ")
    # In a space-separated line an empty field is no field at all (a narrower line, not a garbled one),
    # and a MILL line may end with one empty field (a trailing comma, docs/data.md).
    assume(bad or (sep == "," and format != "mill") or format == "mcilboost")
    if format in ("mill-sparse", "mcilboost"):
        last = last.split(":")[0] + ":" + bad
    else:
        last = bad
    lines[line - 1] = head + sep + last
    path = tmp_path / "garbled.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(FormatError) as error:
        read_bags(path, format=format)
    _assert_clear_error(error.value, path, line)
    assert error.value.line == line


@pytest.mark.parametrize("format", ["mill", "mil-csv", "spaced"])
@SETTINGS
@given(data=file_bags(), where=st.data(), label=st.sampled_from(["x", "0.5", "", "1e400", "1.5e", "-", "٣"]))
def test_a_garbled_label_is_a_value_error_naming_the_file_and_its_line(tmp_path, format, data, where, label):
    arrays, labels, names = data
    text, numbers = write_file(format, arrays, labels, names)
    # Whitespace-separated fields have no empty field: an emptied label shifts the line's fields left,
    # which only its width against the other lines reveals; a file of one line has no other line.
    assume(not (format == "spaced" and label == "" and len(numbers) == 1))
    lines = text.splitlines()
    line = where.draw(st.sampled_from(numbers))
    sep = " " if format == "spaced" else ","
    fields = lines[line - 1].split(sep)
    fields[{"mill": 2, "mil-csv": 0, "spaced": 3}[format]] = label
    lines[line - 1] = sep.join(fields)
    path = tmp_path / "label.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(FormatError) as error:
        read_bags(path, format=format)
    _assert_clear_error(error.value, path, line)


def test_a_missing_file_is_a_value_error_naming_it(tmp_path):
    path = tmp_path / "nowhere" / "bags.csv"
    with pytest.raises(ValueError) as error:
        read_bags(path)
    _assert_clear_error(error.value, path)

