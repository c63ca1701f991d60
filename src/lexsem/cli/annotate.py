"""`lexsem annotate create|serve|status|export|invite`: human studies (docs/human-studies.md);
the work is `lexsem.annotate`. `cli/app.py` registers these as the `annotate` command group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lexsem.cli.options import CocoVal, DataDir, ImageRoot
from lexsem.errors import LexsemError

__all__ = ["ANNOTATE_COMMANDS", "annotate_app"]

annotate_app = typer.Typer(
    help="Human studies: create one from a benchmark or a build, serve it, watch it, export it.",
    no_args_is_help=True,
)

Study = Annotated[Path, typer.Argument(help="The study file (SQLite).")]


def _columns(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        role, sep, name = v.partition("=")
        if not sep or not role or not name:
            raise LexsemError(f"--column {v!r}: write ROLE=NAME, e.g. generated=negative_caption")
        out[role] = name
    return out


def _read_text(path: Path | None, option: str) -> str | None:
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise LexsemError(f"{option} {path}: cannot be read ({exc})") from None
    if not text:
        raise LexsemError(f"{option} {path}: the file is empty")
    return text


def create(
    study: Study,
    benchmark: Annotated[
        list[str] | None,
        typer.Option(
            "--benchmark", "-b", help="A benchmark selection (NAME, NAME/SUBSET, build:DIR)."
        ),
    ] = None,
    from_build: Annotated[
        Path | None, typer.Option("--from-build", help="A build stage's Parquet output.")
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind", "-k", help="Task kind(s), in serving order (default: by item kind)."
        ),
    ] = None,
    sample: Annotated[
        int | None, typer.Option("--sample", min=1, help="Items drawn per subset (default all).")
    ] = None,
    sample_total: Annotated[
        int | None,
        typer.Option("--sample-total", min=1, help="Items drawn from the whole selection."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Sampling and randomisation seed.")] = 0,
    practice: Annotated[int, typer.Option("--practice", min=0, help="Practice items.")] = 0,
    gold: Annotated[int, typer.Option("--gold", min=0, help="Gold (attention) items.")] = 0,
    gold_pass: Annotated[
        float, typer.Option("--gold-pass", min=0, max=1, help="Flag gold accuracy below this.")
    ] = 0.8,
    overlap: Annotated[int, typer.Option("--overlap", min=1, help="Annotators per item.")] = 1,
    quota: Annotated[
        int | None, typer.Option("--quota", min=1, help="Items per annotator (default all).")
    ] = None,
    annotators: Annotated[
        int, typer.Option("--annotators", "-n", min=0, help="Personal links to make now.")
    ] = 0,
    name: Annotated[str | None, typer.Option("--name", help="The study's name.")] = None,
    instructions: Annotated[
        Path | None, typer.Option("--instructions", help="A text file replacing the instructions.")
    ] = None,
    consent: Annotated[
        Path | None, typer.Option("--consent", help="A text file replacing the consent text.")
    ] = None,
    completion_code: Annotated[
        str | None, typer.Option("--completion-code", help="Shown at the end (crowd platforms).")
    ] = None,
    column: Annotated[
        list[str] | None, typer.Option("--column", help="ROLE=NAME: a build table's column.")
    ] = None,
    base_url: Annotated[
        str, typer.Option("--base-url", help="Where the study will be served (for the links).")
    ] = "http://127.0.0.1:8000",
    links: Annotated[
        Path | None, typer.Option("--links", help="Also write the links (JSON) to this file.")
    ] = None,
    data_dir: DataDir = None,
    coco_val2017: CocoVal = None,
    image_root: ImageRoot = None,
) -> None:
    """Create a study: items, practice and gold items, task kinds and study design in one
    SQLite file; prints the admin link, the crowd join link and personal links (shown once)."""
    import secrets

    from lexsem.annotate.sources import (
        benchmark_units,
        build_folder,
        build_units,
        check_kinds,
        image_reader,
    )
    from lexsem.annotate.study import StudySettings, create_study

    kinds = check_kinds(kind or [])
    if bool(benchmark) == (from_build is not None):
        raise LexsemError("give either --benchmark (one or more) or --from-build, not both")
    if links is not None and links.exists():
        raise LexsemError(f"--links {links}: exists; it would hold secrets, choose a new file")
    if from_build is not None:
        if len(kinds) != 1:
            raise LexsemError("--from-build: name one --kind (validate, best_of_k or ambiguity)")
        if sample_total is not None:
            raise LexsemError(
                "--from-build: --sample draws from the table (--sample-total is for -b)"
            )
        if practice or gold:
            raise LexsemError(
                "--from-build: generated items have no right answer for practice/gold"
            )
        make = build_units(from_build, kinds[0], columns=_columns(column or []), sample=sample,
                           seed=seed)  # fmt: skip
        sources: tuple[str, ...] = (f"parquet:{from_build}",)
        folder: Path | None = build_folder(from_build)
    else:
        if column:
            raise LexsemError("--column names a build table's columns (--from-build)")
        kinds, make = benchmark_units(
            benchmark or [], kinds, sample=sample, seed=seed, practice=practice, gold=gold,
            total=sample_total, data_dir=data_dir,
        )  # fmt: skip
        sources, folder = tuple(benchmark or []), None
    settings = StudySettings(
        name=name or study.stem, kinds=kinds, benchmarks=sources, overlap=overlap, quota=quota,
        gold_pass=gold_pass, seed=seed,
        completion_code=completion_code or secrets.token_hex(4).upper(),
        instructions=_read_text(instructions, "--instructions"),
        consent=_read_text(consent, "--consent"),
    )  # fmt: skip
    reader = image_reader(folder, coco_val2017=coco_val2017, image_root=image_root)
    made = create_study(study, settings, make, reader, annotators=annotators)
    urls = made.urls(base_url)
    if links is not None:
        from lexsem.atomic import atomic_open

        with atomic_open(links) as fh:
            json.dump(urls, fh, indent=2)
    typer.echo(f"study: {study} ({', '.join(kinds)})")
    typer.echo(f"admin: {urls['admin']}")
    typer.echo(f"join (crowd link): {urls['join']}")
    for aid, url in urls["annotators"].items():
        typer.echo(f"{aid}: {url}")
    typer.echo("these links are shown once: the study keeps only their hashes", err=True)


def serve(
    study: Study,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port.")] = 8000,
    rate_limit: Annotated[
        int, typer.Option("--rate-limit", min=1, help="Requests per token per minute.")
    ] = 300,
) -> None:
    """Serve the study (uvicorn; 127.0.0.1 unless --host says otherwise)."""
    import uvicorn

    from lexsem.annotate.app import create_app

    app = create_app(study, rate_limit=rate_limit)
    typer.echo(f"serving {study} on http://{host}:{port} (Ctrl-C stops)", err=True)
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")


def status(
    study: Study,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Progress per annotator, gold accuracy (flagged annotators) and agreement so far."""
    import dataclasses

    from lexsem.annotate.progress import progress
    from lexsem.annotate.store import connect

    con = connect(study)
    try:
        p = progress(con)
    finally:
        con.close()
    if as_json:
        data = dataclasses.asdict(p)
        typer.echo(json.dumps(data, indent=2))
        return
    typer.echo(f"{p.study}: {p.items} items x overlap {p.overlap}; {p.answers} answers")
    for kind, (pct, n, alpha) in p.agreement.items():
        shown = "undefined" if alpha != alpha else f"{alpha:.3f}"  # NaN: one label only
        typer.echo(f"  agreement {kind}: {pct:.1f}% over {n} pairs, Krippendorff's alpha {shown}")
    typer.echo("annotator  answered  gold     median_s  status")
    for a in p.annotators:
        gold = f"{a.gold_correct}/{a.gold_answered}" if a.gold_answered else "-"
        secs = f"{a.median_seconds:.1f}" if a.median_seconds is not None else "-"
        state = ("FLAGGED" if a.flagged else "done" if a.done
                 else "started" if a.assigned else "-")  # fmt: skip
        typer.echo(
            f"{a.annotator:<10} {a.answered:>4}/{a.assigned:<4} {gold:<8} {secs:>8}  {state}"
        )


