"""Readers for the MIL text formats of the benchmark sets (plain or gzip), with detection from the content.

The formats are described in ``docs/data.md`` (and the benchmark folder's README). Every reader splits the
file into lines once, cuts the few leading fields per line with C-level ``str`` methods, and parses the
numbers of all lines in one ``numpy.fromstring`` call; only when that fails does a slow per-token pass run,
to name the line and field that is wrong.
"""

from __future__ import annotations

import gzip
import re
import warnings
import zlib
from functools import partial
from itertools import repeat
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from automil.bags import Bags
from automil.data.readers.errors import FormatError

__all__ = ["FORMATS", "FORMAT_ALIASES", "read_text", "detect_text"]

FORMATS = {
    "mill": "A: MILL text, comma-separated: instance name, bag name, label, then the dense features",
    "mill-sparse": "A-sparse: MILL text with 1-based index:value features (read into scipy CSR)",
    "mil-csv": "B: CSV of the PyPI package mil: bag label, bag id, then the dense features",
    "spaced": "C: space-separated, % comment lines: bag id, bag label, instance id, instance label, features",
    "mcilboost": "D: MCILBoost: header '<n_instances> <n_features>', then 'instance:bag:label' and "
                 "index:value tokens",
}
# The letters used by the benchmark folder's README.
FORMAT_ALIASES = {"a": "mill", "a-sparse": "mill-sparse", "b": "mil-csv", "c": "spaced", "d": "mcilboost"}

GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_LINES = 20
_INTEGER = re.compile(r"[+-]?\d+\Z")
_MCILBOOST_HEAD = re.compile(r"\d+:\d+:[+-]?\d+\Z")


def read_text(path, format: str | None = None) -> Bags:
    """Read a text file of bags (plain or gzip-compressed) in ``format``, a key of ``FORMATS``, or in the
    format its first lines show when ``format`` is None. Raises :class:`FormatError` naming the line."""
    text = _Text.read(Path(path))
    return _READERS[format or _detect(text)](text)


def detect_text(path) -> str:
    """The key of ``FORMATS`` that the first lines of the text file at ``path`` show."""
    return _detect(_Text.read(Path(path)))


# ---- text and lines --------------------------------------------------------------------------------------
class _Text:
    """The lines of one file, with the 1-based file line number of each kept line for error messages."""

    def __init__(self, path: Path, lines: list[str], numbers: np.ndarray, ends_with_newline: bool):
        self.path, self.lines, self.numbers, self.ends_with_newline = path, lines, numbers, ends_with_newline

    @classmethod
    def read(cls, path: Path) -> _Text:
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise FormatError(path, None, f"cannot read the file: {error.strerror or error}") from None
        if raw[:2] == GZIP_MAGIC:
            try:
                raw = gzip.decompress(raw)
            except (EOFError, OSError, zlib.error) as error:
                raise FormatError(path, None, f"damaged gzip data ({error}): the file is truncated or "
                                              "corrupt; get a fresh copy") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw.count(b"\n", 0, error.start) + 1
            raise FormatError(path, line, f"garbled bytes: byte 0x{raw[error.start]:02x} is not UTF-8 text "
                                          "(a binary or damaged file?)") from None
        if "\x00" in text:
            raise FormatError(path, text.count("\n", 0, text.index("\x00")) + 1,
                              "garbled bytes: a NUL byte in a text file (a binary or damaged file?)")
        text = text.removeprefix("\ufeff").replace("\r\n", "\n")
        ends_with_newline = text.endswith("\n")
        lines = text.split("\n")
        if ends_with_newline:
            lines.pop()
        numbers = np.arange(1, len(lines) + 1)
        keep = np.fromiter(map(len, lines), np.int64, len(lines)) > 0
        if not keep.all():
            lines, numbers = _take(lines, keep), numbers[keep]
        return cls(path, lines, numbers, ends_with_newline)

    def __len__(self) -> int:
        return len(self.lines)

    def error(self, i: int | None, what: str) -> FormatError:
        """An error at kept line ``i`` (None: the whole file)."""
        return FormatError(self.path, None if i is None else int(self.numbers[i]), what)

    def drop(self, mask: np.ndarray) -> _Text:
        keep = ~mask
        return _Text(self.path, _take(self.lines, keep), self.numbers[keep], self.ends_with_newline)

    def require_lines(self):
        if not self.lines:
            raise self.error(None, "no instances: the file holds no data lines")

    def split_leading(self, sep: str | None, n_leading: int, what: str) -> tuple[list, ...]:
        """Cut ``n_leading`` fields off every line; returns one column per field plus the rest of the line
        (an empty string where nothing follows)."""
        parts = list(map(str.split, self.lines, repeat(sep), repeat(n_leading)))
        counts = np.fromiter(map(len, parts), np.int64, len(parts))
        short = np.flatnonzero(counts < n_leading)
        if short.size:
            i = int(short[0])
            raise self.wrong_count(i, f"expected at least {n_leading} fields ({what}), got {counts[i]}")
        if (counts == n_leading).any():
            parts = [p if len(p) > n_leading else [*p, ""] for p in parts]
        return tuple(zip(*parts, strict=True))

    def wrong_count(self, i: int, what: str) -> FormatError:
        if i == len(self.lines) - 1 and not self.ends_with_newline:
            return self.error(i, f"truncated last line: {what} (is the file cut off?)")
        return self.error(i, f"wrong field count: {what}")


