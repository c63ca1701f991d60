"""`lexsem build` with an OpenAI-compatible server as its generator (the fake server on
127.0.0.1, `builders.chat_server`): server errors and time-outs are retried, a request still
failing is not stored and a rerun sends only it, nothing is sent twice, a build killed mid-stage
(SIGKILL) keeps every answer received and its rerun sends only the rest, `--max-requests`
refuses before sending; the requests counted before work, progress lines during it and the
statistics after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import builders.build_stages  # noqa: F401  (registers the stage ask_each)
from builders.chat_server import Server
from lexsem.cli.app import app
from lexsem.construct.runner import build
from lexsem.errors import LexsemError, ModelError

CAPTIONS = ["a dog on a sofa", "two cats", "a man in paris", "a red bus", "a tree",
            "a blue box", "green apples", "a small horse"]  # fmt: skip


def _recipe(tmp: Path, url: str, captions: list[str] = CAPTIONS) -> Path:
    (tmp / "captions.jsonl").write_text(
        "".join(json.dumps({"caption": c}) + "\n" for c in captions)
    )
    path = tmp / "recipe.toml"
    path.write_text(
        'name = "api"\nplugins = ["builders.build_stages"]\n'
        f'generator = "openai:tiny-llm?base_url={url}&timeout=1"\nseed = 3\n'
        '[input]\npath = "captions.jsonl"\n[[stages]]\nuse = "caption_format"\n'
        '[[stages]]\nuse = "ask_each"\n'
    )
    return path


def _build(recipe: Path, out: Path, **kw: Any) -> Any:
    lines: list[str] = []
    res = build(recipe, out, cache_dir=out.parent / "cache", echo=lines.append, backoff=0.01, **kw)
    res.lines = lines
    return res


def _asked(server: Server) -> list[str]:
    return [prompt for prompt, _ in server.answered]


def test_errors_are_retried_failures_not_stored_and_nothing_sent_twice(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    state, url = server
    recipe = _recipe(tmp_path, url)
    state.faults = ["500", "slow"]  # two requests: a server error, then a time-out; retried
    state.fail = "Two cats."  # answered 500 every time: given up, not stored
    with pytest.raises(ModelError, match="1 of 8 requests failed"):
        _build(recipe, tmp_path / "out")
    assert sorted(_asked(state)) == sorted(c for c in _formatted() if c != "Two cats.")
    record = json.loads((tmp_path / "out" / "build.json").read_text())
    assert record["complete"] is False and len(record["stages"]) == 1
    state.fail = None
    res = _build(recipe, tmp_path / "out")
    assert res.sent == 1 and _asked(state).count("Two cats.") == 1
    assert len(_asked(state)) == len(set(_asked(state))) == 8  # every prompt answered once
    table = pq.read_table(res.output)
    assert table["answer"].to_pylist() == [c.upper() for c in _formatted()]
    again = _build(recipe, tmp_path / "other")  # a new folder: every answer from the store
    assert again.sent == 0 and len(_asked(state)) == 8
    assert again.stages[1].requests == {"asked": 8, "stored": 8, "sent": 0, "retried": 0}


def test_retries_are_counted_and_shown_during_and_after(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    state, url = server
    recipe = _recipe(tmp_path, url)
    state.faults = ["500", "429"]
    res = _build(recipe, tmp_path / "out", progress=True)
    assert res.stages[1].requests == {"asked": 8, "stored": 0, "sent": 8, "retried": 2}
    record = json.loads((tmp_path / "out" / "build.json").read_text())
    assert record["stages"][1]["requests"]["retried"] == 2
    text = "\n".join(res.lines)
    assert "ask_each: 8 requests, 8 to send" in text  # before work
    assert "stage 2/2 ask_each: 8 rows in" in text
    assert "stage 2/2 ask_each: 8 rows out, 8 accepted, 0 rejected; 8 requests sent, " \
        "0 from the store, 2 retried" in text  # fmt: skip
    assert "requests sent: 8 (retried: 2, served by the store: 0)" in text
    before = next(i for i, t in enumerate(res.lines) if "8 to send" in t)
    assert before < next(i for i, t in enumerate(res.lines) if "rows in" in t and "ask_each" in t)


def test_progress_lines_count_answered_and_retried_when_piped(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    state, url = server
    recipe = _recipe(tmp_path, url)
    state.faults = ["500"]
    args = ["build", str(recipe), "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    # the engine's progress line at the end of the stage's requests (stderr is not a terminal)
    assert "stage 2/2 ask_each: 8 / 8 requests (100%), 8 answered, 0 failed, 0 retrying, " \
        "1 retried in" in res.stderr  # fmt: skip
    assert "1 retried" in res.stderr and "(8 requests sent)" in res.stdout


def test_max_requests_refuses_over_budget_before_sending(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    state, url = server
    recipe = _recipe(tmp_path, url)
    with pytest.raises(LexsemError, match="would send 8 requests, more than --max-requests 7"):
        _build(recipe, tmp_path / "out", max_requests=7)
    assert state.posts == 0
    _build(recipe, tmp_path / "out", max_requests=8)
    assert state.posts == 8
    assert _build(recipe, tmp_path / "out2", max_requests=0).sent == 0  # all stored: allowed


def _formatted() -> list[str]:
    from lexsem.construct.caption_format import format_caption

    return [format_caption(c) for c in CAPTIONS]


def test_a_build_killed_mid_stage_loses_no_answer(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    state, url = server
    recipe = _recipe(tmp_path, url)
    state.hold_after = 3  # three answered, the other five held until the build is killed
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{Path(__file__).parent}"}
    out, cache = tmp_path / "out", tmp_path / "cache"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from lexsem.cli.app import app; app()", "build", str(recipe),
         "-o", str(out), "--cache-dir", str(cache), "--quiet"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while state.posts < 8 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert state.posts == 8, proc.stderr.read().decode() if proc.poll() is not None else ""
        time.sleep(1.0)  # the three answers reach the store
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        state.release.set()
        if proc.stderr is not None:
            proc.stderr.close()
    assert len(_asked(state)) == 3
    record = json.loads((out / "build.json").read_text())
    assert record["complete"] is False and [s["name"] for s in record["stages"]] == [
        "caption_format"
    ]
    state.hold_after = None
    res = _build(recipe, out)
    assert res.sent == 5 and [r.reused for r in res.stages] == [True, False]
    assert sorted(_asked(state)) == sorted(_formatted())  # each prompt answered once
    assert res.stages[1].requests == {"asked": 8, "stored": 3, "sent": 5, "retried": 0}
