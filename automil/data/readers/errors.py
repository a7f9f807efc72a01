"""The error every bag reader raises, text or binary: the file, where in it, and what is wrong."""

from __future__ import annotations

__all__ = ["FormatError"]


class FormatError(ValueError):
    """A data file that cannot be read; the message names the file, the 1-based line (text files) and what
    is wrong (for binary files and folders: the bag)."""

    def __init__(self, path, line: int | None, what: str):
        self.path, self.line, self.what = path, line, what
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {what}")
