"""The plain records the driver hands tracking and the command line prints: trials and studies
(:mod:`automil.records.trials`), a learner's result row and its status (:mod:`automil.records.results`). No
Optuna and no MLflow here, so every layer above the core can share them."""

from automil.records.calibration import DEFAULT_LEVEL, LEVELS, CalibrationFigures, ReliabilityBin
from automil.records.results import (
    OTHER_METRICS,
    PROCEDURE,
    Costs,
    Figure,
    Headline,
    InstanceFigures,
    LearnerResult,
    Member,
    ModelRecord,
    NestedFigure,
    OuterSplit,
    ParetoPoint,
    RepeatedFigure,
    Status,
    TrackingBacklog,
    TrialCounts,
    Tuning,
    metric_task,
)
from automil.records.trials import TIMED_OUT, StudyRecord, TrialAttr, TrialRecord, TrialState

__all__ = ["Status", "TrialState", "TrialAttr", "TrialRecord", "StudyRecord", "LearnerResult",
           "TrialCounts", "Tuning", "Figure", "NestedFigure", "RepeatedFigure", "Headline", "Costs", "ModelRecord",
           "InstanceFigures", "OuterSplit", "Member", "ParetoPoint", "TrackingBacklog", "TIMED_OUT", "PROCEDURE",
           "CalibrationFigures", "ReliabilityBin", "LEVELS", "DEFAULT_LEVEL", "metric_task",
           "OTHER_METRICS"]
