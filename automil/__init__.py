"""automil: AutoML for multiple-instance learning.

Heavy modules are imported on first use so that ``automil --help`` and ``automil datasets`` start fast.
"""

from importlib import import_module

__version__ = "0.1.0"

_EXPORTS = {
    "Bags": "automil.bags",
    "as_bags": "automil.bags",
    "BagClassifier": "automil.learner",
    "LearnerSpec": "automil.learner",
    "Published": "automil.learner",
    "BagSurvivalModel": "automil.survival",
    "BagRegressor": "automil.regression",
    "DatasetSpec": "automil.data.datasets",
    "DataFile": "automil.data.files",
    "load_bags": "automil.data.datasets",
    "hookimpl": "automil.hookspecs",
    "learners": "automil.plugins",
    "datasets": "automil.plugins",
    "get_learner": "automil.plugins",
    "get_dataset": "automil.plugins",
    # the plugin API: what a learner or dataset plugin may use besides the names above
    "fetch": "automil.data.files",
    "read_bags": "automil.data.readers",
    "Reader": "automil.data.readers",
    "bag_max": "automil.max_pooling",
    "witness": "automil.max_pooling",
    "bag_folds": "automil.evaluation.folds",
    "fold_splits": "automil.evaluation.folds",
    "report_epoch": "automil.epochs",
    "FitPruned": "automil.epochs",
    "time_left": "automil.epochs",
    "time_limit": "automil.epochs",
    "StreamedBags": "automil.streamed_bags",
    "run_positions": "automil.row_runs",
    "instance_moments": "automil.evaluation.standardized",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    # public submodules: kernels for learners, spaces for their search spaces, checks for their tests
    if name in ("kernels", "spaces", "checks"):
        return import_module(f"automil.{name}")
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'automil' has no attribute {name!r}")
