"""`lexsem explore`: the joined table of many runs, slices and their counts, the routes (bad
parameters are 400 / 404, no path reaches a file), and exports: the benchmark file evaluates to
the same per-item hits as the slice shows, the figure is a PNG / a PDF with TrueType fonts, the
study zip holds the file and the `lexsem annotate create` command."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import lexsem
from builders.explore_runs import create_exported_study, synthetic_runs, two_runs
from builders.fakes import BagOfWordsEncoder
from lexsem.explore.app import create_app
from lexsem.explore.runs_table import open_runs
from lexsem.explore.slices import Slice, counts, select

pytestmark = pytest.mark.torch  # the dual encoder's images (builders.fakes)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path, str]:
    return two_runs(tmp_path_factory.mktemp("explore"))


@pytest.fixture(scope="module")
def client(runs: tuple[list[Path], Path, str]) -> TestClient:
    return TestClient(create_app(open_runs(runs[0]), n_boot=50))


def _hits(folder: Path, metric: str) -> dict[tuple[str, str], bool]:
    from lexsem.results.run import Run

    t = Run.load(folder).items.to_pylist()
    return {(r["subset"], r["item_id"]): r["hit"] for r in t if r["metric"] == metric}


def test_the_table_joins_runs_by_item_and_metric(runs: Any) -> None:
    table = open_runs(runs[0])
    assert [r.label for r in table.runs] == ["bow", "tiny-dual"]
    tot = table.column("metric") == "tot"
    assert tot.sum() == 5  # the 5 items once, both runs scored them
    assert (table.hit[tot] >= 0).all()
    itt = table.column("metric") == "itt"
    assert (table.hit[itt, 0] == -1).all() and (table.hit[itt, 1] >= 0).all()
    for k, folder in enumerate(runs[0]):
        want = _hits(folder, "tot")
        got = {(table.column("subset")[i], table.column("item_id")[i]): bool(table.hit[i, k])
               for i in np.flatnonzero(tot)}  # fmt: skip
        assert got == want
    # a hit is a positive margin (TOT: s(P1,P2) - max(s(P1,N), s(P2,N))), a tied item none
    m, h, tie = table.margin[tot], table.hit[tot], table.tie[tot]
    assert ((m > 0) == (h == 1)).all() and (m[tie] <= 0).all() and tie.any()


def test_slices_select_and_count(runs: Any) -> None:
    table = open_runs(runs[0])
    every = select(table, Slice(metric="tot", all_wrong=True))
    assert len(every) and (table.hit[every] == 0).all()
    a_b = select(table, Slice(right=1, wrong=0, metric="itt_p2n"))
    assert len(a_b) == 0  # run 0 has no image metric
    by_margin = select(table, Slice(metric="tot", sort="margin", mrun=0))
    assert list(np.diff(table.margin[by_margin, 0]) >= 0) == [True] * (len(by_margin) - 1)
    c = counts(table, select(table, Slice(metric="tot")), n_boot=0)
    assert c[0].n == 5 and c[0].accuracy == pytest.approx(100 * c[0].hits / 5)
    with pytest.raises(ValueError, match="right=5: there are 2 runs"):
        select(table, Slice(right=5))
    with pytest.raises(ValueError, match="no run of people's answers"):
        select(table, Slice(disagree=True))


def test_counts_are_per_metric_never_pooled(runs: Any, client: TestClient) -> None:
    table = open_runs(runs[0])  # bow: TOT; the dual encoder: TOT, ITT, P1 vs N, P2 vs N
    every = select(table, Slice())
    found = counts(table, every, n_boot=0)
    assert [(c.metric, c.run) for c in found] == [
        ("itt", 1), ("itt_p1n", 1), ("itt_p2n", 1), ("tot", 0), ("tot", 1),
    ]  # fmt: skip
    metric = table.column("metric")[every]
    for c in found:
        mine = every[(metric == c.metric) & (table.hit[every, c.run] >= 0)]
        assert c.n == len(mine) == 5 and c.hits == int((table.hit[mine, c.run] == 1).sum())
    page = client.get("/").text
    blocks = re.findall(r'<tr class="group"><th colspan="5">(.*?)</th></tr>(.*?)</tbody>', page,
                        re.S)  # fmt: skip
    bench = table.column("view")[0]
    assert [(b, body.count('<td class="run">')) for b, body in blocks] == [
        (f"{bench} · itt", 1), (f"{bench} · itt_p1n", 1), (f"{bench} · itt_p2n", 1),
        (f"{bench} · tot", 2),
    ]  # fmt: skip
    assert "<td>20</td>" not in page  # the dual encoder's 4 metrics x 5 items, pooled


def test_each_chip_names_its_run(runs: Any, client: TestClient) -> None:
    import dataclasses

    chip = re.compile(r'<span class="v [^"]*" title="run (\d+): ([^"]*)"><span class="run">'
                      r"([^<]*)</span> (right|wrong)")  # fmt: skip
    chips = chip.findall(client.get("/?metric=tot").text)
    assert {(n, name, shown) for n, name, shown, _ in chips} == {
        ("0", "bow", "bow"), ("1", "tiny-dual", "tiny-dual"),
    }  # fmt: skip
    assert len(chips) == 10  # 5 items, 2 runs
    table = open_runs(runs[0])
    nameless = (dataclasses.replace(table.runs[0], label=""), table.runs[1])
    page = TestClient(create_app(dataclasses.replace(table, runs=nameless), n_boot=0))
    shown = {(n, s) for n, _, s, _ in chip.findall(page.get("/?metric=tot").text)}
    assert shown == {("0", "run 0"), ("1", "tiny-dual")}  # the number where there is no name


@pytest.mark.parametrize(
    ("url", "status", "says"),
    [
        ("/?size=100000", 400, "size"),
        ("/?right=7", 400, "right=7"),
        ("/?sort=best", 400, "sort"),
        ("/?mmin=1&mmax=0", 400, "mmin=1.0 is above"),
        ("/?mmin=nan", 400, "mmin: not a number"),
        ("/?mmax=NaN", 400, "mmax: not a number"),
        ("/?bench=nope", 400, "bench=&#39;nope&#39;: no benchmark of that name"),
        (
            "/?subset=nope",
            400,
            "no subset of that name in these runs; one of: replace_att, swap_obj",
        ),
        ("/?metric=nope", 400, "one of: itt, itt_p1n, itt_p2n, tot"),
        ("/?nosuch=1", 400, "nosuch"),
        ("/?page=99", 400, "page=99"),
        ("/?q=" + "x" * 201, 400, "q"),
        ("/item/999", 404, "no such item"),
        ("/item/..%2f..%2fetc%2fpasswd", 404, ""),
        ("/image/0/5", 404, "no such image"),
        ("/image/-1/0", 404, ""),
        ("/static/..%2fapp.py", 404, ""),
        ("/export/nosuch", 404, "no export"),
        ("/export/benchmark?sel=abc", 404, "no such item"),
        ("/export/figure.png?columns=3", 400, "columns"),
        # digits of other scripts (`str.isdigit` and `\\d` take them, `int` refuses or reads
        # them), leading zeros and numbers too long for `int`: no such item, never a 500
        ("/item/²", 404, "no such item"),
        ("/item/①", 404, "no such item"),
        ("/item/١", 404, "no such item"),  # Arabic-Indic 1: int() reads it as 1
        ("/item/01", 404, "no such item"),
        ("/item/" + "9" * 5000, 404, "no such item"),
        ("/image/²/0", 404, "no such item"),
        ("/image/①/0", 404, "no such item"),
        ("/image/0/²", 404, "no such image"),
        ("/export/benchmark?sel=²", 404, "no such item"),
        ("/export/benchmark?sel=0&sel=①", 404, "no such item"),
        ("/export/figure.png?columns=²", 400, "columns: Input should be a valid integer"),
        ("/image/0/0?full=²", 400, "full: Input should be a valid boolean"),
        ("/?page=²", 400, "page: Input should be a valid integer"),
    ],
)
def test_bad_parameters_are_refused(client: TestClient, url: str, status: int, says: str) -> None:
    res = client.get(url)
    assert res.status_code == status, res.text
    assert says in res.text
    assert "Traceback" not in res.text


def test_the_favicon_is_nothing_rather_than_an_error(client: TestClient) -> None:
    res = client.get("/favicon.ico")
    assert res.status_code == 204 and not res.content


def test_the_page_shows_a_slice_with_headers(client: TestClient) -> None:
    res = client.get("/?metric=tot&q=horse")
    assert res.status_code == 200
    assert res.text.count('class="row"') == 1 and "swap_obj #1" in res.text  # rides a horse
    assert "<mark>" in res.text
    csp = res.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    item = client.get("/item/0")
    assert item.status_code == 200 and "s_p1_p2=" in item.text
    img = client.get("/image/5/0")  # an item of the image metric: its thumbnail
    assert img.status_code == 200 and img.content[:4] == b"\x89PNG"


def test_exported_benchmark_evaluates_to_the_slice_hits(
    client: TestClient, runs: Any, tmp_path: Path
) -> None:
    folders = runs[0]
    table = open_runs(folders)
    s = Slice(metric="tot", wrong=0)
    rows = select(table, s)
    res = client.get("/export/benchmark?metric=tot&wrong=0")
    assert res.status_code == 200
    file = tmp_path / "hard.json"
    file.write_bytes(res.content)
    run = lexsem.evaluate(BagOfWordsEncoder(16, "bow"), [f"scpp:{file}"], n_boot=0,
                          cache_dir=tmp_path / "cache", tasks=["tot"])  # fmt: skip
    got = {r["item_id"]: r["hit"] for r in run.items.to_pylist()}
    want = {f"{table.column('subset')[k]}/{table.column('item_id')[k]}": bool(table.hit[k, 0])
            for k in rows}  # fmt: skip
    assert got == want and len(got) == len(rows) > 0


def test_figure_and_study_exports(client: TestClient, tmp_path: Path) -> None:
    png = client.get("/export/figure.png?metric=tot&columns=1")
    assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    pdf = client.get("/export/figure.pdf?metric=tot")
    assert pdf.status_code == 200 and pdf.content[:5] == b"%PDF-"
    assert b"/FontFile2" in pdf.content and b"/Type3" not in pdf.content  # TrueType embedded
    z = client.get("/export/study?sel=0&sel=1")
    assert z.status_code == 200
    with zipfile.ZipFile(io.BytesIO(z.content)) as f:
        assert sorted(f.namelist()) == ["create-study.sh", "items.json"]
        assert len(json.loads(f.read("items.json"))) == 2
        script = f.read("create-study.sh").decode()
        assert 'lexsem annotate create "$study" -b "scpp:$(dirname "$0")/items.json"' in script
        assert "--kind tot" in script  # rows 0 and 1 are TOT rows
    every = client.get("/export/figure.png")  # 20 rows (4 metrics) are 5 items
    assert every.status_code == 200


def test_a_study_of_text_only_runs_asks_text_only_questions(runs: Any, tmp_path: Path) -> None:
    text_only = TestClient(create_app(open_runs(runs[0][:1]), n_boot=0))  # bow: TOT only
    res = create_exported_study(text_only.get("/export/study").content, tmp_path / "text")
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"study: {tmp_path / 'text' / 's.sqlite'} (tot)" in res.stdout
    both = TestClient(create_app(open_runs(runs[0]), n_boot=0))  # and the dual encoder's ITT
    with zipfile.ZipFile(io.BytesIO(both.get("/export/study").content)) as f:
        assert "--kind tot --kind itt" in f.read("create-study.sh").decode()
    with zipfile.ZipFile(io.BytesIO(both.get("/export/study?metric=itt").content)) as f:
        assert '--kind itt "$@"' in f.read("create-study.sh").decode()


def test_figure_captions_wrap_at_their_columns_width() -> None:
    from lexsem.explore.figure import WIDTHS, FigureItem, grid_figure, text_width

    text = "a small brown dog runs after the red ball across the wide green field " * 4
    words = [(w, i % 7 == 3) for i, w in enumerate(text.split())]  # some in bold
    image = np.zeros((8, 8, 3), np.uint8)
    for columns in (1, 2):
        for images in ([], [image], [image, image]):
            cell = FigureItem("title", [("P1", words)], [("m", "right")], images)
            fig = grid_figure([cell, cell], columns=columns)  # type: ignore[arg-type]
            renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
            (caption,) = [t for t in fig.texts if "P1:" in t.get_text()][:1]
            box = caption.get_window_extent(renderer)
            left, right = box.x0 / fig.dpi, box.x1 / fig.dpi
            column = WIDTHS[columns] / columns  # one item per row in one column, two in two
            width = text_width(columns, len(images))  # type: ignore[arg-type]
            assert right <= column, (columns, len(images), right, column)  # within its column
            assert right - left >= 0.9 * width, (columns, len(images), right - left, width)
            assert left + width == pytest.approx(column - 0.04)  # all of it, less a margin


def test_each_verdict_line_sits_right_below_its_items_text() -> None:
    """Text-only cells are as tall as their lines: the verdicts' line is closer to its own
    item's last caption than to the next item's title (no gap left for images there are not)."""
    from lexsem.explore.figure import FigureItem, grid_figure

    words = [(w, False) for w in ["a", "cup", "stands", "left", "of", "the", "laptop"]]
    image = np.zeros((8, 8, 3), np.uint8)
    for images in ([], [image]):
        cell = FigureItem("title", [("P1", words), ("P2", words), ("N", words)],
                          [("m", "wrong")], images)  # fmt: skip
        fig = grid_figure((cell, cell), columns=1)
        renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
        texts = [t.get_window_extent(renderer) for t in fig.texts]
        first, verdict, second = texts[0], texts[1], texts[2]  # text, verdicts, next text
        below_own = first.y0 - verdict.y1  # pixels, y grows upwards
        above_next = verdict.y0 - second.y1
        assert below_own < above_next or images, (below_own, above_next)
        assert below_own >= 0 and above_next >= 0  # nothing overlaps


def test_exports_are_bounded_and_of_triplets_or_pairs() -> None:
    from lexsem.benchmarks.items import QuadItem, TripletItem
    from lexsem.errors import LexsemError
    from lexsem.explore import exports
    from lexsem.explore.figure import MAX_FIGURE_ITEMS, FigureItem, item_grid

    cell = FigureItem("x", [("P1", [("a", False), ("dog", True)])], [("m", "right")], [])
    assert item_grid([cell], columns=1)[:4] == b"\x89PNG"
    with pytest.raises(LexsemError, match=f"at most {MAX_FIGURE_ITEMS}"):
        item_grid([cell] * (MAX_FIGURE_ITEMS + 1))
    quad = QuadItem(id="0", subset="s", image0="a.jpg", caption0="a", image1="b.jpg",
                    caption1="b")  # fmt: skip
    with pytest.raises(LexsemError, match=r"triplets .* or pairs"):
        exports.benchmark_file([quad])
    triplet = TripletItem(id="0", subset="s", image=None, p1="a", p2="b", n="c")
    with pytest.raises(LexsemError, match="export at most"):
        exports.benchmark_file([triplet] * (exports.MAX_EXPORT_ITEMS + 1))
    _, _, data = exports.benchmark_file([triplet])
    assert json.loads(data) == [{"id": "0", "caption": "a", "caption2": "b",
                                 "negative_caption": "c"}]  # fmt: skip


def test_runs_on_other_data_are_shown_apart(tmp_path: Path) -> None:
    a = synthetic_runs(tmp_path / "a", 1, 8)
    b = synthetic_runs(tmp_path / "b", 1, 8, seed=1)
    from lexsem.results.run_folder import load_items, load_run, save_run

    rec = load_run(b[0])
    info = rec.benchmarks[0]
    files = [f.model_copy(update={"sha256": "1" * 64}) for f in info.files]
    rec = rec.model_copy(update={"run_id": "other-data", "benchmarks": [
        info.model_copy(update={"files": files})]})  # fmt: skip
    save_run(tmp_path / "other", rec, load_items(b[0]))
    table = open_runs([a[0], tmp_path / "other"])
    assert set(table.column("view")) == {"sugarcrepe_pp", "sugarcrepe_pp · data 2"}
    assert len(table) == 16 and ((table.hit >= 0).sum(1) == 1).all()
    assert any("shown apart" in n for n in table.notes)


def test_runs_of_one_model_on_different_benchmarks_are_told_apart(tmp_path: Path) -> None:
    import pyarrow as pa

    from lexsem.results.run_folder import load_items, load_run, save_run

    a, b = synthetic_runs(tmp_path / "runs", 2, 8)
    rec = load_run(b)
    info = rec.benchmarks[0].model_copy(update={"name": "visla"})
    rec = rec.model_copy(update={"model": load_run(a).model, "benchmarks": [info]})
    items = load_items(b)
    items = items.set_column(0, "benchmark", pa.array(["visla"] * items.num_rows))
    save_run(tmp_path / "other", rec, items)
    table = open_runs([a, tmp_path / "other"])
    assert [r.label for r in table.runs] == ["model0 · sugarcrepe_pp", "model0 · visla"]
    assert [r.name for r in table.runs] == ["model0", "model0"]
    page = TestClient(create_app(table, n_boot=0)).get("/").text
    assert ">0 model0 · sugarcrepe_pp<" in page and ">1 model0 · visla<" in page


def test_the_command_refuses_a_folder_that_is_no_run(tmp_path: Path) -> None:
    from lexsem.cli import app

    res = CliRunner().invoke(app, ["explore", str(tmp_path)])
    assert res.exit_code == 2 and "no run among" in res.output
    res = CliRunner().invoke(app, ["explore", "--port", "0", str(tmp_path)])
    assert res.exit_code != 0 and "port" in res.output.lower()
    synthetic_runs(tmp_path / "runs", 2, 4)  # a folder of runs: the glob is suggested
    res = CliRunner().invoke(app, ["explore", str(tmp_path / "runs")])
    assert res.exit_code == 2 and "open http" not in res.output
    assert f"holds 2 run folders (run0, ...): give them, e.g. lexsem explore {tmp_path}/runs/*" in (
        " ".join(res.output.split())
    )


def test_people_and_models_disagree(runs: Any, tmp_path: Path) -> None:
    from builders.explore_runs import human_run

    folders, _, selector = runs
    base = folders[0].parent.parent
    model = _hits(folders[0], "tot")
    # people right where the text model is wrong, and on one item where it is right
    right = {k: (not hit) or k == ("replace_att", "1") for k, hit in model.items()}
    people = human_run(base, selector, right)
    table = open_runs([*folders, people])
    assert table.runs[2].human and table.runs[2].label
    rows = select(table, Slice(metric="tot", disagree=True))
    shown = {(table.column("subset")[k], table.column("item_id")[k]) for k in rows}
    both = {k for k, hit in model.items() if not hit and not _hits(folders[1], "tot")[k]}
    assert shown == both and shown  # the models (both wrong) against the people (right)
    app = TestClient(create_app(table, n_boot=0))
    res = app.get("/?metric=tot&disagree=1")
    assert res.status_code == 200 and "people" in res.text
    item = app.get(f"/item/{int(rows[0])}")
    assert "right_" in item.text  # the people's votes, as the human run keeps them


def test_the_report_links_qualitative_cases_to_the_explorer(runs: Any, client: TestClient) -> None:
    import html
    import re

    from lexsem.report.analyses import ReportOptions, build_report
    from lexsem.results.run import Run

    loaded = [Run.load(f) for f in runs[0]]
    url = "http://127.0.0.1:8765"
    page = build_report(loaded, ReportOptions(n_boot=0, explore_url=url))
    links = [
        html.unescape(h) for h in re.findall(r'<a href="(http://127\.0\.0\.1:8765/[^"]*)"', page)
    ]
    assert any("subset=swap_obj" in h and "item=" not in h for h in links)  # a subset
    items = [h for h in links if "item=" in h]
    assert items  # each example item of a case
    assert "start it with <code>lexsem explore RUN...</code>" in page
    for h in items:  # each opens its item in the explorer: one row
        res = client.get(h.removeprefix(url))
        assert res.status_code == 200 and res.text.count('class="row"') == 1, h
    plain = build_report(loaded, ReportOptions(n_boot=0))
    assert "8765" not in plain and "lexsem explore" not in plain


def test_a_port_in_use_is_one_line_before_any_address_is_printed(tmp_path: Path) -> None:
    import socket

    from lexsem.cli import app

    folders = synthetic_runs(tmp_path, 1, 4)
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = held.getsockname()[1]
        res = CliRunner().invoke(app, ["explore", "--port", str(port), str(folders[0])])
    assert res.exit_code == 2, res.output
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in res.output
    assert "open http" not in res.output


def test_on_every_address_the_printed_urls_are_answered_and_other_names_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--host 0.0.0.0`: the URLs printed (this machine's, other machines') are answered by a
    server listening on 0.0.0.0, as are the machine's names and any IP address; another name
    (DNS rebinding) is 400. Requests go to 127.0.0.1 only, the Host header naming the rest."""
    import socket
    from urllib.parse import urlsplit

    import httpx

    from builders.explore_runs import served
    from lexsem.cli import app

    monkeypatch.setattr(socket, "gethostname", lambda: "node7")
    monkeypatch.setattr(socket, "getfqdn", lambda name="": "node7.lab.example.org")
    apps: list[Any] = []
    monkeypatch.setattr("lexsem.web_server.serve", lambda a, sock, **k: apps.append(a))
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    folders = synthetic_runs(tmp_path, 1, 4)
    res = CliRunner().invoke(app, ["explore", "--host", "0.0.0.0", "--port", str(port),
                                   str(folders[0])])  # fmt: skip
    assert res.exit_code == 0, res.output
    here, there = f"http://127.0.0.1:{port}/", f"http://node7.lab.example.org:{port}/"
    assert f"open {here} (from other machines: {there}) (Ctrl-C stops)" in res.output
    assert "0.0.0.0" not in res.output
    with served(apps[0], host="0.0.0.0") as base:
        status = lambda host: httpx.get(f"{base}/", headers={"host": host}).status_code  # noqa: E731
        for url in (here, there):
            assert status(urlsplit(url).netloc) == 200, url
        for host in ("localhost", "node7", "NODE7:80", "192.0.2.7:8765", "[2001:db8::7]:8765"):
            assert status(host) == 200, host
        for host in ("evil.example", "node7.lab.example.org.evil.example", "[node7]", ""):
            assert status(host) == 400, host
        refused = httpx.get(f"{base}/", headers={"host": "evil.example"}).text
        assert "'evil.example' is not a name of this server" in refused
        assert "node7.lab.example.org, node7 or an IP address" in refused


