"""DatasetSpec, what a plugin registers for a dataset, and bags by dataset name or file (a dataset's files
are found and checked by :mod:`automil.data.files`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from automil.data.files import DataFileError
from automil.data.label_columns import LabelColumns, table_flags

__all__ = ["DatasetSpec", "load_bags", "dataset_name", "same_stem"]


@dataclass(frozen=True)
class DatasetSpec:
    """What a plugin registers for one dataset.

    Parameters
    ----------
    name : str
        The name users type (``automil tune --dataset NAME``).
    load : callable
        ``load() -> Bags``.
    description, citation : str
        Shown by ``automil datasets`` and written into reports.
    n_bags, n_instances, n_features, n_classes : int, optional
        Task facts, listed without loading the data.
    files : tuple of DataFile
        The files ``load`` reads; empty for generated data.
    plugin : str
        Filled in by the registry.
    """

    name: str
    load: Callable
    description: str = ""
    citation: str = ""
    n_bags: int | None = None
    n_instances: int | None = None
    n_features: int | None = None
    n_classes: int | None = None
    files: tuple = ()
    plugin: str = ""

    def available(self) -> bool:
        """True when every file is on disk (generated datasets always are)."""
        return all(f.local_path() is not None for f in self.files)


def load_bags(name_or_path, format: str | None = None, labels=None, groups: str | None = None,
              columns: LabelColumns | None = None):
    """``Bags`` for a registered dataset name, or for a file or bag folder in any supported format.

    A registered name wins over a file of the same name in the working directory. ``format`` names
    the file format when detection from the content is not wanted (see ``automil.data.readers.text``); ``labels``
    and ``groups`` are a slide feature folder's labels CSV and its group column, ``columns`` how its labels
    table reads (the task and its columns, ``--bag-by``, ``--covariates``); a registered dataset has labels of
    its own (and their task) and takes none of them.
    """
    from automil import plugins

    name = str(name_or_path)
    if columns is not None:
        columns.check()
    if format is None and name in plugins.datasets():
        given = table_flags(labels, groups, columns)
        if given:
            raise ValueError(f"{name} is a registered dataset with its own labels: leave out {', '.join(given)}, "
                             "which read the labels table of a slide feature folder")
        return plugins.get_dataset(name).load()
    path = Path(name).expanduser()
    if path.is_file() or path.is_dir():
        from automil.data.readers import read_bags

        return read_bags(path, format=format, labels=labels, groups=groups, columns=columns)
    if path.suffix or len(path.parts) > 1:
        raise DataFileError(f"{name}: no such file (and no registered dataset has this name)")
    plugins.get_dataset(name)  # raises with the known names and close matches


# The digest in a file dataset's name: 8 hex digits tell apart the versions one stem will ever have.
NAME_DIGEST_LENGTH = 8
_VERSIONED_NAME = re.compile(rf"(.+)-[0-9a-f]{{{NAME_DIGEST_LENGTH}}}")


def dataset_name(name_or_path, bags) -> str:
    """The name studies, experiments and models of a dataset carry: a registered dataset its name; a file
    or bag folder ``STEM-DIGEST`` (``fox-3f2a9c1e``), never its path, so that the same bags anywhere (another
    folder, another machine) continue the same studies and changed bags under the same name start new ones.
    """
    from automil import plugins

    name = str(name_or_path)
    if name in plugins.datasets():
        return name
    path = Path(name).expanduser()
    stem = Path(path.name.removesuffix(".gz")).stem  # fox.csv.gz -> fox; a bag folder keeps its name
    return f"{stem or path.name}-{bags.digest[:NAME_DIGEST_LENGTH]}"


def same_stem(name: str, other: str) -> bool:
    """Whether two dataset names are versions of one file: ``STEM-DIGEST`` with the same stem."""
    found, other_found = _VERSIONED_NAME.fullmatch(name), _VERSIONED_NAME.fullmatch(other)
    return bool(found and other_found and found[1] == other_found[1] and name != other)
