"""Reports of generative runs (`lexsem.report.generative`): the papers' tables of them
(SugarCrepe++ Tables 8, 14, 17, 18, 19; BiVLC Table 2, laid out by `lexsem.report.paper`) with
numbers decided by hand, the position bias of multiple-choice runs
(`lexsem.analysis.position_bias`; table and figure), the HTML section, and reports of other runs
left exactly as they were."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from builders.fakes import (
    TRIPLETS,
    BagOfWordsEncoder,
    ScriptedChat,
    TinyDualEncoder,
    image_key_of,
    oracle_key,
    scpp_user_files,
)
from builders.hf_parquet import bivlc_columns, write_parquet
from builders.report_pages import PNG_MAGIC, png_size
from lexsem import evaluate
from lexsem.analysis.position_bias import position_bias
from lexsem.cli import app
from lexsem.models.vqascore import QUESTIONS
from lexsem.report import generative
from lexsem.report.all_tables import build_tables
from lexsem.report.analyses import ReportOptions, build_report
from lexsem.report.paper.generative_runs import is_generative, method_of, question_of
from lexsem.report.tables import Table, table_groups, to_markdown
from lexsem.results.run import Run
from lexsem.results.schema import RunRecord

pytestmark = pytest.mark.torch

MARKER = re.compile(r"\(\d\)")
NEGATIVES = {n for rows in TRIPLETS.values() for _, _, n in rows}
SWAP_OBJ = {c for row in TRIPLETS["swap_obj"] for c in row}
CHOICE = ["choice_scpp1", "choice_scpp2", "choice_scpp3"]


class ScriptedReplies(ScriptedChat):
    """Answers each prompt with `reply(prompt)`; `extra` goes into its fingerprint."""

    def __init__(self, reply: Any, name: str, **extra: Any) -> None:
        super().__init__(reply, name, tag=name, **extra)


def oracle(prompt: str) -> str:
    """The negative's position among the prompt's options: the right answer."""
    for neg in NEGATIVES:
        at = prompt.find(neg)
        if at >= 0:
            return f"({len(MARKER.findall(prompt[:at]))})"
    raise AssertionError(prompt)


def swap_first(prompt: str) -> str:
    """(1) about the swap_obj items (right under NPP), (2) about the others (wrong under NPP)."""
    return "(1)" if any(c in prompt for c in SWAP_OBJ) else "(2)"


class FakeScorer:
    """A pair scorer presenting itself as a generative backend (`fingerprint`): 1 for the
    (image, caption) pairs of `true_pairs`, else the caption's value in `texts` (0 if none)."""

    def __init__(self, name: str, fingerprint: dict[str, Any], texts: dict[str, float],
                 true_pairs: dict[bytes, set[str]] | None = None) -> None:  # fmt: skip
        self.name, self.fp, self.texts = name, fingerprint, texts
        self.true_pairs = true_pairs or {}

    @property
    def fingerprint(self) -> dict[str, Any]:
        return self.fp

    def preprocess(self, image: Any) -> Any:
        return oracle_key(image)

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        keys = [bytes(np.asarray(im, dtype=np.uint8).tolist()) for im in images]
        return np.array(
            [1.0 if t in self.true_pairs.get(k, ()) else self.texts.get(t, 0.0)
             for k, t in zip(keys, texts, strict=True)]
        )  # fmt: skip


def caption_scores(miss: Collection[tuple[str, int]] = (), pos: float = 0.9) -> dict[str, float]:
    """Positives `pos`, negatives 0.1, except the negatives of the (subset, index) items in
    `miss`, 0.95 (above every positive: the item is a miss)."""
    out = {}
    for sub, rows in TRIPLETS.items():
        for k, (p1, p2, n) in enumerate(rows):
            out.update({p1: pos, p2: pos, n: 0.95 if (sub, k) in miss else 0.1})
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """SugarCrepe++-format triplets, SugarCrepe-format pairs (P1 vs N of the same items) and a
    BiVLC-format parquet file, with their images; and the settings of every run."""
    base = tmp_path_factory.mktemp("gen-data")
    scpp, images = scpp_user_files(base)
    pairs = base / "pairs"
    pairs.mkdir()
    for sub, rows in TRIPLETS.items():
        recs = {str(k): {"filename": f"{k}.jpg", "caption": p1, "negative_caption": n}
                for k, (p1, _, n) in enumerate(rows)}  # fmt: skip
        (pairs / f"{sub}.json").write_text(json.dumps(recs), encoding="utf-8")
    cols = bivlc_columns()
    write_parquet(base / "gen_bivlc.parquet", cols)
    kw = {"coco_val2017": images, "n_boot": 0, "num_workers": 0, "cache_dir": base / "cache"}
    bivlc = f"bivlc:{base / 'gen_bivlc.parquet'}"
    return {"scpp": scpp, "sc": f"sugarcrepe:{pairs}", "bivlc": bivlc, "cols": cols, "kw": kw,
            "base": base}  # fmt: skip


