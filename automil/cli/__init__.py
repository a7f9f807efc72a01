"""The ``automil`` command line: parse, call the driver or the tracking store, print. Thin by design."""

from automil.cli.main import main

__all__ = ["main"]
