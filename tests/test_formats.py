"""The file readers: every format plain and gzip, detection from the content, and errors that name the line."""

import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from automil import BagClassifier, load_bags
from automil.data.readers import FormatError, detect_format, read_bags
from automil.data.readers.text import FORMATS

# Three bags (2, 1 and 2 instances) of 3 features in every format; bag "b" holds the only positive line.
X = np.array([[1.0, -2.5, 0.0], [0.5, 1e-3, 4.0], [7.0, 0.0, -1.0], [0.0, 0.25, 3.0], [2.0, 2.0, 2.0]])
SIZES = [2, 1, 2]
SAMPLES = {
    "mill": ("i1,a,0,1,-2.5,0\ni2,a,0,.5,1.000000e-03,4\ni3,b,1,7,0,-1\n"
             "i4,c,0,0,0.25,3\ni5,c,0,2,2,2\n"),
    "mill-sparse": ("i1,a,0,1:1,2:-2.5\ni2,a,0,1:.5,2:1.000000e-03,3:4\ni3,b,1,1:7,3:-1\n"
                    "i4,c,0,2:0.25,3:3\ni5,c,0,1:2,2:2,3:2\n"),
    "mil-csv": "0,1,1,-2.5,0\n0,1,.5,1e-3,4\n1,2,7,0,-1\n0,3,0,0.25,3\n0,3,2,2,2\n",
    "spaced": ("% comment\n% bag id, bag label, instance id, instance label, features\n"
               "1 0 1 0 1 -2.5 0\n1 0 2 0 0.5 0.001 4\n2 1 1 1 7 0 -1\n3 0 1 0 0 0.25 3\n3 0 2 0 2 2 2\n"),
    "mcilboost": ("5 3\n0:1:0 1:1 2:-2.5 3:0\n1:1:0 1:0.5 2:0.001 3:4\n2:2:1 1:7 2:0 3:-1\n"
                  "3:3:0 1:0 2:0.25 3:3\n4:3:0 1:2 2:2 3:2\n"),
}
NAMES = {"mill": ["a", "b", "c"], "mill-sparse": ["a", "b", "c"]}


def write(path, text, compress=False, newline="\n"):
    data = text.replace("\n", newline).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def dense(bags):
    return bags.X.toarray() if sp.issparse(bags.X) else bags.X


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_every_format_reads_the_same_bags_plain_or_gzip_and_is_detected(tmp_path, fmt, compress):
    path = write(tmp_path / f"sample.{fmt}", SAMPLES[fmt], compress)
    assert detect_format(path) == fmt
    for bags in (read_bags(path), read_bags(path, format=fmt)):
        np.testing.assert_array_equal(dense(bags), X)
        assert list(bags.sizes) == SIZES
        assert list(bags.y) == [0, 1, 0]
        assert list(bags.names) == NAMES.get(fmt, ["1", "2", "3"])
        assert sp.issparse(bags.X) == (fmt == "mill-sparse")
        assert bags.source == str(path)


def test_load_bags_reads_a_file_by_path_with_or_without_a_format_or_readme_letter(tmp_path):
    path = write(tmp_path / "musk-like.data", SAMPLES["mill"])
    for fmt in (None, "mill", "A", "a"):
        bags = load_bags(path, format=fmt)
        assert list(bags.sizes) == SIZES
    assert list(load_bags(str(write(tmp_path / "b.csv", SAMPLES["mil-csv"]))).sizes) == SIZES


def test_crlf_and_lf_line_endings_read_alike(tmp_path):
    lf = read_bags(write(tmp_path / "lf.data", SAMPLES["mill"]))
    crlf = read_bags(write(tmp_path / "crlf.data", SAMPLES["mill"], newline="\r\n"))
    np.testing.assert_array_equal(lf.X, crlf.X)
    assert list(crlf.names) == ["a", "b", "c"]


def test_a_missing_final_newline_and_blank_lines_are_accepted(tmp_path):
    text = SAMPLES["mil-csv"].rstrip("\n").replace("\n0,3,", "\n\n0,3,", 1)
    bags = read_bags(write(tmp_path / "b.csv", text))
    np.testing.assert_array_equal(bags.X, X)


