"""The layouts for large data: a .npz archive and a folder of per-bag .npy/.h5 files with labels.csv.

Each reads back what was written, is found by ``load_bags`` from its path alone, and every broken input is
one FormatError naming the file and the bag.
"""

import zipfile

import numpy as np
import pytest

from automil import load_bags
from automil.data.readers import FormatError, detect_format, read_bags

h5py = pytest.importorskip("h5py")

SIZES = [3, 1, 4]
NAMES = ["slide-a", "slide-b", "slide-c"]
LABELS = [0, 1, 1]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(sum(SIZES), 5)).astype(np.float32)
OFFSETS = np.concatenate(([0], np.cumsum(SIZES)))
INSTANCE_Y = np.array([0, 0, 0, 1, 0, 1, 0, 0])


def rows(i):
    return X[OFFSETS[i]:OFFSETS[i + 1]]


def write_npz(path, compressed=False, **arrays):
    defaults = {"X": X, "offsets": OFFSETS, "y": np.array(LABELS), "bag_names": np.array(NAMES),
                "instance_y": INSTANCE_Y}
    arrays = {k: v for k, v in {**defaults, **arrays}.items() if v is not None}
    with open(path, "wb") as f:  # a file object: np.savez would add .npz to the name
        (np.savez_compressed if compressed else np.savez)(f, **arrays)
    return path


def write_folder(folder, kinds=("npy", "h5", "npy"), instance_labels=True):
    """One bag per kind: ``<bag>.npy`` (+ ``<bag>.instance_y.npy``) or ``<bag>.h5`` (features, instance_y)."""
    folder.mkdir()
    (folder / "labels.csv").write_text("bag,label\n" + "".join(f"{n},{y}\n" for n, y in zip(NAMES, LABELS)))
    for i, (name, kind) in enumerate(zip(NAMES, kinds)):
        instance_y = INSTANCE_Y[OFFSETS[i]:OFFSETS[i + 1]]
        if kind == "npy":
            np.save(folder / f"{name}.npy", rows(i))
            if instance_labels:
                np.save(folder / f"{name}.instance_y.npy", instance_y)
        else:
            with h5py.File(folder / f"{name}.h5", "w") as f:
                f["features"] = rows(i)
                f["coords"] = np.zeros((SIZES[i], 2))  # what pathology extractors store beside the features
                if instance_labels:
                    f["instance_y"] = instance_y
    return folder


def assert_the_bags(bags, source):
    np.testing.assert_array_equal(bags.X, X)
    assert list(bags.sizes) == SIZES and list(bags.y) == LABELS and list(bags.names) == NAMES
    np.testing.assert_array_equal(bags.instance_y, INSTANCE_Y)
    assert bags.source == str(source)


@pytest.mark.parametrize("compressed", [False, True], ids=["savez", "savez_compressed"])
def test_npz_with_offsets_reads_back_and_is_detected_from_its_bytes(tmp_path, compressed):
    path = write_npz(tmp_path / "bags.data", compressed)  # no .npz suffix: detection reads the bytes
    assert detect_format(path) == "npz"
    assert_the_bags(load_bags(str(path)), path)


def test_npz_with_a_bag_index_per_instance_groups_rows_stably(tmp_path):
    bag = np.repeat(np.arange(3), SIZES)
    order = RNG.permutation(len(bag))
    path = write_npz(tmp_path / "shuffled.npz", X=X[order], offsets=None, bag=bag[order],
                     instance_y=INSTANCE_Y[order])
    bags = read_bags(path, format="npz")
    assert list(bags.sizes) == SIZES
    for i in range(3):
        mine = order[bag[order] == i]  # the bag's rows, in their order in the file
        np.testing.assert_array_equal(bags[i], X[mine])
        np.testing.assert_array_equal(bags.instance_y[OFFSETS[i]:OFFSETS[i + 1]], INSTANCE_Y[mine])


@pytest.mark.parametrize("kinds", [("npy",) * 3, ("h5",) * 3, ("npy", "h5", "npy")], ids=["npy", "h5", "mixed"])
def test_bag_folder_reads_back_in_labels_order_and_is_found_from_a_directory_path(tmp_path, kinds):
    folder = write_folder(tmp_path / "slides", kinds)
    assert detect_format(folder) == "bag-folder"
    assert_the_bags(load_bags(str(folder)), folder)


def test_npy_files_in_fortran_order_or_big_endian_read_the_same_values(tmp_path):
    folder = write_folder(tmp_path / "slides", ("npy",) * 3)
    np.save(folder / "slide-a.npy", np.asfortranarray(rows(0)))
    np.save(folder / "slide-c.npy", rows(2).astype(">f8"))
    np.testing.assert_array_equal(load_bags(folder).X, X)


def test_bag_folder_without_instance_labels_and_with_text_labels(tmp_path):
    folder = write_folder(tmp_path / "slides", instance_labels=False)
    (folder / "labels.csv").write_text("slide,bag,label\n" + "".join(
        f"s{i},{n},{'tumor' if y else 'normal'}\n" for i, (n, y) in enumerate(zip(NAMES, LABELS))))
    bags = load_bags(folder)
    assert bags.instance_y is None and list(bags.y) == ["normal", "tumor", "tumor"]


def test_a_set_of_one_class_loads_like_every_format_a_test_set_may_be_all_negative(tmp_path):
    bags = load_bags(write_npz(tmp_path / "negative.npz", y=np.zeros(3, dtype=int), instance_y=None))
    assert list(bags.y) == [0, 0, 0]


