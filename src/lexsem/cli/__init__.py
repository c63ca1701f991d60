"""The command line (`lexsem --help`): a thin layer over the Python API, one module per command
(`eval.py`, `download.py`, ...); `app.py` assembles them, `options.py` makes their options."""

from lexsem.cli.app import app

__all__ = ["app"]
