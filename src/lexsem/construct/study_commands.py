"""The `lexsem annotate` commands a human step of a build tells people to run: make the study
from a table of the build, serve it, export its answers where the step reads them."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

__all__ = ["annotate_commands"]


def annotate_commands(
    study: Path, table: Path, kind: str, columns: Mapping[str, str], name: str, answers: Path
) -> list[str]:
    """The commands (shell-quoted) of a `kind` study in `study` made from `table` with the
    role -> column map `columns`, named `name`, its answers exported to `answers`."""
    given = [x for role, column in columns.items() for x in ("--column", f"{role}={column}")]
    return [
        shlex.join(["lexsem", "annotate", "create", str(study), "--from-build", str(table),
                    "-k", kind, *given, "--name", name]),
        shlex.join(["lexsem", "annotate", "serve", str(study)]),
        shlex.join(["lexsem", "annotate", "export", str(study), "--answers", str(answers)]),
    ]  # fmt: skip