@pytest.mark.parametrize("layout", ["npz", "bag-folder"])
def test_float32_features_stay_float32(tmp_path, layout):
    path = write_npz(tmp_path / "bags.npz") if layout == "npz" else write_folder(tmp_path / "slides")
    assert load_bags(path).X.dtype == np.float32


# ---- broken input: one FormatError that names the file and the bag -----------------------------------------
def truncate(path):
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) * 2 // 3])


def folder_case(change):
    def make(tmp_path):
        folder = write_folder(tmp_path / "slides", ("npy", "h5", "npy"))
        change(folder)
        return folder
    return make


def npz_case(change=None, **arrays):
    def make(tmp_path):
        path = write_npz(tmp_path / "bags.npz", **arrays)
        if change is not None:
            change(path)
        return path
    return make


def zip_of_bytes(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X", b"1,2,3")
        archive.writestr("y.npy", b"0")
    return path


def with_nan(i, where):
    bad = rows(i).copy()
    bad[where] = np.nan
    return bad


def rewrite_h5(folder, **datasets):
    with h5py.File(folder / "slide-b.h5", "w") as f:
        for key, value in datasets.items():
            f[key] = value


BROKEN = [
    ("bag without a file", folder_case(lambda d: (d / "slide-c.npy").unlink()), "labels.csv, line 4",
     "bag 'slide-c' has no feature file"),
    ("file without a label", folder_case(lambda d: np.save(d / "extra.npy", X)), "extra.npy",
     "bag 'extra' has a feature file but no row in labels.csv"),
    ("two files for one bag", folder_case(lambda d: np.save(d / "slide-b.npy", X)), "slide-b.",
     "bag 'slide-b' has two feature files"),
    ("ragged width", folder_case(lambda d: np.save(d / "slide-c.npy", X[:4, :3])), "slide-c.npy",
     "bag 'slide-c': 3 features, but bag 'slide-a' (slide-a.npy) has 5"),
    ("nan in npy", folder_case(lambda d: np.save(d / "slide-c.npy", with_nan(2, (1, 4)))), "slide-c.npy",
     "bag 'slide-c': a non-finite value (nan) in instance 1, feature 4"),
    ("inf in h5", folder_case(lambda d: rewrite_h5(d, features=np.full_like(rows(1), np.inf))), "slide-b.h5",
     "bag 'slide-b': a non-finite value (inf) in instance 0"),
    ("empty bag", folder_case(lambda d: np.save(d / "slide-a.npy", X[:0])), "slide-a.npy",
     "bag 'slide-a': no instances"),
    ("1-D features", folder_case(lambda d: np.save(d / "slide-a.npy", X[0])), "slide-a.npy",
     "bag 'slide-a': the features have shape (5,)"),
    ("truncated npy", folder_case(lambda d: truncate(d / "slide-c.npy")), "slide-c.npy",
     "bag 'slide-c': cannot read the .npy file"),
    ("truncated h5", folder_case(lambda d: truncate(d / "slide-b.h5")), "slide-b.h5",
     "bag 'slide-b': cannot read the .h5 file"),
    ("h5 without features", folder_case(lambda d: rewrite_h5(d, embeddings=rows(1))), "slide-b.h5",
     "bag 'slide-b': no 'features' dataset"),
    ("instance labels for some bags", folder_case(lambda d: (d / "slide-a.instance_y.npy").unlink()),
     "slide-a.npy", "bag 'slide-a': no instance labels"),
    ("duplicate label row", folder_case(lambda d: (d / "labels.csv").write_text(
        "bag,label\nslide-a,0\nslide-b,1\nslide-c,1\nslide-b,0\n")), "labels.csv, line 5",
     "bag 'slide-b' appears again (first on line 3)"),
    ("no labels table", folder_case(lambda d: (d / "labels.csv").unlink()), "slides", "no labels.csv"),
    ("nan in npz", npz_case(X=np.where(np.arange(8)[:, None] == 5, np.nan, X)), "bags.npz",
     "bag 2 ('slide-c') has a non-finite value (nan) in instance 1"),
    ("empty bag in npz", npz_case(offsets=np.array([0, 3, 3, 8])), "bags.npz", "bag 1 ('slide-b') is empty"),
    ("bag index out of range", npz_case(offsets=None, bag=np.array([0, 0, 0, 1, 2, 2, 3, 2])), "bags.npz",
     "instance 6 has bag index 3, but y labels bags 0 to 2"),
    ("npz without y", npz_case(y=None), "bags.npz", "no array y in the archive"),
    ("zip that is no npz", lambda tmp_path: zip_of_bytes(tmp_path / "bags.npz"), "bags.npz",
     "the archive's member X is not a .npy array"),
    ("one .npy file", lambda tmp_path: np.save(tmp_path / "bag.npy", X) or tmp_path / "bag.npy", "bag.npy",
     "a single .npy file holds one array, not a data set"),
    ("truncated npz", npz_case(truncate), "bags.npz",
     "damaged .npz archive"),
]


@pytest.mark.parametrize("case, make, where, what", BROKEN, ids=[case[0] for case in BROKEN])
def test_broken_input_is_one_error_naming_the_file_and_the_bag(tmp_path, case, make, where, what):
    path = make(tmp_path)
    with pytest.raises(FormatError) as caught:
        load_bags(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path)) and where in message.split(": ")[0], message
    assert what in message, message
