"""What a plugin registers for one file format: its name, how to read it and how to recognise it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Reader"]


@dataclass(frozen=True)
class Reader:
    """One file format, registered with ``register(automil.Reader(...))`` from a ``register_formats`` hook.

    Parameters
    ----------
    name : str
        The format's name, as ``load_bags(path, format=name)`` and ``read_bags`` take it.
    read : callable
        ``read(path) -> automil.Bags``; raises :class:`automil.data.readers.FormatError` (a ``ValueError``)
        naming the file and, where one is at fault, the line or bag.
    description : str
        One line: what the format holds.
    detect : callable, optional
        ``detect(path) -> bool``: true when ``path`` holds this format, from its first bytes or the names in
        a folder (cheap: it runs for every path read without ``format=``). Without it the format is read
        only when named.
    aliases : tuple of str
        Other names ``format=`` accepts (compared in lower case).
    takes_labels : bool
        The format's labels are a table beside the features (a folder of feature files): ``read`` is then
        called as ``read(path, labels, groups)``, with the table given by ``--labels`` (``None``: its own)
        and the table's column of every bag's group (``None``: ``case_id`` when it has one); given ``--task``,
        ``--bag-by`` or ``--covariates``, as ``read(path, labels, groups, columns)`` with the
        :class:`~automil.data.label_columns.LabelColumns` (``read_labels_table`` reads a table by them).
    plugin : str
        Filled in by the registry: the plugin that registered the format.
    """

    name: str
    read: Callable[[Path], object]
    description: str = ""
    detect: Callable[[Path], bool] | None = None
    aliases: tuple[str, ...] = ()
    takes_labels: bool = False
    plugin: str = ""
