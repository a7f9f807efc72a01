"""The chosen model of a tuning run in the MLflow model registry: one registered model per dataset
(``automil-<dataset>``), a new version per run."""

from __future__ import annotations

from automil.track.store.names import DATASET_TAG, LEARNER_TAG, registered_name

__all__ = ["register_model"]

def register_model(client, dataset: str, model_uri: str) -> str:
    """Register ``model_uri`` (a logged model, ``models:/<model id>``) as a new version of the dataset's
    registered model, linked to the run that logged it; returns ``models:/automil-<dataset>/<version>``."""
    from mlflow.exceptions import MlflowException

    name = registered_name(dataset)
    try:
        client.create_registered_model(name, tags={DATASET_TAG: dataset},
                                       description=f"The model automil tune chose on {dataset}, one version "
                                                   "per run")
    except MlflowException as error:
        if error.error_code not in ("RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS"):
            raise
    model_id = model_uri.removeprefix("models:/")
    logged = client.get_logged_model(model_id)
    # The logged model's artifact location, not its models:/ URI: the registry would resolve that URI
    # through MLflow's global tracking URI, which need not be this store.
    version = client.create_model_version(name, source=logged.artifact_location, run_id=logged.source_run_id,
                                          tags={LEARNER_TAG: logged.tags.get(LEARNER_TAG, "")},
                                          model_id=model_id)
    return f"models:/{name}/{version.version}"
