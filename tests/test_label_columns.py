"""A labels table read for a task (survival: a time and an event; regression: a target), with bag-level covariates
and with a patient's slides pooled into one bag (``--bag-by``): read as written, carried by every subset, and
every bad cell one line naming the file and its line."""

import h5py
import numpy as np
import pytest

from automil.data.datasets import load_bags
from automil.data.label_columns import LabelColumns
from automil.data.readers.errors import FormatError
from automil.endpoints import REGRESSION_DTYPE, SURVIVAL_DTYPE
from automil.streamed_bags import StreamedBags
from automil_datasets.slides import write_slide_set

SURVIVAL = LabelColumns("survival", time="os_months", event="dead")
STAGES = ("I", "II", "III")


@pytest.fixture(scope="module")
def trident(tmp_path_factory):
    return write_slide_set(tmp_path_factory.mktemp("trident"), "trident", n_cases=6, n_features=4, seed=5)


@pytest.fixture(scope="module")
def clam(tmp_path_factory):
    return write_slide_set(tmp_path_factory.mktemp("clam"), "clam", n_cases=5, n_features=3, seed=6, pt=False)


def _slides(written) -> list[tuple[str, str]]:
    """``(case_id, slide_id)`` of every row of the generated table, in its order."""
    return [tuple(line.split(",")[:2]) for line in written.labels.read_text().splitlines()[1:]]


def _patient(case: str, rng_seed: int = 0) -> dict:
    """A patient's clinical values, drawn from its number: the same on each of its slides."""
    number = int(case.rsplit("-", 1)[1])
    rng = np.random.default_rng([rng_seed, number])
    return {"os_months": f"{rng.uniform(1, 60):.2f}", "dead": str(int(number % 3 != 0)),
            "psa": f"{rng.normal(5, 2):.3f}", "age": str(40 + 3 * number), "stage": STAGES[number % 3]}


def _write(path, written, columns=("os_months", "dead", "age", "stage"), change=None):
    """A labels table of ``written``'s slides with the patients' ``columns``; ``change(i, row)`` may rewrite
    row ``i`` (a dict) first."""
    lines = [",".join(("slide_id", "case_id", *columns))]
    for i, (case, slide) in enumerate(_slides(written)):
        row = {"slide_id": slide, "case_id": case, **_patient(case)}
        if change is not None:
            change(i, row)
        lines.append(",".join(row[c] for c in ("slide_id", "case_id", *columns)))
    path.write_text("\n".join(lines) + "\n")
    return path


def _features(written, slide):
    folder = written.features / "h5_files" if (written.features / "h5_files").is_dir() else next(
        written.features.rglob("features_*"))
    with h5py.File(folder / f"{slide}.h5") as f:
        return f["features"][()], f["coords"][()]


def test_a_survival_table_reads_its_time_and_event_columns_without_a_label(trident, tmp_path):
    table = _write(tmp_path / "os.csv", trident)
    bags = load_bags(trident.features, labels=table, columns=SURVIVAL)
    rows = _slides(trident)
    assert bags.y.dtype == SURVIVAL_DTYPE and list(bags.names) == [slide for _, slide in rows]
    expected = [_patient(case) for case, _ in rows]
    np.testing.assert_allclose(bags.y["time"], [float(p["os_months"]) for p in expected])
    assert bags.y["event"].tolist() == [p["dead"] == "1" for p in expected]
    assert list(bags.groups) == [case for case, _ in rows] and bags.covariates is None
    assert repr(bags).endswith("4 features, survival)")  # not one "class" a distinct time
    assert bags.subset([3, 1]).y.tolist() == bags.y[[3, 1]].tolist()


def test_a_regression_table_reads_its_target_column(clam, tmp_path):
    table = _write(tmp_path / "psa.csv", clam, columns=("psa",))
    bags = load_bags(clam.features, labels=table, columns=LabelColumns("regression", target="PSA"))
    assert bags.y.dtype == REGRESSION_DTYPE
    np.testing.assert_allclose(bags.y["target"], [float(_patient(case)["psa"]) for case, _ in _slides(clam)])


def test_covariates_read_numbers_as_numbers_and_other_columns_one_hot_and_every_subset_keeps_them(trident, tmp_path):
    table = _write(tmp_path / "os.csv", trident)
    bags = load_bags(trident.features, labels=table,
                     columns=LabelColumns("survival", time="os_months", event="dead", covariates="age, Stage"))
    assert bags.covariate_names == ["age", "stage=I", "stage=II", "stage=III"]
    patients = [_patient(case) for case, _ in _slides(trident)]
    np.testing.assert_array_equal(bags.covariates[:, 0], [float(p["age"]) for p in patients])
    np.testing.assert_array_equal(bags.covariates[:, 1:].argmax(axis=1), [STAGES.index(p["stage"]) for p in patients])
    assert (bags.covariates[:, 1:].sum(axis=1) == 1).all()
    picked = [4, 0, 2]
    for part in (bags.subset(picked), StreamedBags(bags, picked), StreamedBags(bags, picked).gathered(),
                 bags.with_labels(bags.y).subset(picked)):
        np.testing.assert_array_equal(part.covariates, bags.covariates[picked])
        assert part.covariate_names == bags.covariate_names
    block = next(StreamedBags(bags, picked).blocks())
    np.testing.assert_array_equal(block.covariates, bags.covariates[picked][:block.n_bags])
    assert bags.with_instances(bags.X * 2).covariates is bags.covariates


