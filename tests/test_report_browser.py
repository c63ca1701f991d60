"""The HTML report as a researcher sees it: rendered by headless Chromium.

Three runs made with the CLI — MiniLM (real, offline), a tiny random CLIP saved under a long local
path (its name in the report is that path) and a blind tiny random GPT-2 (`lm:`, named with
`--name`) — go into one `lexsem report --html` page. Chromium lays it out at 1280 and 800 pixels
wide; a copy of the page with a measuring script (the report itself forbids scripts) reports:

- the page never scrolls sideways; a wide table scrolls inside its own box;
- scrolled to its right end, every wide table still shows its title and its model column
  (sticky), and no model name overflows its cell (long names wrap);
- every figure fits its column and decodes.

Screenshots (full page, and the wide tables scrolled right) are written next to the page, and
copied to $LEXSEM_SCREENSHOTS when set. Chromium is required in CI (`.ci/run` installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from builders.backends import require
from lexsem.cli import app

pytestmark = pytest.mark.torch

CLIP_DIR = (
    "experiments/2026-05-01/checkpoints/"
    "clip-vit-tiny-random-init-negclip-finetuned-on-coco-hard-negatives-lr1e-6-wd0.1/epoch-10"
)
LM_NAME = "tiny GPT-2 (blind, random weights)"
WIDTHS = (1280, 800)

PROBE = """
<pre id="probe"></pre>
<script>
(function () {
  const out = {width: window.innerWidth, page: document.documentElement.scrollWidth,
               height: document.documentElement.scrollHeight, tables: [], images: []};
  for (const wrap of document.querySelectorAll(".table-wrap")) {
    const wide = wrap.scrollWidth > wrap.clientWidth + 1;
    wrap.scrollLeft = wrap.scrollWidth;  // scrolled to the right end
    const box = wrap.getBoundingClientRect();
    const cap = wrap.querySelector("caption .cap").getBoundingClientRect();
    const cells = [...wrap.querySelectorAll("tbody tr > :first-child")];
    out.tables.push({
      caption: wrap.querySelector("caption").textContent, wide: wide,
      box: [box.left, box.right], title: [cap.left, cap.right],
      firsts: cells.map(c => {
        const r = c.getBoundingClientRect();
        return {text: c.textContent, left: r.left, right: r.right,
                overflow: c.scrollWidth - c.clientWidth,
                sticky: getComputedStyle(c).position};
      }),
    });
  }
  for (const img of document.querySelectorAll("figure img")) {
    const r = img.getBoundingClientRect(), f = img.parentElement.getBoundingClientRect();
    out.images.push({natural: img.naturalWidth, left: r.left, right: r.right,
                     column: [f.left, f.right]});
  }
  document.getElementById("probe").textContent = JSON.stringify(out);
})();
</script>
"""


def chromium() -> str:
    path = os.environ.get("LEXSEM_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    require(path is not None, "Chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


def run_chromium(exe: str, profile: Path, *args: str) -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", "--force-device-scale-factor=1", "--no-first-run",
           f"--user-data-dir={profile}", *args]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def eval_cli(*args: str) -> None:
    res = CliRunner().invoke(app, ["eval", "--device", "cpu", "--n-boot", "50", *args])
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    exe = chromium()  # before the runs: a missing browser fails at once
    assert exe
    from builders.tiny_dual_models import write_clip
    from builders.tiny_text_scorers import write_tiny_gpt2

    base = tmp_path_factory.mktemp("browser")
    clip = write_clip(base / CLIP_DIR)
    gpt2 = write_tiny_gpt2(base / "tiny-gpt2")
    eval_cli("-m", "minilm", "-b", "synthetic", "-o", str(base / "minilm"))
    eval_cli(
        "-m", f"clip:{clip}", "-b", "synthetic", "-b", "synthetic_bi", "-o", str(base / "clip")
    )
    eval_cli("-m", f"lm:{gpt2}", "--name", LM_NAME, "-b", "synthetic", "-o", str(base / "lm"))
    page = base / "report.html"
    runs = [str(base / k) for k in ("minilm", "clip", "lm")]
    res = CliRunner().invoke(app, ["report", *runs, "--html", str(page), "--n-boot", "50"])
    assert res.exit_code == 0, res.output
    return page


def probe(page: Path, width: int, exe: str) -> dict[str, Any]:
    html = page.read_text(encoding="utf-8")
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    copy = page.with_name(f"probe-{width}.html")
    copy.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = run_chromium(
        exe, page.parent / f"profile-{width}", "--dump-dom", f"--window-size={width},900",
        copy.as_uri(),
    )  # fmt: skip
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found and found.group(1), dom[-500:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(page: Path, width: int, height: int, exe: str, name: str) -> Path:
    shot = page.with_name(name)
    run_chromium(
        exe, page.parent / f"profile-shot-{name}", f"--screenshot={shot}",
        f"--window-size={width},{min(height, 16000)}", page.as_uri(),
    )  # fmt: skip
    keep = os.environ.get("LEXSEM_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / name)
    return shot


@pytest.mark.parametrize("width", WIDTHS)
def test_report_reads_well_in_chromium(report: Path, width: int) -> None:
    exe = chromium()
    got = probe(report, width, exe)
    # the page itself never scrolls sideways
    assert got["page"] <= got["width"], (got["page"], got["width"])
    # the long local path is the CLIP run's name, and --name named the LM
    names = {c["text"] for t in got["tables"] for c in t["firsts"]}
    assert any(CLIP_DIR.rsplit("/", 1)[-1] in n for n in names), names
    assert LM_NAME in names
    wide = [t for t in got["tables"] if t["wide"]]
    assert width > 1000 or wide  # at 800 px the quad table is wider than its box
    for t in got["tables"]:
        left, right = t["box"]
        assert left - 1 <= t["title"][0] < right, t["caption"]  # the title stays in view
        for c in t["firsts"]:
            assert c["sticky"] == "sticky", (t["caption"], c)
            # scrolled to the right end, the model column is still inside the table's box
            assert left - 1 <= c["left"] and c["right"] <= right + 1, (t["caption"], c, t["box"])
            assert c["overflow"] <= 1, (t["caption"], c["text"])  # names wrap, never clip
    assert len(got["images"]) >= 8
    for img in got["images"]:
        assert img["natural"] > 0
        assert img["column"][0] - 1 <= img["left"] and img["right"] <= img["column"][1] + 1
    # screenshots: the page as it opens, and the page with every wide table scrolled right
    full = screenshot(report, width, got["height"], exe, f"report-{width}.png")
    scrolled = screenshot(
        report.with_name(f"probe-{width}.html"), width, got["height"], exe,
        f"report-{width}-scrolled.png",
    )  # fmt: skip
    for shot in (full, scrolled):
        with Image.open(shot) as im:
            assert im.size[0] == width and im.size[1] >= min(got["height"], 16000) - 1
            colors = im.convert("L").getcolors(maxcolors=1 << 16)
            assert colors is None or len(colors) > 50  # not a blank page


def test_the_widest_table_scrolls_in_its_box_with_the_model_column_in_view(
    tmp_path: Path,
) -> None:
    """BiVLC and Winoground in one table (19 metric columns with intervals) and a model named
    by a 150-character path without spaces."""
    exe = chromium()
    from builders.run_records import bivlc_results, record, winoground_results
    from lexsem.report.html import render_html, runs_overview_sections

    long_name = "clip:/" + "checkpoint" * 15
    runs = [
        record(long_name, bivlc_results(50.0) + winoground_results(20.0)),
        record("minilm", winoground_results(30.0)),
    ]
    page = tmp_path / "quad.html"
    page.write_text(render_html("quad", runs_overview_sections(runs), {}), encoding="utf-8")
    got = probe(page, 1280, exe)
    assert got["page"] <= got["width"]
    quad = next(t for t in got["tables"] if "all metrics" in t["caption"])
    assert quad["wide"]
    left, right = quad["box"]
    assert left - 1 <= quad["title"][0] and quad["title"][1] <= right + 1
    for c in quad["firsts"]:
        assert c["sticky"] == "sticky" and left - 1 <= c["left"] and c["right"] <= right + 1, c
        assert c["overflow"] <= 1 and c["right"] - c["left"] < 0.4 * got["width"], c
    screenshot(page.with_name("probe-1280.html"), 1280, 900, exe, "quad-1280-scrolled.png")