def test_spaced_format_keeps_real_instance_labels_and_bag_label_is_their_max(tmp_path):
    bags = read_bags(write(tmp_path / "c.txt", SAMPLES["spaced"]))
    assert list(bags.instance_y) == [0, 0, 1, 0, 0]


def test_mill_keeps_line_labels_as_instance_labels_only_when_a_bag_mixes_them(tmp_path):
    assert read_bags(write(tmp_path / "copied.data", SAMPLES["mill"])).instance_y is None
    mixed = SAMPLES["mill"].replace("i2,a,0,", "i2,a,1,")
    bags = read_bags(write(tmp_path / "mixed.data", mixed))
    assert list(bags.instance_y) == [0, 1, 1, 0, 0]
    assert list(bags.y) == [1, 1, 0]


def test_sparse_width_is_the_largest_index_and_unlisted_features_are_zero(tmp_path):
    bags = read_bags(write(tmp_path / "s.data", "i1,a,1,3:1.5\ni2,b,0,10:2\n"))
    assert bags.X.shape == (2, 10) and bags.X.nnz == 2
    assert bags.X[0, 2] == 1.5 and bags.X[1, 9] == 2.0


def test_format_names_cover_the_readme_formats():
    assert set(FORMATS) == {"mill", "mill-sparse", "mil-csv", "spaced", "mcilboost"}


# ---- errors: each names the file, the 1-based line and the problem -----------------------------------------
def replace_line(fmt, number, new):
    """SAMPLES[fmt] with its 1-based line ``number`` replaced."""
    lines = SAMPLES[fmt].split("\n")
    lines[number - 1] = new
    return "\n".join(lines)


BROKEN = [
    ("nan", "mill", replace_line("mill", 3, "i3,b,1,7,nan,-1"), 3, "field 5: value nan is not finite"),
    ("inf", "mil-csv", replace_line("mil-csv", 4, "0,3,0,-inf,3"), 4, "field 4: value -inf is not finite"),
    ("sparse inf", "mill-sparse", replace_line("mill-sparse", 2, "i2,a,0,1:.5,2:inf"), 2, "not finite"),
    ("ragged width", "mill", replace_line("mill", 2, "i2,a,0,.5,1e-3"), 2,
     "wrong field count: expected 6 fields as on line 1, got 5"),
    ("extra field", "spaced", replace_line("spaced", 5, "2 1 1 1 7 0 -1 9"), 5, "wrong field count"),
    ("truncated last line", "mill", SAMPLES["mill"][:-5], 5, "truncated last line"),
    ("non-numeric", "mil-csv", replace_line("mil-csv", 2, "0,1,.5,abc,4"), 2, "non-numeric value 'abc'"),
    ("empty field", "mil-csv", replace_line("mil-csv", 2, "0,1,.5,,4"), 2, "field 4: an empty field"),
    ("empty label", "mill", replace_line("mill", 2, "i2,a,,.5,1e-3,4"), 2, "field 3: an empty field"),
    ("non-ascii digit", "spaced", replace_line("spaced", 4, "1 0 2 \u0663 0.5 0.001 4"), 4,
     "field 4: non-numeric value '\u0663'"),
    ("non-integer label", "mill", replace_line("mill", 1, "i1,a,0.5,1,-2.5,0"), 1, "label must be an integer"),
    ("non-consecutive bag", "mill", SAMPLES["mill"] + "i6,a,0,1,1,1\n", 6,
     "bag 'a' appears again after other bags (it started on line 1)"),
    ("too few fields", "mill", replace_line("mill", 4, "i4,c"), 4, "expected at least 3 fields"),
    ("pair without colon", "mill-sparse", replace_line("mill-sparse", 3, "i3,b,1,1:7,3"), 3,
     "field 5: expected index:value, got '3'"),
    ("unordered indices", "mill-sparse", replace_line("mill-sparse", 1, "i1,a,0,2:1,1:-2.5"), 1,
     "indices must ascend"),
    ("zero index", "mill-sparse", replace_line("mill-sparse", 1, "i1,a,0,0:1"), 1, "1-based"),
    ("header count", "mcilboost", SAMPLES["mcilboost"].replace("5 3", "6 3"), 6,
     "the header declares 6 instances but the file holds 5"),
    ("index past header width", "mcilboost", replace_line("mcilboost", 2, "0:1:0 1:1 2:-2.5 4:0"), 2,
     "larger than the 3 features the header declares"),
    ("bag label contradicts instances", "spaced", replace_line("spaced", 5, "2 0 1 1 7 0 -1"), 5,
     "has bag label 0 but its largest instance label is 1"),
]


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("case, fmt, text, line, message", BROKEN, ids=[c[0] for c in BROKEN])
def test_broken_files_raise_an_error_naming_file_line_and_problem(tmp_path, case, fmt, text, line, message,
                                                                  compress):
    path = write(tmp_path / "broken.txt", text, compress)
    with pytest.raises(FormatError) as caught:
        read_bags(path, format=fmt)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}, line {line}: ")
    assert message in str(caught.value)


