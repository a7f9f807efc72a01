"""automil's values as MLflow takes them: text for tags and params within MLflow's limits, metrics only
from finite numbers, JSON for numpy values, times in milliseconds."""

from __future__ import annotations

import json
import math

__all__ = ["MAX_TAG_CHARS", "MAX_PARAM_CHARS", "clip_text", "jsonable", "finite", "millis"]

MAX_TAG_CHARS = 5000  # MLflow allows 8000; an error message longer than this is cut
MAX_PARAM_CHARS = 6000


def clip_text(value, limit: int) -> str:
    """``value`` as text (lists and dicts as JSON), cut to ``limit`` characters with ``...``."""
    text = value if isinstance(value, str) else json.dumps(value, default=jsonable) \
        if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def jsonable(value):
    """JSON for numpy scalars and arrays in a result row."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def finite(value) -> bool:
    """Whether ``value`` is a number MLflow can hold as a metric (not a bool, not NaN or infinite)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def millis(moment) -> int | None:
    """A datetime as MLflow's milliseconds since the epoch."""
    return None if moment is None else int(moment.timestamp() * 1000)