def test_a_classification_table_takes_covariates_and_its_digest_tells_them_apart(clam, tmp_path):
    table = tmp_path / "with-age.csv"
    rows = _slides(clam)
    table.write_text("slide_id,label,age\n" + "".join(f"{s},{'ab'[i % 2]},{30 + i}\n" for i, (_, s) in
                                                      enumerate(rows)))
    plain = load_bags(clam.features, labels=table)
    with_age = load_bags(clam.features, labels=table, columns=LabelColumns(covariates=("age",)))
    assert plain.covariates is None and with_age.covariates[:, 0].tolist() == [30.0 + i for i in range(len(rows))]
    assert plain.digest != with_age.digest and list(plain.y) == list(with_age.y)


def test_bag_by_pools_a_patients_slides_into_one_bag_whose_instances_keep_slide_and_coords(trident, tmp_path):
    table = _write(tmp_path / "os.csv", trident)
    columns = LabelColumns("survival", time="os_months", event="dead", bag_by="case_id", covariates=("stage",))
    bags = load_bags(trident.features, labels=table, columns=columns)
    rows = _slides(trident)
    cases = list(dict.fromkeys(case for case, _ in rows))
    assert list(bags.names) == cases and list(bags.groups) == cases
    np.testing.assert_allclose(bags.y["time"], [float(_patient(case)["os_months"]) for case in cases])
    for b, case in enumerate(cases):
        slides = [slide for c, slide in rows if c == case]
        instances = slice(bags.offsets[b], bags.offsets[b + 1])
        assert list(dict.fromkeys(bags.slide_names[bags.instance_slides[instances]])) == slides
        for slide in slides:
            mine = bags.slide_names[bags.instance_slides] == slide
            features, coords = _features(trident, slide)
            np.testing.assert_array_equal(bags.X[mine], features)
            np.testing.assert_array_equal(bags.coords[mine], coords)
    part = bags.subset([2, 0])
    assert list(part.names) == [cases[2], cases[0]]
    assert set(part.slide_names[part.instance_slides]) == {s for c, s in rows if c in (cases[0], cases[2])}
    streamed = StreamedBags(bags, [2, 0])
    np.testing.assert_array_equal(streamed.instance_slides, part.instance_slides)
    np.testing.assert_array_equal(streamed.gathered().instance_slides, part.instance_slides)


def test_the_runs_shared_copy_carries_covariates_and_slides(trident, tmp_path):
    from automil.tune.workers.processes import release_instances, share_instances

    table = _write(tmp_path / "os.csv", trident)
    columns = LabelColumns("survival", time="os_months", event="dead", bag_by="case_id", covariates=("age",))
    shared = share_instances(lambda: load_bags(trident.features, labels=table, columns=columns), scratch=tmp_path)
    try:
        import pickle

        again = pickle.loads(pickle.dumps(shared))
        assert shared.instances_file is not None and again.instances_file == shared.instances_file
        np.testing.assert_array_equal(again.covariates, shared.covariates)
        np.testing.assert_array_equal(again.slide_names[again.instance_slides],
                                      shared.slide_names[shared.instance_slides])
        assert again.y.dtype == SURVIVAL_DTYPE and again.covariate_names == ["age"]
    finally:
        release_instances(shared)


def _set(column, value, at=2):
    def change(i, row):
        if i == at:
            row[column] = value
    return change


