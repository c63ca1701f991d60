"""A paper's table as facts: its model rows (the name the paper prints, the lexsem spec that
runs it) and its published numbers, each tied to the benchmark selector, task, metric and subset
of a lexsem run record that it corresponds to; and where such a cell's number is in a set of run
records (`find_result`), for the report's tables of runs and for `lexsem reproduce` alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lexsem.results.schema import MetricResult, RunRecord


class _Fact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelRow(_Fact):
    """One model row of a paper's table."""

    name: str = Field(min_length=1, description="The model's name as the paper prints it.")
    spec: str | None = Field(
        None, description="The lexsem model spec that runs it (None: no lexsem backend does)."
    )
    needs: str | None = Field(
        None, description="What running it takes, where no spec runs it as published."
    )
    note: str | None = Field(
        None, description="How the spec differs from the paper's checkpoint, where it does."
    )

    @model_validator(mode="after")
    def _runnable_or_said(self) -> ModelRow:
        if self.spec is None and not self.needs:
            raise ValueError(f"row {self.name!r} has no spec: say what running it needs")
        return self


class Column(_Fact):
    """Where a column's numbers live in a lexsem run record."""

    benchmark: str  # the benchmark selector (`lexsem list benchmarks`)
    task: str  # the task name as the run records it (`tot`, `t2t`, `itt`, `pair`, `blind`, ...)
    metric: str
    subset: str  # a subset, `_micro`, `_macro` or an aggregate row (`_replace`, ...)
    header: str  # the paper's column name


class Cell(_Fact):
    """One published number."""

    model: str  # ModelRow.name
    column: Column
    published: float


class PaperTable(_Fact):
    """A paper's table: rows, columns and the published numbers of the cells it prints."""

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    paper: str  # the paper's title
    table: str  # "Table 16", "Tables 2 and 3", ...
    description: str
    included: str  # which of the paper's rows are here
    rows: tuple[ModelRow, ...]
    cells: tuple[Cell, ...]

    @model_validator(mode="after")
    def _cells_name_rows(self) -> PaperTable:
        names = [r.name for r in self.rows]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"table {self.name}: row {dup[0]!r} given twice")
        unknown = sorted({c.model for c in self.cells} - set(names))
        if unknown:
            raise ValueError(f"table {self.name}: cells of unknown row {unknown[0]!r}")
        return self

    def row(self, name: str) -> ModelRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    def columns(self) -> list[Column]:
        """The table's columns, in the order of their first cell."""
        return list(dict.fromkeys(c.column for c in self.cells))

    def cells_of(self, model: str) -> list[Cell]:
        return [c for c in self.cells if c.model == model]


def cells(
    columns: Sequence[Column], values: Mapping[str, Sequence[float | None]]
) -> tuple[Cell, ...]:
    """The cells of rows given as the paper prints them: model name -> one value per column
    (None where the paper prints none, e.g. "—" for a model without a text tower)."""
    out: list[Cell] = []
    for model, row in values.items():
        if len(row) != len(columns):
            raise ValueError(f"row {model!r} has {len(row)} values for {len(columns)} columns")
        out += [
            Cell(model=model, column=col, published=v)
            for col, v in zip(columns, row, strict=True)
            if v is not None
        ]
    return tuple(out)


def find_result(
    records: Sequence[RunRecord], benchmark: str, task: str, metric: str, subset: str
) -> tuple[RunRecord, MetricResult] | None:
    """The first of `records` with a result at (benchmark, task, metric, subset), and that
    result (`RunRecord.result`: a run of a single subset gives it for `_micro` / `_macro`)."""
    for record in records:
        try:
            return record, record.result(benchmark, metric, subset, task)
        except KeyError:
            continue
    return None
