"""Run a recipe: its stages in order, each output kept as ``DIR/stages/NN-name.parquet``
(written atomically) and recorded in ``DIR/build.json``; a rerun resumes (docs/building.md).

build.json (written after every stage, so a killed build keeps what it finished) records the
lexsem version, the recipe (path, sha256, name), the input (what, sha256, rows), the generator
and the image generator (spec without credentials, fingerprint) and per stage: its settings and
their digest (the stage, its settings, the seed, the generator's or image generator's
fingerprint for a stage that uses one, and the sha256 of the files it reads, e.g. people's
answers), the sha256 of its input and of its output, rows, accepted and rejected rows per
reason, the stage's own counts, requests (asked, served by the store, sent, retried; images
included) and seconds.

Human steps: a stage waiting for people's answers raises `HumanStepPending`; the stages
before it are recorded (build.json, `complete: false`) and the pause goes up to the caller
(`lexsem build` exits with status 3 and prints what to do). Run again once the answers are
there, the build resumes at that stage.

Resume: stage k is not run again when its settings digest and its input's sha256 equal the
recorded ones and its output file is the one recorded; from the first stage that runs, every
later stage runs too (so a change in stage k reruns k and everything after it). `force` runs
every stage.

Columns: before any work, the columns each stage reads are looked for in the input and among
those the stages before it add (`Stage.columns`; the walk stops at a stage that declares none):
a missing one is one line naming it, its setting and the stage.

Requests: before any work, the prompts a stage declares (`Stage.requests`) for the first stage
to run are keyed and looked up in the store; the number to send is shown, and a build that
would send more than `max_requests` is refused before anything runs. Each later stage is
checked the same way before it runs, and every `ctx.ask` sends at most what is left of the
budget (`lexsem.engine.chat`: nothing over it is sent). Image requests (`ctx.images`,
`lexsem.engine.image_gen`) are counted against the same budget. `replay_only`: nothing is sent
or generated, a request without a stored answer is an error.

Progress: each stage says `stage k/n NAME: R rows in` when it starts and, when it ends, its
rows out, accepted, rejected per reason, requests sent / served by the store / retried and
seconds; while it asks the generator, the engine's bar (terminal) or lines (piped) count the
requests answered, failed, waiting to be retried and retried (`lexsem.engine.progress_bar`). After
the build: the table of every stage (`summary`).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lexsem._version import __version__
from lexsem.atomic import atomic_path
from lexsem.construct.build_record import (
    BUILD_FILE,
    BuildRecord,
    GeneratorInfo,
    InputInfo,
    RecipeInfo,
    StageRecord,
    read_build_record,
    write_build_record,
)
from lexsem.construct.catalog import get_stage
from lexsem.construct.inputs import read_input
from lexsem.construct.recipe import Recipe, StageSpec, load_recipe
from lexsem.construct.stage import (
    PROVENANCE,
    REJECTED,
    HumanStepPending,
    Stage,
    StageContext,
    accepted,
    check_rows,
)
from lexsem.credentials import redact, redacted
from lexsem.digests import file_sha256, json_sha256
from lexsem.errors import LexsemError

__all__ = ["BUILD_FILE", "BuildResult", "StageRecord", "build", "stage_file"]


@dataclass
class BuildResult:
    folder: Path
    stages: list[StageRecord]
    output: Path
    sent: int


def stage_file(index: int, name: str) -> str:
    """The output of stage `index` (1-based), relative to the build folder."""
    return f"stages/{index:02d}-{name}.parquet"


def _load_generator(spec: str) -> Any:
    """The chat model of `spec` (the model layer's `load_model`)."""
    from lexsem.models.factory import load_model

    model = load_model(spec)
    if not (hasattr(model, "request_body") and hasattr(model, "send")):
        raise LexsemError(f"generator {redact(spec)!r} is not a chat model")
    return model


def _done_line(record: StageRecord) -> str:
    """What a finished stage did: rows, accepted, rejected per reason, requests, seconds."""
    rejected = record.rows - record.accepted
    why = ", ".join(f"{k}: {v}" for k, v in record.rejected.items())
    text = f"{record.rows} rows out, {record.accepted} accepted, {rejected} rejected"
    text += f" ({why})" if why else ""
    if record.requests:
        q = record.requests
        text += (f"; {q.get('sent', 0)} requests sent, {q.get('stored', 0)} from the store, "
                 f"{q.get('retried', 0)} retried")  # fmt: skip
    return f"{text}; {record.seconds:.1f} s"


def _load_image_generator(spec: str) -> Any:
    """The image generator of `spec` (the model layer's `load_model`)."""
    from lexsem.models.factory import load_model

    model = load_model(spec)
    if not getattr(model, "makes_images", False):
        raise LexsemError(f"image generator {redact(spec)!r} is not an image generator")
    return model


@dataclass
class _Budget:
    """The requests a build may still send (`--max-requests`), text and images together."""

    max_requests: int | None = None
    sent: int = 0

    def left(self) -> int | None:
        return None if self.max_requests is None else max(0, self.max_requests - self.sent)


class _Asker:
    """The generator's requests through the request store, within the build's budget."""

    def __init__(
        self, model: Any, store: Any, params: Mapping[str, Any], *, replay_only: bool,
        budget: _Budget, progress: bool, retries: int = 5, backoff: float = 1.0,
    ) -> None:  # fmt: skip
        self.model, self.store, self.params = model, store, dict(params)
        self.replay_only, self.budget, self.progress = replay_only, budget, progress
        self.retries, self.backoff = retries, backoff
        self.stats: Counter[str] = Counter()
        self.label = "asking"  # the stage asking, shown on its progress bar or lines

    def requests(self, prompts: Sequence[Any], params: Mapping[str, Any]) -> list[Any]:
        from lexsem.models.chat import ChatRequest

        out = []
        for p in prompts:
            req = p if isinstance(p, ChatRequest) else ChatRequest.ask(str(p), None)
            out.append(ChatRequest(req.turns, {**self.params, **req.params, **params}, req.about))
        return out

    def missing(self, prompts: Sequence[Any], params: Mapping[str, Any] | None = None) -> int:
        """How many distinct requests of `prompts` the store has no answer to."""
        from lexsem.engine.chat import ImageKeys, chat_key

        keys = {chat_key(self.model, r, ImageKeys()) for r in self.requests(prompts, params or {})}
        found = self.store.get_records(list(keys)) if self.store is not None else {}
        return sum(1 for k in keys if not (isinstance(found.get(k), dict) and "text" in found[k]))

    def __call__(self, prompts: Sequence[Any], params: Mapping[str, Any]) -> list[str]:
        from lexsem.engine.chat import chat_answers

        answers, stats = chat_answers(
            self.model, self.requests(prompts, params), self.store,
            replay_only=self.replay_only, max_requests=self.budget.left(),
            concurrency=int(getattr(self.model, "concurrency", 1) or 1), progress=self.progress,
            label=self.label, retries=self.retries, backoff=self.backoff,
        )  # fmt: skip
        self.budget.sent += stats.n_sent
        self.stats["asked"] += stats.n_requests
        self.stats["stored"] += stats.n_stored
        self.stats["sent"] += stats.n_sent
        self.stats["retried"] += stats.n_retried
        return answers


class _ImageAsker:
    """The image generator's requests through the request store, within the build's budget:
    each image a PNG file of the cache's `ImageFiles`."""

    def __init__(
        self, model: Any, store: Any, files: Any, seed: int, *, replay_only: bool,
        budget: _Budget, progress: bool,
    ) -> None:  # fmt: skip
        self.model, self.store, self.files, self.seed = model, store, files, seed
        self.replay_only, self.budget, self.progress = replay_only, budget, progress
        self.stats: Counter[str] = Counter()

    def requests(self, asked: Sequence[Any]) -> list[Any]:
        """`asked` (`ImageRequest`s) with the build's seed of each image where none is set."""
        from lexsem.models.image_gen import ImageRequest, image_seed

        out = []
        for r in asked:
            if not isinstance(r, ImageRequest):
                raise LexsemError(f"an image request is an ImageRequest, not {r!r:.60}")
            if r.seed is None:
                r = replace(r, seed=image_seed(self.seed, r.prompt, r.index))
            out.append(r)
        return out

    def missing(self, asked: Sequence[Any]) -> int:
        """How many distinct images of `asked` the store has no file of."""
        from lexsem.engine.image_gen import image_key, is_whole

        keys = {image_key(self.model, r) for r in self.requests(asked)}
        found = self.store.get_records(list(keys)) if self.store is not None else {}
        return sum(1 for k in keys if not is_whole(found.get(k), self.files))

    def __call__(self, asked: Sequence[Any], batch_size: int) -> list[Path]:
        from lexsem.engine.image_gen import image_records

        records, stats = image_records(
            self.model, self.requests(asked), self.store, self.files,
            replay_only=self.replay_only, max_requests=self.budget.left(),
            batch_size=batch_size, progress=self.progress,
        )  # fmt: skip
        self.budget.sent += stats.n_sent
        self.stats["asked"] += stats.n_requests
        self.stats["stored"] += stats.n_stored
        self.stats["sent"] += stats.n_sent
        return [self.files.path(r["text"]) for r in records]


def build(
    recipe: str | Path | Recipe,
    out: str | Path,
    *,
    replay_only: bool = False,
    max_requests: int | None = None,
    force: bool = False,
    cache_dir: str | Path | None = None,
    progress: bool = False,
    echo: Callable[[str], None] | None = None,
    retries: int = 5,
    backoff: float = 1.0,
) -> BuildResult:
    """Run `recipe` into the folder `out` (see the module doc); `retries` and `backoff`:
    how a generator request that may succeed later (a rate limit, a server error, a time-out)
    is retried (`lexsem.engine.chat`)."""
    from lexsem.outputs import check_output_dir, named_paths

    say = echo or (lambda text: print(text, file=sys.stderr))
    recipe = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    out = Path(out)
    input_path = recipe.input_path()
    check_output_dir(out, kind=None, inputs=named_paths(input_path, recipe.path), option="-o")
    if max_requests is not None and max_requests < 0:
        raise LexsemError(f"--max-requests {max_requests}: must be 0 or more")
    if out.is_file():
        raise LexsemError(f"-o {out} is a file: give a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / BUILD_FILE).is_file() and not force:
        raise LexsemError(
            f"-o {out} holds files and no {BUILD_FILE}: not a build folder; choose another "
            "folder (or pass --force to build in it)"
        )
    previous = {} if force else _previous(out, recipe)
    data = read_input(input_path, recipe.input.source, recipe.input.settings)
    check_rows(data.rows, f"input {data.described}")
    stages = [get_stage(s.use) for s in recipe.stages]
    _check_columns(recipe, stages, data)
    model = store = imager = image_store = None
    if recipe.generator is not None and any(s.generator for s in stages):
        model = _load_generator(recipe.generator)
    if recipe.image_generator is not None and any(s.image_generator for s in stages):
        imager = _load_image_generator(recipe.image_generator)
    budget = _Budget(max_requests)
    try:
        from lexsem.paths import cache_dir as cache_root

        if model is not None:
            store = _open_store(model, cache_root(cache_dir), replay_only)
        params = {"seed": recipe.seed} if recipe.send_seed else {}
        asker = (
            _Asker(
                model,
                store,
                params,
                replay_only=replay_only,
                budget=budget,
                progress=progress,
                retries=retries,
                backoff=backoff,
            )
            if model is not None
            else None
        )
        image_asker = None
        if imager is not None:
            from lexsem.engine.image_gen import FILES_DIR, ImageFiles

            image_store = _open_store(imager, cache_root(cache_dir), replay_only)
            image_asker = _ImageAsker(
                imager, image_store, ImageFiles(cache_root(cache_dir) / FILES_DIR), recipe.seed,
                replay_only=replay_only, budget=budget, progress=progress,
            )  # fmt: skip
        run = _Run(recipe, out, data, stages, asker, previous, say, progress, image_asker)
        return run.all()
    finally:
        for opened in (store, image_store):
            if opened is not None:
                opened.close()


def _check_columns(recipe: Recipe, stages: list[Stage], data: Any) -> None:
    """Before any work: each stage that declares its columns (`Stage.columns`) finds the ones
    it reads in the input or among those an earlier stage adds; the walk stops at a stage that
    declares nothing."""
    have = frozenset(data.rows.column_names)
    for n, (spec, stage) in enumerate(zip(recipe.stages, stages, strict=True), 1):
        if stage.columns is None:
            return
        declared = stage.columns(have, **spec.settings)
        for setting, column in declared.reads.items():
            if column not in have:
                raise LexsemError(
                    f"input {data.described}: no column {column!r}, which stage "
                    f"{n}/{len(stages)} {spec.label} reads (setting `{setting}`); the input "
                    f"has {', '.join(c for c in data.rows.column_names if c not in PROVENANCE)}"
                )
        have |= declared.makes


def _open_store(model: Any, root: Path, replay_only: bool) -> Any:
    """The request store of `model` under the cache root `root`."""
    from lexsem.engine.request_store import RequestStore
    from lexsem.models.protocols import fingerprint_key

    return RequestStore(root, fingerprint_key(model.fingerprint), readonly=replay_only)


def _previous(out: Path, recipe: Recipe) -> dict[str, StageRecord]:
    """The stage records of the build folder's build.json, by name (none when unreadable)."""
    record = read_build_record(out)
    return {s.name: s for s in record.stages} if record is not None else {}


class _Run:
    def __init__(
        self, recipe: Recipe, out: Path, data: Any, stages: list[Stage], asker: _Asker | None,
        previous: dict[str, StageRecord], say: Callable[[str], None], progress: bool,
        image_asker: _ImageAsker | None = None,
    ) -> None:  # fmt: skip
        self.recipe, self.out, self.data, self.stages = recipe, out, data, stages
        self.asker, self.previous, self.say, self.progress = asker, previous, say, progress
        self.image_asker = image_asker
        self.budget = (asker or image_asker).budget if (asker or image_asker) else _Budget()
        self.records: list[StageRecord] = []

    def settings_digest(self, spec: StageSpec, stage: Stage) -> str:
        model = self.asker.model if self.asker is not None and stage.generator else None
        imager = (
            self.image_asker.model
            if self.image_asker is not None and stage.image_generator
            else None
        )
        body: dict[str, Any] = {
            "use": spec.use, "settings": spec.settings, "seed": self.recipe.seed,
            "send_seed": self.recipe.send_seed,
            "generator": redacted(model.fingerprint) if model is not None else None,
        }  # fmt: skip
        if imager is not None:
            body["image_generator"] = redacted(imager.fingerprint)
        if stage.files is not None:
            body["files"] = {
                str(p): file_sha256(p) if p.is_file() else None
                for p in stage.files(self.out, **spec.settings)
            }
        return json_sha256(body, nan=True, default=str)

    def reusable(self, record: StageRecord) -> StageRecord | None:
        old = self.previous.get(record.name)
        if old is None or old.settings_digest != record.settings_digest:
            return None
        if old.input_sha256 != record.input_sha256 or old.use != record.use:
            return None
        path = self.out / old.output
        if not path.is_file() or file_sha256(path) != old.output_sha256:
            return None
        return old

    def all(self) -> BuildResult:
        import pyarrow.parquet as pq

        rows, input_sha, rerun = self.data.rows, self.data.sha256, False
        checked_first = False
        for n, (spec, stage) in enumerate(zip(self.recipe.stages, self.stages, strict=True), 1):
            record = StageRecord(
                index=n, name=spec.label, use=spec.use, settings=dict(spec.settings),
                settings_digest=self.settings_digest(spec, stage), input_sha256=input_sha,
            )  # fmt: skip
            old = None if rerun else self.reusable(record)
            if old is not None:
                record = old.model_copy(update={"reused": True})
                rows = None  # read only when a later stage needs it
            else:
                if rows is None:
                    rows = pq.read_table(self.out / self.records[-1].output)
                if not checked_first:
                    self.plan(n, rows)
                    checked_first = True
                self.check_budget(spec, stage, rows)
                try:
                    rows = self.run_stage(record, spec, stage, rows)
                except HumanStepPending as pause:  # build.json keeps the stages done
                    pause.stage = f"stage {n}/{len(self.stages)} {spec.label}"
                    self.write(complete=False)  # even with none done: a build folder
                    raise
                rerun = True
            self.records.append(record)
            input_sha = record.output_sha256
            self.write(complete=False)
        self.write(complete=True)
        self.summary()
        last = self.out / self.records[-1].output
        return BuildResult(self.out, self.records, last, self.budget.sent)

    def plan(self, first: int, rows: Any) -> None:
        """Before any work: what runs, and the requests the first stage to run will send."""
        reused = [r.name for r in self.records]
        if reused:
            self.say(f"reused: {', '.join(reused)} (unchanged)")
        todo = [s.label for s in self.recipe.stages[first - 1 :]]
        self.say(f"to run: {', '.join(todo)}")

    def check_budget(self, spec: StageSpec, stage: Stage, rows: Any) -> None:
        asker: _Asker | _ImageAsker | None = (
            self.image_asker if stage.image_generator else self.asker
        )
        if asker is None or not (stage.generator or stage.image_generator):
            return
        if stage.requests is None:
            self.say(f"{spec.label}: asks the generator; its requests are counted as it asks")
            return
        prompts = list(stage.requests(rows, **spec.settings))
        todo = 0 if not prompts else asker.missing(prompts)
        what = "image requests" if stage.image_generator else "requests"
        self.say(f"{spec.label}: {len(prompts)} {what}, {todo} to send")
        if todo and asker.replay_only:
            raise LexsemError(
                f"replay only: stage {spec.label!r} has {todo} {what} without a stored answer "
                f"in {asker.store.path if asker.store is not None else 'the store'}"
            )
        left = self.budget.left()
        if left is not None and todo > left:
            raise LexsemError(
                f"stage {spec.label!r} would send {todo} {what}, more than --max-requests "
                f"{self.budget.max_requests} allows ({left} left); nothing more was sent"
            )

    def run_stage(self, record: StageRecord, spec: StageSpec, stage: Stage, rows: Any) -> Any:
        import pyarrow.parquet as pq

        ctx = StageContext(self.out, self.recipe.seed, spec.label, self.progress, self.asker,
                           imager=self.image_asker, output=stage_file(record.index, spec.label),
                           input=self.records[-1].output if self.records else "",
                           sized=self.sized(record.index))  # fmt: skip
        before = self.request_stats()
        where = f"stage {record.index}/{len(self.stages)} {spec.label}"
        if self.asker is not None:
            self.asker.label = where
        self.say(f"{where}: {rows.num_rows} rows in")
        start = time.perf_counter()
        result = stage.fn(rows, ctx, **spec.settings)
        record.seconds = round(time.perf_counter() - start, 3)
        check_rows(result, f"stage {record.index} ({spec.label})")
        record.output = stage_file(record.index, spec.label)
        with atomic_path(self.out / record.output) as tmp:
            pq.write_table(result, tmp)
        record.output_sha256 = file_sha256(self.out / record.output)
        record.rows = result.num_rows
        mask = accepted(result).to_pylist()
        record.accepted = sum(mask)
        reasons = result[REJECTED].to_pylist() if REJECTED in result.column_names else []
        record.rejected = dict(Counter(r for r in reasons if r is not None).most_common())
        record.counts = dict(ctx.counts)
        if self.asker is not None or self.image_asker is not None:
            after = self.request_stats()
            record.requests = {
                k: after[k] - before[k] for k in ("asked", "stored", "sent", "retried")
            }
        self.say(f"{where}: {_done_line(record)}")
        return result

    def sized(self, index: int) -> tuple[str, ...]:
        """How to change the rows kept by the stages before stage `index` that size them
        (`Stage.target`): ``--set LABEL.SETTING=N`` and, where the recipe sets it, its value."""
        out = []
        for spec, stage in zip(self.recipe.stages[: index - 1], self.stages, strict=False):
            if stage.target is not None:
                now = spec.settings.get(stage.target)
                said = f" (now {now})" if now is not None else ""
                out.append(f"--set {spec.label}.{stage.target}=N{said}")
        return tuple(out)

    def request_stats(self) -> Counter[str]:
        """Requests so far (asked, stored, sent), text and images together."""
        total: Counter[str] = Counter()
        for asker in (self.asker, self.image_asker):
            if asker is not None:
                total.update(asker.stats)
        return total

    def write(self, *, complete: bool) -> None:
        recipe = self.recipe
        model = self.asker.model if self.asker is not None else None
        imager = self.image_asker.model if self.image_asker is not None else None
        record = BuildRecord(
            lexsem_version=__version__,
            complete=complete,
            recipe=RecipeInfo(name=recipe.name, path=str(recipe.path), sha256=recipe.sha256),
            input=InputInfo(
                described=self.data.described,
                sha256=self.data.sha256,
                rows=self.data.rows.num_rows,
            ),
            model=None
            if model is None
            else GeneratorInfo(
                spec=redact(str(recipe.generator)), fingerprint=redacted(model.fingerprint)
            ),
            image_model=None
            if imager is None
            else GeneratorInfo(
                spec=redact(str(recipe.image_generator)),
                fingerprint=redacted(imager.fingerprint),
            ),
            seed=recipe.seed,
            stages=self.records,
        )
        write_build_record(self.out, record)

    def summary(self) -> None:
        """After the build: per stage its rows, accepted rows, rejected rows per reason and
        requests (sent, served by the store, retried), and the build's requests."""
        self.say("stage                     rows  accepted  rejected (per reason)")
        for r in self.records:
            why = ", ".join(f"{k}: {v}" for k, v in r.rejected.items()) or "-"
            state = " (reused)" if r.reused else ""
            asked = ""
            if r.requests:
                q = r.requests
                asked = (f"; requests: {q.get('sent', 0)} sent, {q.get('stored', 0)} stored, "
                         f"{q.get('retried', 0)} retried")  # fmt: skip
            self.say(
                f"{r.index:02d} {r.name[:20]:<20} {r.rows:>6} {r.accepted:>9}  {why}{asked}{state}"
            )
        if self.asker is not None or self.image_asker is not None:
            stats = self.request_stats()
            self.say(
                f"requests sent: {self.budget.sent} (retried: {stats['retried']}, "
                f"served by the store: {stats['stored']})"
            )
