"""A learner that leaks memory past ``--fit-memory``: its worker is killed, the trial recorded, the study
goes on."""

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(180)


def test_a_fit_leaking_past_fit_memory_is_killed_and_recorded_and_the_study_goes_on(tmp_path, site, journal):
    # Even trials leak without end (up to 3 GiB), odd trials fit normally.
    tune = Tune(tmp_path, site, journal, learners=("leaky",), n_trials=4, extra=("--fit-memory", "400M"))
    result = tune.run()
    assert result.returncode == 0, result.stderr
    trials = tune.trials("leaky")
    harness.assert_study_complete(trials, 4)
    leaked = [t for t in trials if t.user_attrs["estimator_params"]["leak"]]
    assert leaked and all(t.state.name == "FAIL" and t.user_attrs.get("out_of_memory") for t in leaked), \
        [(t.number, t.state.name, t.user_attrs.get("error")) for t in leaked]
    assert all("MiB" in t.user_attrs["error"] for t in leaked)
    assert all(t.state.name == "COMPLETE" for t in trials if not t.user_attrs["estimator_params"]["leak"])
    pids = tune.fit_pids("leak")
    assert len(pids) == len(leaked)
    assert all(harness.process_gone(pid) for pid in pids), "every leaking worker was killed"
    harness.report("fit leaking past --fit-memory 400M", harness.figures(trials))
