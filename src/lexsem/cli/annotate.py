"""`lexsem annotate create|serve|status|export|invite|close|pause|reopen|revoke|rotate-admin|
verify`: human studies (docs/human-studies.md); the work is `lexsem.annotate`. `cli/app.py`
registers these as the `annotate` command group."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lexsem.annotate.config import (
    MAX_TEXT,
    CreateConfig,
    InviteConfig,
    ServeConfig,
    StudySettings,
)
from lexsem.cli.options import (
    FOLDER_OPTIONS,
    JsonOut,
    config_group,
    config_option,
    defaults,
    from_options,
    with_groups,
)
from lexsem.config import EvalConfig
from lexsem.errors import LexsemError

if TYPE_CHECKING:
    from lexsem.annotate.study import StudyUnits

__all__ = ["ANNOTATE_COMMANDS", "annotate_app"]

annotate_app = typer.Typer(
    help="Human studies: create one from a benchmark or a build, serve it, watch it, export it.",
    no_args_is_help=True,
)

Study = Annotated[Path, typer.Argument(help="The study file (SQLite).")]
INVITE = defaults(InviteConfig)


def _columns(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        role, sep, name = v.partition("=")
        if not sep or not role:
            raise LexsemError(f"--column {v!r}: write ROLE=NAME, e.g. generated=negative_caption "
                              "(ROLE= for none: image=, a study without images)")  # fmt: skip
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
    if len(text) > MAX_TEXT:
        raise LexsemError(f"{option} {path}: {len(text)} characters, at most {MAX_TEXT}")
    return text


Kinds = config_option(StudySettings, "kinds", "--kind", "-k", optional=True)
Name = config_option(StudySettings, "name", "--name", optional=True)
CompletionCode = config_option(StudySettings, "completion_code", "--completion-code",
                               optional=True, more="(default: a random one)")  # fmt: skip
StudySizes = config_group(
    "StudySizes", CreateConfig, *CreateConfig.model_fields,
    doc="How many items, practice and gold items and links a study is made with "
    "(CreateConfig's fields).", annotators=("--annotators", "-n"),
)  # fmt: skip
StudyDesign = config_group(
    "StudyDesign", StudySettings, "seed", "gold_pass", "overlap", "quota", "code_min_answered",
    "reservation_minutes", "first_answer_minutes", "join_batch", "max_participants",
    "link_hours", doc="How the study assigns items and pays out (StudySettings' fields).",
)  # fmt: skip
StudyImages = config_group(
    "StudyImages", EvalConfig, "data_dir", "coco_val2017", "image_root",
    doc="Where the benchmark files and images are (EvalConfig's fields).", **FOLDER_OPTIONS,
)  # fmt: skip
TextFile = f"(plain text, at most {MAX_TEXT} characters)"
BaseUrl = Annotated[
    str, typer.Option("--base-url", help="Where the study will be served (for the links).")
]
ServeOptions = config_group(
    "ServeOptions", ServeConfig, "host", "port", "base_url", "rate_limit",
    "reservation_minutes", "access_log", doc="How the study is served (ServeConfig's fields).",
)  # fmt: skip
NewLinks = config_option(InviteConfig, "n", "-n")
#: The options of the fields whose option is not `--` and the field's name with dashes.
OPTION_OF = {"kinds": "--kind", "annotators": "-n"}


@with_groups
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
    kind: Kinds = None,
    size_options: StudySizes = StudySizes.DEFAULTS,
    design: StudyDesign = StudyDesign.DEFAULTS,
    name: Name = None,
    instructions: Annotated[
        Path | None,
        typer.Option("--instructions", help=f"A file of the study's instructions {TextFile}."),
    ] = None,
    consent: Annotated[
        Path | None,
        typer.Option("--consent", help=f"A file of the study's consent text {TextFile}."),
    ] = None,
    completion_code: CompletionCode = None,
    column: Annotated[
        list[str] | None,
        typer.Option(
            "--column", help="ROLE=NAME: a build table's column (ROLE=: none, e.g. image=)."
        ),
    ] = None,
    base_url: BaseUrl = "http://127.0.0.1:8000",
    links: Annotated[
        Path | None, typer.Option("--links", help="Also write the links (JSON) to this file.")
    ] = None,
    images: StudyImages = StudyImages.DEFAULTS,
) -> None:
    """Create a study: items, practice and gold items, task kinds and study design in one
    SQLite file; prints the admin link, the crowd join link and personal links (shown once)."""
    import secrets

    from lexsem.annotate.sources import check_kinds, image_reader
    from lexsem.annotate.study import create_study

    sizes = from_options(CreateConfig, "study", OPTION_OF, **size_options.given())
    if bool(benchmark) == (from_build is not None):
        raise LexsemError("give either --benchmark (one or more) or --from-build, not both")
    sources = (f"parquet:{from_build}",) if from_build is not None else tuple(benchmark or [])
    settings = from_options(
        StudySettings, "study", OPTION_OF, name=name or study.stem, kinds=check_kinds(kind or []),
        benchmarks=sources, completion_code=completion_code or secrets.token_hex(4).upper(),
        instructions=_read_text(instructions, "--instructions"),
        consent=_read_text(consent, "--consent"), **design.given(),
    )  # fmt: skip
    if links is not None and links.exists():
        raise LexsemError(f"--links {links}: exists; it would hold secrets, choose a new file")
    kinds, make, folder = _units(benchmark or [], from_build, settings, sizes, column or [],
                                 images.data_dir)  # fmt: skip
    settings = settings.model_copy(update={"kinds": kinds})
    reader = image_reader(folder, coco_val2017=images.coco_val2017, image_root=images.image_root)
    made = create_study(study, settings, make, reader, annotators=sizes.annotators)
    _print_links(study, kinds, made.urls(base_url), links)


def _units(
    benchmark: list[str],
    from_build: Path | None,
    settings: StudySettings,
    sizes: CreateConfig,
    column: list[str],
    data_dir: Path | None,
) -> tuple[tuple[str, ...], Callable[[Callable[[str], str]], StudyUnits], Path | None]:
    """The study's task kinds, its units' maker and the folder its images are found in: from
    a build stage's table (`--from-build`) or from benchmark selections (`-b`)."""
    from lexsem.annotate.sources import benchmark_units, build_folder, build_units

    kinds = settings.kinds
    if from_build is None:
        if column:
            raise LexsemError("--column names a build table's columns (--from-build)")
        kinds, make = benchmark_units(
            benchmark, kinds, sample=sizes.sample, seed=settings.seed, practice=sizes.practice,
            gold=sizes.gold, total=sizes.sample_total, data_dir=data_dir,
        )  # fmt: skip
        return kinds, make, None
    if len(kinds) != 1:
        raise LexsemError("--from-build: name one --kind (validate, best_of_k or ambiguity)")
    for option, given in (("--practice", sizes.practice), ("--gold", sizes.gold)):
        if given:
            raise LexsemError(f"{option} {given}: not with --from-build: a build's rows have no "
                              "right answer to check people against")  # fmt: skip
    make = build_units(from_build, kinds[0], columns=_columns(column), sample=sizes.sample,
                       total=sizes.sample_total, seed=settings.seed)  # fmt: skip
    return kinds, make, build_folder(from_build)


