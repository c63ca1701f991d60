"""`lexsem ask` and `lexsem score-answers` as library functions: a chat model (an API, a local
`vlm:` model, recorded answers) run through the one path every model takes,
`Evaluator(config).run(model)`.

- `ask`: the papers' multiple-choice prompts (`choice_<prompt>`), or with `vqascore` the
  benchmark's image-text tasks by VQAScore from the model's log-probabilities; recorded answers
  imported first (`import_recorded`) are stored under the keys of the requests the run makes.
- `score_answers`: the run of `recorded:FILE?prompt=...`: the items of the benchmark the file
  answers are scored, answers about items it does not have are left out and named in the run
  (`RunRecord.recorded`; `strict_items`: an error instead).
- `write_answers` / `write_scores`: the raw answers (the recorded-answers format
  `score-answers` reads) or every VQAScore, from the run's item table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lexsem.config import EvalConfig
from lexsem.errors import DataError, LexsemError
from lexsem.evaluator import Evaluator, image_text_tasks
from lexsem.results.run import Run

__all__ = [
    "AskResult",
    "ask",
    "check_chat_model",
    "import_recorded",
    "score_answers",
    "write_answers",
    "write_scores",
]


@dataclass
class AskResult:
    run: Run
    model: Any
    imported: Any = None  # `lexsem.engine.chat_import.ImportStats` of `--import`


def check_ask(prompt: str | None, vqascore: bool, shots: int, import_file: Any, score: str) -> None:
    """The options of `ask` fit together (before any work)."""
    from lexsem.models.vqascore import SCORES
    from lexsem.tasks.choice import PROMPTS

    if vqascore:
        given = [n for n, v in (("--prompt", prompt), ("--shots", shots),
                                ("--import", import_file)) if v]  # fmt: skip
        if given:
            raise LexsemError(f"--vqascore asks no multiple-choice prompt: drop {given[0]}")
        if score not in SCORES:
            raise LexsemError(f"unknown --score {score!r} (one of {', '.join(SCORES)})")
        return
    if prompt is None:
        raise LexsemError(f"give --prompt ({', '.join(PROMPTS)}) or --vqascore")
    if prompt not in PROMPTS:
        from lexsem.registry import did_you_mean

        raise LexsemError(f"unknown prompt {prompt!r}{did_you_mean(prompt, list(PROMPTS))}")


def check_chat_model(model: Any, spec: str) -> None:
    """`model` answers conversations (`lexsem.models.protocols.ChatModel`): else one error
    naming the chat backends, before the benchmark is read."""
    from lexsem.models.protocols import ChatModel

    if not isinstance(model, ChatModel):
        raise LexsemError(
            f"ask needs a chat model: openai:MODEL?base_url=URL (an API), vlm:MODEL (a local "
            f"generative VLM), chat:MODEL (a local text model) or recorded:FILE, not {spec!r}"
        )


def _with_vqa(spec: str, vqa: dict[str, str | None]) -> str:
    """`spec` with the VQAScore options given on the command line (for a backend that takes
    them: another is refused by the run, which says why)."""
    from lexsem.models.backend_registry import get_backend
    from lexsem.models.spec import parse_model_spec

    declared = get_backend(parse_model_spec(spec).backend).options
    given = {k: v for k, v in vqa.items() if v is not None and k in declared}
    if not given:
        return spec
    sep = "&" if "?" in spec else "?"
    return spec + sep + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in given.items())


def ask(
    spec: str, benchmark: str, *, prompt: str | None = None, vqascore: bool = False,
    vqa: dict[str, str | None] | None = None, import_file: Path | None = None,
    force: bool = False, run_out: Path | None = None, name: str | None = None,
    **config: Any,
) -> AskResult:  # fmt: skip
    """Run chat model `spec` on `benchmark` (see the module doc); `config`: fields of
    `EvalConfig` (shots, shot_seed, replay_only, max_requests, concurrency, folders)."""
    from lexsem.models.factory import load_model

    if run_out is not None:
        from lexsem.results.run_folder import check_out_dir

        check_out_dir(run_out, force=force)  # before anything is sent
    if vqascore:
        spec = _with_vqa(spec, vqa or {})
    model = load_model(spec)
    check_chat_model(model, spec)
    cfg = EvalConfig(benchmarks=[benchmark], **config)
    evaluator = Evaluator(cfg)
    if vqascore:
        tasks = [t for b in evaluator.benchmarks() for t in image_text_tasks(b.spec)]
    else:
        tasks = [f"choice_{prompt}"]
    evaluator = evaluator.derive(tasks=tuple(dict.fromkeys(tasks)),
                                 name=name or getattr(model, "model", None))  # fmt: skip
    imported = None
    if import_file is not None:
        imported = import_recorded(evaluator, model, import_file, str(prompt), force=force)
    run = evaluator.run(model, out=run_out, force=force)
    return AskResult(run, model, imported)


def import_recorded(
    evaluator: Evaluator, model: Any, path: Path, prompt: str, *, force: bool = False
) -> Any:
    """Store the recorded answers of `path` in `model`'s request store, each under the key of
    the request the run of `evaluator` makes for it (`lexsem.engine.conversations`: the same
    conversation, k-shot demonstrations included)."""
    from lexsem.engine.chat_import import ImportRow, import_answers
    from lexsem.engine.conversations import image_reader, item_request, request_about
    from lexsem.engine.request_store import RequestStore
    from lexsem.models.answers_file import read_answer_records
    from lexsem.models.protocols import fingerprint_key
    from lexsem.paths import cache_dir
    from lexsem.tasks.catalog import get_task
    from lexsem.tasks.choice import PROMPTS, orderings
    from lexsem.tasks.shots import shot_plan

    cfg = evaluator.config
    (loaded,) = evaluator.benchmarks()
    subsets = [s.spec.name for s in loaded.subsets]
    records = read_answer_records(
        path, prompt=prompt, subset=subsets[0] if len(subsets) == 1 else None
    )
    by_key = {f"{it.subset}/{it.id}": it for it in loaded.items}
    plan = shot_plan(loaded.items, cfg.shots, cfg.shot_seed) if cfg.shots else {}
    read = image_reader(evaluator.image_store())
    rows = []
    for where, a in records:
        key = f"{a.subset}/{a.item_id}"
        item = by_key.get(key)
        if item is None:
            raise DataError(
                f"{path}, {where}: item {key} is not in the benchmark selection "
                f"({', '.join(subsets)})"
            )
        n_options = PROMPTS[a.prompt].n_options
        if a.ordering not in orderings(n_options) or len(item.texts()) != n_options:
            raise DataError(
                f"{path}, {where}: item {key} has {len(item.texts())} captions; prompt "
                f"{a.prompt!r} with ordering {a.ordering!r} does not fit it"
            )
        column = next(
            c for c in get_task(f"choice_{a.prompt}").columns if c.name == f"answer_{a.ordering}"
        )
        about = request_about(loaded.spec.name, loaded.spec.decode, f"choice_{a.prompt}",
                              column.name, item, cfg.exif_transpose)  # fmt: skip
        request = item_request(column, item, read, plan.get(key, []), about)
        rows.append(ImportRow(where, f"item {key}, {a.prompt}, {a.ordering}", request, a.text))
    root = cache_dir(cfg.cache_dir)
    with RequestStore(root, fingerprint_key(model.fingerprint)) as store:
        return import_answers(model, rows, store, path, force=force)


def score_answers(
    path: Path, benchmark: str, *, prompt: str | None = None, name: str | None = None,
    run_out: Path | None = None, force: bool = False, strict_items: bool = False,
    **config: Any,
) -> Run:  # fmt: skip
    """The run of the recorded answers of `path` (`recorded:` backend) on `benchmark`: one
    multiple-choice task per prompt the file answers, read by `config`'s `answer_rule`. An
    answer about an item the benchmark lacks is left out and named in `run.record.recorded`
    (with `strict_items`, a `DataError` naming the file and line)."""
    from lexsem.models.factory import load_model

    if run_out is not None:
        from lexsem.results.run_folder import check_out_dir

        check_out_dir(run_out, force=force)  # before any work
    options = [f"prompt={prompt}"] * bool(prompt) + ["strict_items=true"] * strict_items
    spec = f"recorded:{path}" + ("?" + "&".join(options) if options else "")
    model = load_model(spec)
    evaluator = Evaluator(
        EvalConfig(benchmarks=[benchmark], tasks=model.tasks, name=name or path.stem, **config)
    )
    _check_prompts(path, model.prompts, evaluator)
    return evaluator.run(model, out=run_out, force=force)


def _check_prompts(path: Path, prompts: list[str], evaluator: Evaluator) -> None:
    """Every prompt of the file lists as many options as the benchmark's items have captions."""
    from lexsem.tasks.choice import PROMPTS

    for bench in evaluator.benchmarks():
        n = max((len(it.texts()) for it in bench.items), default=0)
        for p in prompts:
            if PROMPTS[p].n_options != n:
                raise DataError(
                    f"{path}: prompt {p!r} lists {PROMPTS[p].n_options} options, the item has "
                    f"{n} captions (benchmark {bench.spec.name})"
                )