def _take(items: list, mask: np.ndarray) -> list:
    return [items[i] for i in np.flatnonzero(mask)]


# ---- numbers ------------------------------------------------------------------------------------------
def _numbers(text: _Text, columns, sep: str | None, first_field: int, expected: int,
             pairs: bool = False) -> np.ndarray:
    """Parse the ``sep``-separated numbers of every line's ``columns`` string into one flat float64 array
    of ``expected`` values; field numbers in messages start at ``first_field``.

    With ``pairs``, tokens are ``index:value`` (two numbers each) and a line may hold none.
    """
    joined = (sep or " ").join(filter(None, columns) if pairs else columns)
    if pairs:
        joined = joined.replace(":", sep or " ")
    values = None
    if joined.strip():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                values = np.fromstring(joined, dtype=np.float64, sep=sep or " ")
            except (ValueError, DeprecationWarning):
                values = None
    elif expected == 0:
        return np.empty(0)
    if values is None or values.size != expected:
        _locate_bad_number(text, columns, sep, first_field, pairs)
        raise text.error(None, f"could not parse the numbers ({0 if values is None else values.size} read, "
                               f"{expected} expected)")
    return values


def _locate_bad_number(text: _Text, columns, sep: str | None, first_field: int, pairs: bool):
    """Raise at the first token that is not a number (the slow path, taken only for broken files)."""
    for i, column in enumerate(columns):
        if pairs and not column:
            continue
        for j, token in enumerate(column.split(sep) or [""]):
            for part in token.split(":") if pairs else (token,):
                if not _is_number(part):
                    what = "an empty field" if not part.strip() else f"non-numeric value {part!r}"
                    raise text.error(i, f"field {first_field + j}: {what}")


def _is_number(token: str) -> bool:
    """What ``numpy.fromstring`` parses: an ASCII float literal (Python's ``float`` also takes digit
    separators and non-ASCII digits)."""
    try:
        float(token)
    except ValueError:
        return False
    return token.isascii() and "_" not in token


def _finite(text: _Text, values: np.ndarray, rows: np.ndarray, fields: np.ndarray):
    """Reject NaN and inf, naming the line and field (``rows``/``fields`` map each value to its place)."""
    bad = ~np.isfinite(values)
    if bad.any():
        k = int(np.argmax(bad))
        raise text.error(int(rows[k]), f"field {int(fields[k])}: value {values[k]} is not finite "
                                       "(NaN and inf are not allowed)")


def _integers(text: _Text, column, field: int, what: str) -> np.ndarray:
    """An integer column (labels, bag ids); '1.' and '1.0' are accepted, 0.5 is not."""
    values = _numbers(text, column, None, field, len(column))
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) > 2.0**62)
    if bad.any():
        i = int(np.argmax(bad))
        raise text.error(i, f"field {field}: {what} must be an integer, got {column[i]!r}")
    return values.astype(np.int64)


def _dense(text: _Text, rest, sep: str | None, first_field: int) -> np.ndarray:
    """The dense feature matrix from every line's features string; all lines must have one width."""
    if sep is None:
        counts = np.fromiter(map(len, map(str.split, rest)), np.int64, len(rest))
    else:
        counts = np.fromiter(map(str.count, rest, repeat(sep)), np.int64, len(rest)) + 1
        counts[np.fromiter(map(len, rest), np.int64, len(rest)) == 0] = 0
    width = int(counts[0])
    if width == 0:
        raise text.error(0, "no feature values on the first data line")
    ragged = np.flatnonzero(counts != width)
    if ragged.size:
        i = int(ragged[0])
        raise text.wrong_count(i, f"expected {first_field - 1 + width} fields as on line "
                                  f"{text.numbers[0]}, got {first_field - 1 + counts[i]}")
    X = _numbers(text, rest, sep, first_field, len(rest) * width).reshape(len(rest), width)
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        _finite(text, X[row, col:col + 1], np.array([row]), np.array([first_field + col]))
    return X


