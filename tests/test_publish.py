"""`lexsem publish`: rank groups (a hand-worked case), the merge rules and --replace, the
incremental rebuild, the site's files and data, escaping, output safety and the dataset
folder. The pages in Chromium: tests/test_publish_browser.py; the speed: bench/publish_bench.py."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from builders.run_records import items_run
from lexsem.cli.app import app
from lexsem.errors import LexsemError
from lexsem.publish import publish
from lexsem.publish import publisher as publisher_module
from lexsem.publish.collect import read_run
from lexsem.publish.published import PublishedRow
from lexsem.publish.site import CSP
from lexsem.results.run import Run
from lexsem.stats.mcnemar import mcnemar_exact
from lexsem.stats.rank_groups import holm, rank_groups

# ---------------------------------------------------------------- rank groups, by hand

# item patterns (hits of A, B, C, D) and how many items have each: 23 items
PATTERNS = [((1, 1, 1, 1), 10), ((1, 1, 0, 0), 6), ((1, 0, 0, 0), 2), ((0, 0, 0, 0), 4),
            ((0, 0, 1, 0), 1)]  # fmt: skip


def _hand_hits() -> dict[str, np.ndarray]:
    rows = np.array([p for p, k in PATTERNS for _ in range(k)], dtype=bool)
    return dict(zip("ABCD", rows.T, strict=True))


def test_rank_groups_hand_case() -> None:
    """Discordant counts (b: row model right, column wrong; c the reverse) and exact
    two-sided p = 2·P(X ≤ min(b, c)), X ~ Bin(b + c, ½), capped at 1:
    A-B 2/0: 2·(½)² = 0.5;  A-C 8/1: 2·(1 + 9)/2⁹ = 0.0390625;  A-D 8/0: 2/2⁸ = 0.0078125;
    B-C 6/1: 2·(1 + 7)/2⁷ = 0.125;  B-D 6/0: 2/2⁶ = 0.03125;  C-D 1/0: 2·½ = 1.
    Holm over the 6 pairs, smallest first: 0.0078125·6 = 0.046875, 0.03125·5 = 0.15625,
    0.0390625·4 = 0.15625, 0.125·3 = 0.375, 0.5·2 = 1, 1·1 = 1. Only A-D is significant
    (uncorrected, A-C and B-D would be too). Sorted A (18/23), B (16), C (11), D (10): the
    maximal runs without a significant pair are {A, B, C} (a) and {B, C, D} (b)."""
    hand_raw = {("A", "B"): 0.5, ("A", "C"): 0.0390625, ("A", "D"): 0.0078125,
                ("B", "C"): 0.125, ("B", "D"): 0.03125, ("C", "D"): 1.0}  # fmt: skip
    hand_holm = {("A", "B"): 1.0, ("A", "C"): 0.15625, ("A", "D"): 0.046875,
                 ("B", "C"): 0.375, ("B", "D"): 0.15625, ("C", "D"): 1.0}  # fmt: skip
    g = rank_groups(_hand_hits())
    assert g.order == ["A", "B", "C", "D"] and g.n == 23
    names = {(g.order[i], g.order[j]): p for (i, j), p in g.p_raw.items()}
    assert names == pytest.approx(hand_raw, abs=1e-12)
    assert {(g.order[i], g.order[j]): p for (i, j), p in g.p_holm.items()} == pytest.approx(
        hand_holm, abs=1e-12
    )
    assert mcnemar_exact(8, 1) == pytest.approx(hand_raw[("A", "C")])  # the same test
    assert g.groups == [[0, 1, 2], [1, 2, 3]]
    assert g.letters == {"A": "a", "B": "ab", "C": "ab", "D": "b"}
    assert g.rank == {"A": 1, "B": 1, "C": 1, "D": 2}
    assert g.different("A", "D") and not g.different("A", "C")


def test_holm_order_and_cap() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.6, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


# ---------------------------------------------------------------- runs for the site


def _run(base: Path, name: str, hits: list[bool], *, folder: str | None = None,
         sha: str = "0" * 64, tie_policy: str = "strict") -> Path:  # fmt: skip
    """A run of `name` on benchmark `bench` (task tot, subsets s1/s2 alternating)."""
    keyed = {(f"s{1 + k % 2}", f"i{k}"): h for k, h in enumerate(hits)}
    run = items_run(name, keyed)
    rec = run.record
    files = [f.model_copy(update={"sha256": sha}) for f in rec.benchmarks[0].files]
    config = rec.config.model_copy(update={"tie_policy": tie_policy})
    rec = rec.model_copy(update={
        "benchmarks": [rec.benchmarks[0].model_copy(update={"files": files})],
        "config": config, "run_id": f"{name}-{folder or name}",
    })  # fmt: skip
    out = base / "runs" / (folder or re.sub(r"\W", "_", name))
    return Run(rec, run.items).save(out, force=True)


def _board(base: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    truth = rng.random(60)
    return [
        _run(base, "good", list(truth < 0.9)),
        _run(base, "fair", list(truth < 0.6)),
        _run(base, "<script>alert(1)</script>", list(truth < 0.3)),
    ]


def _embedded(html: str, block: str) -> dict:
    m = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', html, re.S)
    assert m, block
    return json.loads(m.group(1))


def test_site_files_data_and_escaping(tmp_path: Path) -> None:
    runs = _board(tmp_path)
    site = tmp_path / "site"
    done = publish(runs, site)
    assert (done.runs, done.read, done.models) == (3, 3, 3)
    for name in ("index.html", "leaderboard.json", "manifest.json", "static/site.js",
                 "static/site.css"):  # fmt: skip
        assert (site / name).is_file(), name
    index = (site / "index.html").read_text()
    data = _embedded(index, "board-data")
    assert data == json.loads((site / "leaderboard.json").read_text())
    assert data["generator"] == "lexsem"
    # the CSP: no inline script, only the site's own
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', index)
    assert csp and html.unescape(csp.group(1)) == CSP and "script-src 'self';" in CSP
    assert '<script src="static/site.js">' in index
    assert not re.search(r"<script>(?!alert)", index) and " onclick=" not in index
    # a model name with markup is escaped everywhere: HTML text and the JSON block
    assert "<script>alert(1)</script>" not in index
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    (section,) = data["sections"]
    assert section["benchmark"] == "bench" and section["primary"] == "_micro"
    assert [c["subset"] for c in section["columns"]] == ["s1", "s2", "_micro"]
    # what the page shows is what the JSON holds: each row's accuracy and interval
    for row in section["rows"]:
        cell = row["cells"]["_micro"]
        assert f"{cell['accuracy']:.2f} <small>[{cell['ci_low']:.1f}, {cell['ci_high']:.1f}]" in (
            index
        )
        assert (site / "models" / f"{row['model_id']}.html").is_file()
    ranks = [r["rank"] for r in section["rows"]]
    assert ranks == sorted(ranks) and ranks[0] == 1
    assert section["rows"][0]["model"] == "good"
    # the plot of the section
    assert section["plot"] and (site / section["plot"]).read_bytes().startswith(b"<?xml")
    bad = next(r for r in section["rows"] if r["model"].startswith("<"))
    page = (site / "models" / f"{bad['model_id']}.html").read_text()
    assert "<script>alert(1)</script>" not in page
    assert "lexsem eval --model" in page and "0" * 64 in page and "b&#39;{" not in page
    hardest = _embedded(page, "model-data")["hardest"]
    assert hardest and all(h["right"] >= 1 for h in hardest)


def test_model_pages_link_hardest_items_to_a_running_explorer(tmp_path: Path) -> None:
    """With --explore-url, each hardest item opens that item's slice in `lexsem explore`
    (bench, subset, metric, item); the page also says the activation its spec runs."""
    from urllib.parse import parse_qs, urlsplit

    runs = _board(tmp_path)
    publish(runs, tmp_path / "site", explore_url="http://127.0.0.1:8765/")
    page = next((tmp_path / "site" / "models").glob("*.html")).read_text()
    hardest = _embedded(page, "model-data")["hardest"]
    assert hardest
    for h in hardest:
        url = urlsplit(h["url"])
        assert (url.scheme, url.netloc, url.path) == ("http", "127.0.0.1:8765", "/")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        assert query == {"bench": h["b"], "subset": h["s"], "metric": h["m"], "item": h["id"]}
    assert f'<a href="{hardest[0]["url"].replace("&", "&amp;")}">' in page
    assert "<th>Activation</th><td>—</td>" in page  # not an open_clip model
    res = CliRunner().invoke(app, ["publish", *map(str, runs), "-o", str(tmp_path / "s2"),
                                   "--explore-url", "127.0.0.1:8765"])  # fmt: skip
    assert res.exit_code != 0 and "--explore-url 127.0.0.1:8765: give http://HOST:PORT" in (
        res.output
    )


def test_refuses_other_data_and_settings(tmp_path: Path) -> None:
    a = _run(tmp_path, "one", [True, False] * 5)
    b = _run(tmp_path, "two", [True] * 10, sha="1" * 64)
    c = _run(tmp_path, "three", [False] * 10, tie_policy="lenient")
    with pytest.raises(LexsemError) as err:
        publish([a, b, c], tmp_path / "site")
    lines = str(err.value).splitlines()
    assert lines[0].startswith("2 conflicts")
    assert str(a) in lines[1] and str(b) in lines[1] and "different data" in lines[1]
    assert (
        str(a) in lines[2]
        and str(c) in lines[2]
        and "tie_policy 'strict' vs 'lenient'" in (lines[2])
    )
    assert not (tmp_path / "site").exists()


def test_duplicates_refused_or_replaced(tmp_path: Path) -> None:
    first = _run(tmp_path, "m", [True] * 8 + [False] * 2, folder="m1")
    later = _run(tmp_path, "m", [True] * 3 + [False] * 7, folder="m2")
    other = _run(tmp_path, "n", [True] * 5 + [False] * 5)
    with pytest.raises(LexsemError, match=r"'m' has results for bench \(tot\) in two runs"):
        publish([first, later, other], tmp_path / "site")
    done = publish([first, later, other], tmp_path / "site", replace=True)
    assert len(done.said) == 1 and str(later) in done.said[0] and "replaces" in done.said[0]
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    (m,) = [r for r in data["sections"][0]["rows"] if r["model"] == "m"]
    assert m["cells"]["_micro"]["accuracy"] == pytest.approx(30.0)


def test_incremental_rebuild_reads_only_changed_runs(tmp_path: Path) -> None:
    runs = _board(tmp_path)
    site = tmp_path / "site"
    read: list[Path] = []

    def counting(folder: Path) -> tuple:
        read.append(folder)
        return read_run(folder)

    assert publish(runs, site, loader=counting).read == 3
    before = (site / "leaderboard.json").read_text()
    read.clear()
    assert publish(runs, site, loader=counting).read == 0 and read == []
    assert (site / "leaderboard.json").read_text() == before
    _run(tmp_path, "fair", [True] * 60)  # the run of "fair" made again, other hits
    done = publish(runs, site, loader=counting)
    assert done.read == 1 and read == [runs[1]]
    assert (site / "leaderboard.json").read_text() != before
    moved = tmp_path / "elsewhere"
    shutil.copytree(runs[0], moved)  # the same files in another folder: found by digest
    read.clear()
    assert publish([moved, *runs[1:]], site, loader=counting).read == 0


def test_outputs_are_checked_and_written_whole(tmp_path: Path, monkeypatch) -> None:
    runs = _board(tmp_path)
    with pytest.raises(LexsemError, match="an evaluation run"):
        publish(runs, runs[0] / "site")
    with pytest.raises(LexsemError, match="input of this command"):
        publish(runs, tmp_path / "runs")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "draft.txt").write_text("mine")
    with pytest.raises(LexsemError, match="did not write"):
        publish(runs, notes)
    site = tmp_path / "site"
    publish(runs, site)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(publisher_module, "write_dataset", broken)
    with pytest.raises(OSError, match="disk full"):
        publish(runs[:2], site, hf_dataset=tmp_path / "ds")
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert after == before
    assert not (tmp_path / "ds").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_published_rows_beside_measured(tmp_path: Path, monkeypatch) -> None:
    runs = _board(tmp_path)
    row = PublishedRow(source="paper_table1", model="Good (paper)", spec="test:good",
                       benchmark="bench", task="tot", metric="tot", subset="_micro",
                       accuracy=50.0, attainable=False)  # fmt: skip
    monkeypatch.setattr(publisher_module, "published_rows", lambda: [row])
    publish(runs, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    data = _embedded(index, "board-data")
    (pub,) = [r for r in data["sections"][0]["rows"] if r["published"]]
    (good,) = [r for r in data["sections"][0]["rows"] if r["model"] == "good"]
    delta = good["cells"]["_micro"]["accuracy"] - 50.0
    assert pub["cells"]["_micro"]["delta"] == pytest.approx(delta)
    assert 'class="published"' in index and f"Δ {delta:+.2f}" in index
    assert index.count('<span class="unattainable"') == 1  # the published cell only


def test_the_papers_cells_are_published_rows_with_their_specs() -> None:
    """SugarCrepe++ Table 2's CLIP swap_obj ITT 45.18 over the 245 public items: no k/n gives it
    (110/245 = 44.90, 111/245 = 45.31); its row runs as CLIP ViT-B/32."""
    from lexsem.publish.published import published_rows

    rows = published_rows()
    (clip,) = [r for r in rows if r.source.endswith("Table 2") and r.model == "CLIP"
               and (r.benchmark, r.metric, r.subset) == ("sugarcrepe_pp", "itt", "swap_obj")
               and "SUGARCREPE++" in r.source.upper()]  # fmt: skip
    assert clip.accuracy == 45.18 and clip.attainable is False
    assert clip.spec == "clip:openai/clip-vit-base-patch32"
    assert len(rows) == 1195


def test_hf_dataset_layout(tmp_path: Path) -> None:
    runs = _board(tmp_path)
    ds = tmp_path / "ds"
    publish(runs, tmp_path / "site", hf_dataset=ds)
    text = (ds / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    configs = {c["config_name"]: c["data_files"] for c in header["configs"]}
    assert set(configs) == {"summary", "details"}
    summary = pq.read_table(ds / configs["summary"][0]["path"])
    details = pq.read_table(ds / configs["details"][0]["path"])
    assert summary.num_rows == 9  # 3 models × (s1, s2, _micro)
    assert details.num_rows == 180  # 3 models × 60 items
    for column in summary.column_names:
        assert f"| `{column}` |" in text
    micro = [r for r in summary.to_pylist() if r["subset"] == "_micro"]
    assert {r["rank"] for r in micro} >= {1} and all(r["data_sha256"] for r in micro)
    import datasets  # in the test environment (the `hf` extra): never skipped

    cache = str(tmp_path / "hf-cache")
    loaded = datasets.load_dataset(str(ds), "summary", cache_dir=cache)
    assert loaded["train"].num_rows == 9
    assert datasets.load_dataset(str(ds), "details", cache_dir=cache)["train"].num_rows == 180


def test_cli(tmp_path: Path) -> None:
    runs = _board(tmp_path)
    res = CliRunner().invoke(app, ["publish", *map(str, runs), "-o", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    assert "3 models" in res.output and "3 read" in res.output
    dup = _run(tmp_path, "good", [True] * 60, folder="good2")
    res = CliRunner().invoke(app, ["publish", *map(str, runs), str(dup), "-o",
                                   str(tmp_path / "site")])  # fmt: skip
    assert res.exit_code == 2 and "two runs" in res.output


def test_rank_groups_pair_only_items_every_model_scored(tmp_path: Path) -> None:
    """A run that scored fewer items: the table's models are compared on the items all of
    them scored (paired by subset and item id), its accuracy stays its own."""
    full = _run(tmp_path, "full", [True] * 50 + [False] * 10)
    short = _run(tmp_path, "short", [False] * 40)
    publish([full, short], tmp_path / "site")
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    (section,) = data["sections"]
    micro = next(c for c in section["columns"] if c["subset"] == "_micro")
    assert micro["paired_n"] == 40
    rows = {r["model"]: r for r in section["rows"]}
    assert rows["full"]["cells"]["_micro"]["accuracy"] == pytest.approx(100 * 50 / 60)
    assert (rows["full"]["rank"], rows["short"]["rank"]) == (1, 2)  # 40 vs 0 of 40: p < 1e-11


def test_family_anchors_stay_apart() -> None:
    from lexsem.publish.site import anchor

    assert anchor("SugarCrepe++") != anchor("SugarCrepe")
    assert anchor("scpp:/a/b.json|tot|tot") != anchor("scpp:/a_b.json|tot|tot")
