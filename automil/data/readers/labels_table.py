"""A labels table: a CSV naming every bag (or slide) and its label (a class; a time and an event; a target), and
optionally its group (``case_id``: the patient), the column that pools rows into one bag and bag-level
covariates (:class:`~automil.data.label_columns.LabelColumns`). Read by the folder readers, whose bags' names,
labels, groups and covariates come from it."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.data.label_columns import LABEL_COLUMN, LabelColumns
from automil.data.readers.errors import FormatError

__all__ = ["LabelsTable", "read_labels_table", "CASE_COLUMN"]

CASE_COLUMN = "case_id"
_INTEGER = re.compile(r"[+-]?\d+\Z")
# Cells that say a value is missing (compared in lower case); a missing value is an error, never filled in.
_MISSING = frozenset({"", "na", "nan", "n/a", "null", "none"})


@dataclass(frozen=True)
class LabelsTable:
    """The table's rows (``names``, one feature file each, with their ``lines``) and the bags they make: one a
    row, or with ``bag_by`` one per value of that column, a bag's rows consecutive in ``names``.

    ``row_bags`` holds every row's bag; ``labels``, ``groups`` (``None``: no group column and no ``bag_by``),
    ``bag_names`` and ``covariates`` (``None``: none asked for) one entry per bag."""

    path: Path
    names: list[str]
    labels: np.ndarray
    groups: np.ndarray | None
    lines: dict[str, int]
    bag_names: list[str]
    row_bags: np.ndarray
    covariates: np.ndarray | None = None
    covariate_names: tuple[str, ...] = ()
    pooled: bool = False  # the rows are pooled by bag_by (each instance then remembers its row: its slide)

    def bags(self, X, row_offsets, **fields):
        """The bags of the rows' instances (``row_offsets``: each row's first row in ``X``, then the end): a
        pooled bag keeps every instance's row (its slide) in ``instance_slides``; ``fields`` go to ``Bags``."""
        from automil.bags import Bags

        row_offsets = np.asarray(row_offsets, dtype=np.int64)
        first_rows = np.searchsorted(self.row_bags, np.arange(len(self.bag_names)))
        offsets = row_offsets[np.append(first_rows, len(self.names))]
        slides = {}
        if self.pooled:
            sizes = np.diff(row_offsets)
            slides = {"slide_names": self.names,
                      "instance_slides": np.repeat(np.arange(len(self.names), dtype=np.int32), sizes)}
        return Bags(X, offsets, self.labels, names=self.bag_names, groups=self.groups, covariates=self.covariates,
                    covariate_names=self.covariate_names or None, **slides, **fields)


def read_labels_table(path, name_columns: tuple[str, ...] = ("bag",), noun: str = "bag",
                      groups: str | None = None, columns: LabelColumns | None = None) -> LabelsTable:
    """The rows of a labels CSV, in its order (a pooled bag's rows together): the name in the first of
    ``name_columns`` the header has, the labels of ``columns.task`` (default: classification, the ``label``
    column; labels that are all integers become integers), the group in column ``groups`` (``None``:
    ``case_id`` when the table has one, else with ``bag_by`` the bag), and ``columns.covariates``. Errors
    name the file and the line and call a row a ``noun``."""
    columns = LabelColumns() if columns is None else columns
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise FormatError(path, None, "no such labels table") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FormatError(path, None, f"cannot read the labels table: {error}") from None
    reader = csv.reader(io.StringIO(text))
    header = [cell.strip().lower() for cell in next(reader, [])]
    name_column = next((c for c in name_columns if c in header), None)
    if name_column is None or (columns.task == "classification" and LABEL_COLUMN not in header):
        names = name_columns[0] + "".join(f" (or {c})" for c in name_columns[1:])
        raise FormatError(path, 1, f"expected a header naming the columns {names} and "
                                   f"{' and '.join(columns.label_columns)}, got {','.join(header)!r}")
    at = _Columns(path, header, columns, groups)
    rows, lines = [], {}
    for cells in reader:
        if not any(cell.strip() for cell in cells):
            continue
        line = reader.line_num
        if len(cells) != len(header):
            raise FormatError(path, line, f"expected {len(header)} fields as in the header, got {len(cells)}")
        name = cells[header.index(name_column)].strip()
        if not name:
            raise FormatError(path, line, f"an empty {noun} name")
        if name in lines:
            raise FormatError(path, line, f"{noun} {name!r} appears again (first on line {lines[name]})")
        lines[name] = line
        rows.append(at.row(cells, name, line, f"{noun} {name!r}"))
    if not rows:
        raise FormatError(path, None, f"no {noun}s: the labels table has a header but no rows")
    bags = at.pool(rows)
    ordered = [row for bag in bags for row in bag]
    first = [bag[0] for bag in bags]
    groups = [row.group for row in first] if at.group else [row.bag for row in first] if columns.bag_by else None
    return LabelsTable(path, [row.name for row in ordered], at.labels(first, noun),
                       None if groups is None else np.array(groups, dtype=object),
                       {row.name: row.line for row in ordered}, [row.bag for row in first],
                       np.repeat(np.arange(len(bags)), [len(bag) for bag in bags]), *at.covariates(first),
                       pooled=columns.bag_by is not None)


