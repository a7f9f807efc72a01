"""This plugin's own tests: the automil contract suite on its learner, and its dataset as declared.

Run with ``python -m pytest`` from the plugin's folder once the plugin is installed (``pip install -e .``).
"""

import pytest

import automil
from automil.checks import learner_checks

SPEC = automil.get_learner("embedded-meanmax")


@pytest.mark.parametrize("check", learner_checks(SPEC), ids=lambda check: check.__name__)
def test_embedded_meanmax_honours_the_learner_contract(check):
    check()


def test_shapes_toy_has_the_shape_its_spec_declares():
    spec = automil.get_dataset("shapes-toy")
    bags = spec.load()
    assert (bags.n_bags, bags.n_instances, bags.n_features, len(bags.classes)) == (
        spec.n_bags, spec.n_instances, spec.n_features, spec.n_classes)
