"""The `lexsem annotate` commands a human step of a build tells people to run: make the study
from a table of the build, serve it, export its answers where the step reads them; and what
the step says of the study's size: how many rows people will see, and how to show fewer."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["SAMPLE_OPTION", "annotate_commands", "study_size"]

#: The option of `lexsem annotate create` that draws K of a build's rows.
SAMPLE_OPTION = "--sample-total"


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


def study_size(n: int, noun: str, not_drawn: str, sized: Sequence[str] = ()) -> str:
    """What a human step says of its study's size: people see all `n` `noun`s (plural with an
    s), and how to show K of them instead; `not_drawn`: what becomes of the rows not drawn;
    `sized`: the ``--set STAGE.SETTING=N`` options of the recipe's stages that drew the rows
    (`StageContext.sized`), which change how many the build keeps."""
    many = f"{n} {noun}" if n == 1 else f"{n} {noun}s"
    text = (
        f"people will see all {many}; to show K of them, add {SAMPLE_OPTION} K (drawn seeded by "
        f"--seed) to the create command: {not_drawn}"
    )
    if sized:
        text += (
            f"; the recipe's sampling stage drew the {noun}s: to change how many it keeps, "
            f"add {' and '.join(sized)} to the build command"
        )
    return text
