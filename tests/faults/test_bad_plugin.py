"""A third-party learner whose scores break the contract (wrong shape, NaN or inf) is caught by the driver:
every such trial fails with a message naming the plugin, and the run goes on to its leaderboard."""

import pytest

from faults import harness
from faults.harness import Tune

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("learner, says", [("badshape", "shape"), ("nanscore", "non-finite")])
def test_a_plugin_learner_with_wrong_shapes_or_non_finite_scores_fails_its_trials_naming_the_plugin(
        tmp_path, site, journal, learner, says):
    tune = Tune(tmp_path, site, journal, learners=(learner,), n_trials=4)
    result = tune.run()
    assert result.returncode == 0, result.stderr
    trials = tune.trials(learner)
    harness.assert_study_complete(trials, 4)
    for trial in trials:
        error = trial.user_attrs.get("error") or ""
        assert trial.state.name == "FAIL", (trial.number, trial.params, trial.state.name, error)
        assert "faultlearners" in error and says in error, error
    row = next(line for line in result.stdout.splitlines() if line.startswith(learner))
    assert "failed" in row
    harness.report(f"plugin learner {learner}", harness.figures(trials))