def test_the_command_serves_with_the_study_servers_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from lexsem.cli import app

    served: list[tuple[int, socket.socket]] = []
    record = lambda a, sock, **k: served.append((sock.getsockname()[1], sock))  # noqa: E731
    monkeypatch.setattr("lexsem.web_server.serve", record)
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    folders = synthetic_runs(tmp_path, 1, 4)
    res = CliRunner().invoke(app, ["explore", "--port", str(port), str(folders[0])])
    assert res.exit_code == 0, res.output
    assert f"open http://127.0.0.1:{port}/" in res.output
    ((on, sock),) = served  # lexsem.web_server.serve: slow clients closed, requests bounded
    assert on == port and sock.fileno() == -1  # closed once served


def test_an_edited_benchmark_file_shows_no_captions_and_says_why(tmp_path: Path) -> None:
    folders, _, _ = two_runs(tmp_path / "edited")
    file = tmp_path / "edited" / "triplets" / "swap_obj.json"
    file.write_text(file.read_text().replace("A cat", "A bird"), encoding="utf-8")
    app = TestClient(create_app(open_runs(folders), n_boot=0))
    res = app.get("/?subset=swap_obj&metric=tot")
    assert res.status_code == 200
    assert "captions not shown" in res.text and "the run of bow scored (another sha256)" in res.text
    assert "A bird" not in res.text and "A cat" not in res.text
    res = app.get("/export/benchmark?subset=swap_obj&metric=tot")
    assert res.status_code == 409 and "captions are not readable" in res.text


