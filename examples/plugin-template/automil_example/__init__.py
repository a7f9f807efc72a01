"""An example automil plugin: copy this package to start your own.

It adds one learner (``embedded-meanmax``) and one dataset (``shapes-toy``). Only the hook functions
live here; the estimator (``learner.py``) and its search space (``spaces.py``) are imported inside the hook
so that ``automil datasets`` stays fast.
"""

from pathlib import Path

import automil


@automil.hookimpl
def register_learners(register):
    """Register embedded-meanmax."""
    from automil_example import spaces
    from automil_example.learner import EmbeddedMeanMax

    register(automil.LearnerSpec(
        name="embedded-meanmax",
        estimator=EmbeddedMeanMax,
        search_space=spaces.embedded_meanmax_space,
        description="embedded-space baseline: per-bag mean and max fed to logistic regression",
        first_trial=spaces.FIRST_TRIALS["embedded-meanmax"],
    ))


@automil.hookimpl
def register_datasets(register):
    """Register shapes-toy, the data file shipped next to this module."""
    data = Path(__file__).with_name("shapes-toy.data.gz")
    register(automil.DatasetSpec(
        name="shapes-toy",
        load=lambda: automil.load_bags(data),
        description="60 small generated bags in MILL text format, shipped with the plugin",
        n_bags=60, n_instances=277, n_features=4, n_classes=2,
    ))
