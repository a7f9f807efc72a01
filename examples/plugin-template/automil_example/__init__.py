"""An example automil plugin: copy this package to start your own.

It adds one learner (``embedded-meanmax``) and one dataset (``shapes-toy``). Only the hook functions
live here; the estimator is imported inside the hook so that ``automil datasets`` stays fast.
"""

from pathlib import Path

import automil

DATA = Path(__file__).with_name("shapes-toy.data.gz")


@automil.hookimpl
def register_learners(register):
    from automil_example.learner import EmbeddedMeanMax, search_space

    register(automil.LearnerSpec(
        name="embedded-meanmax",
        estimator=EmbeddedMeanMax,
        search_space=search_space,
        description="embedded-space baseline: per-bag mean and max fed to logistic regression",
        first_trial={"C": 1.0},  # the estimator's default, tried first in every new study
    ))


@automil.hookimpl
def register_datasets(register):
    register(automil.DatasetSpec(
        name="shapes-toy",
        load=lambda: automil.load_bags(DATA),
        description="60 small generated bags in MILL text format, shipped with the plugin",
        n_bags=60, n_instances=277, n_features=4, n_classes=2,
    ))
