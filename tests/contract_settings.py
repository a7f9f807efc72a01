"""How the contract suite fits a learner: with its own defaults, except that a network (a learner importing
torch) is small and trains a few epochs. The suite checks properties, not accuracy, and fits about fifteen
models per learner on a few dozen bags."""

import dataclasses

# nothing held out (no second training on all bags) except where early stopping is the point
SMALL_NETWORK = {"hidden": 32, "epochs": 10, "batch_size": 4, "learning_rate": 3e-3, "validation_fraction": 0.0}


def _capped(space):
    """The search space with at most 5 epochs: every point's shape is still tried, in a fraction of the time."""
    def capped_space(trial):
        params = space(trial)
        return {**params, "epochs": min(params["epochs"], 5)}
    return capped_space


def small_network(spec):
    """``spec`` with the small network's defaults and its epochs capped."""
    return dataclasses.replace(spec, defaults={**spec.defaults, **SMALL_NETWORK},
                               search_space=_capped(spec.search_space))


def for_contract(spec):
    return small_network(spec) if "torch" in spec.imports else spec