def write_answers(run: Run, path: Path, *, shots: int = 0, shot_seed: int = 0) -> None:
    """The raw answers of `run`'s multiple-choice tasks, one record per item and ordering (the
    format `score-answers` reads; with `shots`, the k-shot settings in every record)."""
    from lexsem.atomic import atomic_open
    from lexsem.outputs import GENERATOR
    from lexsem.tasks.choice import ORDERINGS, PROMPTS
    from lexsem.tasks.choice_task import CHOICE_TASKS

    extra = {"shots": shots, "shot_seed": shot_seed} if shots else {}
    with atomic_open(path, "w", encoding="utf-8") as fh:
        for r in run.items.to_pylist():
            prompt = CHOICE_TASKS.get(r["task"])
            if prompt is None or r["metric"] != "circular":
                continue
            for o in ORDERINGS[PROMPTS[prompt].n_options]:
                rec = {**GENERATOR, "id": r["item_id"], "subset": r["subset"], "prompt": prompt,
                       "ordering": o, "answer": r[f"text_answer_{o}"], **extra}  # fmt: skip
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def write_scores(run: Run, path: Path) -> None:
    """Every VQAScore of `run`: one record per item and (image, caption), with the answers'
    probabilities (`role`: the caption's column without its `s_`/`s_i_` prefix)."""
    from lexsem.atomic import atomic_open
    from lexsem.outputs import GENERATOR
    from lexsem.tasks.catalog import get_task

    with atomic_open(path, "w", encoding="utf-8") as fh:
        for name in run.record.config.tasks:
            task = get_task(name)
            main = "group" if "group" in task.metrics else task.metrics[0]
            for r in run.items.to_pylist():
                if r["task"] != name or r["metric"] != main:
                    continue
                for col in task.columns:
                    detail = r.get(f"detail_{col.name}")
                    if not detail:
                        continue
                    d = json.loads(detail)
                    role = col.name.removeprefix("s_").removeprefix("i_")
                    rec = {**GENERATOR, "id": r["item_id"], "subset": r["subset"], "role": role,
                           "image": d["image"], "text": d["text"], "score": d["score"],
                           "probs": d["probs"]}  # fmt: skip
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
