"""Store URLs fit for a terminal or a log: the Optuna storage and the MLflow tracking store alike."""

from __future__ import annotations

__all__ = ["shown_storage"]


def shown_storage(storage: str) -> str:
    """``storage`` fit for a terminal or a log: the password of a database URL replaced by ``***``."""
    if "://" not in storage:
        return storage
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(storage).render_as_string(hide_password=True)
    except ArgumentError:
        return storage.split("://", 1)[0] + "://..."
