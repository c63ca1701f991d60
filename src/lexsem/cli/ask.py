"""`lexsem ask`: a chat model (an OpenAI-compatible API, a local `vlm:` model, a user's
provider) asked the papers' multiple-choice prompts, or VQAScore from its log-probabilities,
through `Evaluator(config).run(model)` (`lexsem.ask`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import FOLDER_OPTIONS, check_bounds, config_group, with_groups
from lexsem.config import EvalConfig

__all__ = ["ask"]

# the chat settings are EvalConfig fields: their help, bounds and defaults come from there
AskSettings = config_group(
    "AskSettings", EvalConfig, "shots", "shot_seed", "replay_only", "max_requests",
    "concurrency", "answer_rule", "data_dir", "cache_dir", "coco_val2017", "image_root",
    doc="The demonstrations, the request budget, the answer rule and the folders "
    "(EvalConfig's fields).", **FOLDER_OPTIONS,
)  # fmt: skip


# the command's own options
Model = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="openai:MODEL?base_url=URL (any OpenAI-compatible server: vLLM, llama.cpp, "
        "Ollama, OpenAI); key from $OPENAI_API_KEY; &logprobs=prompt for vLLM's prompt "
        "log-probs (--vqascore). Or vlm:MODEL, a local generative VLM (multiple choice, "
        "k-shot included), or any registered chat backend.",
    ),
]
Benchmark = Annotated[str, typer.Option("--benchmark", "-b", help="NAME or NAME/SUBSET.")]
Prompt = Annotated[
    str | None,
    typer.Option(
        help="scpp1, scpp2, scpp3, scpp_order (triplets) or sc_gpt4v (pairs); not with --vqascore."
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out", "-o", help="Write the answers (or, with --vqascore, every score) here (JSONL)."
    ),
]
ImportFile = Annotated[
    Path | None,
    typer.Option(
        "--import",
        help="First store these recorded answers (JSONL / JSON list, as score-answers reads) "
        "under the keys of their requests.",
    ),
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="--import replaces stored answers that differ; --run replaces a run; --out "
        "replaces a file that lexsem did not write.",
    ),
]
VQAScore = Annotated[
    bool,
    typer.Option(
        "--vqascore",
        help="VQAScore from the model's log-probabilities instead of multiple choice: P(yes) "
        "to a question about each caption, ranked as the benchmark's image task.",
    ),
]
Score = Annotated[str, typer.Option(help="--vqascore: vqa, vqa_norm or vqa_diff.")]
Question = Annotated[
    str | None,
    typer.Option(
        help="--vqascore: a template with {text}, or t17_1..t17_5 (SugarCrepe++ Table 17); "
        "default: VQAScore's question (see docs/generative.md)."
    ),
]
Answer = Annotated[str, typer.Option(help="--vqascore: the answer scored.")]
Negative = Annotated[str, typer.Option(help="--vqascore: the other answer.")]
RunOut = Annotated[
    Path | None,
    typer.Option(
        "--run",
        help="Also write a run folder of the answers or scores (per-item hits, CIs), usable "
        "by compare and report.",
    ),
]
Name = Annotated[
    str | None, typer.Option(help="The model's name in the --run folder (default: MODEL).")
]


@with_groups
def ask(
    model: Model,
    benchmark: Benchmark,
    prompt: Prompt = None,
    out: Out = None,
    import_file: ImportFile = None,
    force: Force = False,
    vqascore: VQAScore = False,
    score: Score = "vqa",
    question: Question = None,
    answer: Answer = "Yes",
    negative: Negative = "No",
    run_out: RunOut = None,
    name: Name = None,
    settings: AskSettings = AskSettings.DEFAULTS,
) -> None:
    """Ask a chat model the papers' multiple-choice prompts about each item, in every option
    ordering (optionally after k-shot demonstrations), or with --vqascore its P(yes) about each
    caption; answers are stored as they arrive (a rerun sends only what is missing) and scored
    as `score-answers` does. --import stores recorded answers first."""
    from lexsem import ask as library
    from lexsem.outputs import check_output_dir, check_outputs, named_paths
    from lexsem.report.choice import choice_markdown, choice_scores, vqa_markdown

    shots, shot_seed = settings.shots, settings.shot_seed
    library.check_ask(prompt, vqascore, shots, import_file, score)
    check_bounds(EvalConfig, {"--shots": ("shots", shots), "--shot-seed": ("shot_seed", shot_seed),
                              "--max-requests": ("max_requests", settings.max_requests),
                              "--concurrency": ("concurrency", settings.concurrency)})  # fmt: skip
    check_outputs({"--out": out}, inputs=named_paths(import_file, benchmark, run_out), force=force)
    if run_out is not None:
        check_output_dir(run_out, kind="run.json", inputs=named_paths(import_file, benchmark),
                         option="--run")  # fmt: skip
    vqa = {"score": score, "question": question, "answer": answer, "negative": negative}
    result = library.ask(
        model, benchmark, prompt=prompt, vqascore=vqascore, vqa=vqa, import_file=import_file,
        force=force, run_out=run_out, name=name, **settings.given(),
        progress=True,  # answered / failed / retrying: a bar on a terminal, lines when piped
    )  # fmt: skip
    run, st = result.run, result.imported
    if st is not None:
        typer.echo(
            f"{import_file}: {st.n_records} answers: {st.n_written} imported into the store, "
            f"{st.n_present} there already, {st.n_replaced} replaced, {st.n_null} null (not "
            "imported)",
            err=True,
        )
    if vqascore:
        if out is not None:
            library.write_scores(run, out)
        typer.echo(vqa_markdown(run, score, result.model.name))
    else:
        if out is not None:
            library.write_answers(run, out, shots=shots, shot_seed=shot_seed)
        typer.echo(choice_markdown(choice_scores(run)))
        if shots:
            typer.echo(f"{shots} demonstrations before each question (seed {shot_seed})")
    if run_out is not None:
        tasks = ", ".join(run.record.config.tasks)
        typer.echo(f"run folder: {run_out} ({run.record.model.name}; {tasks})", err=True)
    t = run.record.timings
    imported = f" ({t.n_requests_imported} imported)" if t.n_requests_imported else ""
    what = "scores" if vqascore else "answers"
    typer.echo(
        f"{t.n_requests} requests: {t.n_requests_stored} answered from the store{imported}, "
        f"{t.n_requests_sent} sent ({t.n_request_attempts} attempts)"
        + (f"; {what} written to {out}" if out else ""),
        err=True,
    )