def _ask(data: dict[str, Any], model: Any, tasks: list[str], out: str | None = None) -> Run:
    target = None if out is None else data["base"] / out
    return evaluate(model, [data["scpp"]], tasks=tasks, out=target, **data["kw"])


@pytest.fixture(scope="module")
def choice_runs(data: dict[str, Any]) -> dict[str, Run]:
    return {
        "oracle": _ask(data, ScriptedReplies(oracle, "oracle"), [*CHOICE, "choice_scpp_order"],
                       "oracle"),
        "one": _ask(data, ScriptedReplies(lambda p: "(1)", "one"), [*CHOICE, "choice_scpp_order"],
                    "one"),
        "swap": _ask(data, ScriptedReplies(swap_first, "swap"), ["choice_scpp3"]),
        "four": _ask(data, ScriptedReplies(lambda p: "(2)", "four", shots=4), ["choice_scpp3"]),
    }  # fmt: skip


def _table(tables: Sequence[Table], paper: str) -> Table:
    (t,) = [t for t in tables if paper in t.title]
    return t


def _rows(t: Table) -> dict[tuple[str, ...], list[str]]:
    """(text cells before the first number) -> the other cells."""
    first = next(j for j, h in enumerate(t.headers) if h[0].isupper() or h.startswith("sugar"))
    return {tuple(r[:first]): r[first:] for r in t.rows}


# -- SugarCrepe++ Tables 8, 14, 18 -----------------------------------------------------------


def test_table8_is_npp_per_model_and_prompt(choice_runs: dict[str, Run]) -> None:
    recs = [r.record for r in choice_runs.values()]
    t = _table(generative.paper_tables(recs), "SugarCrepe++ Table 8")
    assert t.headers == ["model", "prompt", "Swap Object", "Replace Attribute"]  # paper order
    rows = _rows(t)
    for prompt in ("Prompt-1", "Prompt-2", "Prompt-3"):
        assert rows[("oracle", prompt)] == ["100.00", "100.00"]
        assert rows[("one", prompt)] == ["100.00", "100.00"]  # (1) is right when N is first
    assert rows[("swap", "Prompt-3")] == ["100.00", "0.00"]
    assert not any(k[0] == "four" for k in rows)  # a 4-shot run is Table 14's


def test_runs_on_different_data_get_separate_paper_tables(choice_runs: dict[str, Run]) -> None:
    """Two runs whose benchmark files differ (another version, a user file of the same name)
    are never rows of one paper table: each group gets its own, marked, with the reason."""
    oracle, one = choice_runs["oracle"].record, choice_runs["one"].record.model_copy(deep=True)
    for info in one.benchmarks:
        for f in info.files:
            f.sha256 = "0" * 64
    tables = [t for t in generative.paper_tables([oracle, one]) if "Table 8" in t.title]
    assert [t.title.rsplit(" ", 4)[-4:] for t in tables] == [
        ["[data", "1", "of", "2]"],
        ["[data", "2", "of", "2]"],
    ]
    assert {k[0] for k in _rows(tables[0])} == {"oracle"} and {k[0] for k in _rows(tables[1])} == {
        "one"
    }
    assert all("read from different data" in " ".join(t.notes) for t in tables)
    together = _table(generative.paper_tables([oracle, choice_runs["one"].record]), "Table 8")
    assert {k[0] for k in _rows(together)} == {"oracle", "one"}  # same data: one table