@dataclass(frozen=True)
class _Row:
    """One row as read: its name and line, its label values, its group, the bag it pools into, its covariates."""

    name: str
    line: int
    what: str  # how errors call it: slide 'TCGA-01'
    values: tuple
    group: str | None
    bag: str
    covariates: tuple[str, ...]


class _Columns:
    """Where the columns of ``columns`` (and the group column) are in a table's header, and how a row's cells
    read: every missing or malformed value an error naming its line."""

    def __init__(self, path: Path, header: list[str], columns: LabelColumns, groups: str | None):
        self.path, self.columns = path, columns
        if groups is not None and groups.lower() not in header:
            raise FormatError(path, 1, f"no column {groups!r} for the groups (the header has {','.join(header)})")
        flags = {"survival": ("--time", "--event"), "regression": ("--target",)}.get(columns.task, ("label",))
        self.value_names = tuple(name.lower() for name in columns.label_columns)
        self.values = [self._at(header, name, flag) for name, flag in zip(self.value_names, flags)]
        self.group = groups.lower() if groups is not None else CASE_COLUMN if CASE_COLUMN in header else None
        self.at_group = None if self.group is None else header.index(self.group)
        self.at_bag = None if columns.bag_by is None else self._at(header, columns.bag_by, "--bag-by")
        self.covariate_names = tuple(name.lower() for name in columns.covariates)
        self.at_covariates = [self._at(header, name, "--covariates") for name in columns.covariates]

    def _at(self, header: list[str], column: str, flag: str) -> int:
        if column.lower() not in header:
            raise FormatError(self.path, 1, f"no column {column!r} ({flag}); the header has {','.join(header)}")
        return header.index(column.lower())

    def row(self, cells: list[str], name: str, line: int, what: str) -> _Row:
        cells = [cell.strip() for cell in cells]
        if self.columns.task == "survival":
            values = (self._time(cells, line, what), self._event(cells, line, what))
        elif self.columns.task == "regression":
            values = (self._number(cells[self.values[0]], line, what, "target", self.value_names[0]),)
        elif not cells[self.values[0]]:
            raise FormatError(self.path, line, f"{what} has an empty label")
        else:
            values = (cells[self.values[0]],)
        group = None if self.at_group is None else cells[self.at_group]
        if group == "":
            raise FormatError(self.path, line, f"{what} has an empty {self.group}")
        bag = name if self.at_bag is None else cells[self.at_bag]
        if bag.lower() in _MISSING:
            raise FormatError(self.path, line, f"{what} has no {self.columns.bag_by} to pool it by (--bag-by)")
        for column, at in zip(self.covariate_names, self.at_covariates):
            if cells[at].lower() in _MISSING:
                raise FormatError(self.path, line, f"{what} has no value of the covariate {column} ({cells[at]!r}): "
                                                   "a missing value is never filled in; give one or leave it out")
        return _Row(name, line, what, values, group, bag, tuple(cells[at] for at in self.at_covariates))

    def _number(self, text: str, line: int, what: str, kind: str, column: str) -> float:
        if text.lower() in _MISSING:
            raise FormatError(self.path, line, f"{what} has no {kind} (column {column}: {text!r})")
        value = _float(text)
        if value is None or not np.isfinite(value):
            raise FormatError(self.path, line, f"{what} has a {kind} {text!r} (column {column}) that is not a "
                                               "finite number")
        return value

    def _time(self, cells: list[str], line: int, what: str) -> float:
        time = self._number(cells[self.values[0]], line, what, "time", self.value_names[0])
        if time < 0:
            raise FormatError(self.path, line, f"{what} has a negative time {cells[self.values[0]]} (column "
                                               f"{self.value_names[0]})")
        return time

    def _event(self, cells: list[str], line: int, what: str) -> bool:
        text = cells[self.values[1]]
        event = _float(text)
        if event not in (0.0, 1.0):
            raise FormatError(self.path, line, f"{what} has an event {text!r} (column {self.value_names[1]}) that "
                                               "is not 0 or 1 (1: the event was observed, 0: censored)")
        return event == 1.0

    def pool(self, rows: list[_Row]) -> list[list[_Row]]:
        """The bags the rows make, in the order of their first rows: a row each, or with ``--bag-by`` the rows
        with one value, which must agree on their labels, group and covariates."""
        bags: dict[str, list[_Row]] = {}
        for row in rows:
            bag = bags.setdefault(row.bag, [row])
            if bag[0] is not row:
                self._agree(bag[0], row)
                bag.append(row)
        return list(bags.values())

    def _agree(self, first: _Row, row: _Row) -> None:
        names = [*self.value_names, self.group, *self.covariate_names]
        for name, mine, theirs in zip(names, (*first.values, first.group, *first.covariates),
                                      (*row.values, row.group, *row.covariates)):
            if mine != theirs:
                raise FormatError(self.path, row.line, f"{row.what} and {first.what} (line {first.line}) pool into "
                                                       f"{self.columns.bag_by} {row.bag!r} but their {name} differ "
                                                       f"({theirs!r} and {mine!r}): a bag has one")

    def labels(self, rows: list[_Row], noun: str) -> np.ndarray:
        """The bags' labels (``rows``: a bag's first row each) in the task's array."""
        from automil import endpoints

        if self.columns.task == "survival":
            time, event = (np.array(values) for values in zip(*(row.values for row in rows)))
            if not event.any():
                raise FormatError(self.path, None, f"no events: the {self.value_names[1]} of every {noun} is 0 "
                                                   "(censored); survival needs at least one observed event")
            return endpoints.survival_labels(time, event)
        if self.columns.task == "regression":
            return endpoints.regression_labels(np.array([row.values[0] for row in rows]))
        labels = [row.values[0] for row in rows]
        return np.array(labels).astype(np.int64) if all(_INTEGER.match(v) for v in labels) else np.array(labels)

    def covariates(self, rows: list[_Row]) -> tuple[np.ndarray | None, tuple[str, ...]]:
        """The bags' covariates (``rows``: a bag's first row each), ``(n_bags, k)`` floats, and their names:
        a column of numbers as it is, any other one-hot encoded (``stage=II``), its values in sorted order."""
        if not self.covariate_names:
            return None, ()
        parts, names = [], []
        for j, column in enumerate(self.covariate_names):
            cells = [row.covariates[j] for row in rows]
            numbers = [_float(cell) for cell in cells]
            if all(number is not None for number in numbers):
                bad = next((row for row, number in zip(rows, numbers) if not np.isfinite(number)), None)
                if bad is not None:
                    raise FormatError(self.path, bad.line, f"{bad.what} has {column} {bad.covariates[j]!r}: not a "
                                                           "finite number")
                parts.append(np.array(numbers, dtype=np.float64)[:, None])
                names.append(column)
            else:
                levels = sorted(set(cells))
                parts.append((np.array(cells, dtype=object)[:, None] == np.array(levels, dtype=object)).astype(
                    np.float64))
                names += [f"{column}={level}" for level in levels]
        return np.hstack(parts), tuple(names)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