def test_a_moved_benchmark_file_shows_no_captions_and_names_its_path(tmp_path: Path) -> None:
    folders, _, _ = two_runs(tmp_path / "moved")
    (tmp_path / "moved" / "triplets").rename(tmp_path / "elsewhere")
    res = TestClient(create_app(open_runs(folders), n_boot=0)).get("/?metric=tot")
    assert res.status_code == 200
    note = re.search(r'class="note">(captions not shown[^<]*)', res.text)
    assert note is not None, res.text
    assert f"{tmp_path / 'moved' / 'triplets'} does not exist" in note.group(1)
    assert "the run of bow read it" in note.group(1)


def test_the_same_run_twice_is_refused(runs: Any) -> None:
    from lexsem.errors import LexsemError

    with pytest.raises(LexsemError, match="hold the same run"):
        open_runs([runs[0][0], runs[0][0]])


def test_a_run_of_a_frozen_build_shows_its_captions(tmp_path: Path) -> None:
    from builders.recipes import recipe_toml, stage, write_recipe
    from lexsem.cli import app

    triplets = [
        {"p1": "a dog on a sofa", "p2": "a sofa with a dog on it", "n": "a sofa on a dog"},
        {"p1": "two cats near a box", "p2": "a box near two cats", "n": "two boxes near a cat"},
        {"p1": "a man rides a horse", "p2": "a horse carries a man", "n": "a horse rides a man"},
    ]
    freeze = stage("freeze", format="scpp", image="image", title="Tiny triplets",
                   licences={"triplets.jsonl": "CC0-1.0"})  # fmt: skip
    recipe = recipe_toml("tiny", 7, stage("caption_format", name="format", column="p1"), freeze)
    write_recipe(tmp_path, recipe, triplets)
    res = CliRunner().invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o",
                                   str(tmp_path / "build")])  # fmt: skip
    assert res.exit_code == 0, res.output
    lexsem.evaluate(BagOfWordsEncoder(16, "bow"), [f"build:{tmp_path / 'build'}"], n_boot=0,
                    tasks=["tot"], out=tmp_path / "run")  # fmt: skip
    app_ = TestClient(create_app(open_runs([tmp_path / "run"]), n_boot=0))
    page = app_.get("/")
    assert page.status_code == 200 and "captions not shown" not in page.text
    assert page.text.count('class="row"') == 3 and "<mark>" in page.text and "sofa" in page.text


