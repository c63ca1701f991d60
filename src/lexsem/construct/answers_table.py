"""The answers table's reader, as `lexsem.annotate.human_run` imports it; the contract itself
is `lexsem.results.answers_table`."""

from __future__ import annotations

from lexsem.results.answers_table import check_columns, read_answers

__all__ = ["check_columns", "read_answers"]
