"""What the terminal tells a researcher: progress per batch (a bar on a terminal, lines when
piped), what a Ctrl-C kept and that a rerun resumes, `--name`, and "did you mean" on misspelt
models, options and choices."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import lexsem
from builders.fakes import BagOfWordsEncoder, ConstantPairScorer, TinyDualEncoder
from lexsem.cli import app
from lexsem.engine import embed
from lexsem.engine import progress_bar as progress
from lexsem.engine.embed import embed_texts
from lexsem.engine.progress_bar import Interrupted, Progress
from lexsem.engine.request_store import RequestStore

TEXTS = [f"text number {i}" + " padded" * (i % 7) for i in range(23)]


def flat(text: str) -> str:
    """Output without rich's box drawing and line wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def advances(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every `Progress.advance` call: (stage, units)."""
    calls: list[tuple[str, int]] = []
    original = Progress.advance

    def spy(self: Progress, n: int) -> None:
        calls.append((self.label, n))
        original(self, n)

    monkeypatch.setattr(Progress, "advance", spy)
    return calls


# -- progress ------------------------------------------------------------------------------------


def test_lines_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    out, clock = io.StringIO(), Clock()
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 15.0)
    with Progress("encoding texts", 100, unit="texts", enabled=True, stream=out, clock=clock) as p:
        assert p.mode == "lines"
        clock.now = 5.0
        p.advance(10)  # within the interval: no line
        clock.now = 16.0
        p.advance(10)
        clock.now = 40.0
        p.advance(80)
    assert out.getvalue().splitlines() == [
        "encoding texts: 0 / 100 texts (0%)",
        "encoding texts: 20 / 100 texts (20%), 16 s, about 1 min 04 s left",
        "encoding texts: 100 / 100 texts (100%) in 40 s",
    ]


def test_a_bar_on_a_terminal_and_nothing_when_disabled() -> None:
    tty = TTY()
    with Progress("encoding images", 10, unit="images", enabled=True, stream=tty) as p:
        assert p.mode == "bar"
        p.advance(4)
        assert p._bar.tasks[0].completed == 4  # the live bar moved with the batch
    assert "encoding images" in tty.getvalue()
    quiet = TTY()
    with Progress("x", 10, unit="texts", enabled=False, stream=quiet) as p:
        p.advance(10)
    assert p.mode == "off" and quiet.getvalue() == "" and p.done == 10