def test_margins_of_each_item_kind_agree_with_the_hits() -> None:
    import pyarrow as pa

    from lexsem.explore.margins import margins
    from lexsem.tasks.pair import S_I_NEG, S_I_POS
    from lexsem.tasks.quad import S_I0_C0, S_I0_C1, S_I1_C0, S_I1_C1

    rng = np.random.default_rng(0)
    s = {c: rng.random(40) for c in (S_I0_C0, S_I0_C1, S_I1_C0, S_I1_C1)}
    i2t = (s[S_I0_C0] > s[S_I0_C1]) & (s[S_I1_C1] > s[S_I1_C0])
    t2i = (s[S_I0_C0] > s[S_I1_C0]) & (s[S_I1_C1] > s[S_I0_C1])
    for metric, hit in (("i2t", i2t), ("t2i", t2i), ("group", i2t & t2i)):
        m = margins(pa.array([metric] * 40), s)
        assert ((m > 0) == hit).all(), metric
    p = {S_I_POS: rng.random(9), S_I_NEG: rng.random(9)}
    m = margins(pa.array(["acc"] * 9), p)
    assert ((m > 0) == (p[S_I_POS] > p[S_I_NEG])).all()
    assert np.isnan(margins(pa.array(["mc_accuracy"] * 9), p)).all()  # no margin defined