def export(
    study: Study,
    answers: Annotated[
        Path, typer.Option("--answers", help="Write the answers table (Parquet) here.")
    ],
) -> None:
    """Export the study's answers as one table (docs/human-studies.md, "The answers table")."""
    import pyarrow.parquet as pq

    from lexsem.annotate.answers import answers_table
    from lexsem.annotate.store import connect
    from lexsem.atomic import atomic_path

    if answers.resolve() == study.resolve():
        raise LexsemError(f"--answers {answers}: that is the study file")
    con = connect(study)
    try:
        table = answers_table(con)
    finally:
        con.close()
    with atomic_path(answers) as tmp:
        pq.write_table(table, tmp)
    typer.echo(f"{table.num_rows} answers -> {answers}")


def invite(
    study: Study,
    n: Annotated[int, typer.Option("-n", min=1, max=10000, help="How many links.")] = 1,
    base_url: Annotated[str, typer.Option("--base-url")] = "http://127.0.0.1:8000",
) -> None:
    """Make new personal annotator links (shown once)."""
    from lexsem.annotate.store import connect
    from lexsem.annotate.study import add_annotators

    con = connect(study)
    try:
        made = add_annotators(con, n)
    finally:
        con.close()
    for aid, token in made:
        typer.echo(f"{aid}: {base_url.rstrip('/')}/a/{token}")


ANNOTATE_COMMANDS = {
    "create": create,
    "serve": serve,
    "status": status,
    "export": export,
    "invite": invite,
}
