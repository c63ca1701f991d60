"""TROHN-Img's selection (`score_percentile`) and cleaning (`clean_captions`) of negatives
(BiVLC, §5.2, steps 1 and 2) against BiVLC's TROHN_Img_best_selection.py, whose steps are
transcribed here with pandas (`_reference_selection`), on SugarCrepe's unrefined negatives with
seeded scores and on crafted rows for each reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from lexsem.construct.clean_captions import (
    DUPLICATE,
    NO_END,
    QUESTION,
    SHORT,
    clean_captions,
    format_caption,
)
from lexsem.construct.score_percentile import BELOW, score_percentile
from lexsem.errors import DataError

SUBTYPES = ("replace_obj", "replace_att", "replace_rel", "swap_obj", "swap_att", "add_obj",
            "add_att")  # fmt: skip


def _reference_selection(df: pd.DataFrame) -> pd.DataFrame:
    """TROHN_Img_best_selection.py's steps but its CLIP-similarity filter and refinement: per
    subtype the 0.645 quantiles of NEG_VERA and NEG_CoLA, both kept at or above; the subtypes
    concatenated in order; negatives not ending with "." (replaced by their last character) and
    of 10 characters or fewer dropped; duplicates of the prompt dropped; both captions
    capitalised with a final "."."""
    treshold = 0.645
    parts = []
    for subtype in SUBTYPES:
        sub = df[df["category"] == subtype]
        df_vera = sub.NEG_VERA.quantile(treshold)
        df_cola = sub.NEG_CoLA.quantile(treshold)
        parts.append(sub[(sub["NEG_VERA"] >= df_vera) & (sub["NEG_CoLA"] >= df_cola)])
    data = pd.concat(parts).reset_index(drop=True)
    data.loc[:, "negative_caption"] = [
        x if x[-1] == "." else x[-1] for x in data["negative_caption"]
    ]
    data = data.loc[data["negative_caption"].str.len() > 10]
    data["prompt"] = (
        data["negative_caption"].str.replace(".", "")
        + ", high resolution, professional, 4k, highly detailed"
    )
    data = data.drop_duplicates(subset=["prompt"])
    selected = data.copy()
    selected["caption"] = selected["caption"].apply(
        lambda x: (x.strip().capitalize()) + "." if x[-1] != "." else x.strip().capitalize()
    )
    selected["negative_caption"] = selected["negative_caption"].apply(
        lambda x: (x.strip().capitalize()) + "." if x[-1] != "." else x.strip().capitalize()
    )
    return selected


CRAFTED = [
    ("A dog on a sofa", "Is the dog on a sofa?", QUESTION),
    ("A dog on a sofa", "A cat on a sofa", NO_END),
    ("A dog on a sofa", "A cat.", SHORT),
    ("a Dog near Paris", "a Cat near Paris.", None),
    ("Two cats", "a Cat near Paris.", DUPLICATE),
    ("Two cats", "a Cat near Paris", NO_END),
    ("Two cats", "a Cat. near Paris.", DUPLICATE),  # the same once every "." is removed
    ("Two dogs", "A cat sits on a mat. ", NO_END),  # the raw text ends with " "
    ("Two dogs", " A cat sat.", None),  # 11 characters as generated, 10 stripped
    ("Two dogs", "A cat sat. ", NO_END),  # not a duplicate of the one above: dropped first
]


def _table(rows: list[dict[str, object]]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"source": "t", "source_id": str(i), **r} for i, r in enumerate(rows)]
    )


def test_clean_captions_reasons_and_format() -> None:
    rows = _table([{"caption": p, "negative_caption": n} for p, n, _ in CRAFTED])
    out = clean_captions(rows)
    assert out["rejected"].to_pylist() == [r for *_, r in CRAFTED]
    assert out["caption"][3].as_py() == "A dog near paris."  # str.capitalize, as the script
    assert out["negative_caption"][3].as_py() == "A cat near paris."
    assert out["negative_caption"][1].as_py() == "A cat on a sofa"  # rejected: unchanged
    first = clean_captions(rows, case="first")
    assert first["caption"][3].as_py() == "A Dog near Paris."
    assert format_caption(" wow! ", "keep", "!.") == "wow!"
    with pytest.raises(DataError, match="case is one of"):
        clean_captions(rows, case="title")
    stripped = clean_captions(rows, strip=True)["rejected"].to_pylist()
    assert stripped[-3:] == [None, SHORT, SHORT]  # the checks on the stripped text
    checked = clean_captions(rows, format=False)
    assert checked["rejected"].equals(out["rejected"])
    assert checked.drop_columns(["rejected"]).equals(rows)  # texts as generated
    formatted = clean_captions(checked, check=False)
    assert formatted.equals(out)  # the two steps apart are the stage at once


def test_score_percentile_per_group_and_global() -> None:
    vera = [0.1, 0.2, 0.3, 0.4, 0.9, 0.8, 0.7]
    cola = [0.9, 0.9, 0.9, 0.9, 0.1, 0.9, 0.9]
    cats = ["a", "a", "a", "a", "b", "b", "b"]
    rows = _table([{"vera_neg": v, "cola_neg": c, "category": k}
                   for v, c, k in zip(vera, cola, cats, strict=True)])  # fmt: skip
    out = score_percentile(rows)
    # a: vera's 0.645 quantile 0.2935 keeps 0.3 and 0.4 (cola's is 0.9: all pass); b: vera's
    # 0.829 keeps only 0.9, whose cola 0.1 is below cola's 0.9.
    assert out["rejected"].to_pylist() == [BELOW, BELOW, None, None, BELOW, BELOW, BELOW]
    glob = score_percentile(rows, group_by=None)
    expected_cut = np.quantile(vera, 0.645)
    got = glob["rejected"].to_pylist()
    assert all((got[i] is None) == (vera[i] >= expected_cut and cola[i] >= 0.9) for i in range(7))
    with pytest.raises(DataError, match="item 2: score_percentile"):
        good = {"vera_neg": 1.0, "cola_neg": 1.0, "category": "a"}
        score_percentile(_table([good, good, {**good, "vera_neg": None}]))


@pytest.mark.data
@pytest.mark.parametrize("seed", [0, 3])
def test_selection_and_cleaning_keep_the_reference_scripts_rows(
    test_data_dir: Path, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    records = []
    for category in SUBTYPES:
        items = json.loads(
            (test_data_dir / "sugarcrepe_unrefined" / f"{category}.json").read_text()
        )
        for key, item in items.items():
            records.append({"source": "sugarcrepe_unrefined", "source_id": f"{category}/{key}",
                            "category": category, "caption": item["caption"],
                            "negative_caption": item["negative_caption"]})  # fmt: skip
    for r, (p, n, _) in zip(records[:: len(records) // len(CRAFTED)], CRAFTED, strict=False):
        r["caption"], r["negative_caption"] = p, n
    vera = rng.random(len(records)).round(3)  # rounded: ties at the quantile occur
    cola = rng.random(len(records)).round(2)
    for r, v, c in zip(records, vera, cola, strict=True):
        r["vera_neg"], r["cola_neg"] = float(v), float(c)
    rows = pa.Table.from_pylist(records)

    ours = clean_captions(score_percentile(rows)).to_pylist()
    kept = [(r["source_id"], r["caption"], r["negative_caption"]) for r in ours
            if r["rejected"] is None]  # fmt: skip
    frame = pd.DataFrame(records).rename(columns={"vera_neg": "NEG_VERA", "cola_neg": "NEG_CoLA"})
    ref = _reference_selection(frame)
    expected = list(zip(ref["source_id"], ref["caption"], ref["negative_caption"], strict=True))
    # The one difference (docs/fidelity.md): the script tests the last character before
    # stripping, so "... vegetables. " gets a second "."; lexsem strips first.
    raw = {r["source_id"]: r["caption"] for r in records}
    fixed = [(i, c[:-1] if c.endswith("..") and raw[i] != raw[i].rstrip() else c, n)
             for i, c, n in expected]  # fmt: skip
    assert fixed != expected
    expected = fixed
    assert len(expected) > 1000
    assert sorted(kept) == sorted(expected)
    # the order: the script's is category by category, as lexsem's rows here
    assert [k[0] for k in kept] == [e[0] for e in expected]


def test_the_unchanged_check_alone_runs_before_the_percentile() -> None:
    """BiVLC's script drops only the unchanged negatives (CLIP text similarity >= 0.999) before
    its quantiles; `edit = false` rejects only those, the edit checks come after."""
    from lexsem.construct.template_filter import ADD, SAME, template_filter

    rows = _table([
        {"caption": "A dog on a sofa.", "negative_caption": "A dog on the sofa.",
         "category": "add_att"},
        {"caption": "A dog on a sofa.", "negative_caption": "A cat under a chair.",
         "category": "add_att"},
        {"caption": "A dog on a sofa.", "negative_caption": "A big dog on a sofa.",
         "category": "add_att"},
    ])  # fmt: skip
    assert template_filter(rows, edit=False)["rejected"].to_pylist() == [SAME, None, None]
    assert template_filter(rows)["rejected"].to_pylist() == [SAME, ADD, None]


def test_the_percentile_is_over_the_rows_the_script_takes_it_over() -> None:
    """TROHN_Img_best_selection.py: ``df = df[df['Similarity'] < 0.999]`` then the 0.645
    quantiles of NEG_VERA and NEG_CoLA over those rows, re-done here with pandas; the unchanged
    negatives stand for similarity >= 0.999. trohn_img.toml's order (unchanged check, percentile,
    edit checks) keeps the script's rows less the edit failures; the edit checks first would
    take the quantile over fewer rows and keep others."""
    from lexsem.construct.template_filter import template_filter

    pos = "A dog on a sofa."
    negs = ["A dog on the sofa.", "A big dog on a sofa.", "A cat under a chair.",
            "A red dog on a sofa.", "A small dog on a sofa.", "A dog on a green sofa.",
            "A cat on a sofa.", "A dog on a soft sofa."]  # fmt: skip
    vera = [0.99, 0.9, 0.3, 0.9, 0.7, 0.2, 0.7, 0.7]
    cola = [0.99, 0.2, 0.2, 0.4, 0.1, 0.4, 0.5, 0.6]
    rows = _table([{"caption": pos, "negative_caption": n, "category": "add_att",
                    "vera_neg": v, "cola_neg": c}
                   for n, v, c in zip(negs, vera, cola, strict=True)])  # fmt: skip
    frame = pd.DataFrame({"negative_caption": negs, "NEG_VERA": vera, "NEG_CoLA": cola,
                          "Similarity": [1.0] + [0.9] * 7})  # fmt: skip
    df = frame[frame["Similarity"] < 0.999]
    top = (df["NEG_VERA"] >= df.NEG_VERA.quantile(0.645)) & (
        df["NEG_CoLA"] >= df.NEG_CoLA.quantile(0.645)
    )
    script = set(df[top].negative_caption)
    recipe = template_filter(score_percentile(template_filter(rows, edit=False)))
    kept = {r["negative_caption"] for r in recipe.to_pylist() if r["rejected"] is None}
    edit_failures = {"A cat under a chair.", "A cat on a sofa."}
    assert script - edit_failures == kept and script & edit_failures
    before = score_percentile(template_filter(rows))
    other = {r["negative_caption"] for r in before.to_pylist() if r["rejected"] is None}
    assert other != kept
