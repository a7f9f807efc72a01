"""The fitted best model as an MLflow pyfunc model: predicts bag labels from a list of bags."""

from __future__ import annotations

from mlflow.pyfunc import PythonModel

from automil.track.store.mlflow_store import global_tracking_uri, quiet_mlflow
from automil.uris import shown_storage

__all__ = ["BagModel", "load_estimator"]


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
        ``automil.evaluation.standardized.Standardized(learner)``, so the loaded model standardizes new bags with the
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


def load_estimator(tracking_uri: str, model_uri: str):
    """The fitted estimator behind a model automil logged, from any MLflow model URI
    (``models:/automil-fox/latest``, ``runs:/<run id>/model``, ``models:/<model id>``)."""
    import mlflow.pyfunc

    try:
        with quiet_mlflow(), global_tracking_uri(tracking_uri):
            loaded = mlflow.pyfunc.load_model(model_uri)
    except Exception as error:  # noqa: BLE001 - MLflow raises several types for a missing model
        first = (str(error).strip() or type(error).__name__).splitlines()[0]
        raise ValueError(f"cannot load model {model_uri!r} from the tracking store {shown_storage(tracking_uri)}: "
                         f"{first}") from None
    python_model = loaded.unwrap_python_model()
    if not isinstance(python_model, BagModel):
        raise ValueError(f"model {model_uri!r} was not logged by automil (it is a {type(python_model).__name__}); "
                         "automil predict needs a bag classifier")
    return python_model.estimator
