"""The fitted best model as an MLflow pyfunc model: predicts bag labels from a list of bags."""

from __future__ import annotations

from mlflow.pyfunc import PythonModel

__all__ = ["BagModel"]


class BagModel(PythonModel):
    """The MLflow pyfunc face of a fitted bag classifier: predicts bag labels from a list of bags.

    Input: a list of bags, each bag a list of instances, each instance a list of ``n_features`` floats
    (a 2-D array as nested lists: ``[bag.tolist() for bag in bags]``); bags may differ in size. This is
    also the JSON a served model takes: ``{"inputs": [[[0.1, 2.0], [0.3, 1.5]], [[...]]]}``. MLflow
    checks the input against the signature (``Array(Array(double))``) before the model sees it, and
    rejects numpy arrays inside the list, hence ``tolist()``. Output: one label per bag, in the
    classes of the training labels (``metadata["classes"]`` of the logged model).

    Parameters
    ----------
    estimator : fitted estimator
        ``automil.evaluation.Standardized(learner)``, so the loaded model standardizes new bags with the
        statistics of its own training bags.
    """

    INPUT_FORMAT = ("list of bags; each bag a list of instances (rows), each a list of n_features floats: "
                    "[bag.tolist() for bag in bags]")

    def __init__(self, estimator):
        self.estimator = estimator

    def predict(self, model_input: list[list[list[float]]], params=None) -> list[int]:
        """Labels of the bags in ``model_input`` (see the class docstring for the format)."""
        import numpy as np

        bags = []
        for index, bag in enumerate(model_input):
            instances = np.asarray(bag, dtype=np.float64)
            if instances.ndim != 2 or len(instances) == 0:
                raise ValueError(f"bag {index}: expected a non-empty list of instances (a 2-D array "
                                 f"n_instances x n_features), got shape {instances.shape}")
            bags.append(instances)
        return self.estimator.predict(bags).tolist()