def test_table14_labels_rows_by_shots_or_by_run_name(choice_runs: dict[str, Run]) -> None:
    recs = [choice_runs[k].record for k in ("oracle", "four", "swap")]
    recorded = choice_runs["swap"].record.model_copy(deep=True)
    recorded.run_id, recorded.model.name = "recorded-run-0001", "gpt-answers"
    recorded.model.fingerprint = {"backend": "recorded", "file": "a.jsonl", "sha256": "0" * 64}
    t = _table(generative.paper_tables([*recs, recorded]), "SugarCrepe++ Table 14")
    assert [r[:2] for r in t.rows] == [
        ["oracle", "Zero-shot"], ["swap", "Zero-shot"], ["four", "4-shot"],
        ["gpt-answers", "not recorded"],
    ]  # fmt: skip
    assert t.rows[2][2:] == ["0.00", "0.00"]  # (2) under NPP: always wrong
    assert t.rows[3][2:] == ["100.00", "0.00"]
    zero_shot_only = generative.paper_tables([choice_runs["oracle"].record])
    assert not [t for t in zero_shot_only if "Table 14" in t.title]


def test_table18_constant_first_option_is_right_only_under_npp(
    choice_runs: dict[str, Run],
) -> None:
    recs = [choice_runs["one"].record, choice_runs["oracle"].record]
    t = _table(generative.paper_tables(recs), "SugarCrepe++ Table 18")
    assert t.headers == ["model", "ordering", "Swap Obj", "Replace Att"]
    assert [r[:2] for r in t.rows[:3]] == [
        ["one", "Negative, Positive 1, Positive 2 (NPP)"],
        ["one", "Positive 1, Negative, Positive 2 (PNP)"],
        ["one", "Positive 1, Positive 2, Negative (PPN)"],
    ]
    assert [r[2:] for r in t.rows] == [["100.00"] * 2, ["0.00"] * 2, ["0.00"] * 2] + [
        ["100.00"] * 2
    ] * 3


# -- SugarCrepe++ Table 17 -----------------------------------------------------------------------


def _yesno(data: dict[str, Any], preset: str, texts: dict[str, float]) -> Run:
    fp = {"backend": "vqa", "model": "blip-fake", "score": "vqa_norm",
          "question": QUESTIONS[preset]}  # fmt: skip
    model = FakeScorer(f"blip {preset}", fp, texts)
    return evaluate(model, [data["scpp"]], tasks=["yesno"], **data["kw"])


def test_table17_rows_are_the_prompt_presets(data: dict[str, Any]) -> None:
    runs = [
        _yesno(data, "t17_3", caption_scores({("swap_obj", 2)})),  # one swap_obj item missed
        _yesno(data, "t17_1", caption_scores()),  # yes to P1, P2; no to N: every item right
        _yesno(data, "t17_2", caption_scores(pos=0.4)),  # no to everything: every item wrong
    ]
    recs = [r.record for r in runs]
    by_spec = recs[0].model_copy(deep=True)  # a spec string is never parsed for the question
    by_spec.run_id, by_spec.model.name = "spec-run-00001", "blip t17_5"
    by_spec.model.spec = "vqa:blip-fake?score=vqa_norm&question=t17_5"
    by_spec.model.fingerprint = {k: v for k, v in by_spec.model.fingerprint.items()
                                 if k != "question"}  # fmt: skip
    t = _table(generative.paper_tables([*recs, by_spec]), "SugarCrepe++ Table 17")
    assert t.headers[:4] == ["prompt", "input prompt", "paraphrase of", "model"]
    assert t.headers[4:] == ["S. Obj", "R. Att"]
    assert [r[0] for r in t.rows] == ["t17_1", "t17_2", "t17_3", "not recorded"]
    assert t.rows[0][1] == (
        "Does the following caption match the image: <caption>? Provide 'yes' or 'no' as response"
    )
    assert [r[2] for r in t.rows] == ["Prompt-1", "Prompt-1", "Prompt-1", ""]
    assert [r[4:] for r in t.rows] == [
        ["100.00", "100.00"], ["0.00", "0.00"], ["66.67", "100.00"], ["66.67", "100.00"],
    ]  # fmt: skip


# -- SugarCrepe++ Table 19, BiVLC Table 2 -----------------------------------------------------


def _bivlc_pairs(cols: dict[str, list[Any]], rows: Sequence[int]) -> dict[bytes, set[str]]:
    """The true pairs of BiVLC rows `rows`: each image with its own caption."""
    out: dict[bytes, set[str]] = {}
    for k in rows:
        out.setdefault(image_key_of(cols["image"][k]["bytes"]), set()).add(cols["caption"][k])
        neg = image_key_of(cols["negative_image"][k]["bytes"])
        out.setdefault(neg, set()).add(cols["negative_caption"][k])
    return out


