"""The BiVLC recipe end to end offline (BiVLC, §3): the shipped recipe's stages with a tiny
random diffusers pipeline, the two human steps answered in files, a BiVLC-format benchmark
that `lexsem eval -b build:DIR` runs and `lexsem validate` passes; the answer file checks."""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from builders.backends import require_module
from builders.image_server import serve_images
from builders.tiny_diffusers import write_tiny_pipeline
from builders.tiny_dual_models import write_clip
from lexsem.cli.app import app
from lexsem.construct.images import BIVLC_SUFFIX, image_prompt
from lexsem.construct.recipe import with_input_path
from lexsem.construct.runner import build
from lexsem.errors import LexsemError, ModelError

ITEMS = [
    ("a man throwing a ball", "a ball throwing a man", "swap", "obj"),
    ("A red car.", "a blue car", "replace", "att"),
    ("a dog on a sofa", "A dog and a cat on a sofa", "add", "obj"),
    ("a cup on a table", "a cup under a table.", "replace", "rel"),
]
K = 4


def _shipped() -> str:
    return (resources.files("lexsem.construct") / "recipes" / "bivlc.toml").read_text("utf-8")


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("diffusers")
    return write_tiny_pipeline(tmp_path_factory.mktemp("tiny-sd") / "pipe")


