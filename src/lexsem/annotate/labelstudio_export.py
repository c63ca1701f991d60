"""A study as Label Studio projects (`lexsem annotate labelstudio-export STUDY -o DIR`,
docs/human-studies.md, "Label Studio"), the format of `lexsem.annotate.labelstudio`.

`export_study(study, out)` writes, whole or not at all:

- ``DIR/<project>/`` for each task kind of the study (BiVLC: ``i2t`` and ``t2i``):
  ``tasks.json`` (Label Studio's task import format, one task per unit of the study, practice
  units first, the rest in an order drawn from the study's seed), ``config.xml`` (the labelling
  configuration), ``project.json`` (the body of Label Studio's "create project" call: title,
  configuration, instructions, ``maximum_annotations`` = the study's overlap with
  ``overlap_cohort_percentage`` 100 so that every task goes to that many annotators, a skip
  button whose skips are not served again, tasks served in order) and, where the tasks show
  images served by Label Studio's local-files storage, ``storage.json`` (the body of its
  "create local files storage" call);
- ``DIR/images/``: the study's images the tasks show, named by the sha256 of their bytes;
- ``DIR/lexsem-key.json``: the key (`lexsem.annotate.labelstudio.ExportKey`), which the
  import needs and which is never uploaded;
- ``DIR/README.md``: the steps, with this export's paths.

A task's options are shown in one order for every annotator (Label Studio serves one task to
all), drawn per task: ``numpy.random.default_rng(bootstrap_seed(seed, kind, item_id))``.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.annotate import store
from lexsem.annotate.instructions import study_instructions, study_parts
from lexsem.annotate.labelstudio import (
    KEY_FILE,
    ExportKey,
    KeyTask,
    labelling_config,
    project_name,
    task_key,
)
from lexsem.annotate.study import load_settings
from lexsem.annotate.study_check import check_study
from lexsem.atomic import fsync_dir
from lexsem.errors import DataError, LexsemError
from lexsem.stats.seeds import bootstrap_seed

__all__ = ["LOCAL_FILES", "export_study"]

#: Image URLs served by Label Studio's local-files storage, relative to its document root
#: (``LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT`` = the export folder).
LOCAL_FILES = "/data/local-files/?d=images/"
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}


def _order(seed: int, unit: store.StoredUnit) -> tuple[list[dict[str, Any]], int]:
    """The unit's options in the order shown, and the seed of that order."""
    task_seed = bootstrap_seed(seed, unit.kind, unit.item_id)
    options = unit.payload["options"]
    order = np.random.default_rng(task_seed).permutation(len(options)).tolist()
    return [options[i] for i in order], task_seed % 2**63


def _served(units: list[store.StoredUnit], seed: int) -> list[store.StoredUnit]:
    """Practice units first (in the study's order), the others shuffled by the study's seed."""
    rest = [u for u in units if not u.practice]
    random.Random(f"{seed}:labelstudio").shuffle(rest)
    return [u for u in units if u.practice] + rest


def _instructions(own: str | None, units: list[store.StoredUnit]) -> str:
    """A project's instructions as HTML: the study's own text or its kind's, and its practice
    and attention tasks (`instructions.study_instructions` off the study's page: Label Studio
    has its own keys and shows no right answers)."""
    parts = study_parts(units, [units[0].kind], None, per_annotator=False)
    paragraphs = study_instructions(parts, own, page=False)
    text = "\n\n".join(p.text for p in paragraphs)
    return "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n") if p.strip())