@pytest.fixture(scope="module")
def scorer_runs(data: dict[str, Any]) -> list[Run]:
    known = _bivlc_pairs(data["cols"], [1, 2, 3])
    vqa_fp = {"backend": "vqa", "model": "xl", "score": "vqa"}
    vqa = FakeScorer("xl", vqa_fp, caption_scores({("swap_obj", 2)}), known)
    half = {c: 0.5 for rows in TRIPLETS.values() for row in rows for c in row}
    blind = FakeScorer("xl", {"backend": "vgpt", "model": "xl", "score": "blind"}, half)
    both = [data["scpp"], data["sc"], data["bivlc"]]
    return [
        evaluate(vqa, both, **data["kw"]),
        evaluate(blind, [data["scpp"]], **data["kw"]),  # one run per benchmark: one row
        evaluate(blind, [data["sc"]], **data["kw"]),
    ]


def test_table19_itt_per_subset_grouped_by_method(scorer_runs: list[Run]) -> None:
    t = _table(generative.paper_tables([r.record for r in scorer_runs]), "SugarCrepe++ Table 19")
    sc = next(b.name for b in scorer_runs[0].record.benchmarks if b.name.startswith("sugarcrepe"))
    assert t.headers == ["method", "model",
                         f"{sc} Swap Object", f"{sc} Replace Attribute", f"{sc} Avg",
                         "scpp:triplets Swap Object", "scpp:triplets Replace Attribute",
                         "scpp:triplets Avg"]  # fmt: skip
    assert t.rows == [
        # two models named "xl" (two fingerprints): told apart by fingerprint, and the two
        # VGPTScore Blind runs (one per benchmark) are one model, one label
        ["VGPTScore Blind", "xl [" + scorer_runs[1].record.model.fingerprint_key[:8] + "]",
         "0.00", "0.00", "0.00", "0.00", "0.00", "0.00"],  # all ties: misses
        ["VQAScore", "xl [" + scorer_runs[0].record.model.fingerprint_key[:8] + "]",
         "66.67", "100.00", "83.33", "66.67", "100.00", "83.33"],
    ]  # fmt: skip


def test_bivlc_table2_generative_rows_under_random(scorer_runs: list[Run]) -> None:
    t = _table(generative.paper_tables([r.record for r in scorer_runs]), "BiVLC Table 2")
    assert t.headers[2:] == [t.headers[2], "I2T", "T2I", "Group"]
    assert t.rows[0] == ["Random", "chance", "50.00", "25.00", "25.00", "16.67"]
    # rows 1-3 of 5 known to the scorer: 60% in each direction; SugarCrepe: 4 of 5 pairs
    assert t.rows[1][1:] == ["VQAScore", "80.00", "60.00", "60.00", "60.00"]
    assert len(t.rows) == 2  # the VGPTScore runs have no BiVLC results


def test_methods_read_from_fingerprints_and_api_runs() -> None:
    from lexsem.results.schema import ModelInfo

    def info(fp: dict[str, Any], spec: str = "x") -> ModelInfo:
        return ModelInfo(spec=spec, name="m", fingerprint=fp, fingerprint_key="k", batch_size=1)

    assert method_of(info({"backend": "vgpt", "score": "sum"})) == "VGPTScore"
    assert method_of(info({"backend": "vgpt", "score": "blind"})) == "VGPTScore Blind"
    assert method_of(info({}, "vgpt:m?score=blind")) is None  # specs are not parsed
    api = {"backend": "openai", "vqascore": {"score": "vqa_norm", "question": "t17_4"}}
    assert method_of(info(api)) == "VQAScore (vqa_norm), question t17_4"
    assert method_of(info({"backend": "clip"})) is None
    assert question_of(info(api)) == "t17_4"


# -- position bias -------------------------------------------------------------------------------


def test_position_shares_of_a_constant_first_option(choice_runs: dict[str, Run]) -> None:
    (bias,) = [b for b in position_bias(choice_runs["one"])
               if b.task == "choice_scpp_order"]  # fmt: skip
    assert [r.ordering for r in bias.rows] == ["NPP", "PNP", "PPN", "all"]
    assert [r.right for r in bias.rows] == [1, 2, 3, None]
    for row in bias.rows:
        assert row.positions == {1: 100.0, 2: 0.0, 3: 0.0}
        assert row.kinds["option"] == 100.0 and row.kinds["refusal"] == 0.0
    assert [r.answers for r in bias.rows] == [5, 5, 5, 15]


