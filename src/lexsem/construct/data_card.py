"""The data card of a frozen benchmark for people: a Hugging Face dataset card (``README.md``
in the benchmark folder), made from the facts of ``data_card.json`` by the stages `freeze` and
`baseline_scores` (docs/building.md, "Freeze").

The card is a YAML header (``license``, ``pretty_name``, ``task_categories``,
``size_categories``, ``source_datasets``, ``configs`` with the ``data_files``
`datasets.load_dataset` reads: `lexsem.construct.dataset_files`) and then, in this order: the
description, how to load it, its construction (recipe, input, generators, every stage with its
settings and counts, the generator's settings as each stage sent them), the items per category
(a category the rows name but no item is left in counts 0), the rows left out, the human
steps, the baselines, intended use, limitations, the licences of the sources, the papers whose
recipe was used (by title), and the files with their sha256. Datasheets for Datasets asks a
dataset to say where its items came from, how they were made and filtered, and under which
licence; these sections hold what the build recorded.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lexsem.fake_llm import MODEL as FAKE_MODEL

__all__ = ["card_markdown", "category_counts", "generator_settings", "yaml_header"]

SUGARCREPE = "SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality"
SCPP = "SugarCrepe++ Dataset: Vision-Language Model Sensitivity to Semantic and Lexical Alterations"
VISLA = "VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and Lexical Alterations"
BIVLC = "BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval"

# the papers whose recipe each stage follows (its module's docstring cites the section)
PAPERS = {
    "adversarial_refine": (SUGARCREPE,),
    "sugarcrepe_negatives": (SUGARCREPE, BIVLC),
    "template_filter": (BIVLC,),
    "blind_scores": (SUGARCREPE, BIVLC),
    "score_percentile": (BIVLC,),
    "clean_captions": (BIVLC,),
    "caption_format": (BIVLC,),
    "generate_images": (BIVLC,),
    "select_best_image": (BIVLC,),
    "export_human_task": (BIVLC,),
    "fold_back_answers": (BIVLC,),
    "train_manifest": (BIVLC,),
    "scpp_second_positive": (SCPP,),
    "vsr_spatial_pairs": (VISLA,),
    "vsr_negative_candidates": (VISLA,),
    "fold_back_validation": (SCPP, VISLA),
}

# per format: what an item is, the papers' tasks run on it, Hugging Face task categories
FORMATS = {
    "scpp": (
        "SugarCrepe++ triplets: an image (optional), two captions that mean the same (P1, P2) "
        "and a negative caption (N) that changes the meaning (SugarCrepe++, §2). `lexsem eval` "
        "runs the text-only tasks (TOT) and, with images, image-to-text (ITT).",
        SCPP,
        ("sentence-similarity", "image-to-text"),
    ),
    "sugarcrepe": (
        "SugarCrepe pairs: an image, its caption and a hard negative caption (SugarCrepe, §3); "
        "a model is right when it scores the caption above the negative.",
        SUGARCREPE,
        ("image-to-text",),
    ),
    "visla": (
        "VISLA triplets: an image (optional), two captions that mean the same (P1, P2) and a "
        "lexically close negative caption (N) that changes the meaning (VISLA, §3); `lexsem eval` "
        "runs VISLA's tasks: text-to-text (T2T, with P1-N and P2-N) and, with images, I2T.",
        VISLA,
        ("sentence-similarity", "image-to-text"),
    ),
    "bivlc": (
        "BiVLC quads: two images and two captions, each caption right for one image (BiVLC, "
        "§3); `lexsem eval` runs image-to-text (I2T), text-to-image (T2I) and group.",
        BIVLC,
        ("image-to-text", "text-to-image"),
    ),
}

SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"))  # fmt: skip


def category_counts(names: Iterable[Any], frozen: Iterable[str]) -> dict[str, int]:
    """Items per category: every category `names` holds (the rows', rejected ones too) and each
    of `frozen` (the items'), 0 where no item is left; sorted by name."""
    counts = Counter(frozen)
    every = {n for n in names if isinstance(n, str)} | set(counts)
    return {n: counts.get(n, 0) for n in sorted(every)}


def _size(n: int) -> str:
    return next((label for top, label in SIZES if n < top), "n>10M")


def _licence_id(licence: str) -> str:
    return licence.strip().lower().replace(" ", "-")


def yaml_header(card: dict[str, Any]) -> dict[str, Any]:
    """The Hugging Face card's YAML header: licence (the sources' licences; ``unknown`` when
    none is given, a list when they differ), name, task categories, size, source datasets and
    the ``configs`` `datasets.load_dataset` reads."""
    build = card.get("build") or {}
    licences = sorted({_licence_id(s["licence"]) for s in card["sources"] if s.get("licence")})
    given = [s for s in card["sources"] if s.get("licence")]
    licence: Any = "unknown"
    if licences and len(given) == len(card["sources"]):
        licence = licences[0] if len(licences) == 1 else licences
    elif licences:
        licence = [*licences, "unknown"]
    tasks = FORMATS.get(card["format"], ("", "", ()))[2]
    if card["format"] in ("scpp", "visla") and not _has_images(card):  # text-only triplets
        tasks = ("sentence-similarity",)
    if card["format"] == "sugarcrepe" and not _has_images(card):  # text-only pairs
        tasks = ("text-ranking",)
    return {
        "license": licence,
        "pretty_name": card["title"] or (build.get("recipe") or {}).get("name") or "benchmark",
        "task_categories": list(tasks),
        "size_categories": [_size(card["rows"]["frozen"])],
        "source_datasets": [f"extended|{s['source']}" for s in card["sources"]],
        "configs": card.get("configs") or [],
    }


def _has_images(card: dict[str, Any]) -> bool:
    return bool(card.get("items_with_image", 1))


def generator_settings(card: dict[str, Any]) -> list[dict[str, Any]]:
    """For each stage that asked the generator: the generation settings its requests carried:
    the generator's own (its fingerprint's ``max_tokens``, ``temperature``, ...) overridden by
    the stage's ``params``, and the recipe's seed when the recipe sends it (``send_seed``, read
    from the recipe file when it is still the one build.json records; else not known). A stage
    that draws again with another seed (`scpp_second_positive`'s regenerations: the seed plus
    the attempt) sends those seeds on its later requests."""
    from lexsem.construct.catalog import get_stage
    from lexsem.errors import LexsemError

    build = card.get("build") or {}
    fingerprint = (build.get("model") or {}).get("fingerprint") or {}
    own = {k: v for k, v in fingerprint.items() if k not in ("backend", "base_url", "model")}
    send_seed = _send_seed(build.get("recipe") or {})
    out = []
    for s in build.get("stages") or []:
        try:
            asks = get_stage(str(s.get("use"))).generator
        except LexsemError:
            asks = False
        if not asks:
            continue
        params = (s.get("settings") or {}).get("params") or {}
        sent = {**own, **({"seed": build.get("seed")} if send_seed else {}), **params}
        out.append({"stage": s.get("name"), "sent": sent, "seed_sent": send_seed})
    return out


def _send_seed(recipe: dict[str, Any]) -> bool | None:
    """The recipe's ``send_seed`` (default true), None when its file is gone or changed."""
    from lexsem.config_file import read_config_file
    from lexsem.digests import file_sha256
    from lexsem.errors import LexsemError

    path = Path(str(recipe.get("path") or "")).expanduser()
    try:
        if not path.is_file() or file_sha256(path) != recipe.get("sha256"):
            return None
        value = read_config_file(path, what="recipe").raw.get("send_seed", True)
    except (LexsemError, OSError):
        return None
    return value if isinstance(value, bool) else None


def card_markdown(card: dict[str, Any]) -> str:
    """The data card for people (module doc): a Hugging Face dataset card."""
    import yaml

    build = card["build"] or {}
    recipe = build.get("recipe") or {}
    header = yaml.safe_dump(yaml_header(card), sort_keys=False, allow_unicode=True)
    title = card["title"] or recipe.get("name") or "built benchmark"
    out = ["---", header.rstrip("\n"), "---", "", f"# {title}", ""]
    out += _description(card, build)
    out += _loading(card)
    out += _construction(card, build)
    out += _categories(card)
    out += _left_out(card["rows"])
    out += _human(card.get("human") or [])
    out += _baselines_markdown(card.get("baselines") or [])
    out += _use_and_limits(card, build)
    out += _sources(card)
    out += _citation(card, build)
    out += _files(card)
    for section, body in card["notes"].items():
        out += ["", f"## {section}", "", "```json", json.dumps(body, indent=2, default=str), "```"]
    return "\n".join(out) + "\n"


TEXT_ONLY_PAIRS = (
    "SugarCrepe pairs without images: a caption and a hard negative caption (SugarCrepe, §3). "
    "Image-to-text needs the images; `lexsem eval` scores the captions alone with a blind text "
    "scorer (task `blind`: a language model's likelihood, Vera or CoLA; SugarCrepe, §3), right "
    "when it scores the caption above the negative."
)


def _description(card: dict[str, Any], build: dict[str, Any]) -> list[str]:
    what = FORMATS.get(card["format"], (f"Format `{card['format']}`.", "", ()))[0]
    if card["format"] == "sugarcrepe" and not _has_images(card):
        what = TEXT_ONLY_PAIRS
    rows = card["rows"]
    subsets = len(card.get("categories") or {}) or len(card["files"])
    inp = build.get("input") or {}
    made = (
        f"Built by lexsem {card['lexsem_version']} with the recipe "
        f"`{(build.get('recipe') or {}).get('name')}` from {inp.get('described')} "
        f"({inp.get('rows')} rows); seed {card['seed']}."
        if build
        else f"Frozen by lexsem {card['lexsem_version']}; no build record (build.json) was found."
    )
    return ["## Dataset description", "",
            f"{rows['frozen']} items in {subsets} "
            f"{'category' if subsets == 1 else 'categories'}, format `{card['format']}`. {what}",
            "", made]  # fmt: skip


def _loading(card: dict[str, Any]) -> list[str]:
    images = (
        "The two images of a row are `datasets` Image columns, their bytes in the file."
        if card["format"] == "bivlc"
        else "The column `filename` holds each item's image reference as the JSON file does "
        "(a path, read where `lexsem eval` reads it; null without an image): the images are "
        "referenced, not copied."
    )
    return ["", "## Loading", "", "```python", "import datasets",
            'ds = datasets.load_dataset("DIR/benchmark")  # DatasetDict, split "test"', "```",
            "", "or `lexsem eval -b build:DIR` (every file's sha256 checked against this card). "
            + images]  # fmt: skip


def _construction(card: dict[str, Any], build: dict[str, Any]) -> list[str]:
    out = ["", "## Construction", ""]
    if not build:
        return [*out, "No build record (build.json) was found."]
    recipe, inp = build.get("recipe") or {}, build.get("input") or {}
    model, imager = build.get("model") or {}, build.get("image_model") or {}
    out += [f"- recipe: {recipe.get('name')} (sha256 `{recipe.get('sha256')}`)",
            f"- input: {inp.get('described')} ({inp.get('rows')} rows, sha256 "
            f"`{inp.get('sha256')}`)",
            f"- generator: {model.get('spec') or 'none'}",
            f"- image generator: {imager.get('spec') or 'none'}"]  # fmt: skip
    if model.get("fingerprint"):
        out.append(f"- generator fingerprint: `{json.dumps(model['fingerprint'])}`")
    if (model.get("fingerprint") or {}).get("model") == FAKE_MODEL:
        out += ["", f"**The generator was `{FAKE_MODEL}`, lexsem's fake LLM: its answers are "
                "fixed rules, not a model. These items are for trying the tool, not for "
                "measuring models.**"]  # fmt: skip
    out += ["", "| stage | uses | rows | accepted | rejected (per reason) | settings |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for s in build.get("stages") or []:
        why = ", ".join(f"{k}: {v}" for k, v in (s.get("rejected") or {}).items()) or "-"
        settings = json.dumps(s.get("settings") or {}, ensure_ascii=False)
        out.append(f"| {s.get('name')} | {s.get('use')} | {s.get('rows')} | "
                   f"{s.get('accepted')} | {why} | `{settings}` |")  # fmt: skip
    sent = generator_settings(card)
    if sent:
        out += ["", "Generator settings as each stage sent them (the generator's own, overridden "
                "by the stage's `params`):", "", "| stage | sent |", "|---|---|"]  # fmt: skip
        for g in sent:
            seed = "" if g["seed_sent"] is not None else " (seed sent: not known)"
            out.append(f"| {g['stage']} | `{json.dumps(g['sent'], default=str)}`{seed} |")
    return out


def _categories(card: dict[str, Any]) -> list[str]:
    counts = card.get("categories") or {f["subset"]: f["items"] for f in card["files"]}
    out = ["", "## Items per category", "", "| category | items |", "|---|---|"]
    return out + [f"| {name} | {n} |" for name, n in counts.items()]


def _left_out(rows: dict[str, Any]) -> list[str]:
    out = ["", "## Rows left out", "", f"{rows['in']} rows in, {rows['frozen']} frozen, "
           f"{sum(rows['left_out'].values())} left out (rejected)."]  # fmt: skip
    return out + [f"- {why}: {k}" for why, k in rows["left_out"].items()]


def _human(human: list[dict[str, Any]]) -> list[str]:
    out = ["", "## Human steps", ""]
    if not human:
        return [*out, "None: no person checked these items in this build."]
    out += ["| stage | uses | counts |", "|---|---|---|"]
    return out + [f"| {h['stage']} | {h['use']} | "
                  f"{', '.join(f'{k}: {v}' for k, v in h['counts'].items()) or '-'} |"
                  for h in human]  # fmt: skip


def _baselines_markdown(baselines: list[dict[str, Any]]) -> list[str]:
    """The `baselines` of the card (stage `baseline_scores`) as a table, micro rows only."""
    rows = [b for b in baselines if b.get("subset") == "_micro"] or baselines
    if not rows:
        return []
    out = ["", "## Baselines", "", "| model | task | metric | subset | n | accuracy | CI |",
           "|---|---|---|---|---|---|---|"]  # fmt: skip
    for b in rows:
        ci = (
            f"[{b['ci_low']:.2f}, {b['ci_high']:.2f}]"
            if b.get("ci_low") is not None and b.get("ci_high") is not None
            else "-"
        )
        out.append(f"| {b['model']} | {b['task']} | {b['metric']} | {b['subset']} | {b['n']} | "
                   f"{b['accuracy']:.2f} | {ci} |")  # fmt: skip
    return out


def _use_and_limits(card: dict[str, Any], build: dict[str, Any]) -> list[str]:
    generated = bool((build.get("model") or {}).get("spec"))
    imaged = bool((build.get("image_model") or {}).get("spec"))
    checked = bool(card.get("human"))
    limits = [
        "- The items are only as good as the rows and the steps above: their input's "
        "captions carry that dataset's language, topics and biases.",
    ]
    if generated:
        limits.append("- Captions were written by a language model; without the human steps "
                      "some may not mean what their role says (a second positive that changes "
                      "the meaning, a negative that does not).")  # fmt: skip
    if imaged:
        limits.append("- Images were generated by a text-to-image model and may show "
                      "artefacts a detector can use (BiVLC, §5.4).")  # fmt: skip
    if not checked:
        limits.append("- No person checked the items in this build (section Human steps).")
    if any(s.get("use") == "adversarial_refine" for s in build.get("stages") or []):
        limits.append("- Adversarial refinement removes what the two blind scorers named in "
                      "the settings can exploit, not every text-only shortcut (SugarCrepe, "
                      "§3).")  # fmt: skip
    return ["", "## Intended use", "",
            "Evaluating how models tell captions that mean the same from captions that change "
            "the meaning, with the tasks of the papers cited below (`lexsem eval -b build:DIR`). "
            "Not meant as training data for the models evaluated on it.",
            "", "## Limitations", "", *limits]  # fmt: skip


def _sources(card: dict[str, Any]) -> list[str]:
    out = ["", "## Licences of the sources", "", "| source | items | licence |", "|---|---|---|"]
    return out + [f"| {s['source']} | {s['items']} | {s['licence'] or 'not given'} |"
                  for s in card["sources"]]  # fmt: skip


def _citation(card: dict[str, Any], build: dict[str, Any]) -> list[str]:
    papers: list[str] = []
    fmt_paper = FORMATS.get(card["format"], ("", "", ()))[1]
    for title in [fmt_paper, *(t for s in build.get("stages") or []
                               for t in PAPERS.get(str(s.get("use")), ()))]:  # fmt: skip
        if title and title not in papers:
            papers.append(title)
    out = ["", "## Citation", "", "The recipe follows these papers; cite them with this data:", ""]
    return out + [f"- {t}" for t in papers]


def _files(card: dict[str, Any]) -> list[str]:
    out = ["", "## Files", "", "| subset | file | items | sha256 |", "|---|---|---|---|"]
    out += [f"| {f['subset']} | {f['file']} | {f['items']} | `{f['sha256']}` |"
            for f in card["files"]]  # fmt: skip
    out += [f"| (load_dataset) | {f['file']} | {f['rows']} | `{f['sha256']}` |"
            for f in card.get("dataset_files") or []]  # fmt: skip
    return out
