"""Every model reaches the Evaluator one way: a new API provider is one class and one
registry line (a toy provider speaking its own JSON to a local fake server, run end to end into
a run folder); `eval`, `ask` and `score-answers` write run folders of the same structure through
`Evaluator.run`; the engine and the tasks never import a concrete backend."""

from __future__ import annotations

import ast
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from builders.fakes import TRIPLETS, ScriptedChat, scpp_user_files
from lexsem.cli import app
from lexsem.config import EvalConfig
from lexsem.errors import RetryableError
from lexsem.evaluator import Evaluator
from lexsem.models.backend_registry import register_backend, unregister_backend
from lexsem.models.chat import ChatRequest
from lexsem.models.factory import load_model
from lexsem.models.options import Option
from lexsem.results.run import Run

SRC = Path(__file__).resolve().parents[1] / "src" / "lexsem"
NEGATIVES = {n for rows in TRIPLETS.values() for _, _, n in rows}


class ToyProvider:
    """A provider whose server takes `{"ask": [prompt, ...], "images": n}` at `/answer` and
    replies `{"reply": text}`: one class, registered with one `register_backend` call."""

    backend: ClassVar[str] = "toy"
    description = "a toy API (test)"
    options: ClassVar[dict[str, Option]] = {"url": Option(str, "http://127.0.0.1:9")}
    concurrency = 2

    def __init__(self, spec: Any, *, name: str | None = None, **_: Any) -> None:
        self.url = spec.get("url")
        self.name = name or f"toy:{spec.name}"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "toy", "url": self.url}

    def request_body(self, request: ChatRequest, image_part: Any = None) -> dict[str, Any]:
        part = image_part or (lambda data: len(data))
        images = [part(i) for t in request.turns for i in t.images]
        return {"ask": [t.text for t in request.turns], "images": images}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        resp = client.post(f"{self.url}/answer", json=body, timeout=5)
        if resp.status_code >= 500:
            raise RetryableError(f"HTTP {resp.status_code}")
        raw = resp.json()
        return raw["reply"], raw