def test_position_shares_count_answers_naming_no_option(data: dict[str, Any]) -> None:
    replies = iter(["(2)", "None of them.", "(2)", "I cannot help with that.", "(3)"] * 3)
    run = _ask(data, ScriptedReplies(lambda p: next(replies), "odd"), ["choice_scpp1"])
    (bias,) = position_bias(run)
    pooled = bias.rows[-1]  # 15 answers: 9 options (6 x (2), 3 x (3)), 3 none, 3 refusals
    assert pooled.answers == 15
    assert pooled.positions == pytest.approx({1: 0.0, 2: 100 * 6 / 9, 3: 100 * 3 / 9})
    assert pooled.kinds == pytest.approx(
        {"option": 60.0, "none": 20.0, "multiple": 0.0, "refusal": 20.0, "unparseable": 0.0}
    )
    table = generative.bias_table(bias)
    assert table.headers[3:7] == ["(1)", "(2)", "(3)", "no single option"]
    assert table.rows[-1][:7] == ["all", "", "15", "0.0", "66.7", "33.3", "40.0"]


def test_the_position_bias_figure_is_a_png_with_every_text_inside(
    choice_runs: dict[str, Run],
    checked_figures: dict[str, list[str]],
    tmp_path: Path,
) -> None:
    (bias, *_) = position_bias(choice_runs["one"])
    caption, png = generative.bias_figure(bias)
    path = tmp_path / "position_bias.png"
    path.write_bytes(png)
    assert path.read_bytes().startswith(PNG_MAGIC) and png_size(png)[0] > 400
    assert "outlined: the right option" in caption
    assert not any(checked_figures.values()), checked_figures


# -- the report ------------------------------------------------------------------------------


def test_html_report_has_the_generative_section(
    choice_runs: dict[str, Run], scorer_runs: list[Run]
) -> None:
    runs = [choice_runs["one"], choice_runs["four"], *scorer_runs]
    page = build_report(runs, ReportOptions(n_boot=0))
    assert "<h2>2 Generative models</h2>" in page
    section = page[page.index("Generative models</h2>") : page.index("<h2>3 ")]
    for paper in ("SugarCrepe++ Table 8", "Table 14", "Table 18", "Table 19", "BiVLC Table 2"):
        assert paper in section, paper
    assert "Position bias" in section and "positions named (%)" in section
    assert section.count("data:image/png;base64,") == 5  # one per run and prompt: 4 + 1


def test_reports_of_other_runs_are_unchanged(data: dict[str, Any]) -> None:
    runs = [
        evaluate(TinyDualEncoder(), [data["scpp"]], **data["kw"]),
        evaluate(BagOfWordsEncoder(), [data["scpp"]], **data["kw"]),
    ]
    recs = [r.record for r in runs]
    assert not any(is_generative(r) for r in recs)
    assert generative.paper_tables(recs) == [] and generative.generative_sections(runs) == []
    plain = [t for g in table_groups(recs) for t in g.tables]
    assert to_markdown(build_tables(recs)) == to_markdown(plain)
    page = build_report(runs, ReportOptions(n_boot=0))
    assert "Generative models" not in page and "Position bias" not in page


def test_cli_report_shows_the_paper_tables(
    data: dict[str, Any], choice_runs: dict[str, Run], tmp_path: Path
) -> None:
    folders = [str(data["base"] / k) for k in ("one", "oracle")]
    html = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", *folders, "--html", str(html)])
    assert res.exit_code == 0, res.output
    assert "(SugarCrepe++ Table 8)" in res.output and "(SugarCrepe++ Table 18)" in res.output
    assert "Table 14" not in res.output  # both runs zero-shot
    page = html.read_text(encoding="utf-8")
    assert "Generative models" in page and "Position bias" in page


def test_a_record_without_results_of_generative_tasks_is_not_generative() -> None:
    rec = RunRecord.model_validate(
        {"lexsem_version": "0", "run_id": "r", "created_at": "2026-01-01T00:00:00",
         "model": {"spec": "clip:x", "name": "x", "fingerprint": {"backend": "clip"},
                   "fingerprint_key": "k", "batch_size": 1},
         "benchmarks": [], "config": {"tasks": [], "tie_policy": "strict", "seed": 0,
                                      "n_boot": 0, "confidence": 0.95},
         "results": [], "timings": {"total_s": 0, "load_data_s": 0, "encode_s": 0, "cache_s": 0,
                                    "metrics_s": 0, "n_texts_unique": 0, "n_texts_cached": 0,
                                    "n_texts_encoded": 0}}
    )  # fmt: skip
    assert not is_generative(rec)