def export_study(study: str | Path, out: str | Path, *, image_url: str = LOCAL_FILES) -> list[Path]:
    """Write the Label Studio projects of the study file `study` into the new folder `out`
    (see the module doc); image URLs are `image_url` + the image's file name. The files
    written (the key and the README last)."""
    study, out = Path(study), Path(out)
    if not image_url.strip():
        raise LexsemError("--image-url: give a URL prefix (default: Label Studio's local files)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LexsemError(f"-o {out}: exists and is not an empty folder; choose a new folder")
    check_study(study, writable=False)
    con = store.connect(study)
    try:
        settings = load_settings(con)
        secret = str(store.get_meta(con, "secret"))
        units = store.units(con)
        if not units:
            raise DataError("the study has no units", file=study)
        images = {
            sha: store.image(con, sha)
            for u in units
            for sha in [
                u.payload.get("base_image"),
                *(o.get("image") for o in u.payload["options"]),
            ]
            if sha
        }
    finally:
        con.close()
    missing = sorted(sha for sha, img in images.items() if img is None)
    if missing:
        raise DataError(f"the study file lacks image {missing[0]} (damaged?)", file=study)
    names = {sha: f"{sha}.{_EXT.get(img[0], 'png')}" for sha, img in images.items() if img}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".part"))
    try:
        files = _write(tmp, out, settings, secret, units, images, names, image_url)
        with contextlib.suppress(OSError):
            out.rmdir()
        os.rename(tmp, out)
        fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / f.relative_to(tmp) for f in files]


def _write(
    tmp: Path,
    out: Path,
    settings: Any,
    secret: str,
    units: list[store.StoredUnit],
    images: dict[str, Any],
    names: dict[str, str],
    image_url: str,
) -> list[Path]:
    files: list[Path] = []
    key_tasks: dict[str, KeyTask] = {}
    projects: dict[str, str] = {}
    served = _served(units, settings.seed)
    local = image_url == LOCAL_FILES and bool(images)
    for kind in dict.fromkeys(u.kind for u in units):
        mine = [u for u in served if u.kind == kind]
        name = project_name(kind)
        projects[name] = kind
        n = max(len(u.payload["options"]) for u in mine)
        image_options = any(o.get("image") for u in mine for o in u.payload["options"])
        image_base = any(u.payload.get("base_image") for u in mine)
        has_base = image_base or any(u.payload.get("base_text") for u in mine)
        body = []
        for u in mine:
            shown, seed = _order(settings.seed, u)
            key = task_key(secret, u.id)
            key_tasks[key] = KeyTask(
                project=name, kind=kind, item_id=u.item_id, subset=u.subset,
                benchmark=u.benchmark, options=[o["id"] for o in shown], correct=u.correct,
                practice=u.practice, gold=u.gold, seed=seed,
            )  # fmt: skip
            p = u.payload
            data: dict[str, Any] = {
                "lexsem_study": settings.name,
                "lexsem_task": key,
                "context": "\n".join(f"{label}: {text}" for label, text in p.get("context", [])),
                "base_text": p.get("base_text") or "",
                "base_image": image_url + names[p["base_image"]] if p.get("base_image") else "",
                "edit_text": p.get("edit_text") or "",
            }
            for k in range(1, n + 1):
                o = shown[k - 1] if k <= len(shown) else {}
                data[f"option{k}"] = (image_url + names[o["image"]] if o.get("image")
                                      else o.get("text") or "")  # fmt: skip
            body.append({"data": data})
        folder = tmp / name
        folder.mkdir()
        config = labelling_config(kind, n, image_base=image_base, image_options=image_options,
                                  has_base=has_base)  # fmt: skip
        project = {
            "title": f"{settings.name} {name}"[:50],
            "description": f"lexsem study {settings.name}, {kind} ({len(mine)} tasks)",
            "label_config": config,
            "expert_instruction": _instructions(settings.instructions, mine),
            "show_instruction": True,
            "show_skip_button": True,
            "enable_empty_annotation": False,
            "maximum_annotations": settings.overlap,
            "overlap_cohort_percentage": 100,
            "sampling": "Sequential sampling",
            "skip_queue": "IGNORE_SKIPPED",
            "show_annotation_history": False,
            "show_collab_predictions": False,
        }
        files += [_json(folder / "tasks.json", body), _text(folder / "config.xml", config),
                  _json(folder / "project.json", project)]  # fmt: skip
        if local:
            storage = {"title": "lexsem images", "path": str((out / "images").resolve()),
                       "use_blob_urls": False}  # fmt: skip
            files.append(_json(folder / "storage.json", storage))
    if images:
        (tmp / "images").mkdir()
        for sha, (_, data) in images.items():
            path = tmp / "images" / names[sha]
            path.write_bytes(data)
            files.append(path)
    key = ExportKey(study=settings.name, overlap=settings.overlap, projects=projects,
                    tasks=key_tasks)  # fmt: skip
    files.append(_json(tmp / KEY_FILE, key.model_dump(mode="json")))
    files.append(_text(tmp / "README.md", _readme(out, settings, projects, local, image_url,
                                                         bool(images))))  # fmt: skip
    return files


