"""A study's final result on its parent run: metrics, tags, figures, ``result.json`` and the model."""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.records import LearnerResult, StudyRecord
from automil.track.store.mlflow_store import INSERTED_BY_ANOTHER, Store, global_tracking_uri, quiet_mlflow, retry
from automil.track.store.names import (
    BEST_PARAM_PREFIX,
    DATASET_TAG,
    LEARNER_TAG,
    MODEL_NAME,
    MODEL_URI_TAG,
    RESULT_TAG_KEYS,
    automil_tag,
    metric_name,
)
from automil.track.store.values import MAX_TAG_CHARS, clip_text, finite, jsonable
from automil.track.writing.inputs import dataset_input
from automil.track.writing.model import BagModel
from automil.track.writing.runs import StudyRuns

__all__ = ["ResultLogging"]

# Instances of each of the two bags of a logged model's input example: the format, not a slide of 10,000
# patches written out as JSON.
EXAMPLE_INSTANCES = 3


@dataclass
class ResultLogging:
    """Logs a study's final result and model into ``store``, on the study's parent run in ``runs``."""

    store: Store
    runs: StudyRuns

    def log(self, parent_run_id: str, result: LearnerResult, model=None, bags=None,
            study: StudyRecord | None = None) -> str | None:
        """The final evaluation of a study on its parent run, which is then marked finished; returns the
        logged model's URI when ``model`` is given.

        Parameters
        ----------
        parent_run_id : str
            From :meth:`automil.track.Tracker.study_run`.
        result : LearnerResult
            The driver's leaderboard row, logged as ``result.to_dict()``. Every finite number becomes a
            metric under its key, variants renamed by :func:`automil.track.store.names.metric_name`
            (``nested_accuracy`` -> ``accuracy_nested``; a dict of numbers ``{"k": {"a": 1}}`` becomes
            ``k_a``, a list of numbers one metric with a step per entry), every string a tag ``automil.<key>``;
            ``best_params`` become tags ``best.<name>`` (tags, not params: MLflow params cannot change,
            and a resumed study can find a new best).
            The headline figures are expected under ``accuracy``, ``balanced_accuracy`` and their
            ``*_std``; ``confusion_matrix`` (rows true, columns predicted, out-of-fold counts) with
            ``classes``, when present, is drawn instead of predicting ``bags``; ``reliability`` (with
            ``raw_reliability``), when present, is drawn as ``figures/reliability.png``; ``held_out_risk`` (a
            survival learner's held-out bags with their risk and cut) as ``figures/kaplan_meier.png``.
            ``pareto_front`` (several objectives) is logged as its size ``pareto_front_size``, its points in
            ``result.json``.
            Missing keys are skipped.
        model : estimator, optional
            The fitted best model (``automil.evaluation.standardized.Standardized``), logged as the MLflow pyfunc
            model ``model`` (see :class:`BagModel` for the input format).
        bags : Bags, optional
            Labelled bags (the driver gives the dataset): the confusion matrix of ``model`` on them when
            ``result`` has none, two of them as the model's input example, and, for a witness learner on
            image-like bags, the witness and coefficient figures. They are also logged as the run's
            MLflow dataset input (the runs table's Dataset column).
        study : StudyRecord, optional
            The study's trials and parameter importances: the optimization history and importance figures.
        """
        result = result.to_dict()
        metrics, tags, n_trials = _result_entries(result)
        best = result.get("best_trial")
        if best is not None:
            tags[automil_tag("best_trial")] = str(best)
            run_id = self.runs.trial_run_id(parent_run_id, int(best), fresh=True)
            if run_id is not None:
                tags[automil_tag("best_trial_run")] = run_id
        # A resumed study logs its result again: step = trials so far keeps the history readable, and
        # MLflow shows the value of the highest step.
        now = int(time.time() * 1000)
        self.store.log_batch(parent_run_id, tags=tags,
                             metrics=[(key, value, now, n_trials if index is None else index)
                                      for key, value, index in metrics])
        if bags is not None:  # the Dataset column of the runs table
            dataset = self.runs.parent(parent_run_id).data.tags.get(DATASET_TAG) or result.get("dataset") or ""
            retry(self.store.client.log_inputs, parent_run_id, datasets=[dataset_input(bags, dataset)],
                  transient=INSERTED_BY_ANOTHER)
        status, model_uri = "FAILED", None
        try:
            with tempfile.TemporaryDirectory(prefix="automil-figures-") as tmp:
                failures = _write_figures(Path(tmp), result, model, bags, study)
                (Path(tmp) / "result.json").write_text(json.dumps(result, indent=2, default=jsonable))
                retry(self.store.client.log_artifacts, parent_run_id, tmp)
            if failures:
                self.store.log_batch(parent_run_id,
                                     tags={automil_tag("figure_errors"): clip_text(failures, MAX_TAG_CHARS)})
            if model is not None:
                model_uri = self.log_model(parent_run_id, model, bags)
            status = "FINISHED"
        finally:  # a parent never stays "running" after its result; FAILED if the model could not be logged
            self.store.terminate(parent_run_id, status)
        return model_uri

    def log_model(self, parent_run_id: str, model, bags=None) -> str:
        """Log ``model`` as the pyfunc model ``model`` of the run; returns its ``models:/`` URI (also
        in the run's tag ``automil.model_uri``; ``runs:/<run id>/model`` loads it too)."""
        import mlflow
        from mlflow.models import Model

        parent = self.runs.parent(parent_run_id)
        logged = retry(self.store.client.create_logged_model, parent.info.experiment_id, name=MODEL_NAME,
                       source_run_id=parent_run_id,
                       tags={key: parent.data.tags.get(key, "") for key in (LEARNER_TAG, DATASET_TAG)})
        example = None
        if bags is not None and bags.n_bags and not bags.is_sparse:
            example = [bags[i][:EXAMPLE_INSTANCES].tolist() for i in range(min(2, bags.n_bags))]
        with quiet_mlflow(), global_tracking_uri(self.store.tracking_uri):  # Model.log reads the global URI
            info = Model.log(artifact_path=None, name=MODEL_NAME, flavor=mlflow.pyfunc,
                             python_model=BagModel(model), run_id=parent_run_id, model_id=logged.model_id,
                             input_example=example, pip_requirements=_requirements(model),
                             metadata={"classes": [jsonable(c) for c in getattr(model, "classes_", [])],
                                       "input": BagModel.INPUT_FORMAT})
        self.store.log_batch(parent_run_id, tags={MODEL_URI_TAG: info.model_uri})
        return info.model_uri


