"""A fitted model applied to bags: one record per bag (label, class scores, witness), and the figures
when the bags carry labels. What ``automil predict`` prints or writes."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from automil.bags import Bags
from automil.learner import BagClassifier

__all__ = ["BagPrediction", "predict_bags", "scores_of", "bag_scores", "labels_and_scores", "task_predictions",
           "model_task", "one_column_if_binary"]


@dataclass(frozen=True)
class BagPrediction:
    """The model's answer for one bag.

    ``scores`` maps each class (as text) to the model's probability or decision score, ``None`` when
    the model gives neither; ``witness`` is the position inside the bag of the instance that decides it,
    ``None`` for learners without one; ``truth`` is the bag's label when the data has labels.
    ``prediction_set`` is the bag's conformal prediction set (classes as text) when one was asked for,
    and ``abstain`` whether it holds more than one class (no decision at that coverage). A survival model gives
    a ``risk`` instead of a label (higher: an earlier event; ``truth`` then holds ``event`` and ``time``), a
    regression model a ``value``.
    """

    bag: str
    label: object
    scores: dict[str, float] | None = None
    witness: int | None = None
    truth: object = None
    prediction_set: list[str] | None = None
    abstain: bool | None = None
    risk: float | None = None
    value: float | None = None

    def to_dict(self) -> dict:
        """The record as JSON-ready data: a label's keys, or a risk's or a value's (with a witness, if any)."""
        values = asdict(self)
        if self.label is not None:
            return {key: _plain(value) for key, value in values.items() if key not in ("risk", "value")}
        return {key: _plain(value) for key, value in values.items() if value is not None or key == "truth"}


def predict_bags(model, bags: Bags, coverage: float | None = None, mondrian: bool = False) -> list[BagPrediction]:
    """Predict every bag with ``model`` (a fitted estimator on bags, e.g. the logged
    ``Standardized(learner)``), checking first that the bags have the features it was trained on; with a
    ``coverage``, every bag's conformal prediction set too (class-conditional when ``mondrian``), and then
    the held-apart model answers alone (the model's ``predict_conformal``): label, scores, set and witness."""
    if coverage is not None and not hasattr(model, "predict_conformal"):
        raise ValueError("this model has no calibration (it was logged before automil calibrated its models), "
                         "so it gives no prediction sets; a model from a new automil tune has one")
    expected = getattr(model, "n_features_in_", None)
    if expected is not None and bags.n_features != expected:
        raise ValueError(f"{bags.source or 'the bags'} have {bags.n_features} features per instance; the model "
                         f"was trained on {expected}")
    if coverage is None:
        answering, labels, scores, sets = model, np.asarray(model.predict(bags)), scores_of(model, bags), None
    else:
        answer = model.predict_conformal(bags, coverage, mondrian)
        answering, labels, scores, sets = model.held_apart, answer.labels, answer.proba, answer.sets
    witness = np.asarray(answering.witness(bags)) if hasattr(answering, "witness") else None
    task = model_task(model)
    if task != "classification":  # a risk or a value per bag
        truth = [None] * bags.n_bags if bags.y is None else [_truth(t) for t in bags.y]
        return [BagPrediction(bag=bags.bag_name(i), label=None, witness=None if witness is None else int(witness[i]),
                              truth=truth[i], **{"risk" if task == "survival" else "value": float(labels[i])})
                for i in range(bags.n_bags)]
    classes = [str(c) for c in getattr(model, "classes_", [])]
    out = []
    for i in range(bags.n_bags):
        row = None if scores is None else dict(zip(classes, map(float, scores[i]), strict=True))
        chosen = None if sets is None else [c for c, inside in zip(classes, sets[i], strict=True) if inside]
        out.append(BagPrediction(bag=bags.bag_name(i), label=labels[i], scores=row,
                                 witness=None if witness is None else int(witness[i]),
                                 truth=None if bags.y is None else bags.y[i], prediction_set=chosen,
                                 abstain=None if chosen is None else len(chosen) > 1))
    return out


def model_task(model) -> str:
    """The task a fitted model serves, as its learner's base says it (``Standardized`` keeps the learner as
    ``estimator_``); classification for any other estimator."""
    return getattr(getattr(model, "estimator_", model), "task", "classification")


def _truth(label):
    """A bag's known outcome as JSON holds it: ``{"event", "time"}`` for survival, the number for regression."""
    if label.dtype.names == ("event", "time"):
        return {"event": bool(label["event"]), "time": float(label["time"])}
    return float(label["target"])


def task_predictions(model, bags, y_train, y_test) -> tuple[np.ndarray, np.ndarray]:
    """A fitted model's predictions of test ``bags`` and their scores, by the task of its labels (``y_train``,
    ``y_test``: the training and test bags' labels): a class and
    :func:`labels_and_scores`'s scores; a risk and the survival probabilities at
    :func:`~automil.endpoints.evaluation_times` of the two folds (what the integrated Brier score scores); a
    value, and the value as its one column of scores."""
    from automil.endpoints import evaluation_times, task_of

    task = task_of(y_train)
    if task == "classification":
        return labels_and_scores(model, bags)
    values = np.asarray(model.predict(bags), dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"predicted {'risks' if task == 'survival' else 'values'} that are not finite numbers")
    if task == "regression":
        return values, values[:, None]
    return values, np.asarray(model.predict_survival(bags, evaluation_times(y_train, y_test)), dtype=np.float64)


def scores_of(model, bags: Bags, methods=("predict_proba", "decision_function")) -> np.ndarray | None:
    """The first of ``methods`` the model has (by default class probabilities, else decision scores), shape
    ``(n_bags, n_classes)``; ``None`` without any. A binary decision function's single column becomes two
    (negative class, positive class)."""
    for method in methods:
        if hasattr(model, method):
            values = np.asarray(getattr(model, method)(bags), dtype=np.float64)
            if values.ndim == 1:
                values = np.column_stack([-values, values])
            return values
    return None


def bag_scores(model, bags) -> np.ndarray:
    """A fitted model's scores of ``bags``: ``decision_function``, else ``predict_proba``, else the one-hot
    labels; binary -> shape ``(n_bags,)`` (the positive class's column), multi-class ``(n_bags, K)``. What
    the tuning keeps out of fold, ensembles combine and calibration maps take."""
    scores = scores_of(model, bags, methods=("decision_function", "predict_proba"))
    if scores is None:
        labels = np.asarray(model.predict(bags))
        scores = (labels[:, None] == np.asarray(model.classes_)[None, :]).astype(np.float64)
    return one_column_if_binary(scores)


def labels_and_scores(model, bags) -> tuple[np.ndarray, np.ndarray]:
    """``model.predict(bags)`` and :func:`bag_scores`; one pass over the bags for a ``Standardized``
    :class:`~automil.BagClassifier` that keeps its ``predict``, the arg-max of its decision scores."""
    if getattr(type(getattr(model, "estimator_", None)), "predict", None) is BagClassifier.predict:
        scores = np.asarray(model.decision_function(bags), dtype=np.float64)
        return model.classes_[np.argmax(scores, axis=1)], one_column_if_binary(scores)
    return np.asarray(model.predict(bags)), bag_scores(model, bags)


def one_column_if_binary(values: np.ndarray) -> np.ndarray:
    """The positive class's column of two-class scores; other scores as they are."""
    return values[:, 1] if values.ndim == 2 and values.shape[1] == 2 else values


def _plain(value):
    """JSON-ready: numpy scalars become Python numbers or strings."""
    if isinstance(value, np.generic):
        return value.item()
    return value