@pytest.fixture(scope="module")
def image_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module's builds: the tiny pipeline's images are made once."""
    return tmp_path_factory.mktemp("image-cache")


_CACHE: dict[Path, Path] = {}  # recipe -> the cache its builds use


def _build(recipe: Path, out: Path, **kw: Any) -> Any:
    kw.setdefault("cache_dir", _CACHE[recipe])
    kw.setdefault("echo", lambda _: None)
    return build(recipe, out, **kw)


@pytest.fixture
def recipe(tmp_path: Path, pipeline_dir: Path, image_cache: Path) -> Path:
    """The shipped recipe, its input and image generator replaced (tiny pipeline, 2 steps)."""
    photos = tmp_path / "photos"
    photos.mkdir()
    lines = []
    for n, (cap, neg, typ, sub) in enumerate(ITEMS):
        Image.new("RGB", (10, 8), (40 * n, 90, 200 - 30 * n)).save(photos / f"{n}.png")
        lines.append(json.dumps({"id": f"coco-{n}", "image": str(photos / f"{n}.png"),
                                 "caption": cap, "negative_caption": neg, "type": typ,
                                 "subtype": sub}))  # fmt: skip
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n")
    text = _shipped()
    shipped_generator = next(x for x in text.splitlines() if x.startswith("image_generator"))
    assert "unet=mhdang/dpo-sdxl-text2image-v1" in shipped_generator and "guidance=5" in text
    text = text.replace(shipped_generator, f'image_generator = "diffusers:{pipeline_dir}?steps=2"')
    text = with_input_path(text, "items.jsonl").replace("size = 512", "size = 16")
    path = tmp_path / "bivlc.toml"
    path.write_text(text)
    _CACHE[path] = image_cache
    return path


SOURCE = "items.jsonl:"  # a task's id: the row's source and source_id


def _tasks(out: Path, task: str) -> list[dict[str, Any]]:
    """The tasks written, their ids without the source."""
    lines = (out / "human" / task / "tasks.jsonl").read_text().splitlines()
    tasks = [json.loads(x) for x in lines]
    assert all(t["task"].startswith(SOURCE) for t in tasks)
    return [{**t, "task": t["task"].removeprefix(SOURCE)} for t in tasks]


def _answer(out: Path, task: str, answers: dict[str, str]) -> Path:
    path = out / "human" / task / "answers.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["task", "answer"])
        w.writerows((SOURCE + key, answer) for key, answer in answers.items())
    return path


def test_bivlc_recipe_end_to_end(recipe: Path, tmp_path: Path, pipeline_dir: Path) -> None:
    out = tmp_path / "build"
    _CACHE[recipe] = tmp_path / "cache"  # its own: every image made here
    with pytest.raises(LexsemError, match=r"waiting for people: no answers file .*best_image"):
        _build(recipe, out, echo=lambda _: None)
    record = json.loads((out / "build.json").read_text())
    assert [s["name"] for s in record["stages"]] == [
        "format_caption", "format_negative", "images", "ask_best_image",
    ]  # fmt: skip
    assert record["stages"][2]["requests"] == {
        "asked": 4 * K,
        "stored": 0,
        "sent": 4 * K,
        "retried": 0,
    }
    assert record["image_model"]["fingerprint"]["steps"] == 2

    rows = pq.read_table(out / record["stages"][2]["output"]).to_pylist()
    for row in rows:
        assert len(row["images"]) == K and all((out / p).is_file() for p in row["images"])
        assert Image.open(out / row["images"][0]).size == (16, 16)
    # the prompt and seeds: BiVLC's suffix, periods removed
    assert image_prompt("A cup under a table.", BIVLC_SUFFIX, True) == (
        "A cup under a table, high resolution, professional, 4k, highly detailed"
    )
    tasks = _tasks(out, "best_image")
    assert [t["task"] for t in tasks] == [f"coco-{n}" for n in range(4)]
    assert tasks[1]["description"] == "A blue car." and tasks[1]["choices"][-1] == "None"
    assert (
        "Select one image that adequately represents the description"
        in (out / "human" / "best_image" / "README.md").read_text()
    )
    template = (out / "human" / "best_image" / "answers.template.csv").read_text().splitlines()
    assert template[0] == "task,answer" and len(template) == 5

    _answer(out, "best_image", {"coco-0": "A", "coco-1": "None", "coco-2": "c", "coco-3": "B"})
    with pytest.raises(LexsemError, match=r"waiting for people: .*ambiguity"):
        _build(recipe, out, echo=lambda _: None)
    amb = _tasks(out, "ambiguity")
    assert [t["task"] for t in amb] == ["coco-0", "coco-2", "coco-3"]  # coco-1: no good image
    chosen = {t["task"]: t for t in tasks}
    generated = {}
    for t in amb:
        want = chosen[t["task"]]["images"]["A" if t["task"] == "coco-0" else
                                           "C" if t["task"] == "coco-2" else "B"]  # fmt: skip
        letter = next(k for k, v in t["images"].items() if v == want)
        generated[t["task"]] = letter
    other = {"A": "B", "B": "A"}
    _answer(out, "ambiguity", {"coco-0": other[generated["coco-0"]],
                               "coco-2": generated["coco-2"], "coco-3": "both"})  # fmt: skip
    lines: list[str] = []
    result = _build(recipe, out, echo=lines.append)
    assert result.sent == 0  # no image made again
    assert "reused: format_caption, format_negative, images, ask_best_image, best_image, " \
           "ask_ambiguity (unchanged)" in lines  # fmt: skip
    record = json.loads((out / "build.json").read_text())
    by = {s["name"]: s for s in record["stages"]}
    assert by["best_image"]["rejected"] == {"no_good_image": 1}
    assert by["ambiguity"]["rejected"] == {"no_good_image": 1, "ambiguous": 2}
    assert by["freeze"]["counts"] == {"frozen": 1, "left out": 3}

    bench = pq.read_table(out / "benchmark" / "test.parquet").to_pylist()
    assert len(bench) == 1 and bench[0]["caption"] == "A man throwing a ball."
    assert bench[0]["negative_caption"] == "A ball throwing a man."
    assert bench[0]["image"]["bytes"] == (tmp_path / "photos" / "0.png").read_bytes()
    picked = chosen["coco-0"]["images"]["A"]
    assert bench[0]["negative_image"]["bytes"] == (out / picked).read_bytes()
    card = (out / "benchmark" / "README.md").read_text()
    assert f"- image generator: diffusers:{pipeline_dir}?steps=2\n" in card

    runner = CliRunner()
    res = runner.invoke(app, ["validate", f"build:{out}"])
    assert res.exit_code == 0, res.output
    clip = write_clip(tmp_path / "clip")
    run = tmp_path / "run"
    res = runner.invoke(app, ["eval", "-m", f"clip:{clip}", "-b", f"build:{out}", "-o",
                              str(run), "--n-boot", "0", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    record = json.loads((run / "run.json").read_text())
    assert record["benchmarks"][0]["items"] == {"swap_obj": 1}


def test_a_changed_answer_file_reruns_from_its_stage(recipe: Path, tmp_path: Path) -> None:
    out = tmp_path / "build"
    with pytest.raises(LexsemError, match="waiting for people"):
        _build(recipe, out, echo=lambda _: None)
    _answer(out, "best_image", dict.fromkeys([f"coco-{n}" for n in range(4)], "None"))
    with pytest.raises(LexsemError, match="freeze: no accepted rows"):
        _build(recipe, out, echo=lambda _: None)
    _answer(out, "best_image", {"coco-0": "None", "coco-1": "None", "coco-2": "None",
                                "coco-3": "D"})  # fmt: skip
    lines: list[str] = []
    with pytest.raises(LexsemError, match=r"waiting for people: .*ambiguity"):
        _build(recipe, out, echo=lines.append)
    assert "to run: best_image, ask_ambiguity, ambiguity, freeze" in lines
    assert [t["task"] for t in _tasks(out, "ambiguity")] == ["coco-3"]


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("task,answer\nS0,A\nS9,B\n", r"answers.csv, line 3: no task 'S9'"),
        ("task,answer\nS0,E\n", r"answers.csv, line 2: task 'S0': answer 'E' is not one of "
         r"A, B, C, D, None"),
        ("task,answer\nS0,A\nS0,B\n", r"line 3: task 'S0' is answered again \(first on line 2\)"),
        ("task,answer\nS0,A\n", r"3 of 4 tasks have no answer \(first: 'S1'\)"),
        ("id,choice\n", r"answers.csv, line 1: the header must name `task` and `answer`"),
    ],
)  # fmt: skip
def test_bad_answers_name_file_and_line(
    recipe: Path, tmp_path: Path, content: str, error: str
) -> None:
    out = tmp_path / "build"
    with pytest.raises(LexsemError, match="waiting for people"):
        _build(recipe, out, echo=lambda _: None)
    task = SOURCE + "coco-"  # S<n>: the id of item n
    (out / "human" / "best_image" / "answers.csv").write_text(content.replace("S", task))
    with pytest.raises(LexsemError, match=error.replace("S", task)):
        _build(recipe, out, echo=lambda _: None)


def test_jsonl_answers_and_replay_only(recipe: Path, tmp_path: Path) -> None:
    out = tmp_path / "build"
    with pytest.raises(LexsemError, match="waiting for people"):
        _build(recipe, out, echo=lambda _: None)
    path = out / "human" / "best_image" / "answers.jsonl"
    path.write_text("".join(json.dumps({"task": f"items.jsonl:coco-{n}", "answer": "a"}) + "\n"
                            for n in range(4)))  # fmt: skip
    with pytest.raises(LexsemError, match=r"waiting for people: .*ambiguity"):
        _build(recipe, out, echo=lambda _: None)
    other = tmp_path / "again"  # a new folder: every image from the store, none made
    with pytest.raises(LexsemError, match="waiting for people"):
        _build(recipe, other, replay_only=True, echo=lambda _: None)
    with pytest.raises(LexsemError, match=r"would send 16 image requests, more than "):
        _build(recipe, tmp_path / "third", max_requests=3, force=True, echo=lambda _: None,
              cache_dir=tmp_path / "empty-cache")  # fmt: skip


def test_api_image_build_resumes_without_sending_twice(recipe: Path, tmp_path: Path) -> None:
    """A build whose image API fails on one caption stores the others' images; the rerun sends
    only that caption's K requests."""
    out = tmp_path / "build"
    with serve_images() as (server, url):
        text = recipe.read_text()
        line = next(x for x in text.splitlines() if x.startswith("image_generator"))
        recipe.write_text(
            text.replace(line, f'image_generator = "openai-image:img?base_url={url}"')
        )
        server.fail = "A dog and a cat"
        with pytest.raises(ModelError, match=r"4 of 16 image requests failed"):
            _build(recipe, out, cache_dir=tmp_path / "api-cache")
        assert len(server.answered) == 12
        server.fail = None
        with pytest.raises(LexsemError, match="waiting for people"):
            _build(recipe, out, cache_dir=tmp_path / "api-cache")
        assert len(server.answered) == 16
        assert sorted(set(server.answered[12:])) == [
            "A dog and a cat on a sofa, high resolution, professional, 4k, highly detailed"
        ]
        with pytest.raises(LexsemError, match="waiting for people"):
            _build(recipe, tmp_path / "other", cache_dir=tmp_path / "api-cache")
        assert len(server.answered) == 16