@pytest.mark.parametrize("columns, change, line, what", [
    (SURVIVAL, _set("os_months", "-4"), 4, "has a negative time -4 (column os_months)"),
    (SURVIVAL, _set("os_months", ""), 4, "has no time (column os_months"),
    (SURVIVAL, _set("os_months", "NA"), 4, "has no time (column os_months"),
    (SURVIVAL, _set("os_months", "soon"), 4, "has a time 'soon' (column os_months) that is not a finite number"),
    (SURVIVAL, _set("dead", "2"), 4, "has an event '2' (column dead) that is not 0 or 1"),
    (SURVIVAL, _set("dead", "yes"), 4, "has an event 'yes' (column dead) that is not 0 or 1"),
    (LabelColumns("regression", target="psa"), _set("psa", "high"), 4,
     "has a target 'high' (column psa) that is not a finite number"),
    (LabelColumns("regression", target="psa", covariates=("age",)), _set("age", ""), 4,
     "has no value of the covariate age (''): a missing value is never filled in"),
    (LabelColumns("regression", target="psa", covariates=("age",)), _set("age", "inf", at=0), 2,
     "has age 'inf': not a finite number"),
    (LabelColumns("regression", target="psa", bag_by="case_id"), _set("psa", "99", at=1), 3,
     "pool into case_id 'case-000' but their psa differ (99.0 and"),
    (LabelColumns("survival", time="os_months", event="dead", bag_by="case_id", covariates=("stage",)),
     _set("stage", "IV", at=1), 3, "pool into case_id 'case-000' but their stage differ ('IV' and"),
    (LabelColumns("survival", time="days", event="dead"), None, 1, "no column 'days' (--time); the header has"),
    (LabelColumns(covariates=("weight",)), None, 1, "expected a header naming the columns slide_id (or bag) and label"),
    (LabelColumns("regression", target="psa", covariates=("weight",)), None, 1, "no column 'weight' (--covariates)"),
    (LabelColumns("regression", target="psa", bag_by="patient"), None, 1, "no column 'patient' (--bag-by)"),
])
def test_a_bad_cell_is_one_line_naming_the_file_and_its_line(columns, change, line, what, clam, tmp_path):
    table = _write(tmp_path / "table.csv", clam, columns=("os_months", "dead", "psa", "age", "stage"), change=change)
    with pytest.raises(FormatError) as raised:
        load_bags(clam.features, labels=table, columns=columns)
    message = str(raised.value)
    assert "\n" not in message and f"table.csv, line {line}: " in message and what in message, message
    if line > 1:
        assert f"slide '{_slides(clam)[line - 2][1]}'" in message
    if "pool into" in message:
        assert f"slide '{_slides(clam)[0][1]}' (line 2)" in message  # both lines named


def test_a_survival_table_without_an_event_names_its_column(clam, tmp_path):
    table = _write(tmp_path / "table.csv", clam, change=lambda i, row: row.update(dead="0"))
    with pytest.raises(FormatError, match=r"table\.csv: no events: the dead of every slide is 0 \(censored\)"):
        load_bags(clam.features, labels=table, columns=SURVIVAL)


