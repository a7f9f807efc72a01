"""Slide feature folders as CLAM and TRIDENT write them: read as written, every error in one line naming the
file and the slide, and the groups (patients) and coords they carry."""

import subprocess
import sys

import h5py
import numpy as np
import pytest

from automil.data.datasets import load_bags
from automil.data.readers.errors import FormatError
from automil_datasets.slides import CLASSES, PATCH, in_witness_region, write_slide_set


@pytest.fixture(scope="module")
def clam(tmp_path_factory):
    return write_slide_set(tmp_path_factory.mktemp("clam"), "clam", n_cases=8, n_features=6, seed=3)


@pytest.fixture(scope="module")
def trident(tmp_path_factory):
    return write_slide_set(tmp_path_factory.mktemp("trident"), "trident", n_cases=8, n_features=6, seed=4)


def _table(written):
    lines = written.labels.read_text().splitlines()[1:]
    return [line.split(",") for line in lines]


@pytest.mark.parametrize("layout", ["clam", "trident"])
def test_a_folder_is_read_as_written_with_named_classes_groups_and_coords(layout, clam, trident):
    written = clam if layout == "clam" else trident
    bags = load_bags(written.features, labels=written.labels)
    rows = _table(written)
    assert list(bags.names) == [slide for _, slide, _ in rows]
    assert list(bags.y) == [label for _, _, label in rows] and set(bags.y) == set(CLASSES)
    assert list(bags.groups) == [case for case, _, _ in rows]  # case_id: the groups by default
    assert bags.X.dtype == np.float32 and bags.coords.shape == (bags.n_instances, 2)
    features = written.features / "h5_files" if layout == "clam" else next(written.features.rglob("features_*"))
    with h5py.File(features / f"{bags.names[1]}.h5") as f:
        np.testing.assert_array_equal(bags[1], f["features"][()])
        np.testing.assert_array_equal(bags.coords[bags.offsets[1]:bags.offsets[2]], f["coords"][()])
    assert 2 <= min(np.unique(bags.groups, return_counts=True)[1]) <= max(np.unique(bags.groups,
                                                                                    return_counts=True)[1]) <= 3


def test_the_labels_table_beside_the_features_is_found_and_another_column_can_group(clam, tmp_path):
    assert load_bags(clam.features).n_bags == len(clam.slides)  # slides.csv beside h5_files/
    table = tmp_path / "by-site.csv"
    rows = _table(clam)
    table.write_text("slide_id,label,site\n" + "".join(f"{s},{lab},site-{i % 3}\n" for i, (_, s, lab) in
                                                      enumerate(rows)))
    bags = load_bags(clam.features, labels=table, groups="site")
    assert sorted(set(bags.groups)) == ["site-0", "site-1", "site-2"]
    assert load_bags(clam.features, labels=table).groups is None  # no case_id: no groups unless named


def test_the_pt_files_hold_the_same_features_without_coords(clam):
    h5 = load_bags(clam.features / "h5_files", labels=clam.labels)
    pt = load_bags(clam.features / "pt_files", labels=clam.labels)
    np.testing.assert_array_equal(pt.X, h5.X)
    assert pt.coords is None and list(pt.groups) == list(h5.groups)


