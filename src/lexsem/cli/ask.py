"""`lexsem ask`: a chat model (an OpenAI-compatible API, or a local `vlm:` model behind the
same interface) asked the papers' multiple-choice prompts, or VQAScore from an API's
log-probabilities, through the request store. `write_recorded_run` turns its answers or scores
(and `score-answers`' files) into a run."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli.options import EVAL, CacheDir, CocoVal, DataDir, ImageRoot
from lexsem.errors import LexsemError

__all__ = ["ask", "write_recorded_run"]


@dataclass(frozen=True)
class _Where:
    """Where `ask` reads and writes: the benchmark, its images, the caches."""

    benchmark: str
    data_dir: Path | None
    cache_dir: Path | None
    coco_val2017: Path | None
    image_root: Path | None


def ask(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="openai:MODEL?base_url=URL (any OpenAI-compatible server: vLLM, llama.cpp, "
            "Ollama, OpenAI); key from $OPENAI_API_KEY; &logprobs=prompt for vLLM's prompt "
            "log-probs (--vqascore). Or vlm:MODEL, a local generative VLM (multiple choice, "
            "k-shot included).",
        ),
    ],
    benchmark: Annotated[str, typer.Option("--benchmark", "-b", help="NAME or NAME/SUBSET.")],
    prompt: Annotated[
        str | None,
        typer.Option(
            help="scpp1, scpp2, scpp3, scpp_order (triplets) or sc_gpt4v (pairs); not with "
            "--vqascore."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the answers (or, with --vqascore, every score) here (JSONL).",
        ),
    ] = None,
    shots: Annotated[
        int,
        typer.Option(
            min=0, help="Show K other items of the subset, answered rightly, before each question."
        ),
    ] = 0,
    shot_seed: Annotated[int, typer.Option(help="Seed of the demonstrations drawn.")] = 0,
    import_file: Annotated[
        Path | None,
        typer.Option(
            "--import",
            help="First store these recorded answers (JSONL / JSON list, as score-answers reads) "
            "under the keys of their requests.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="--import replaces stored answers that differ; --run replaces a run."
        ),
    ] = False,
    vqascore: Annotated[
        bool,
        typer.Option(
            "--vqascore",
            help="VQAScore from the model's log-probabilities instead of multiple choice: P(yes) "
            "to a question about each caption, ranked as the benchmark's image task.",
        ),
    ] = False,
    score: Annotated[str, typer.Option(help="--vqascore: vqa, vqa_norm or vqa_diff.")] = "vqa",
    question: Annotated[
        str | None,
        typer.Option(
            help="--vqascore: a template with {text}, or t17_1..t17_5 (SugarCrepe++ Table 17); "
            "default: VQAScore's question (see docs/generative.md)."
        ),
    ] = None,
    answer: Annotated[str, typer.Option(help="--vqascore: the answer scored.")] = "Yes",
    negative: Annotated[str, typer.Option(help="--vqascore: the other answer.")] = "No",
    run_out: Annotated[
        Path | None,
        typer.Option(
            "--run",
            help="Also write a run folder of the answers or scores (per-item hits, CIs), usable "
            "by compare and report.",
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="The model's name in the --run folder (default: MODEL).")
    ] = None,
    replay_only: Annotated[
        bool, typer.Option("--replay-only", help="Send nothing: every answer from the store.")
    ] = False,
    max_requests: Annotated[
        int | None, typer.Option("--max-requests", min=0, help="Refuse to send more than this.")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests at a time.")] = 4,
    data_dir: DataDir = EVAL.data_dir,
    cache_dir: CacheDir = EVAL.cache_dir,
    coco_val2017: CocoVal = EVAL.coco_val2017,
    image_root: ImageRoot = EVAL.image_root,
) -> None:
    """Ask a chat model the papers' multiple-choice prompts about each item, in every option
    ordering (optionally after k-shot demonstrations), or with --vqascore its P(yes) about each
    caption; answers are stored as they arrive (a rerun sends only what is missing) and scored
    as `score-answers` does. --import stores recorded answers first."""
    _check_ask_options(prompt, vqascore, shots, import_file, score)
    if run_out is not None:
        from lexsem.results.run_folder import check_out_dir

        check_out_dir(run_out, force=force)  # before anything is sent
    where = _Where(benchmark, data_dir, cache_dir, coco_val2017, image_root)
    chat = _chat_model(model)
    send = {"replay_only": replay_only, "max_requests": max_requests,
            "concurrency": concurrency if chat.backend == "openai" else 1}  # fmt: skip
    if vqascore:
        vqa = {"question": question, "answer": answer, "negative": negative, "score": score}
        stats, recorded = _asked(chat, where, _ask_vqa, out, send, vqa)
    else:
        mc = {"prompt": str(prompt), "shots": shots, "shot_seed": shot_seed}
        stats, recorded = _asked(chat, where, _ask_choices, out, send, mc, import_file, force)
    if run_out is not None:
        recorded.name = name or chat.model
        write_recorded_run(recorded, benchmark, data_dir, cache_dir, run_out, force)
    _summary(stats, out, "scores" if vqascore else "answers")


def _asked(
    chat: Any, where: _Where, how: Callable[..., Any], out: Path | None, send: dict[str, Any],
    options: dict[str, Any], import_file: Path | None = None, force: bool = False,
) -> tuple[Any, Any]:  # fmt: skip
    """Run `how` (multiple choice or VQAScore) with the model's request store open: (the
    store's statistics, the answers or scores as a recorded model of a run)."""
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.engine.request_store import RequestStore
    from lexsem.evaluator import attach_embedded_images
    from lexsem.images.image_store import ImageStore
    from lexsem.models.protocols import fingerprint_key
    from lexsem.paths import cache_dir as resolve_cache

    loaded = load_benchmark(where.benchmark, data_dir=where.data_dir, cache_root=where.cache_dir)
    root = resolve_cache(where.cache_dir)
    images = ImageStore(coco_val2017=where.coco_val2017, image_root=where.image_root,
                        cache_root=root)  # fmt: skip
    attach_embedded_images(images)  # Hugging Face datasets' images (BiVLC, Winoground)
    with RequestStore(root, fingerprint_key(chat.fingerprint)) as store:
        if import_file is not None:
            _import_answers(chat, loaded, images, store, import_file, force=force, **options)
        return how(chat, loaded.items, images, store, out, send, **options)


