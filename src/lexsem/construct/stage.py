"""The stage interface of `lexsem build` (docs/building.md); the registry of stages is
`lexsem.construct.catalog`.

A stage is a function ``fn(rows: pyarrow.Table, ctx: StageContext, **settings) ->
pyarrow.Table``: one row per candidate item. Rows keep their provenance columns (`PROVENANCE`:
``source``, ``source_id``); a row a stage rejects is kept, with its reason in the string column
``rejected`` (`REJECTED`; null: accepted), so acceptance statistics per reason can be counted.
A stage passes rejected rows on unchanged (`accepted` selects the others).

A `Stage` (registered in `lexsem.construct.catalog`) makes a function usable in recipes: a
stage that asks a generator says so (`generator=True`: a recipe without one is refused before
any work) and may say which prompts it will ask (`requests(rows, **settings)`), so the runner
can count the requests a build will send, and refuse one over `--max-requests`, before any
work.

A stage that makes images says so (`image_generator=True`: a recipe without an
``image_generator`` is refused); its `requests` are then `ImageRequest`s
(`lexsem.models.image_gen`), counted against the same `--max-requests`. A stage that reads
files people fill in (answers to human tasks) names them (`files(out, **settings)`): their
sha256 is part of the stage's settings digest, so a changed file reruns the stage. Until
those files exist such a stage raises `HumanStepPending`: the build pauses there (not an error:
`lexsem build` exits with status 3 and says what to do), and the same command run again once
the answers are there resumes at that stage.

A stage may declare the columns it reads and adds (`columns(have, **settings)` -> `Columns`,
`have` the columns its rows will have): before any work the runner walks the recipe's stages
from the input's columns and refuses a column a stage reads that neither the input nor an
earlier stage makes, in one line naming the column, the setting and the stage. The walk stops at
the first stage that declares nothing (what it adds is not known).

`StageContext.images(requests)` asks the recipe's image generator through the same store
(`lexsem.engine.image_gen`): each image keyed by its prompt, index, seed and size and the
generator's fingerprint; the PNG files named by sha256.

`StageContext.ask(prompts)` asks the recipe's generator (a chat model of the model layer)
through the engine's stored-request path (`lexsem.engine.chat`): each request is keyed by the
rendered prompt, the model's fingerprint and every generation parameter, the seed included
(`ChatRequest.params`), so a rerun sends nothing twice and `replay_only` works.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lexsem.errors import LexsemError

__all__ = [
    "PROVENANCE",
    "REJECTED",
    "Columns",
    "HumanStepPending",
    "Stage",
    "StageContext",
    "StageFn",
    "accepted",
    "check_rows",
    "reject",
    "row_ids",
]

M = TypeVar("M")  # a model the recipe names (`StageContext._named`)

PROVENANCE = ("source", "source_id")
REJECTED = "rejected"

StageFn = Callable[..., Any]  # (rows: pa.Table, ctx: StageContext, **settings) -> pa.Table
RequestsFn = Callable[..., Sequence[Any]]  # (rows: pa.Table, **settings) -> prompts
FilesFn = Callable[..., Sequence[Path]]  # (out: Path, **settings) -> files the stage reads
ColumnsFn = Callable[..., "Columns"]  # (have: frozenset[str], **settings) -> Columns


@dataclass(frozen=True)
class Columns:
    """The columns a stage reads (by the setting that names each) and the ones it adds."""

    reads: Mapping[str, str]
    makes: frozenset[str] = frozenset()


class HumanStepPending(LexsemError):
    """The build waits for people's answers at a stage: `str()` says where the tasks are and
    how to answer them, `commands` are the `lexsem annotate` commands of a study of them (if
    any), `answers` the file the stage reads once it exists. `stage` is filled by the runner
    (``stage 3/5 validation``)."""

    def __init__(
        self, message: str, *, commands: Sequence[str] = (), answers: Path | None = None
    ) -> None:
        super().__init__(message)
        self.commands = list(commands)
        self.answers = answers
        self.stage = ""


@dataclass(frozen=True)
class Stage:
    """A stage: its name, its function, whether it asks a generator (text or image), and
    (optional) the prompts it will ask for given rows and settings, the files it reads, the
    columns it reads and adds, and `target`: the setting that sets how many rows it keeps (a
    sampling stage; a later human step says how to change it)."""

    name: str
    fn: StageFn
    generator: bool = False
    requests: RequestsFn | None = None
    image_generator: bool = False
    files: FilesFn | None = None
    columns: ColumnsFn | None = None
    target: str | None = None


@dataclass
class StageContext:
    """What a stage may use besides its rows and settings.

    - `out`: the build folder (a stage may keep files of its own under ``out / "files"``);
    - `seed`: the recipe's seed (a stage draws with ``numpy.random.default_rng(ctx.seed)``);
    - `ask(prompts, **params)`: the generator's answers, through the request store;
    - `images(requests, batch_size=...)`: the image generator's PNG files, through the store;
    - `count(what, n)` / `log(text)`: statistics recorded in build.json and progress lines;
    - `output` / `input`: this stage's output file and the stage output it reads (paths
      relative to `out`, ``stages/NN-name.parquet``; empty outside a build, and `input` empty
      for the first stage), for stages that tell people which file to use next;
    - `sized`: how to change the number of rows earlier stages of the recipe kept (a sampling
      stage's `Stage.target`), one ``--set STAGE.SETTING=N (now VALUE)`` each, for a human
      step's word on its study's size.
    """

    out: Path
    seed: int = 0
    stage: str = ""
    progress: bool = False
    asker: Callable[[Sequence[Any], Mapping[str, Any]], list[str]] | None = None
    counts: Counter[str] = field(default_factory=Counter)
    imager: Callable[..., list[Path]] | None = None
    output: str = ""
    input: str = ""
    sized: tuple[str, ...] = ()

    def ask(self, prompts: Sequence[Any], **params: Any) -> list[str]:
        """The generator's answer to each prompt (a string, or a `ChatRequest`), in order;
        `params`: extra generation parameters, sent and keyed (the seed is added by the
        runner where the recipe says so)."""
        asker = self._named(self.asker, "asks a generator, but the recipe names none", "generator")
        answers = asker(prompts, params)
        self.counts["requests asked"] += len(prompts)
        return answers

    def images(self, requests: Sequence[Any], *, batch_size: int = 4) -> list[Path]:
        """The PNG file of each `ImageRequest`, in order (made by the recipe's image
        generator, or found in the store; a request without a seed gets the build's
        `image_seed`); `batch_size`: images per call of a local generator."""
        imager = self._named(
            self.imager,
            "makes images, but the recipe names no image generator",
            "image_generator",
        )
        files = imager(requests, batch_size)
        self.counts["images asked"] += len(requests)
        return files

    def _named(self, model: M | None, problem: str, key: str) -> M:
        """`model`, else an error naming the stage, what it lacks and the recipe's `key`."""
        if model is None:
            raise LexsemError(f'stage {self.stage!r} {problem} (set `{key} = "BACKEND:MODEL"`)')
        return model

    def count(self, what: str, n: int = 1) -> None:
        """Add `n` to the statistic `what` of this stage (in build.json)."""
        self.counts[what] += n

    def log(self, text: str) -> None:
        """A progress line on stderr (when progress is shown)."""
        if self.progress:
            print(f"[{self.stage}] {text}", file=sys.stderr, flush=True)


def check_rows(rows: Any, where: str) -> None:
    """Refuse a table without the provenance columns, or whose `rejected` column is not
    text."""
    import pyarrow as pa

    if not isinstance(rows, pa.Table):
        raise LexsemError(f"{where}: a stage returns a pyarrow.Table, not {type(rows).__name__}")
    missing = [c for c in PROVENANCE if c not in rows.column_names]
    if missing:
        raise LexsemError(f"{where}: the rows lack the provenance column(s) {', '.join(missing)}")
    if REJECTED in rows.column_names and not (
        pa.types.is_string(rows.schema.field(REJECTED).type)
        or pa.types.is_large_string(rows.schema.field(REJECTED).type)
        or pa.types.is_null(rows.schema.field(REJECTED).type)
    ):
        raise LexsemError(f"{where}: the column {REJECTED!r} holds reasons (text)")


def accepted(rows: Any) -> Any:
    """A boolean mask (pyarrow array) of the rows not rejected."""
    import pyarrow.compute as pc

    if REJECTED not in rows.column_names:
        import pyarrow as pa

        return pa.array([True] * rows.num_rows, pa.bool_())
    return pc.is_null(rows[REJECTED])


def row_ids(sources: Sequence[Any], source_ids: Sequence[Any]) -> list[str]:
    """Each row's item id in a human study and in the answers folded back: ``source:source_id``;
    where several rows share one (VISLA's top-3 negative candidates of one pair), each of them
    gets ``/1``, ``/2``, ... after it, in table order, counted over every row (rejected ones
    too), so the same table always gives the same ids."""
    base = [f"{s}:{i}" for s, i in zip(sources, source_ids, strict=True)]
    total = Counter(base)
    seen: Counter[str] = Counter()
    out = []
    for key in base:
        if total[key] == 1:
            out.append(key)
            continue
        seen[key] += 1
        out.append(f"{key}/{seen[key]}")
    return out


def reject(rows: Any, reasons: Sequence[str | None]) -> Any:
    """`rows` with `reasons` (one per row; None: no new rejection) in the `rejected` column; a
    row already rejected keeps its first reason."""
    import pyarrow as pa

    if len(reasons) != rows.num_rows:
        raise ValueError(f"{len(reasons)} reasons for {rows.num_rows} rows")
    old = rows[REJECTED].to_pylist() if REJECTED in rows.column_names else [None] * rows.num_rows
    merged = pa.array(
        [o if o is not None else r for o, r in zip(old, reasons, strict=True)], pa.string()
    )
    if REJECTED in rows.column_names:
        return rows.set_column(rows.column_names.index(REJECTED), REJECTED, merged)
    return rows.append_column(REJECTED, merged)