def test_garbled_bytes_name_the_line_they_are_on(tmp_path):
    raw = SAMPLES["mill"].encode()
    cut = raw.index(b"i3")
    path = tmp_path / "garbled.data"
    path.write_bytes(raw[:cut] + b"\xff\xfe\x00garbage" + raw[cut:])
    with pytest.raises(FormatError, match=r"garbled.data, line 3: garbled bytes: byte 0xff is not UTF-8"):
        read_bags(path)


def test_a_nul_byte_is_garbled_text(tmp_path):
    path = write(tmp_path / "nul.data", SAMPLES["mill"].replace("i4", "i\x004"))
    with pytest.raises(FormatError, match="line 4: garbled bytes: a NUL byte"):
        read_bags(path)


def test_a_truncated_gzip_file_says_it_is_damaged(tmp_path):
    packed = gzip.compress(SAMPLES["mill"].encode())
    path = tmp_path / "cut.data.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(FormatError, match=r"cut.data.gz: damaged gzip data .*truncated or corrupt"):
        read_bags(path)


def test_an_empty_file_or_one_of_comments_only_has_no_instances(tmp_path):
    with pytest.raises(FormatError, match="no instances"):
        read_bags(write(tmp_path / "empty.data", ""))
    with pytest.raises(FormatError, match="no instances"):
        read_bags(write(tmp_path / "comments.txt", "% only\n% comments\n"), format="C")


def test_an_undetectable_format_asks_for_an_explicit_one(tmp_path):
    with pytest.raises(FormatError, match="cannot tell the file format.*pass format= one of mill"):
        read_bags(write(tmp_path / "prose.txt", "hello world\n"))


def test_an_unknown_format_name_lists_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="unknown file format 'arff'; known formats: mill, mill-sparse"):
        read_bags(write(tmp_path / "a.data", SAMPLES["mill"]), format="arff")


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FormatError, match="nothing.data: cannot read the file"):
        read_bags(tmp_path / "nothing.data")


class MeanOfBag(BagClassifier):
    """The smallest learner: a threshold on the mean of each bag's first feature."""

    def _fit(self, bags, y):
        self.threshold_ = 0.0

    def _decision_function(self, bags):
        return np.add.reduceat(bags.X[:, 0], bags.offsets[:-1]) / bags.sizes - self.threshold_


def test_a_file_whose_bags_share_one_label_loads_but_fitting_it_fails(tmp_path):
    bags = read_bags(write(tmp_path / "negative.data", SAMPLES["mill"].replace("i3,b,1,", "i3,b,0,")))
    assert list(bags.y) == [0, 0, 0]
    with pytest.raises(ValueError, match="only one class"):
        MeanOfBag().fit(bags)


def test_a_sparse_line_without_pairs_is_an_all_zero_instance(tmp_path):
    bags = read_bags(write(tmp_path / "s.data", "i1,a,1\ni2,a,1,2:5\ni3,b,0,1:1\n"))
    np.testing.assert_array_equal(bags.X.toarray(), [[0, 0], [0, 5], [1, 0]])


def test_a_bad_sparse_value_names_its_field(tmp_path):
    with pytest.raises(FormatError, match="line 2: field 5: non-numeric value '1_0'"):
        read_bags(write(tmp_path / "s.data", "i1,a,1\ni2,a,1,2:5,3:1_0\n"), format="mill-sparse")


def test_load_bags_of_a_missing_path_says_there_is_no_such_file(tmp_path):
    with pytest.raises(ValueError, match="gone.data: no such file"):
        load_bags(tmp_path / "gone.data")
