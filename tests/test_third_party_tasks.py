"""A third-party learner declares the tasks it serves: the survival learner of docs/plugins.md, registered
in-process as a plugin of its own, is listed with its task, built for it and refused for classification, and
the contract suite holds it to the survival checks only."""

import dataclasses
import re
import types
from pathlib import Path

import numpy as np
import pytest

import automil
from automil import plugins
from automil.checks import learner_checks
from automil.task_checks import outcome_bags

PLUGIN_PAGE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


def _survival_example() -> types.ModuleType:
    """The page's survival learner, as the module of a plugin."""
    section = PLUGIN_PAGE.read_text().split("### Survival and regression learners", 1)[1]
    block = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    plugin = types.ModuleType("docs_survival_example")
    exec(compile(block, "docs/plugins.md (survival learner)", "exec"), plugin.__dict__)  # noqa: S102 - our own page
    return plugin


@pytest.fixture
def mean_cox(fresh_plugins):
    fresh_plugins.setenv(plugins.LOAD_PLUGINS_ENV, "")
    plugins.reset()
    plugins.plugin_manager().register(_survival_example(), name="survival-example")
    return automil.get_learner("mean-cox")


def test_a_third_party_survival_learner_is_registered_with_its_task(mean_cox):
    assert mean_cox.tasks == ("survival",) and mean_cox.plugin == "survival-example"
    train, test = outcome_bags(60, "survival", seed=0), outcome_bags(30, "survival", seed=1)
    model = mean_cox.build(task="survival").fit(train, train.y)
    assert isinstance(model, automil.BagSurvivalModel)
    times = np.quantile(train.y["time"], [0.2, 0.5, 0.8])
    assert model.predict(test).shape == (30,) and model.predict_survival(test, times).shape == (30, 3)
    with pytest.raises(ValueError, match="learner 'mean-cox' does not serve classification"):
        mean_cox.build()


def test_the_contract_suite_holds_a_survival_learner_to_the_survival_checks_only(mean_cox):
    checks = learner_checks(mean_cox)
    assert sorted(check.__name__ for check in checks) == [
        "check_outcome_input_survival", "check_outcome_labels_survival", "check_outcome_learned_survival",
        "check_search_space_extremes_survival"]
    for check in checks:
        check()


def test_a_survival_learner_that_learns_nothing_fails_the_survival_contract(mean_cox):
    class Constant(mean_cox.estimator):
        def _predict(self, bags):
            return np.zeros(bags.n_bags)

    constant = dataclasses.replace(mean_cox, estimator=Constant)
    learned = next(check for check in learner_checks(constant) if check.__name__ == "check_outcome_learned_survival")
    with pytest.raises(AssertionError, match=r"held-out concordance 0.50 on easy witness bags \(expected >= 0.6\)"):
        learned()