def test_a_bag_folder_reads_a_task_and_pools_its_bags_too(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("s1", "s2", "s3"):
        np.save(tmp_path / f"{name}.npy", rng.normal(size=(4, 3)))
    (tmp_path / "labels.csv").write_text("bag,case_id,y\ns1,p1,0.5\ns2,p2,1.5\ns3,p1,0.5\n")
    bags = load_bags(tmp_path, columns=LabelColumns("regression", target="y", bag_by="case_id"))
    assert list(bags.names) == ["p1", "p2"] and bags.y["target"].tolist() == [0.5, 1.5]
    np.testing.assert_array_equal(bags[0], np.concatenate([np.load(tmp_path / "s1.npy"), np.load(tmp_path / "s3.npy")]))
    assert bags.slide_names[bags.instance_slides].tolist() == ["s1"] * 4 + ["s3"] * 4 + ["s2"] * 4
    (tmp_path / "labels.csv").write_text("bag,case_id,y,site\ns1,p1,0.5,A\ns2,p2,1.5,B\ns3,p1,0.5,A\n")
    by_site = load_bags(tmp_path, groups="site", columns=LabelColumns("regression", target="y", bag_by="case_id"))
    assert list(by_site.groups) == ["A", "B"]  # --groups names the pooled bags' groups
    (tmp_path / "labels.csv").write_text("bag,case_id,y,site\ns1,p1,0.5,A\ns2,p2,1.5,B\ns3,p1,0.5,C\n")
    with pytest.raises(FormatError, match=r"labels\.csv, line 4: bag 's3' and bag 's1' \(line 2\) pool into case_id "
                                          r"'p1' but their site differ \('C' and 'A'\)"):
        load_bags(tmp_path, groups="site", columns=LabelColumns("regression", target="y", bag_by="case_id"))
    alone = load_bags(tmp_path, columns=LabelColumns("regression", target="y", bag_by="bag"))  # a bag a row
    assert list(alone.names) == ["s1", "s2", "s3"] and alone.slide_names[alone.instance_slides][::4].tolist() == [
        "s1", "s2", "s3"]


@pytest.mark.parametrize("columns, message", [
    (LabelColumns("survival", time="t"), "--task survival needs --time COLUMN and --event COLUMN"),
    (LabelColumns("regression"), "--task regression needs --target COLUMN"),
    (LabelColumns(target="y"), "--target applies to --task regression, not to --task classification"),
    (LabelColumns("survival", time="t", event="e", target="y"), "--target applies to --task regression"),
    (LabelColumns("cox"), "--task must be one of classification, survival, regression, got 'cox'"),
    (LabelColumns("survival", time="t", event="e", covariates="age,T"), "--covariates names 'T', the --time column"),
    (LabelColumns(covariates="age,label"), "--covariates names 'label', the label column"),
    (LabelColumns(bag_by="case_id", covariates="case_id"), "--covariates names 'case_id', the --bag-by column"),
    (LabelColumns(covariates="age,,stage"), "--covariates names an empty column"),
    (LabelColumns(covariates="age,Age"), "--covariates names 'Age' twice"),
])
def test_label_columns_check_names_the_bad_flag(columns, message):
    with pytest.raises(ValueError, match=message):
        columns.check()


def test_a_dataset_with_labels_of_its_own_refuses_the_table_flags(tmp_path):
    with pytest.raises(ValueError, match="musk1 is a registered dataset with its own labels: leave out --bag-by"):
        load_bags("musk1", columns=LabelColumns(bag_by="case_id", covariates="age"))
    with pytest.raises(ValueError, match="its own labels: leave out --task, --target, which read the labels table"):
        load_bags("musk1", columns=LabelColumns("regression", target="y"))
    text = tmp_path / "bags.csv"
    text.write_text("bag,label,f1\na,1,0.5\nb,0,0.25\n")
    with pytest.raises(FormatError, match="leave out --covariates, which read the labels table of a folder of"):
        load_bags(text, columns=LabelColumns(covariates="age"))


def test_the_command_line_gathers_the_six_flags_into_the_options_columns(tmp_path):
    from automil.cli.main import build_parser
    from automil.tune.options import TuneOptions, read_study_file

    args = build_parser().parse_args(["tune", "--dataset", "x", "--task", "survival", "--time", "os", "--event",
                                      "dead", "--bag-by", "case_id", "--covariates", "age,stage"])
    assert args.columns == LabelColumns("survival", "os", "dead", None, "case_id", ("age", "stage"))
    assert build_parser().parse_args(["predict", "m", "--dataset", "x", "--target", "y"]).columns.target == "y"
    assert build_parser().parse_args(["tune", "--dataset", "x"]).columns == LabelColumns() == TuneOptions().columns
    with pytest.raises(ValueError, match="--task survival needs --time"):
        TuneOptions(columns=LabelColumns("survival")).check()
    study = tmp_path / "study.toml"
    study.write_text('[options]\nn_trials = 2\n[options.columns]\ntask = "regression"\ntarget = "psa"\n'
                     'covariates = ["age"]\n[[study]]\ndataset = "musk1"\n[[study]]\ndataset = "fox"\n'
                     '[study.columns]\nbag_by = "case_id"\ncovariates = "age,stage"\n')
    (_, _, first), (_, _, second) = read_study_file(study)
    assert first.columns == LabelColumns("regression", target="psa", covariates=("age",))
    assert second.columns == LabelColumns(bag_by="case_id", covariates=("age", "stage"))
    study.write_text('[options.columns]\ntask = "regression"\ntargets = "psa"\n[[study]]\ndataset = "musk1"\n')
    with pytest.raises(ValueError, match="unknown key 'targets' in columns"):
        read_study_file(study)


def test_heatmaps_of_a_pooled_bag_are_drawn_slide_by_slide_at_each_slides_coords(trident, tmp_path):
    import csv

    import automil
    from automil.evaluation.heatmap_drawing import write_heatmaps
    from automil.evaluation.prediction import predict_bags
    from automil.evaluation.standardized import Standardized

    labels = tmp_path / "cases.csv"
    labels.write_text("slide_id,case_id,label\n" + "".join(f"{s},{c},{'ab'[int(c[-1]) % 2]}\n"
                                                           for c, s in _slides(trident)))
    bags = load_bags(trident.features, labels=labels, columns=LabelColumns(bag_by="case_id"))
    model = Standardized(automil.plugins.get_learner("sil").build()).fit(bags)
    some = bags.subset([0, 1])
    written = write_heatmaps(model, some, predict_bags(model, some), tmp_path / "heat")
    slides = [s for c, s in _slides(trident) if c in some.names]
    assert [w.table.stem for w in written] == slides and [w.bag for w in written] == [
        c for c, _ in _slides(trident) if c in some.names]
    scores = model.instance_scores(some)[:, 1]
    for files, slide in zip(written, slides):
        assert files.picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with open(files.table) as f:
            rows = list(csv.DictReader(f))
        mine = some.slide_names[some.instance_slides] == slide
        np.testing.assert_array_equal([[float(r["x"]), float(r["y"])] for r in rows], _features(trident, slide)[1])
        np.testing.assert_allclose([float(r["score"]) for r in rows], scores[mine], rtol=1e-5)
