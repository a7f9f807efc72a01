"""How far a row's probabilities and prediction sets can be trusted, measured on bags its calibration never
saw (the outer folds of nested CV, or the held-out fold): calibration error, Brier score and log-loss beside
those of the raw scores, and the empirical coverage of the conformal sets where they were made
(``docs/probabilities.md``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["LEVELS", "DEFAULT_LEVEL", "BIN_WIDTH", "level_key", "ReliabilityBin", "CalibrationFigures"]

# The coverages every row's sets are measured at, and the one the leaderboard's abstention rate is at
# (``automil predict --coverage`` takes any).
LEVELS = (0.8, 0.9, 0.95)
DEFAULT_LEVEL = 0.9
BIN_WIDTH = 0.1  # ten equal-width bins of the predicted class's probability (the common choice for the ECE)


def level_key(level: float) -> str:
    """A coverage as the key of the figures' dicts (JSON keys are text): ``"0.9"``."""
    return f"{level:g}"


@dataclass(frozen=True)
class ReliabilityBin:
    """The held-out bags whose predicted class has a probability in ``[low, low + BIN_WIDTH)``: how many
    (``bags``), their mean probability of the predicted class (``confidence``) and the share of them whose
    predicted class is the true one (``accuracy``); calibrated means the two agree."""

    low: float
    bags: int
    confidence: float
    accuracy: float


def _bins(items) -> list[ReliabilityBin]:
    return [b if isinstance(b, ReliabilityBin) else ReliabilityBin(**b) for b in items or ()]


@dataclass(frozen=True)
class CalibrationFigures:
    """A row's calibration on held-out bags: of one outer split, or pooled over them (every held-out bag
    once).

    ``held_out_bags`` were scored; ``class_bags`` the held-out bags of each class (the row's ``classes``
    order).
    ``ece``, ``brier`` and ``log_loss`` are those of the calibrated probabilities, ``raw_*`` those of the
    raw scores mapped to [0, 1] (decision scores through the logistic function, or softmax; probabilities
    as they are). ECE: top-label, over bins of width :data:`BIN_WIDTH` (``reliability``, ``raw_reliability``),
    the bag-weighted mean gap between accuracy and confidence. Brier: scikit-learn's (halved for two
    classes, the classic score; summed over the classes for more).

    Where a held-apart model made prediction sets (the rows and splits ``docs/probabilities.md`` names):
    ``calibration_bags``, the n of the guarantee (the bags, or patients with groups, the held-apart model was
    fitted without and whose scores the conformal quantile came from; the mean over the splits when pooled),
    and per coverage level (keys ``"0.8"``, ``"0.9"``, ``"0.95"``) the sets' ``coverage`` (share of held-out
    bags whose set holds the true class), mean ``set_size``, ``abstention`` (share of sets with more than
    one class) and ``class_coverage`` (the coverage among each class's bags; ``None`` for a class without
    held-out bags). Without sets, ``calibration_bags`` is ``None`` and the dicts are empty.
    """

    held_out_bags: int
    class_bags: list[int]
    ece: float
    brier: float
    log_loss: float
    raw_ece: float
    raw_brier: float
    raw_log_loss: float
    calibration_bags: float | None = None
    coverage: dict[str, float] = field(default_factory=dict)
    set_size: dict[str, float] = field(default_factory=dict)
    abstention: dict[str, float] = field(default_factory=dict)
    class_coverage: dict[str, list[float | None]] = field(default_factory=dict)
    reliability: list[ReliabilityBin] = field(default_factory=list)
    raw_reliability: list[ReliabilityBin] = field(default_factory=list)

    def __post_init__(self):
        object.__setattr__(self, "reliability", _bins(self.reliability))
        object.__setattr__(self, "raw_reliability", _bins(self.raw_reliability))

    def standard_error(self, level: float) -> float:
        """The binomial standard error of a coverage of ``level`` measured on the held-out bags: how far the
        measured coverage strays from the true one by the draw of those bags alone."""
        return math.sqrt(level * (1 - level) / self.held_out_bags) if self.held_out_bags else math.nan

    def band(self, level: float) -> tuple[float, float]:
        """Where the guarantee puts the expected coverage at ``level``: from ``level`` to ``level + 1 / (n + 1)``
        (n the calibration bags, or patients; figures with sets only)."""
        return level, level + 1 / (self.calibration_bags + 1)

    def worst_class(self, level: float) -> float | None:
        """The lowest coverage among the classes at ``level``."""
        return min((c for c in self.class_coverage.get(level_key(level), ()) if c is not None), default=None)