def _print_links(
    study: Path, kinds: tuple[str, ...], urls: dict[str, Any], links: Path | None
) -> None:
    """Print the study's links (and write them to `links`, a new file, when given)."""
    if links is not None:  # the admin link is a secret: mode 0600 whatever the umask
        import os

        from lexsem.atomic import atomic_path

        with atomic_path(links) as tmp:
            os.chmod(tmp, 0o600)
            tmp.write_text(json.dumps(urls, indent=2), encoding="utf-8")
    typer.echo(f"study: {study} ({', '.join(kinds)})")
    typer.echo(f"admin: {urls['admin']}")
    typer.echo(f"join (crowd link): {urls['join']}")
    for aid, url in urls["annotators"].items():
        typer.echo(f"{aid}: {url}")
    typer.echo("these links are shown once: the study keeps only their hashes", err=True)


@with_groups
def serve(study: Study, serving: ServeOptions = ServeOptions.DEFAULTS) -> None:
    """Serve the study (uvicorn; 127.0.0.1 unless --host says otherwise). A study file that
    cannot take writes or fails SQLite's integrity check is refused before serving."""
    cfg = from_options(ServeConfig, "serving", {}, **serving.given())
    from urllib.parse import urlsplit

    from lexsem.annotate.app import create_app
    from lexsem.annotate.http_server import run
    from lexsem.annotate.study_check import loose_mode
    from lexsem.web_server import host_names, is_wildcard, listening, open_urls

    public = urlsplit(cfg.base_url).hostname if cfg.base_url else None
    app = create_app(
        study,
        rate_limit=cfg.rate_limit,
        reservation_minutes=cfg.reservation_minutes,
        allowed_hosts=(*host_names(cfg.host), *((public,) if public else ())),
        secure_cookies=(cfg.base_url or "").startswith("https:"),
        any_address=is_wildcard(cfg.host),
    )  # checks the study file first
    note = loose_mode(study)
    if note is not None:
        typer.echo(f"warning: {note}", err=True)
    with listening(cfg.host, cfg.port) as sock:  # a port in use: one line, no address
        here, *elsewhere = open_urls(cfg.host, cfg.port)
        others = "".join(f" (from other machines: {u})" for u in elsewhere)
        public_at = f" (public: {cfg.base_url})" if cfg.base_url else ""
        typer.echo(f"serving {study} on {here}{others}{public_at} (Ctrl-C stops)", err=True)
        run(app, sock, access_log=cfg.access_log)