def test_pt_files_without_torch_say_how_to_install_it(clam):
    script = ("import sys; sys.modules['torch'] = None\n"  # what an environment without torch imports
              "from automil.data.datasets import load_bags\n"
              f"load_bags({str(clam.features / 'pt_files')!r}, labels={str(clam.labels)!r})\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    last = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 1 and "pip install torch" in last and f"slide {clam.slides[0]!r}" in last


def _copy(written, tmp_path):
    import shutil

    target = tmp_path / "copy"
    shutil.copytree(written.features, target)
    return target, target / written.labels.name


def _rewrite(path, **datasets):
    with h5py.File(path, "w") as f:
        for name, data in datasets.items():
            f.create_dataset(name, data=data)


def _truncate(path):
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize(("case", "break_it", "where", "what"), [
    ("slide without a file", lambda d, s: (d / "h5_files" / f"{s[2]}.h5").unlink(), "slides.csv, line 4",
     "has no feature file"),
    ("ragged widths", lambda d, s: _rewrite(d / "h5_files" / f"{s[1]}.h5", features=np.zeros((4, 5)),
                                            coords=np.zeros((4, 2))), "h5", "5 features per patch, but slide"),
    ("NaN", lambda d, s: _rewrite(d / "h5_files" / f"{s[3]}.h5", features=np.full((3, 6), np.nan),
                                  coords=np.zeros((3, 2))), "h5", "a non-finite value (nan) in patch 0"),
    ("truncated h5", lambda d, s: _truncate(d / "h5_files" / f"{s[0]}.h5"), "h5", "cannot read the .h5 file"),
    ("no features dataset", lambda d, s: _rewrite(d / "h5_files" / f"{s[0]}.h5", feats=np.zeros((3, 6))), "h5",
     "no 'features' dataset"),
    ("coords of another length", lambda d, s: _rewrite(d / "h5_files" / f"{s[1]}.h5", features=np.zeros((4, 6)),
                                                       coords=np.zeros((3, 2))), "h5", "coords of shape (3, 2)"),
    ("no label column", lambda d, s: (d / "slides.csv").write_text("case_id,slide_id,diagnosis\na,b,c\n"),
     "slides.csv, line 1", "expected a header naming the columns slide_id (or bag) and label"),
    ("duplicate slide", lambda d, s: (d / "slides.csv").write_text(
        f"slide_id,label\n{s[0]},a\n{s[0]},b\n"), "slides.csv, line 3", f"slide {'%r'} appears again"),
])
def test_bad_input_is_one_line_naming_the_file_and_the_slide(case, break_it, where, what, clam, tmp_path):
    folder, labels = _copy(clam, tmp_path)
    break_it(folder, clam.slides)
    with pytest.raises(FormatError) as raised:
        load_bags(folder, labels=labels)
    message = str(raised.value)
    assert "\n" not in message and where in message and (what.replace("%r", repr(clam.slides[0])) in message)
    if case not in ("no label column", "duplicate slide"):
        assert "slide '" in message


def test_a_truncated_pt_file_names_its_slide(clam, tmp_path):
    folder, labels = _copy(clam, tmp_path)
    _truncate(folder / "pt_files" / f"{clam.slides[2]}.pt")
    with pytest.raises(FormatError, match=rf"{clam.slides[2]}\.pt: slide '{clam.slides[2]}': cannot read"):
        load_bags(folder / "pt_files", labels=labels)


def test_feature_files_without_a_row_are_left_out_with_a_warning_counting_them(clam, tmp_path):
    folder, labels = _copy(clam, tmp_path)
    rows = labels.read_text().splitlines()
    labels.write_text("\n".join(rows[:-2]) + "\n")
    with pytest.warns(UserWarning, match=r"2 feature file\(s\) have no row in .*slides.csv"):
        bags = load_bags(folder, labels=labels)
    assert bags.n_bags == len(clam.slides) - 2


def test_a_folder_without_a_labels_table_or_an_unknown_group_column_says_which(clam, tmp_path):
    folder, labels = _copy(clam, tmp_path)
    labels.unlink()
    with pytest.raises(FormatError, match="give --labels FILE"):
        load_bags(folder)
    with pytest.raises(FormatError, match="no column 'patient' for the groups"):
        load_bags(folder, labels=clam.labels, groups="patient")
    with pytest.raises(ValueError, match="registered dataset with its own labels"):
        load_bags("musk1", labels=clam.labels)


def test_the_generated_witnesses_sit_in_their_region_of_tumour_slides(clam):
    bags = load_bags(clam.features)
    region = in_witness_region(bags.coords)
    assert (bags.coords % PATCH == 0).all() and region.any() and not region.all()
    tumour = np.repeat(bags.y == CLASSES[1], bags.sizes)
    shift = bags.X[tumour & region].mean(axis=0) - bags.X[tumour & ~region].mean(axis=0)
    none = bags.X[~tumour & region].mean(axis=0) - bags.X[~tumour & ~region].mean(axis=0)
    assert np.linalg.norm(shift) > 2.5 > 0.8 > np.linalg.norm(none)  # WITNESS_SHIFT 3.5 against noise


def test_slides_of_drawn_sizes_hold_their_share_of_witnesses_along_the_returned_direction(tmp_path):
    written = write_slide_set(tmp_path, "clam", n_cases=8, n_features=6, seed=3, pt=False, patches=(60, 100),
                              witness_share=0.05)
    bags = load_bags(written.features)
    assert 60 <= bags.sizes.min() and bags.sizes.max() <= 100 and len(set(bags.sizes)) > 1
    assert np.isclose(np.linalg.norm(written.direction), 1.0)
    for b in range(bags.n_bags):
        cells = bags.coords[bags.offsets[b]:bags.offsets[b + 1]] / PATCH
        k = max(1, round(0.05 * bags.sizes[b]))  # the k patches nearest the region's centre are the witnesses
        witness = np.zeros(bags.sizes[b], dtype=bool)
        witness[np.argsort(np.hypot(cells[:, 0] - 4.0, cells[:, 1] - 4.0), kind="stable")[:k]] = True
        projection = bags[b] @ written.direction
        gap = projection[witness].mean() - projection[~witness].mean()
        assert gap > 1.5 if bags.y[b] == CLASSES[1] else abs(gap) < 2.5  # WITNESS_SHIFT 3.5 against noise
    with pytest.raises(ValueError, match="patches"):
        write_slide_set(tmp_path / "bad", patches=(10, 300))


def test_a_bag_folder_groups_its_bags_by_the_case_id_of_labels_csv(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("s1", "s2", "s3"):
        np.save(tmp_path / f"{name}.npy", rng.normal(size=(4, 3)))
    (tmp_path / "labels.csv").write_text("bag,label,case_id\ns1,LUAD,p1\ns2,LUAD,p1\ns3,LUSC,p2\n")
    bags = load_bags(tmp_path)
    assert list(bags.groups) == ["p1", "p1", "p2"] and list(bags.y) == ["LUAD", "LUAD", "LUSC"]
    assert bags.subset([2, 0]).groups.tolist() == ["p2", "p1"]