class OrderedEncoder(BagOfWordsEncoder):
    """A text encoder that, like `LazyTextEncoder`, runs texts in its own `batch_order`."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def batch_order(self, texts: Sequence[str]) -> np.ndarray:
        return np.argsort([t[::-1] for t in texts], kind="stable")

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        self.batches.append(list(texts))
        return super().encode(texts, batch_size=batch_size)


def test_text_encoding_moves_per_batch_in_the_encoders_own_batches(
    advances: list[tuple[str, int]], tmp_path: Path
) -> None:
    enc = OrderedEncoder()
    with RequestStore(tmp_path, "m") as store:
        emb, _ = embed_texts(enc, TEXTS, store, batch_size=4, chunk=10, progress=True)
    assert [n for stage, n in advances if stage == "encoding texts"] == [4, 4, 2, 4, 4, 2, 3]
    assert all(len(b) <= 4 for b in enc.batches) and len(enc.batches) == 7
    first_chunk = sorted(TEXTS, key=len, reverse=True)[:10]
    order = enc.batch_order(first_chunk)
    assert enc.batches[0] == [first_chunk[i] for i in order[:4]]
    np.testing.assert_array_equal(emb, np.stack([enc.vector(t) for t in TEXTS]))


def test_batched_encoding_gives_the_vectors_of_one_call(minilm_path: Path, tmp_path: Path) -> None:
    from lexsem.models.factory import load_model

    texts = [*TEXTS, "a much longer text " * 12, "short"]
    model = load_model(f"st:{minilm_path}", device="cpu")
    one_call = model.encode(texts, batch_size=8)
    per_batch, _ = embed_texts(model, texts, None, batch_size=8, progress=True)
    order = np.argsort([-len(t) for t in texts], kind="stable")  # embed_texts' chunk order
    assert np.array_equal(per_batch[order], model.encode([texts[i] for i in order], batch_size=8))
    np.testing.assert_allclose(per_batch, one_call, rtol=0, atol=2e-7)


@pytest.mark.torch
def test_image_encoding_and_pair_scoring_move_per_batch(
    advances: list[tuple[str, int]], tmp_path: Path
) -> None:
    common = {"n_boot": 0, "cache_dir": tmp_path, "offline": True, "progress": True}
    run = lexsem.evaluate(TinyDualEncoder(), ["synthetic"], batch_size=64, **common)
    n = run.record.timings.n_images_encoded
    images = [k for stage, k in advances if stage == "encoding images"]
    assert sum(images) == n > 64 and len(images) == math.ceil(n / 64)
    run = lexsem.evaluate(ConstantPairScorer(), ["synthetic"], batch_size=32, **common)
    pairs = [k for stage, k in advances if stage == "scoring pairs"]
    assert sum(pairs) == run.record.timings.n_pairs_scored and max(pairs) <= 32
    assert len(pairs) >= math.ceil(sum(pairs) / 32)


# -- the CLI -------------------------------------------------------------------------------------


class InterruptedEncoder(BagOfWordsEncoder):
    """Ctrl-C arrives during its `stop_at`-th call."""

    def __init__(self, stop_at: int | None) -> None:
        super().__init__()
        self.stop_at = stop_at

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        if self.calls + 1 == self.stop_at:
            raise KeyboardInterrupt
        return super().encode(texts, batch_size=batch_size)


def _with_model(monkeypatch: pytest.MonkeyPatch, model: Any) -> None:
    import lexsem.models.factory as registry

    monkeypatch.setattr(registry, "load_model", lambda spec, **kw: model)


def test_eval_prints_progress_lines_when_piped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _with_model(monkeypatch, BagOfWordsEncoder())
    res = CliRunner().invoke(
        app, ["eval", "-m", "fake", "-b", "synthetic", "-o", str(tmp_path / "r"), "--n-boot", "0"]
    )
    assert res.exit_code == 0, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("encoding texts:")]
    assert re.fullmatch(r"encoding texts: 0 / [\d,]+ texts \(0%\)", lines[0])
    assert re.fullmatch(r"encoding texts: ([\d,]+) / \1 texts \(100%\) in \d+ s", lines[-1])
    quiet = CliRunner().invoke(
        app, ["eval", "-m", "fake", "-b", "synthetic", "-o", str(tmp_path / "q"), "-q",
              "--no-cache"],
    )  # fmt: skip
    assert quiet.exit_code == 0 and "encoding texts" not in quiet.stderr


def test_ctrl_c_says_what_was_saved_and_a_rerun_resumes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(embed, "CHUNK", 20)
    args = ["eval", "-m", "fake", "-b", "synthetic", "-o", str(tmp_path / "r"), "--n-boot", "0",
            "--batch-size", "10"]  # fmt: skip
    # chunk 1 = calls 1-2 (committed at its end), call 3 = chunk 2's first batch (committed
    # at the interrupt): 3 batches of 10
    _with_model(monkeypatch, InterruptedEncoder(stop_at=4))
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 130, res.output
    msg = flat(res.stderr)
    m = re.search(r"interrupted while encoding texts: 30 of ([\d,]+) texts \(and everything "
                  r"computed before\) are saved in (\S+\.sqlite); run the same command again to "
                  r"resume: only what is missing is computed", msg)  # fmt: skip
    assert m, msg
    assert Path(m.group(2)).is_file()
    total = int(m.group(1).replace(",", ""))
    assert not (tmp_path / "r").exists()
    again = InterruptedEncoder(stop_at=None)
    _with_model(monkeypatch, again)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert len(again.encoded) == total - 30  # only what was missing


def test_ctrl_c_within_a_long_chunk_keeps_the_batches_encoded_so_far(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Batches were committed once per 4096-text chunk: 15 s into a run Ctrl-C said "0 of 731
    texts saved". Now they are committed at least every `COMMIT_EVERY_S` (0 here: each batch)."""
    monkeypatch.setattr(embed, "COMMIT_EVERY_S", 0.0)
    args = ["eval", "-m", "fake", "-b", "synthetic", "-o", str(tmp_path / "r"), "--n-boot", "0",
            "--batch-size", "10"]  # fmt: skip
    _with_model(monkeypatch, InterruptedEncoder(stop_at=4))  # one chunk; 3 batches done
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 130, res.output
    assert "interrupted while encoding texts: 30 of " in flat(res.stderr), res.stderr
    again = InterruptedEncoder(stop_at=None)
    _with_model(monkeypatch, again)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    total = int(re.search(r"(\d+) unique texts", res.stderr).group(1))  # type: ignore[union-attr]
    assert len(again.encoded) == total - 30


