"""Package exports imported on first use, so that importing a package (and ``automil --help``) stays fast."""

from __future__ import annotations

from importlib import import_module

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]):
    """A module ``__getattr__`` that imports each name of ``exports`` (name -> module) on first use."""

    def __getattr__(name):
        if name in exports:
            return getattr(import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