def test_word_differences() -> None:
    from lexsem.explore.word_diff import marked, roles_against

    assert marked("A cat chases a dog.", "A dog chases a cat.") == [
        ("A", False), ("cat", True), ("chases", False), ("a", False), ("dog.", True),
    ]  # fmt: skip
    assert roles_against({"P1": "", "P2": "", "N": ""}) == {"P1": "N", "P2": "N", "N": "P1"}
    assert roles_against({"caption 0": "", "caption 1": ""}) == {
        "caption 0": "caption 1", "caption 1": "caption 0",
    }  # fmt: skip


def test_intervals_are_bootstrapped_for_bounded_slices_wilson_above(tmp_path: Path) -> None:
    from lexsem.explore.slices import MAX_CI_ROWS
    from lexsem.stats.bootstrap import confidence_interval, micro_mean

    table = open_runs(synthetic_runs(tmp_path, 1, MAX_CI_ROWS + 10))
    small = np.arange(100)
    (c,) = counts(table, small, n_boot=200)
    hits = (table.hit[small, 0] == 1).astype(float)
    assert (c.ci_low, c.ci_high) == confidence_interval([hits], micro_mean, 200, 0, 0.95)
    assert c.ci_low is not None and c.ci_low <= c.accuracy <= c.ci_high
    assert c.interval == "bootstrap"
    every = np.arange(len(table))
    (big,) = counts(table, every, n_boot=200)
    # Wilson (1927) by hand: centre (p + z²/2n) / (1 + z²/n), half width
    # z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²), z the normal's 97.5% quantile
    n, k, z = len(every), int((table.hit[every, 0] == 1).sum()), 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (big.n, big.hits, big.interval) == (MAX_CI_ROWS + 10, k, "wilson")
    assert big.ci_low == pytest.approx(100 * (centre - half), abs=1e-9)
    assert big.ci_high == pytest.approx(100 * (centre + half), abs=1e-9)
    assert counts(table, every, n_boot=0)[0].ci_low is None  # --n-boot 0: no interval
    page = TestClient(create_app(table, n_boot=200)).get("/")
    assert page.status_code == 200
    shown = f"[{100 * (centre - half):.1f}, {100 * (centre + half):.1f}]<sup>W</sup>"
    assert shown in page.text and 'title="Wilson score interval' in page.text


