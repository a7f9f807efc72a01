"""``automil report --kaplan-meier DIR`` against a real MLflow store: each survival study's Kaplan-Meier figure
is copied out and listed with its concordance, best first; studies without one are left out."""

import numpy as np

import automil
from automil import cli
from automil.track import Tracker
from automil.track.writing.figures import KAPLAN_MEIER, kaplan_meier_figure


def test_report_copies_every_survival_studys_kaplan_meier_curves_and_lists_them(tmp_path, mlflow_store, capsys):
    uri = mlflow_store(tmp_path / "store")
    tracker = Tracker(uri)
    spec = automil.get_learner("bag-stats")
    survival = tracker.study_run("cohort/bag-stats", "cohort", spec)
    better = tracker.study_run("cohort/abmil", "cohort", automil.get_learner("abmil"))
    other = tracker.study_run("cohort/mivlad", "cohort", automil.get_learner("mivlad"))
    rng = np.random.default_rng(0)
    risk = rng.standard_normal(40)
    picture = tmp_path / "kaplan_meier.png"
    kaplan_meier_figure(rng.exponential(np.exp(-risk)), rng.random(40) < 0.6, risk, 0.0).savefig(picture, dpi=50)
    tracker.store.client.log_artifact(survival, str(picture), KAPLAN_MEIER.rsplit("/", 1)[0])
    tracker.store.log_batch(survival, metrics=[("concordance", 0.712, 0, 0)])
    tracker.store.client.log_artifact(better, str(picture), KAPLAN_MEIER.rsplit("/", 1)[0])
    tracker.store.log_batch(better, metrics=[("concordance", 0.75, 0, 0)])  # abmil: best C, listed first
    for run in (survival, better, other):
        tracker.store.terminate(run)

    out = tmp_path / "curves"
    assert cli.main(["report", "--kaplan-meier", str(out), "--tracking-uri", uri]) == 0
    copied = out / "cohort" / "bag-stats" / "kaplan_meier.png"
    assert copied.read_bytes() == picture.read_bytes()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| cohort")]
    assert rows == [f"| cohort | abmil | 0.750 | {out / 'cohort' / 'abmil' / 'kaplan_meier.png'} |",
                    f"| cohort | bag-stats | 0.712 | {copied} |"]  # mivlad has no figure


def test_report_says_when_no_study_has_kaplan_meier_curves(tmp_path, mlflow_store, capsys):
    uri = mlflow_store(tmp_path / "store")
    tracker = Tracker(uri)
    tracker.store.terminate(tracker.study_run("cohort/bag-stats", "cohort", automil.get_learner("bag-stats")))
    assert cli.main(["report", "--kaplan-meier", str(tmp_path / "curves"), "--tracking-uri", uri]) == 1
    assert "no study in the tracking store has Kaplan-Meier curves" in capsys.readouterr().err