# Row keys only ``result.json`` holds (and the figures draw): neither metrics nor tags.
_IN_RESULT_JSON = ("best_params", "confusion_matrix", "classes", "reliability", "raw_reliability", "class_coverage",
                   "class_bags", "held_out_risk")


def _result_entries(result: dict) -> tuple[list, dict, int]:
    """Metrics ``(key, value, step or None)``, tags and the trial count of a leaderboard row."""
    metrics, tags = [], {}
    for key, value in result.items():
        if key in _IN_RESULT_JSON or value is None:
            continue
        if key == "pareto_front":  # the points are in result.json; the dataset's scatter shows them
            metrics.append(("pareto_front_size", float(len(value)), None))
            continue
        name = metric_name(key, result.get("metric"))
        if finite(value) and key not in RESULT_TAG_KEYS:
            metrics.append((name, float(value), None))
        elif isinstance(value, dict) and value and all(finite(v) for v in value.values()):
            metrics.extend((f"{name}_{sub}", float(v), None) for sub, v in value.items())
        elif isinstance(value, (list, tuple)) and value and all(finite(v) for v in value):
            metrics.extend((name, float(v), index) for index, v in enumerate(value))
        else:
            tags[automil_tag(key)] = clip_text(value, MAX_TAG_CHARS)
    best_params = result.get("best_params") or {}
    tags.update({f"{BEST_PARAM_PREFIX}{name}": clip_text(value, MAX_TAG_CHARS) for name, value in best_params.items()})
    tags[automil_tag("best_params")] = clip_text(best_params, MAX_TAG_CHARS)
    n_trials = int(result["trials"]) if finite(result.get("trials")) else 0
    return metrics, tags, n_trials