def _json(path: Path, body: Any) -> Path:
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _readme(
    out: Path, settings: Any, projects: dict[str, str], local: bool, url: str, images: bool
) -> str:
    """The export's README: its steps, those about serving images only when tasks show some."""
    root = out.resolve()
    names = ", ".join(f"`{p}/`" for p in projects)
    lines = [
        f"# Label Studio projects of the lexsem study {settings.name}",
        "",
        f"One project per task kind: {names}. Each folder holds `tasks.json` (the tasks to "
        "import), `config.xml` (the labelling configuration) and `project.json` (the project's "
        f"settings: `maximum_annotations` = {settings.overlap}, the study's overlap, with "
        "`overlap_cohort_percentage` = 100, so that each task goes to that many annotators; "
        "skips are kept and not served again; tasks are served in order, practice first).",
        "",
        f"`{KEY_FILE}` maps each task back to its item and options: keep it, never upload it "
        "(the tasks name no option's role; the key does). The import needs it.",
        "",
        "## Steps",
        "",
    ]
    step = 1
    if images and local:
        lines += [
            f"{step}. Start Label Studio so that it serves this folder's images:",
            "",
            "   ```",
            "   LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true \\",
            f"   LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT={root} \\",
            "   label-studio start",
            "   ```",
            "",
        ]
        step += 1
    elif images:
        lines += [f"{step}. Serve `images/` at `{url}` (the tasks' image URLs start so).", ""]
        step += 1
    lines += [
        f"{step}. For each project folder, create the project from its `project.json` (in the "
        "web page: Create Project, paste `config.xml` under Labeling Setup and set the "
        "settings of `project.json`; or through the API, with Label Studio at $LS and an access "
        "token in $ACCESS: your personal access token (Account & Settings) exchanged by "
        '`curl -H "Content-Type: application/json" -d \'{"refresh": "PAT"}\' '
        "$LS/api/token/refresh`):",
        "",
        "   ```",
        '   curl -H "Authorization: Bearer $ACCESS" -H "Content-Type: application/json" \\',
        "        -d @PROJECT/project.json $LS/api/projects",
        "   ```",
        "",
        "   The settings `maximum_annotations` and `overlap_cohort_percentage` have no field in "
        "Label Studio Community's web page: set them through the API (as above, or "
        "`curl -X PATCH ... -d @PROJECT/project.json $LS/api/projects/ID`).",
        "",
    ]
    step += 1
    if images and local:
        lines += [
            f"{step}. Connect the images to each project (no sync needed): Settings, Cloud "
            f"Storage, Add Source Storage, Local files, absolute path `{root / 'images'}`; or",
            "",
            "   ```",
            "   jq '. + {project: ID}' PROJECT/storage.json | curl -H \"Authorization: Bearer "
            '$ACCESS" \\',
            '        -H "Content-Type: application/json" -d @- $LS/api/storages/localfiles',
            "   ```",
            "",
        ]
        step += 1
    lines += [
        f"{step}. Import the tasks: Import, upload `PROJECT/tasks.json`; or",
        "",
        "   ```",
        '   curl -H "Authorization: Bearer $ACCESS" -H "Content-Type: application/json" \\',
        "        -d @PROJECT/tasks.json $LS/api/projects/ID/import",
        "   ```",
        "",
        f"{step + 1}. When the annotators are done, export each project as JSON (Export, "
        '"JSON"; not JSON_MIN or CSV, which do not say who chose what) and read all of them '
        "into one answers table:",
        "",
        "   ```",
        "   lexsem annotate labelstudio-import "
        + " ".join(f"{p}-export.json" for p in projects)
        + f" --key {root / KEY_FILE} -o answers.parquet",
        "   ```",
        "",
        "The answers table is the one `lexsem annotate export` writes: `lexsem annotate "
        "agreement`, `human-run`, `report` and `compare` read it (docs/human-studies.md).",
    ]
    return "\n".join(lines) + "\n"
