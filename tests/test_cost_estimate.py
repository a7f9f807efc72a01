"""Knowing a learner's cost before spending its share: on large data the defaults are fitted on samples of
bags first, and a learner whose estimate passes its fair share is reported too slow at once."""

import json
import re
import subprocess
import sys

import optuna
import pytest
from driver_support import plugin_env, plugin_site

from automil.tune.backend.optuna_storage import open_storage
from automil.tune.schedule.budget import FINAL_SHARE
from automil.tune.schedule.probe import PROBE_TOLERANCE


@pytest.mark.parametrize("learner", ["quadratic", "cold-quadratic", "slow-linear"])
def test_a_learner_estimated_too_slow_is_reported_after_a_small_part_of_its_share(tmp_path, learner):
    # wide-bags holds 4 million values; quadratic's defaults need about 6 x 8 s on the 6,667 training
    # instances of a fold, far past a share of 2 x 60 s divided between two learners. cold-quadratic's first
    # fit in the worker costs 2 s more, which the untimed warm-up fit bears: timed, it would pass the
    # probe's limit for the smaller sample and stand for the cost of that sample. slow-linear's fit on the
    # smaller sample (417 instances, 2.5 s) passes its limit (2 s): that limit extrapolated linearly to the
    # six fits (192 s) is a lower bound past the share, while its defaults need 6 x 40 s.
    journal = f"journal:{tmp_path / 'studies.journal'}"
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "wide-bags",
                           "--learner", learner, "--learner", "centroid", "--storage", journal,
                           "--timeout", "60", "--n-trials", "1", "--protocol", "tuned", "--repeats", "1",
                           "--no-track", "--jobs", "1", "--json", "out.json"],
                          cwd=tmp_path, env=plugin_env(plugin_site(), tmp_path / "records"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    slow = rows[learner]
    assert slow["status"] == "too slow"
    estimate = float(re.search(r"too slow \(estimated (\d+) s\)", slow["error"]).group(1))
    # alone after centroid, its share is the time left before the tuning deadline, which the message may name
    share = float(re.search(r"(?:fair share of|more than the) (\d+) s", slow["error"]).group(1))
    assert estimate > share
    # the budget the learner used: its probe, a small part of its share
    assert 0 < slow["budget_seconds"] < share / 2
    trial = optuna.load_study(study_name=f"wide-bags/{learner}", storage=open_storage(journal)).trials[0]
    assert trial.user_attrs["too_slow"] and trial.user_attrs["estimated_seconds"] > share
    # a learner whose estimate fits its share runs its defaults as usual
    assert rows["centroid"]["status"] == "ok" and rows["centroid"]["budget_seconds"] > 0, rows["centroid"]["error"]
    assert re.search(rf"^{learner}\s+too slow", done.stdout, re.MULTILINE)
    if learner == "slow-linear":  # concluded from the smaller sample's limit
        assert re.search(r"a fit on \d+ bags ran \d\.\d s without finishing", slow["error"])


def test_a_learner_estimated_past_the_end_of_the_tuning_is_not_started_though_its_share_is_larger(tmp_path):
    # one learner on two processes: its share is twice the wall time left (both processes' seconds), but a
    # trial runs on one; quadratic's defaults need about 6 x 8 s, past the 22 s left of a 30 s budget
    journal = f"journal:{tmp_path / 'studies.journal'}"
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "wide-bags",
                           "--learner", "quadratic", "--storage", journal, "--timeout", "30", "--n-trials", "1",
                           "--protocol", "tuned", "--repeats", "1", "--no-track", "--jobs", "2", "--json",
                           "out.json"],
                          cwd=tmp_path, env=plugin_env(plugin_site(), tmp_path / "records"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads((tmp_path / "out.json").read_text())
    assert row["status"] == "too slow", row["error"]
    estimate = float(re.search(r"too slow \(estimated (\d+) s\)", row["error"]).group(1))
    left = float(re.search(r"more than the (\d+) s left of the tuning", row["error"]).group(1))
    assert estimate > left and left <= 30 * (1 - FINAL_SHARE[0])


@pytest.mark.parametrize("learner", ["midf", "mirf"])
def test_a_learner_whose_shipped_fit_cost_is_far_past_its_share_is_reported_too_slow_without_a_fit(tmp_path, learner):
    # on wide-bags (8,000 instances of 500 features), midf's shipped cost predicts its defaults at several
    # hundred seconds, mirf's (anytime: it would end in any share) at more than four times a share of a 60-s
    # budget shared with centroid: neither runs, and the trial says where its estimate came from. Without the
    # portfolio, whose members (midf's point on small bags among them) spend their share whatever it costs.
    journal = f"journal:{tmp_path / 'studies.journal'}"
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "wide-bags",
                           "--learner", learner, "--learner", "centroid", "--storage", journal,
                           "--timeout", "60", "--n-trials", "1", "--protocol", "tuned", "--repeats", "1",
                           "--no-portfolio", "--no-track", "--jobs", "1", "--json", "out.json"],
                          cwd=tmp_path, env={**plugin_env(plugin_site(), tmp_path / "records"),
                                             "AUTOMIL_LOAD_PLUGINS": "testlearners,forests"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    assert rows[learner]["status"] == "too slow", rows[learner]["error"]
    assert "automil's fit costs" in rows[learner]["error"]
    (trial,) = optuna.load_study(study_name=f"wide-bags/{learner}", storage=open_storage(journal)).trials
    assert trial.user_attrs["too_slow"] and not trial.user_attrs.get("fit_seconds")  # not a fit started
    assert rows["centroid"]["status"] == "ok", rows["centroid"]["error"]


def fixed_trial(params: dict, n_instances: int, n_classes: int = 2, n_features: int = 64):
    trial = optuna.trial.FixedTrial(params)
    for key, value in (("n_instances", n_instances), ("n_classes", n_classes), ("n_features", n_features)):
        trial.set_user_attr(key, value)
    return trial


def test_a_kernel_svm_trial_on_more_instances_than_a_dense_kernel_allows_is_refused_at_once_with_its_size():
    from automil_svm.spaces import sil_space

    poly = {"C": 1.0, "kernel": "poly", "degree": 2, "class_weight": None}
    with pytest.raises(optuna.TrialPruned, match=r"dense 200000 x 200000 kernel matrix \(298\.0 GiB"):
        sil_space(fixed_trial(poly, 200_000))
    assert sil_space(fixed_trial(poly, 2_000))["kernel"] == "poly"
    linear = {"C": 1.0, "kernel": "linear", "class_weight": None}  # SIL's first trial: valid at any size
    assert sil_space(fixed_trial(linear, 200_000))["kernel"] == "linear"


def test_the_kernel_pdmisvm_on_large_data_is_refused_at_once_with_its_memory_estimate():
    from automil_pdmisvm.spaces import FIRST_TRIALS, kernel_space

    with pytest.raises(optuna.TrialPruned, match=r"170707 instances need about \d+ GiB of Gram matrices"):
        kernel_space(fixed_trial(FIRST_TRIALS["pdmisvm-kernel"], 170_707))
    assert kernel_space(fixed_trial(FIRST_TRIALS["pdmisvm-kernel"], 2_000))["gamma"] == 1.0


def test_defaults_whose_first_fit_says_the_rest_cannot_end_within_their_share_stop_at_that_fit(tmp_path):
    # recorder (first by name) waits 5 s in each of its three fits: 15 s, twice its share of half the ~15 s
    # of tuning that a 20 s budget leaves, past the estimate's tolerance. Its first fit says so, and the
    # trial stops there, before the share would cut the second fit short; sleepy, last, is stopped by its
    # 7 s fit time-out.
    journal = f"journal:{tmp_path / 'studies.journal'}"
    env = {**plugin_env(plugin_site(), tmp_path / "records"), "AUTOMIL_TEST_FIT_DELAY": "5"}
    done = subprocess.run([sys.executable, "-m", "automil.cli", "tune", "--dataset", "test-bags",
                           "--learner", "recorder", "--learner", "sleepy", "--storage", journal,
                           "--timeout", "20", "--fit-timeout", "7", "--n-trials", "1", "--protocol", "tuned",
                           "--folds", "3", "--repeats", "1", "--no-track", "--jobs", "1", "--json", "out.json"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {row["learner"]: row for row in json.loads((tmp_path / "out.json").read_text())}
    slow = rows["recorder"]
    assert slow["status"] == "too slow", slow["error"]
    assert re.search(r"too slow \(estimated \d+ s\).*\(1 of 3 fits done, \d+\.\d s each\)", slow["error"])
    trial = optuna.load_study(study_name="test-bags/recorder", storage=open_storage(journal)).trials[0]
    share = float(re.search(r"fair share of (\d+) s", slow["error"]).group(1))
    assert len(trial.user_attrs["fit_seconds"]) == 1
    assert trial.user_attrs["estimated_seconds"] > PROBE_TOLERANCE * share