def test_bivlc_items_show_two_captions_and_two_images(tmp_path: Path) -> None:
    from builders.fakes import TinyDualEncoder
    from builders.hf_parquet import bivlc_columns, write_parquet

    path = tmp_path / "my_bivlc.parquet"
    write_parquet(path, bivlc_columns())
    lexsem.evaluate(TinyDualEncoder(), [f"bivlc:{path}"], n_boot=0, num_workers=0,
                    out=tmp_path / "run")  # fmt: skip
    table = open_runs([tmp_path / "run"])
    app = TestClient(create_app(table, n_boot=0))
    rows = select(table, Slice(metric="group"))
    assert len(rows) == 5
    m, h = table.margin[rows, 0], table.hit[rows, 0]
    assert ((m > 0) == (h == 1)).all()  # group: both directions won
    page = app.get("/?metric=group")
    assert page.status_code == 200 and "captions not shown" not in page.text
    assert "caption 0" in page.text and "caption 1" in page.text and "<mark>" in page.text
    key = int(rows[0])
    for n in (0, 1):
        img = app.get(f"/image/{key}/{n}?full=1")
        assert img.status_code == 200 and img.content[:4] == b"\x89PNG"
    assert app.get(f"/image/{key}/2").status_code == 404


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("text", "UnidentifiedImageError: cannot identify image file"),
        ("empty", "it is empty (0 bytes)"),
        ("truncated", "OSError: "),
    ],
)
def test_an_image_file_that_is_no_image_is_one_line_naming_it(
    runs: Any, tmp_path: Path, damage: str, says: str
) -> None:
    """A text file, an empty file or a truncated image in --coco-val2017: 422 naming the file,
    the other images, pages and figures still served."""
    import shutil

    folder = tmp_path / "val2017"
    shutil.copytree(runs[1], folder)
    bad = folder / "0.jpg"
    whole = bad.read_bytes()
    bad.write_bytes({"text": b"not an image\n", "empty": b"", "truncated": whole[:500]}[damage])
    table = open_runs(runs[0])
    client = TestClient(create_app(table, n_boot=0, image_folders={"coco_val2017": folder}))
    ids = table.column("item_id").tolist()
    broken, fine = ids.index("0"), ids.index("1")
    for url in (f"/image/{broken}/0", f"/image/{broken}/0?full=1"):
        res = client.get(url)
        assert res.status_code == 422, res.text
        assert f"{bad}: image &#39;0.jpg&#39; cannot be decoded: {says}" in res.text
        assert "Traceback" not in res.text
    assert client.get(f"/image/{fine}/0").content[:4] == b"\x89PNG"
    assert client.get(f"/item/{broken}").status_code == 200
    fig = client.get(f"/export/figure.png?sel={broken}&sel={fine}")  # the broken image left out
    assert fig.status_code == 200 and fig.content[:4] == b"\x89PNG"


def test_report_refuses_an_explore_url_that_is_no_web_address(runs: Any, tmp_path: Path) -> None:
    from lexsem.cli import app

    args = ["report", str(runs[0][0]), "--html", str(tmp_path / "r.html"), "--explore-url"]
    res = CliRunner().invoke(app, [*args, "127.0.0.1:8765"])
    assert (
        res.exit_code == 2 and "--explore-url 127.0.0.1:8765: give http://HOST:PORT" in res.output
    )
    assert not (tmp_path / "r.html").exists()
