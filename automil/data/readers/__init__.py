"""The bag readers, behind one protocol and registered in one table.

A format is a :class:`Reader`: a name, ``read(path) -> Bags`` and, to be found without ``format=``,
``detect(path) -> bool``. Plugins add formats through the ``register_formats`` hook, one
``register(automil.Reader(...))`` per format; the built-in ones (the text formats, ``.npz`` archives, bag
folders) are registered the same way, by :mod:`automil.data.readers.builtin`. :func:`formats` is that table.

:func:`read_bags` reads a path: a named ``format`` (a name or an alias) by its reader; without one, the readers
that detect are asked in table order, a plugin's before the built-in ones (so a plugin can claim a folder that
the bag-folder reader would take), and a path none claims is read as text, its format told from its first
lines. Every reader raises :class:`FormatError` naming the file and the line or bag at fault.
"""

from __future__ import annotations

from pathlib import Path

from automil.data.label_columns import table_flags
from automil.data.readers.errors import FormatError
from automil.data.readers.reader import Reader

__all__ = ["Reader", "FormatError", "formats", "read_bags", "detect_format"]

def formats() -> dict[str, Reader]:
    """Every registered format, ``{name: Reader}``, in detection order (plugins' formats first)."""
    from automil import plugins

    table = plugins.registry("formats").formats
    return {r.name: r for r in sorted(table.values(), key=lambda reader: reader.plugin == plugins.CORE_FORMATS)}


def read_bags(path, format: str | None = None, labels=None, groups: str | None = None, columns=None):
    """Read the bags at ``path`` (a file, plain or gzip-compressed, or a folder) in any registered format.

    Parameters
    ----------
    path : str or Path
    format : str, optional
        A name or alias of :func:`formats` (the text formats also take the benchmark README's letters A,
        A-sparse, B, C, D); detected when omitted.
    labels, groups, columns : optional
        For the formats whose labels are a table (``Reader.takes_labels``: folders of feature files): the
        labels CSV, its column of every bag's group, and how its columns read
        (:class:`~automil.data.label_columns.LabelColumns`: the task, ``--bag-by``, ``--covariates``).

    Returns
    -------
    Bags
        Bag labels are the largest instance label of each bag (a bag is positive when one of its
        instances is); names are the file's bag names or ids. ``instance_y`` holds the instance labels a
        format stores (format C, bag folders and archives that have them) and the line labels of any text
        file where some bag mixes them.

    Raises
    ------
    FormatError
        A ``ValueError`` naming the file, the line or bag, and the problem.
    """
    path = Path(path)
    reader = _named(format) if format is not None else _detected(path)
    if reader is not None and reader.takes_labels:
        return reader.read(path, labels, groups, *([columns] if columns is not None and columns.flags() else []))
    given = table_flags(labels, groups, columns)
    if given:
        tables = ", ".join(name for name, r in formats().items() if r.takes_labels)
        raise FormatError(path, None, f"leave out {', '.join(given)}, which read the labels table of a folder of "
                                      f"feature files ({tables}), not a {reader.name if reader else 'text'} file")
    if reader is not None:
        return reader.read(path)
    from automil.data.readers.text import read_text

    return read_text(path)


def detect_format(path) -> str:
    """The name of the format at ``path`` (a key of :func:`formats`), from its first bytes or its folder."""
    path = Path(path)
    reader = _detected(path)
    if reader is not None:
        return reader.name
    from automil.data.readers.text import detect_text

    return detect_text(path)


def _detected(path: Path) -> Reader | None:
    return next((reader for reader in formats().values() if reader.detect is not None and reader.detect(path)),
                None)


def _named(format: str) -> Reader:
    table = formats()
    key = format.strip().lower()
    by_alias = {alias.lower(): reader for reader in table.values() for alias in reader.aliases}
    reader = table.get(format.strip()) or table.get(key) or by_alias.get(key)
    if reader is None:
        raise ValueError(f"unknown file format {format!r}; known formats: {', '.join(table)} "
                         f"(or the README letters {', '.join(a.upper() for a in by_alias)})")
    return reader
