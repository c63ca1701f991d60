"""`word_swaps_table`: a paper table for `lexsem reproduce`: its rows (the name a paper
prints, the lexsem spec that runs it) and the published numbers, each tied to the benchmark,
task, metric and subset of a run record."""

from __future__ import annotations

from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells

COLUMNS = tuple(
    Column(benchmark="word_swaps", task="tot", metric="tot", subset=s, header=h)
    for s, h in {"swap": "Swap", "replace": "Replace"}.items()
)
VALUES = {"Bag of words": (0.0, 0.0)}  # Swap, Replace

TABLE = PaperTable(
    name="word_swaps_table",
    paper="lexsem's example plugin",
    table="Table 1",
    description="a bag of words on word_swaps, TOT accuracy (%) per subset",
    included="its one row",
    rows=(ModelRow(name="Bag of words", spec="bow:example"),),
    cells=cells(COLUMNS, VALUES),
)