@pytest.mark.parametrize("stop_at", [2, 5])
def test_ctrl_c_keeps_every_batch_encoded_before_it(
    stop_at: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The batches encoded since the last timed commit were lost: a fast encoder interrupted
    within its first second kept 0 texts."""
    monkeypatch.setattr(embed, "COMMIT_EVERY_S", 3600.0)  # no timed commit within the test
    store = RequestStore(tmp_path, "fp")
    encoder = InterruptedEncoder(stop_at=stop_at)
    with pytest.raises(Interrupted) as exc:
        embed_texts(encoder, TEXTS, store, batch_size=4, progress=True)
    done = encoder.encoded  # the texts of the batches before the one interrupted
    assert len(done) == 4 * (stop_at - 1)
    from lexsem.engine.keys import content_key

    kept = store.get_vectors([content_key("text", t) for t in TEXTS])
    assert set(kept) == {content_key("text", t) for t in done}
    for t in done:
        np.testing.assert_array_equal(kept[content_key("text", t)], encoder.vector(t))
    assert f"{len(done)} of {len(TEXTS)} texts" in exc.value.message()
    store.close()


def test_ctrl_c_without_the_cache_says_nothing_was_kept() -> None:
    err = Interrupted("encoding images", "images", done=64, saved=0, total=500, store=None)
    assert isinstance(err, KeyboardInterrupt)
    assert err.message() == (
        "interrupted while encoding images (64 of 500 images done); nothing was saved, as the "
        "cache is off (--no-cache): a rerun starts over"
    )


def test_name_sets_the_display_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _with_model(monkeypatch, BagOfWordsEncoder(name="bow"))
    out = tmp_path / "r"
    res = CliRunner().invoke(
        app, ["eval", "-m", "fake", "-b", "synthetic", "-o", str(out), "--n-boot", "0",
              "--name", "  My model (epoch 3)  "],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rec = json.loads((out / "run.json").read_text())
    assert rec["model"]["name"] == "My model (epoch 3)"
    assert rec["config"]["evaluation"]["name"] == "My model (epoch 3)"
    assert "| My model (epoch 3) |" in res.stdout
    report = CliRunner().invoke(app, ["report", str(out)])
    assert "| My model (epoch 3) |" in report.stdout
    blank = CliRunner().invoke(app, ["eval", "-m", "x", "-b", "synthetic", "--name", " "])
    assert blank.exit_code == 2 and "name" in blank.output


# -- "did you mean" ------------------------------------------------------------------------------


EVAL = ["eval", "-m", "minilm", "-b", "synthetic"]
MISSPELT = [
    (["eval", "-m", "minlm", "-b", "synthetic"], "unknown model 'minlm' (did you mean 'minilm'?)"),
    (["eval", "-m", "hf:x?polling=cls", "-b", "synthetic"], "(did you mean 'pooling'?)"),
    (["eval", "-m", "minilm", "-b", "synthetc"], "(did you mean 'synthetic'?)"),
    ([*EVAL, "--nme", "x"], "No such option: --nme (Possible options: --model, --name)"),
    ([*EVAL, "--tie-policy", "strikt"], "(did you mean 'strict'?)"),
    (["report", "x", "-f", "mdd"], "'mdd' is not one of 'md', 'csv', 'latex' (did you mean 'md'?)"),
    (["list", "taks"], "(did you mean 'tasks'?)"),
    (["download", "coco-val2071"], "unknown image archive 'coco-val2071' (did you mean "),
]


@pytest.mark.parametrize(("args", "want"), MISSPELT)
def test_did_you_mean(args: list[str], want: str) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert want in flat(res.output), flat(res.output)


def test_list_tasks_includes_blind() -> None:
    res = CliRunner().invoke(app, ["list", "tasks"])
    assert res.exit_code == 0
    assert any(line.startswith("blind ") for line in res.output.splitlines())


@pytest.mark.torch
def test_quiet_and_piped_runs_show_no_library_progress_bars(tmp_path: Path) -> None:
    """transformers' "Loading weights" bar went to stderr under `-q` and in logs."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    code = "import sys; from lexsem.cli import app; sys.argv[0] = 'lexsem'; app()"
    for extra in (["-q"], []):
        args = ["eval", "-m", "minilm", "-b", "synthetic/swap_att", "--n-boot", "0"]
        args += ["-o", str(tmp_path / f"run{len(extra)}")]
        args += ["--cache-dir", str(tmp_path / f"c{len(extra)}")]  # each run encodes
        proc = subprocess.run(
            [sys.executable, "-c", code, *args, *extra],
            capture_output=True, text=True, env={**env, "HF_HUB_OFFLINE": "1"}, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "Loading weights" not in proc.stderr and "it/s]" not in proc.stderr
        if extra:
            assert proc.stderr == ""
        else:
            assert "encoding texts" in proc.stderr  # lexsem's own lines stay


@pytest.mark.parametrize("command", ["sweep", "train-detector", "build"])
def test_quiet_of_sweep_train_detector_and_build_silences_the_libraries_bars(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-q` of `sweep`, `train-detector` and `build` turns the libraries' bars off
    (transformers' "Loading weights") before any model is loaded, as `eval`, `train` and
    `reproduce` do."""
    import lexsem.cli.quiet

    asked: list[bool] = []
    monkeypatch.setattr(lexsem.cli.quiet, "quiet_libraries", asked.append)
    grid = tmp_path / "g.toml"
    grid.write_text("[[block]]\nmodels = ['minilm']\nbenchmarks = ['synthetic']\n")
    args = {
        "sweep": ["sweep", str(grid), "-o", str(tmp_path / "s"), "--dry-run"],
        "train-detector": ["train-detector", str(tmp_path / "none.jsonl"), "-o",
                           str(tmp_path / "d"), "-m", "x:y"],
        "build": ["build", "scpp_positive", "--input", str(tmp_path / "none.jsonl"), "-o",
                  str(tmp_path / "b")],
    }[command]  # fmt: skip
    CliRunner().invoke(app, [*args, "-q"])
    assert asked == [True]


@pytest.mark.parametrize("command", ["eval", "train", "ask", "download"])
def test_piped_help_shows_every_option_name_whole(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    if command == "train":
        assert "--checkpoint-every" in result.output
        assert "--clamp-logit-scale" in result.output
