"""The libraries' own progress bars, off where lexsem prints its own."""

from __future__ import annotations

__all__ = ["quiet_libraries"]


def quiet_libraries(quiet: bool) -> None:
    """With `-q`, or when stderr is not a terminal (lexsem prints its own progress lines
    there), the libraries' own progress bars (transformers' "Loading weights", Hub downloads)
    are off; the user's own HF_HUB_DISABLE_PROGRESS_BARS wins. Set before they are imported."""
    import os
    import sys

    if quiet or not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        if "transformers" in sys.modules:  # imported already (the Python API, tests)
            sys.modules["transformers"].utils.logging.disable_progress_bar()