def _write_figures(folder: Path, result, model, bags, study: StudyRecord | None) -> dict:
    """The PNGs of one study into ``folder/figures``; each one that does not apply is skipped. A figure
    whose drawing raises (a third-party learner's ``witness``, say) is left out and its error returned
    as ``{name: message}``, so that a picture never costs the result."""
    out = folder / "figures"
    out.mkdir()
    failures = {}
    for name, draw in _figures(result, model, bags, study):
        try:
            draw().savefig(out / f"{name}.png", dpi=100)
        except Exception as error:  # noqa: BLE001 - reported in a tag of the run
            failures[name] = f"{type(error).__name__}: {error}"
    return failures


def _figures(result, model, bags, study: StudyRecord | None):
    """``(name, draw)`` pairs of the figures that apply; ``draw()`` returns the Figure."""
    from automil.track.writing import figures

    classes = result.get("classes") if result.get("classes") is not None else getattr(model, "classes_", None)
    if result.get("confusion_matrix") is not None and classes is not None:
        yield "confusion_matrix", lambda: figures.confusion_matrix_figure(
            result["confusion_matrix"], classes, "Confusion matrix\n(out-of-fold predictions)")
    elif model is not None and bags is not None and bags.y is not None and hasattr(model, "classes_"):
        from sklearn.metrics import confusion_matrix

        yield "confusion_matrix", lambda: figures.confusion_matrix_figure(
            confusion_matrix(bags.y, model.predict(bags), labels=model.classes_), model.classes_,
            f"Confusion matrix of the final\nmodel on {bags.n_bags} bags")
    if result.get("held_out_risk") and bags is not None:  # a survival learner's held-out patients
        bag, risk, cut = np.asarray(result["held_out_risk"], dtype=np.float64).T
        outcome = bags.y[bag.astype(np.int64)]
        yield "kaplan_meier", lambda: figures.kaplan_meier_figure(
            outcome["time"], outcome["event"], risk, cut,
            f"{result.get('learner')}: {len(bag)} held-out patients\n(cut: their training folds' median risk)")
    if result.get("reliability"):
        yield "reliability", lambda: figures.reliability_figure(
            result["reliability"], result.get("raw_reliability") or [],
            f"Reliability on {result['held_out_bags']} held-out bags\n(ECE {result['ece']:.3f}; raw scores "
            f"{result['raw_ece']:.3f})")
    if study is not None:
        yield "optimization_history", lambda: figures.optimization_history_figure(
            [(t.number, t.outcome, t.value) for t in study.trials], study.direction,
            str(result.get("metric", "objective")))
        yield "param_importances", lambda: figures.param_importances_figure(study.importances,
                                                                            study.importances_note)
    shape = figures.image_shape(bags) if bags is not None else None
    if model is None or shape is None:
        return
    inner = getattr(model, "estimator_", model)
    if getattr(inner, "_witness", None) is not None:
        yield "witness", lambda: figures.witness_figure(bags, model.witness(bags), model.predict(bags), shape)
    coef = _coefficients(model)
    if coef is not None and coef.shape[1] == shape[0] * shape[1]:
        labels = model.classes_ if len(coef) == len(model.classes_) else [model.classes_[-1]]
        yield "coefficients", lambda: figures.coefficients_figure(coef, shape, labels)


def _coefficients(model):
    """The learner's per-class weights, shape ``(n_classes or 1, n_features)``, or ``None`` without
    ``coef_``. They act on standardized features, so every pixel is on the same scale."""
    import numpy as np

    inner = getattr(model, "estimator_", model)
    coef = getattr(inner, "coef_", None)
    d = getattr(model, "n_features_in_", None)
    if coef is None or d is None:
        return None
    coef = np.atleast_2d(np.asarray(coef, dtype=float))
    return coef.T if coef.shape[0] == d and coef.shape[1] != d else coef  # automil's (n_features, K)


def _requirements(model) -> list[str]:
    """Pinned requirements of the pyfunc model: automil, its numerical stack, and the distributions that
    provide the learners' plugins (of an ensemble's members too) when that is not automil itself (found
    through their entry points)."""
    from importlib import metadata

    names = ["automil", "mlflow", "numpy", "scipy", "scikit-learn", "numba", "cloudpickle"]
    tops = {type(getattr(m, "estimator_", m)).__module__.split(".")[0] for m in getattr(model, "members", [model])}
    for entry_point in metadata.entry_points(group="automil"):
        if entry_point.value.split(".")[0].split(":")[0] in tops and entry_point.dist is not None:
            if entry_point.dist.name not in names:
                names.append(entry_point.dist.name)
    out = []
    for name in names:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return out