@contextlib.contextmanager
def toy_server() -> Iterator[tuple[list[dict[str, Any]], str]]:
    """Answers the option that is a negative caption of the last prompt (an oracle)."""
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            bodies.append(body)
            prompt = body["ask"][-1]
            marks = [prompt.find(f"({k})") for k in (1, 2, 3)]
            at = min(prompt.find(n) for n in NEGATIVES if n in prompt)
            pick = max(k for k, m in enumerate(marks, 1) if 0 <= m < at)
            data = json.dumps({"reply": f"({pick})"}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield bodies, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def toy() -> Iterator[None]:
    register_backend("toy", ToyProvider)
    try:
        yield
    finally:
        unregister_backend("toy")


def test_a_new_api_provider_is_one_class_and_one_registry_line(toy: None, tmp_path: Path) -> None:
    sel, images = scpp_user_files(tmp_path)
    cfg = EvalConfig(benchmarks=[sel], coco_val2017=images, cache_dir=tmp_path / "c", n_boot=0)
    with toy_server() as (bodies, url):
        run = Evaluator(cfg).run(f"toy:any?url={url}", out=tmp_path / "run")
        assert len(bodies) == 5 * 3  # every item in every ordering of the main prompt
        assert all(len(b["images"]) == 1 and isinstance(b["images"][0], int) for b in bodies)
        again = Evaluator(cfg).run(f"toy:any?url={url}")
        assert len(bodies) == 15  # a rerun is served by the store
    saved = Run.load(tmp_path / "run")
    assert saved.record.config.tasks == ["choice_scpp1"]
    assert {r.accuracy for r in saved.record.results} == {100.0}  # the oracle's answers
    assert again.items.equals(run.items)
    assert load_model(f"toy:any?url={url}").concurrency == 2


def test_the_engine_and_the_tasks_import_no_backend() -> None:
    for folder in ("engine", "tasks"):
        for path in sorted((SRC / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                for name in names:
                    assert not name.startswith("lexsem.models.backends"), f"{path}: {name}"
                    if folder == "engine" and name.startswith("lexsem.models"):
                        # the protocol modules: what a model is asked, never how it runs
                        assert name in ("lexsem.models.protocols", "lexsem.models.chat",
                                        "lexsem.models.vqascore", "lexsem.models.image_gen"), \
                            f"{path}: {name}"  # fmt: skip


def test_eval_ask_and_score_answers_write_runs_of_one_structure(tmp_path: Path) -> None:
    assert not hasattr(Evaluator, "run_recorded")  # one path: Evaluator.run
    sel, images = scpp_user_files(tmp_path)
    common = ["-b", sel, "--cache-dir", str(tmp_path / "c")]
    # eval: a chat model as the model of a run
    cfg = EvalConfig(benchmarks=[sel], coco_val2017=images, cache_dir=tmp_path / "c", n_boot=10,
                     tasks=["choice_scpp3"])  # fmt: skip
    oracle = ScriptedChat(lambda p: "(1)", "one", tag="one")
    Evaluator(cfg).run(oracle, out=tmp_path / "eval")
    # score-answers: a recorded file
    rows = [{"id": i, "subset": sub, "ordering": o, "answer": "(1)", "prompt": "scpp3"}
            for sub, items in TRIPLETS.items() for i in range(len(items))
            for o in ("NPP", "PNP", "PPN")]  # fmt: skip
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = CliRunner().invoke(app, ["score-answers", str(answers), *common, "--run",
                                   str(tmp_path / "scored")])  # fmt: skip
    assert res.exit_code == 0, res.output
    # ask: a toy provider through `lexsem ask`
    register_backend("toy", ToyProvider)
    try:
        with toy_server() as (_, url):
            res = CliRunner().invoke(app, ["ask", "-m", f"toy:any?url={url}", *common,
                                           "--coco-val2017", str(images), "--prompt", "scpp3",
                                           "--run", str(tmp_path / "asked")])  # fmt: skip
    finally:
        unregister_backend("toy")
    assert res.exit_code == 0, res.output
    runs = {k: Run.load(tmp_path / k) for k in ("eval", "scored", "asked")}
    shapes = {
        k: (sorted(json.loads((tmp_path / k / "run.json").read_text())), r.record.config.tasks,
            sorted({x.metric for x in r.record.results}), sorted(r.items.column_names))
        for k, r in runs.items()
    }  # fmt: skip
    assert shapes["eval"] == shapes["scored"] == shapes["asked"]
    # a constant "(1)" is right under NPP only, whichever way it reached the run; the toy
    # provider is an oracle
    acc = {
        k: {x.metric: x.accuracy for x in r.record.results if x.subset == "_micro"}
        for k, r in runs.items()
    }
    assert acc["eval"] == acc["scored"] == {"NPP": 100.0, "PNP": 0.0, "PPN": 0.0, "circular": 0.0}
    assert set(acc["asked"].values()) == {100.0}


class DecodingChat(ScriptedChat):
    """A chat model whose request body names how its images are decoded, as a local `vlm:`
    model's does (the decode profile is part of its store keys)."""

    def request_body(self, request: ChatRequest, image_part: Any = None) -> dict[str, Any]:
        return {**super().request_body(request, image_part), "decode": request.about["decode"]}


def test_imported_answers_are_replayed_for_a_model_that_keys_the_decode_profile(
    tmp_path: Path,
) -> None:
    """`ask --import` stores each answer under the key of the very request the run makes, the
    decode profile of a local model's request included: a replay-only run then sends nothing."""
    from lexsem.ask import import_recorded

    sel, images = scpp_user_files(tmp_path)
    rows = [{"id": i, "subset": sub, "ordering": o, "answer": "(1)", "prompt": "scpp3"}
            for sub, items in TRIPLETS.items() for i in range(len(items))
            for o in ("NPP", "PNP", "PPN")]  # fmt: skip
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cfg = EvalConfig(benchmarks=[sel], coco_val2017=images, cache_dir=tmp_path / "c", n_boot=0,
                     tasks=["choice_scpp3"], replay_only=True)  # fmt: skip
    model = DecodingChat(lambda p: "(2)", "local-like")
    evaluator = Evaluator(cfg)
    stats = import_recorded(evaluator, model, answers, "scpp3")
    assert stats.n_written == len(rows)
    run = evaluator.run(model)
    assert model.asked == 0
    acc = {x.metric: x.accuracy for x in run.record.results if x.subset == "_micro"}
    assert acc == {"NPP": 100.0, "PNP": 0.0, "PPN": 0.0, "circular": 0.0}  # the imported "(1)"