def _pairs(text: _Text, rest, sep: str | None, first_field: int, width: int | None = None) -> sp.csr_matrix:
    """Sparse ``index:value`` features (1-based indices, ascending within a line) as CSR; the width is
    ``width`` when the file declares one, else the largest index."""
    n = len(rest)
    nnz_per_line = np.fromiter(map(str.count, rest, repeat(":")), np.int64, n)
    # A token without ':' (or with two) would shift every later pair: find it before parsing numbers.
    tokens = np.fromiter(map(len, map(str.split, rest, repeat(sep))), np.int64, n)
    tokens[np.fromiter(map(len, rest), np.int64, n) == 0] = 0
    bad_line = np.flatnonzero(tokens != nnz_per_line)
    if bad_line.size:
        i = int(bad_line[0])
        for j, token in enumerate(rest[i].split(sep)):
            if token.count(":") != 1:
                raise text.error(i, f"field {first_field + j}: expected index:value, got {token!r}")
    values = _numbers(text, rest, sep, first_field, 2 * int(nnz_per_line.sum()), pairs=True)
    index, data = values[0::2], values[1::2]
    rows = np.repeat(np.arange(n), nnz_per_line)
    fields = first_field + np.arange(len(index)) - np.repeat(np.cumsum(nnz_per_line) - nnz_per_line,
                                                            nnz_per_line)
    bad = (index != np.round(index)) | (index < 1)
    if bad.any():
        k = int(np.argmax(bad))
        raise text.error(int(rows[k]), f"field {int(fields[k])}: feature index {index[k]:g} is not an "
                                       "integer >= 1 (indices are 1-based)")
    index = index.astype(np.int64)
    same_row = rows[1:] == rows[:-1]
    unordered = same_row & (index[1:] <= index[:-1])
    if unordered.any():
        k = int(np.argmax(unordered)) + 1
        raise text.error(int(rows[k]), f"field {int(fields[k])}: feature index {index[k]} does not follow "
                                       f"{index[k - 1]}: indices must ascend within a line")
    if width is not None and index.size and index.max() > width:
        k = int(np.argmax(index > width))
        raise text.error(int(rows[k]), f"field {int(fields[k])}: feature index {index[k]} is larger than the "
                                       f"{width} features the header declares")
    _finite(text, data, rows, fields)
    width = width if width is not None else int(index.max(initial=0))
    if width == 0:
        raise text.error(None, "no feature values in the file")
    indptr = np.concatenate(([0], np.cumsum(nnz_per_line)))
    return sp.csr_matrix((data, index - 1, indptr), shape=(n, width))


# ---- bags ---------------------------------------------------------------------------------------------
def _bags(text: _Text, X, keys, labels: np.ndarray, *, key_field: int, real_instance_labels: bool = False,
          bag_labels: np.ndarray | None = None) -> Bags:
    """Group consecutive lines with one bag key into bags; the bag label is the largest line label.

    Most files copy the bag label onto every line, so the line labels become ``instance_y`` only when
    the format says they are real (C) or when some bag mixes them (they then say something about single
    instances).
    """
    keys = np.asarray(keys)
    n = len(keys)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    if len(np.unique(keys)) != len(starts):
        seen = {}
        for start in starts:
            key = keys[start]
            if key in seen:
                raise text.error(int(start), f"field {key_field}: bag {str(key)!r} appears again after other "
                                             f"bags (it started on line {text.numbers[seen[key]]}): the lines "
                                             "of a bag must be consecutive")
            seen[key] = start
    y = np.maximum.reduceat(labels, starts)
    if bag_labels is not None:
        stated = np.maximum.reduceat(bag_labels, starts)
        mismatch = np.flatnonzero(stated != y)
        if mismatch.size:
            b = int(mismatch[0])
            raise text.error(int(starts[b]), f"bag {str(keys[starts[b]])!r} has bag label {stated[b]} but its "
                                             f"largest instance label is {y[b]}")
    mixed = (y != np.minimum.reduceat(labels, starts)).any()
    instance_y = labels if real_instance_labels or mixed else None
    return Bags(X, np.r_[starts, n], y, instance_y=instance_y, names=keys[starts].astype(str),
                source=str(text.path))


