"""A labels table: a CSV naming every bag (or slide), its label and, optionally, its group (``case_id``: the
patient). Read by the folder readers, whose bags' names, labels and groups come from it."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from automil.data.readers.errors import FormatError

__all__ = ["LabelsTable", "read_labels_table", "CASE_COLUMN"]

CASE_COLUMN = "case_id"
_INTEGER = re.compile(r"[+-]?\d+\Z")


@dataclass(frozen=True)
class LabelsTable:
    """Every bag's name, label and group (``groups`` ``None``: no group column), and its line."""

    path: Path
    names: list[str]
    labels: np.ndarray
    groups: np.ndarray | None
    lines: dict[str, int]


def read_labels_table(path, name_columns: tuple[str, ...] = ("bag",), noun: str = "bag",
                      groups: str | None = None) -> LabelsTable:
    """The rows of a labels CSV, in its order: the name in the first of ``name_columns`` the header has, the
    ``label``, and the group in column ``groups`` (``None``: ``case_id`` when the table has one). Labels that
    are all integers become integers; errors call a row a ``noun``."""
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
    if name_column is None or "label" not in header:
        names = name_columns[0] + "".join(f" (or {c})" for c in name_columns[1:])
        raise FormatError(path, 1, f"expected a header naming the columns {names} and label, got "
                                   f"{','.join(header)!r}")
    if groups is not None and groups.lower() not in header:
        raise FormatError(path, 1, f"no column {groups!r} for the groups (the header has {','.join(header)})")
    group_column = groups.lower() if groups is not None else CASE_COLUMN if CASE_COLUMN in header else None
    at_name, at_label = header.index(name_column), header.index("label")
    at_group = None if group_column is None else header.index(group_column)
    names, labels, group_of, lines = [], [], [], {}
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        line = reader.line_num
        if len(row) != len(header):
            raise FormatError(path, line, f"expected {len(header)} fields as in the header, got {len(row)}")
        name, label = row[at_name].strip(), row[at_label].strip()
        if not name:
            raise FormatError(path, line, f"an empty {noun} name")
        if not label:
            raise FormatError(path, line, f"{noun} {name!r} has an empty label")
        if name in lines:
            raise FormatError(path, line, f"{noun} {name!r} appears again (first on line {lines[name]})")
        if at_group is not None and not row[at_group].strip():
            raise FormatError(path, line, f"{noun} {name!r} has an empty {group_column}")
        names.append(name)
        labels.append(label)
        group_of.append(None if at_group is None else row[at_group].strip())
        lines[name] = line
    if not names:
        raise FormatError(path, None, f"no {noun}s: the labels table has a header but no rows")
    y = np.array(labels).astype(np.int64) if all(_INTEGER.match(v) for v in labels) else np.array(labels)
    return LabelsTable(path, names, y, None if at_group is None else np.array(group_of, dtype=object), lines)