def _summary(stats: Any, out: Path | None, what: str) -> None:
    imported = f" ({stats.n_imported} imported)" if stats.n_imported else ""
    typer.echo(
        f"{stats.n_requests} requests: {stats.n_stored} answered from the store{imported}, "
        f"{stats.n_sent} sent ({stats.n_attempts} attempts)"
        + (f"; {what} written to {out}" if out else ""),
        err=True,
    )


def _chat_model(spec: str) -> Any:
    """The chat model of `ask`: an OpenAI-compatible server (`openai:`), or a local generative
    VLM (`vlm:`, an alias of one) behind the same interface."""
    from lexsem.models.backends.openai_chat import OpenAIChat

    if spec.strip().lower().startswith("openai:"):
        return OpenAIChat(spec)
    from lexsem.models.backends.local_chat import LocalChat
    from lexsem.models.backends.vlm_chat import VLMAnswerer
    from lexsem.models.factory import load_model

    model = load_model(spec)
    if not isinstance(model, VLMAnswerer):
        raise LexsemError(
            f"ask needs a chat model: openai:MODEL?base_url=URL (an API) or vlm:MODEL (a local "
            f"generative VLM), not {spec!r}"
        )
    return LocalChat(model)


def _check_ask_options(
    prompt: str | None, vqascore: bool, shots: int, import_file: Path | None, score: str
) -> None:
    from lexsem.tasks.ask_vqa import SCORES
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


