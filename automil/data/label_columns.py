"""What the columns of a labels table mean for a run: the task and the columns its labels come from, the column
that pools rows (a patient's slides) into one bag, and the bag-level covariates (``--task``, ``--time``,
``--event``, ``--target``, ``--bag-by``, ``--covariates``)."""

from __future__ import annotations

from dataclasses import dataclass, fields

from automil.endpoints import TASKS

__all__ = ["LabelColumns", "LABEL_COLUMN", "table_flags"]

LABEL_COLUMN = "label"  # a classification table's column of bag labels


@dataclass(frozen=True)
class LabelColumns:
    """How a labels table is read.

    Parameters
    ----------
    task : str
        ``classification`` (labels in the ``label`` column), ``survival`` (right-censored: a ``time`` and an
        ``event`` column, event 1 = observed) or ``regression`` (a ``target`` column).
    time, event, target : str, optional
        The columns of a survival or regression table.
    bag_by : str, optional
        Rows with the same value in this column make one bag, named after the value (a patient's slides).
    covariates : tuple of str
        Columns read as bag-level covariates (``"age,stage"`` is split at its commas); numeric columns as
        numbers, other columns one-hot encoded.
    """

    task: str = "classification"
    time: str | None = None
    event: str | None = None
    target: str | None = None
    bag_by: str | None = None
    covariates: tuple[str, ...] = ()

    def __post_init__(self):
        given = self.covariates
        names = given.split(",") if isinstance(given, str) else list(given or ())
        object.__setattr__(self, "covariates", tuple(str(name).strip() for name in names))

    @classmethod
    def from_dict(cls, values: dict) -> LabelColumns:
        """The columns a study file's ``[options.columns]`` table names; an unknown key is an error naming it."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} in columns; known: {', '.join(known)}")
        return cls(**values)

    @property
    def label_columns(self) -> tuple[str, ...]:
        """The columns the task's labels are read from."""
        return {"survival": (self.time, self.event), "regression": (self.target,)}.get(self.task, (LABEL_COLUMN,))

    def flags(self) -> list[str]:
        """The command-line flags that differ from the defaults."""
        default = LabelColumns()
        changed = [f.name for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)]
        return [f"--{name.replace('_', '-')}" for name in changed]

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad flag."""
        if self.task not in TASKS:
            raise ValueError(f"--task must be one of {', '.join(TASKS)}, got {self.task!r}")
        needs = {"survival": ("time", "event"), "regression": ("target",)}.get(self.task, ())
        for name in ("time", "event", "target"):
            if name in needs and not getattr(self, name):
                given = " and ".join(f"--{n} COLUMN" for n in needs)
                raise ValueError(f"--task {self.task} needs {given}: which columns of the labels table hold the "
                                 "labels")
            if name not in needs and getattr(self, name) is not None:
                task = "survival" if name in ("time", "event") else "regression"
                raise ValueError(f"--{name} applies to --task {task}, not to --task {self.task}")
        if self.bag_by is not None and not self.bag_by.strip():
            raise ValueError("--bag-by names no column")
        if any(not name for name in self.covariates):
            raise ValueError(f"--covariates names an empty column: {','.join(self.covariates)!r}")
        flags = [f"--{name}" for name in needs] or [LABEL_COLUMN]
        used = {column.lower(): flag for flag, column in zip(flags, self.label_columns)}
        if self.bag_by:
            used[self.bag_by.lower()] = "--bag-by"
        seen = set()
        for name in self.covariates:
            if name.lower() in seen:
                raise ValueError(f"--covariates names {name!r} twice")
            if name.lower() in used:
                raise ValueError(f"--covariates names {name!r}, the {used[name.lower()]} column: a covariate is "
                                 "read beside the labels, never from them")
            seen.add(name.lower())


def table_flags(labels=None, groups: str | None = None, columns: LabelColumns | None = None) -> list[str]:
    """The flags given that only a labels table takes (``--labels``, ``--groups``, the columns' flags): what a
    dataset with labels of its own refuses, naming them."""
    return [*(["--labels"] if labels is not None else []), *(["--groups"] if groups is not None else []),
            *([] if columns is None else columns.flags())]
