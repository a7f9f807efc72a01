"""Everything MLflow, and only here: studies, trials and final results as runs in a tracking store.

Layout: one MLflow experiment per dataset, one parent run per learner-dataset study, one nested run per
Optuna trial. The driver calls a :class:`Tracker`; learners never log anything themselves. Every call
names its run explicitly (``MlflowClient`` with run ids, never the fluent run stack), so several studies
and processes can log to one store at the same time.
"""

from __future__ import annotations

import os

__all__ = ["Tracker", "default_tracking_uri"]


def default_tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else a sqlite store ``mlruns/mlflow.db`` under the working directory."""
    raise NotImplementedError


class Tracker:
    """Logs automil studies to one MLflow tracking store.

    Parameters
    ----------
    tracking_uri : str, optional
        Any MLflow tracking URI (``sqlite:///...``, ``postgresql://...``, ``http://host:5000``). Default:
        ``$MLFLOW_TRACKING_URI``, else ``sqlite:///<cwd>/mlruns/mlflow.db`` with artifacts under
        ``<cwd>/mlruns/`` (MLflow 3 refuses a plain-file store, so the artifact location is set
        explicitly).
    """

    def __init__(self, tracking_uri: str | None = None):
        self.tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()

    def study_run(self, study_name: str, dataset: str, learner_spec, tags: dict | None = None) -> str:
        """The parent run of one learner-dataset study, created on first use and reused on resume.

        The experiment is named after ``dataset``; the parent run is found by its tag ``automil.study``,
        so calling this twice (a resumed or concurrent study) returns the same run id.
        """
        raise NotImplementedError

    def log_trial(self, parent_run_id: str, frozen_trial, study_name: str) -> str:
        """One nested run for a finished Optuna trial (``optuna.trial.FrozenTrial``); returns its id.

        Idempotent per trial number: a trial that is already logged under this parent is not logged
        again. Reads the user attributes the driver writes (per-fold and mean ACC/BACC, fit and predict
        seconds, ``timed_out``, ``error``, ...) and logs everything in one ``log_batch`` call.
        """
        raise NotImplementedError

    def log_result(self, parent_run_id: str, result: dict, model=None, bags=None, study=None) -> None:
        """The final evaluation of a study on its parent run, which is then marked finished.

        ``result`` is the driver's leaderboard row; ``model`` the fitted best estimator (logged as an
        MLflow pyfunc model predicting bag labels from a list of 2-D arrays); ``bags`` held-out bags
        for the confusion matrix and witness figures; ``study`` the Optuna study for its plots.
        """
        raise NotImplementedError