def _ask_choices(
    chat: Any, items: Any, images: Any, store: Any, out: Path | None, send: dict[str, Any],
    *, prompt: str, shots: int, shot_seed: int,
) -> Any:  # fmt: skip
    from lexsem.atomic import atomic_open
    from lexsem.tasks.choice_report import choice_markdown, score_recorded
    from lexsem.tasks.choice_run import ask_choices
    from lexsem.tasks.recorded_run import RecordedAnswers

    answers, stats = ask_choices(
        chat, items, images, prompt, store, shots=shots, shot_seed=shot_seed, **send
    )
    extra = {"shots": shots, "shot_seed": shot_seed} if shots else {}
    if out is not None:
        with atomic_open(out, "w", encoding="utf-8") as fh:
            for a in answers:
                rec = {"id": a.item_id, "subset": a.subset, "prompt": a.prompt,
                       "ordering": a.ordering, "answer": a.text, **extra}  # fmt: skip
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    typer.echo(choice_markdown(score_recorded(answers, items, chat.name)))
    if shots:
        typer.echo(f"{shots} demonstrations before each question (seed {shot_seed})")
    fp = {**chat.fingerprint, "shots": shots, "shot_seed": shot_seed}
    return stats, RecordedAnswers(answers, prompt, chat.model, fp, where=chat.name, spec=chat.name)


def _import_answers(
    chat: Any, loaded: Any, images: Any, store: Any, path: Path, *, prompt: str, shots: int,
    shot_seed: int, force: bool,
) -> None:  # fmt: skip
    from lexsem.engine.chat_import import import_answers
    from lexsem.tasks.choice_run import import_rows

    rows = import_rows(path, loaded, images, prompt=prompt, shots=shots, shot_seed=shot_seed)
    st = import_answers(chat, rows, store, path, force=force)
    typer.echo(
        f"{path}: {st.n_records} answers: {st.n_written} imported into {store.path}, "
        f"{st.n_present} there already, {st.n_replaced} replaced, {st.n_null} null (not "
        "imported)",
        err=True,
    )


def _ask_vqa(
    chat: Any, items: Any, images: Any, store: Any, out: Path | None, send: dict[str, Any],
    **options: Any,
) -> Any:  # fmt: skip
    from lexsem.atomic import atomic_open
    from lexsem.tasks.ask_vqa import ask_vqa, vqa_markdown
    from lexsem.tasks.recorded_run import RecordedScores

    result, stats = ask_vqa(chat, items, images, store, **options, **send)
    if out is not None:
        with atomic_open(out, "w", encoding="utf-8") as fh:
            for r in result.pairs:
                rec = {"id": r.item_id, "subset": r.subset, "role": r.role, "image": r.image,
                       "text": r.text,
                       "score": r.score, "probs": {a: {"p": p.prob, "tokens": list(p.tokens),
                       "below_top_k": p.below_top_k} for a, p in r.probs.items()}}  # fmt: skip
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    typer.echo(vqa_markdown(result, options["score"], chat.name))
    scores = {(r.subset, r.item_id, r.image, r.text): r.score for r in result.pairs}
    fp = {**chat.fingerprint, "vqascore": {k: options[k] for k in sorted(options)}}
    return stats, RecordedScores(scores, chat.model, fp, where=chat.name, spec=chat.name)


def write_recorded_run(
    recorded: Any,
    benchmark: str,
    data_dir: Path | None,
    cache_dir: Path | None,
    out: Path,
    force: bool,
) -> None:
    """The run of answers or scores made elsewhere (`lexsem.tasks.recorded_run`) on
    `benchmark`, written to `out`."""
    from lexsem.config import EvalConfig
    from lexsem.evaluator import Evaluator

    cfg = EvalConfig(benchmarks=[benchmark], data_dir=data_dir, cache_dir=cache_dir)
    run = Evaluator(cfg).run_recorded(recorded, out=out, force=force)
    tasks = ", ".join(run.record.config.tasks)
    typer.echo(f"run folder: {out} ({run.record.model.name}; {tasks})", err=True)