def status(
    study: Study,
    json_out: JsonOut = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a --json file that lexsem did not write.")
    ] = False,
) -> None:
    """Progress per annotator, gold accuracy (flagged annotators) and agreement so far."""
    from lexsem.annotate.store import connect
    from lexsem.annotate.study_check import check_study
    from lexsem.annotate.study_progress import progress
    from lexsem.outputs import check_outputs, named_paths

    check_outputs({"--json": json_out}, inputs=named_paths(study), force=force)
    check_study(study, writable=False)
    with closing(connect(study)) as con:
        p = progress(con)
    if json_out is not None:
        _write_status(p, json_out)
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


def _write_status(p: Any, path: Path) -> None:
    """The progress as JSON (an undefined agreement as null)."""
    import dataclasses
    import math

    from lexsem.atomic import atomic_open
    from lexsem.outputs import GENERATOR

    def finite(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump({**GENERATOR, **finite(dataclasses.asdict(p))}, fh, indent=2, allow_nan=False)
        fh.write("\n")


def export(
    study: Study,
    answers: Annotated[
        Path, typer.Option("--answers", help="Write the answers table (Parquet) here.")
    ],
    participants: Annotated[
        Path | None,
        typer.Option(
            "--participants", help="Also write the participants and their codes (CSV) here."
        ),
    ] = None,
) -> None:
    """Export the study's answers as one table (docs/human-studies.md, "The answers table"),
    and the participants with their completion codes."""
    import pyarrow.parquet as pq

    from lexsem.annotate.answers import answers_table
    from lexsem.annotate.codes import participant_rows, participants_csv
    from lexsem.annotate.store import connect, get_meta
    from lexsem.annotate.study import load_settings
    from lexsem.annotate.study_check import check_study
    from lexsem.atomic import atomic_open, atomic_path

    for option, path in (("--answers", answers), ("--participants", participants)):
        if path is not None and path.resolve() == study.resolve():
            raise LexsemError(f"{option} {path}: that is the study file")
    check_study(study, writable=False)
    with closing(connect(study)) as con:
        table = answers_table(con)
        rows = participant_rows(con, load_settings(con), get_meta(con, "secret"))
    with atomic_path(answers) as tmp:
        pq.write_table(table, tmp)
    typer.echo(f"{table.num_rows} answers -> {answers}")
    if participants is not None:
        with atomic_open(participants, "wb") as fh:
            fh.write(participants_csv(rows))
        typer.echo(f"{len(rows)} participants -> {participants}")


def invite(
    study: Study,
    n: NewLinks = INVITE.n,
    base_url: BaseUrl = "http://127.0.0.1:8000",
) -> None:
    """Make new personal annotator links (shown once)."""
    from lexsem.annotate.store import connect
    from lexsem.annotate.study import add_annotators

    cfg = from_options(InviteConfig, "invite", {"n": "-n"}, n=n)
    with closing(connect(study)) as con:
        made = add_annotators(con, cfg.n)
    for aid, token in made:
        typer.echo(f"{aid}: {base_url.rstrip('/')}/a/{token}")


def _set_state(study: Path, new: str) -> None:
    from lexsem.annotate.lifecycle import set_state
    from lexsem.annotate.store import connect

    with closing(connect(study)) as con:
        old = set_state(con, new)
    typer.echo(f"{study}: {old} -> {new}")


def close(study: Study) -> None:
    """Close the study: nobody starts or answers any more (`reopen` opens it again)."""
    _set_state(study, "closed")


def pause(study: Study) -> None:
    """Pause the study: pages say so, nobody starts or answers until `reopen`."""
    _set_state(study, "paused")


def reopen(study: Study) -> None:
    """Open a paused or closed study again."""
    _set_state(study, "open")


def revoke(
    study: Study,
    link: Annotated[
        str, typer.Argument(help="An annotator id (a0001), or a link's token (personal or join).")
    ],
) -> None:
    """Revoke one link: it stops working; a participant's unanswered items go back to the
    pool."""
    from lexsem.annotate.store import connect
    from lexsem.annotate.study import revoke_link

    token = link.rstrip("/").rsplit("/", 1)[-1]  # a whole link works too
    with closing(connect(study)) as con:
        what = revoke_link(con, token)
    typer.echo(f"{study}: {what} revoked")


def rotate_admin(study: Study, base_url: BaseUrl = "http://127.0.0.1:8000") -> None:
    """A new admin link (shown once); the old one stops working, even on a running server."""
    from lexsem.annotate.store import connect
    from lexsem.annotate.study import rotate_admin as rotate

    with closing(connect(study)) as con:
        token = rotate(con)
    typer.echo(f"admin: {base_url.rstrip('/')}/admin/{token}")
    typer.echo("this link is shown once: the study keeps only its hash", err=True)


def verify(
    study: Study, code: Annotated[str, typer.Argument(help="A completion code to check.")]
) -> None:
    """Whose completion code this is and what they answered (exit status 2 where it is no
    participant's, or one who has not earned it)."""
    from lexsem.annotate.codes import earned, owner
    from lexsem.annotate.store import connect, get_meta
    from lexsem.annotate.study import load_settings

    with closing(connect(study)) as con:
        settings = load_settings(con)
        who = owner(con, get_meta(con, "secret"), settings.completion_code, code)
        if who is None:
            raise LexsemError(f"{code!r}: no participant of {study} has this code")
        got = earned(con, settings, who)
    w = got.work
    typer.echo(f"{code}: annotator {who.id} ({'join link' if who.source == 'join' else 'link'}"
               f", started {who.started_at or '-'})")  # fmt: skip
    typer.echo(f"  main questions: {w.main_answered - w.main_skipped} answered, "
               f"{w.main_skipped} skipped, {w.main - w.main_answered} open, of {w.main}; "
               f"items answered whole: {w.items_done} of {who.target or 0} taken")  # fmt: skip
    typer.echo(f"  gold: {w.gold_right} of {w.gold} right" if w.gold else "  gold: none")
    if not got.ok:
        raise LexsemError(f"{code!r} is {who.id}'s code, not earned: {got.reason}")
    typer.echo("  code earned: yes")


ANNOTATE_COMMANDS = {
    "create": create,
    "serve": serve,
    "status": status,
    "export": export,
    "invite": invite,
    "close": close,
    "pause": pause,
    "reopen": reopen,
    "revoke": revoke,
    "rotate-admin": rotate_admin,
    "verify": verify,
}
