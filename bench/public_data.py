"""Where a bench finds the public benchmark files: `$LEXSEM_TEST_DATA` (`make bench` sets it;
default `../shared/data`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def public_data(*folders: str) -> Path | None:
    """The data folder when it holds each of `folders`; else None, with a line on stderr saying
    what is missing where."""
    data = Path(os.environ.get("LEXSEM_TEST_DATA", "../shared/data"))
    missing = [f for f in folders if not (data / f).is_dir()]
    if missing:
        print(f"needs {', '.join(missing)} under $LEXSEM_TEST_DATA ({data})", file=sys.stderr)
        return None
    return data