def _read_mill(text: _Text, sparse: bool = False) -> Bags:
    text.require_lines()
    _, bag, label, rest = text.split_leading(",", 3, "instance name, bag name, label")
    X = _pairs(text, rest, ",", 4) if sparse else _dense(text, rest, ",", 4)
    labels = _integers(text, label, 3, "the label")
    return _bags(text, X, np.asarray(bag, dtype=object), labels, key_field=2)


def _read_mil_csv(text: _Text) -> Bags:
    text.require_lines()
    label, bag, rest = text.split_leading(",", 2, "label, bag id")
    labels = _integers(text, label, 1, "the label")
    bag_ids = _integers(text, bag, 2, "the bag id")
    return _bags(text, _dense(text, rest, ",", 3), bag_ids, labels, key_field=2)


def _read_spaced(text: _Text) -> Bags:
    text = text.drop(np.fromiter(map(str.startswith, text.lines, repeat("%")), bool, len(text)))
    text.require_lines()
    bag, bag_label, _, instance_label, rest = text.split_leading(
        None, 4, "bag id, bag label, instance id, instance label")
    bag_ids = _integers(text, bag, 1, "the bag id")
    instance_y = _integers(text, instance_label, 4, "the instance label")
    return _bags(text, _dense(text, rest, None, 5), bag_ids, instance_y, key_field=1,
                 real_instance_labels=True, bag_labels=_integers(text, bag_label, 2, "the bag label"))


def _read_mcilboost(text: _Text) -> Bags:
    text.require_lines()
    header = text.lines[0].split()
    if len(header) != 2 or not all(_INTEGER.match(h) for h in header):
        raise text.error(0, f"expected the header '<number of instances> <number of features>', got "
                            f"{text.lines[0][:60]!r}")
    n_instances, n_features = (int(h) for h in header)
    text = text.drop(np.arange(len(text)) == 0)
    text.require_lines()
    if len(text) != n_instances:
        raise text.error(len(text) - 1, f"the header declares {n_instances} instances but the file holds "
                                        f"{len(text)}: the file is truncated or has extra lines")
    head, rest = text.split_leading(None, 1, "instance:bag:label")
    parts = list(map(str.split, head, repeat(":")))
    bad = np.flatnonzero(np.fromiter(map(len, parts), np.int64, len(parts)) != 3)
    if bad.size:
        i = int(bad[0])
        raise text.error(i, f"field 1: expected instance:bag:label, got {head[i]!r}")
    _, bag, label = zip(*parts, strict=True)
    bag_ids = _integers(text, bag, 1, "the bag id")
    labels = _integers(text, label, 1, "the label")
    X = _pairs(text, rest, None, 2, width=n_features).toarray()
    return _bags(text, X, bag_ids, labels, key_field=1)


_READERS = {"mill": _read_mill, "mill-sparse": partial(_read_mill, sparse=True), "mil-csv": _read_mil_csv,
            "spaced": _read_spaced, "mcilboost": _read_mcilboost}


# ---- detection ----------------------------------------------------------------------------------------
def _detect(text: _Text) -> str:
    """Sniff the first lines: '%' comments mean C, a two-integer header before 'a:b:c' tokens means D,
    commas mean A (sparse when a first feature holds ':') or B (when the first two fields are integers,
    a label and a bag id, rather than an instance name that is unique per line)."""
    text.require_lines()
    first = text.lines[:_SNIFF_LINES]
    head = first[0]
    if head.startswith("%"):
        return "spaced"
    tokens = head.split()
    if (len(tokens) == 2 and all(_INTEGER.match(t) for t in tokens) and len(first) > 1
            and _MCILBOOST_HEAD.match(first[1].split(maxsplit=1)[0])):
        return "mcilboost"
    if "," in head:
        fourth = [fields[3] for fields in (line.split(",", 4) for line in first) if len(fields) >= 4]
        if any(":" in field for field in fourth):
            return "mill-sparse"
        leading = [line.split(",", 2)[:2] for line in first]
        integers = all(len(f) == 2 and _INTEGER.match(f[0]) and _INTEGER.match(f[1]) for f in leading)
        repeated = len({f[0] for f in leading}) < len(leading) or len(leading) == 1
        return "mil-csv" if integers and repeated else "mill"
    if len(tokens) >= 5 and all(_INTEGER.match(t) for t in tokens[:4]):
        return "spaced"
    raise text.error(0,
                     f"cannot tell the file format from the first lines; pass format= one of "
                     f"{', '.join(FORMATS)} (see docs/data.md)")
