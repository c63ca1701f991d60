"""`lexsem build` from the command line: the shipped recipes listed (`--list`, the same listing
as `lexsem list recipes`) and run by name with did-you-mean, the recipe's settings as options
(`--input`, `--generator`, `--set STAGE.KEY=VALUE`) checked against the stage's settings before
any work, `lexsem build init` writing an editable recipe, and the pause at a human step (exit
status 3, no `error:`)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.recipes import recipe_toml, stage, write_jsonl, write_recipe
from lexsem.cli.app import app
from lexsem.cli.build import PAUSED
from lexsem.config_file import parse_value
from lexsem.construct.catalog import RECIPES
from lexsem.construct.recipe import load_recipe
from lexsem.errors import LexsemError

cli = CliRunner()
SHIPPED = sorted(RECIPES.names())


def test_build_list_is_the_list_of_recipes() -> None:
    listed = cli.invoke(app, ["build", "--list"])
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.output.splitlines()] == SHIPPED
    assert listed.output == cli.invoke(app, ["list", "recipes"]).output
    assert "visla_spatial" in SHIPPED and "scpp_positive" in SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_no_shipped_recipe_holds_a_path_to_edit(name: str) -> None:
    text = RECIPES.get(name).read_text(encoding="utf-8")
    assert "PATH/TO" not in text and "--input" in text
    with pytest.raises(LexsemError, match=r"no input file|--input FILE"):
        load_recipe(name)  # the input comes from the command line


def test_a_recipe_name_with_a_typo_is_one_line_with_did_you_mean(tmp_path: Path) -> None:
    res = cli.invoke(app, ["build", "visla_spatil", "-o", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert res.output.startswith("error: unknown recipe 'visla_spatil' (did you mean "
                                 "'visla_spatial'?)")  # fmt: skip
    assert "lexsem build --list" in res.output and not (tmp_path / "b").exists()
    res = cli.invoke(app, ["build", str(tmp_path / "nope.toml"), "-o", str(tmp_path / "b")])
    assert res.exit_code == 2 and "nope.toml: cannot read the recipe" in res.output
    res = cli.invoke(app, ["build", "-o", str(tmp_path / "b")])
    assert res.exit_code == 2 and "give a recipe: a shipped one's name" in res.output
    res = cli.invoke(app, ["build", "scpp_positive"])
    assert res.exit_code == 2 and "give the build folder: -o DIR" in res.output
    res = cli.invoke(app, ["build", "init"])
    assert res.exit_code == 2 and "name the recipe to write" in res.output
    assert not (tmp_path / "b").exists()


def test_a_shipped_recipe_without_its_input_is_one_line_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "b"
    res = cli.invoke(app, ["build", "scpp_positive", "-o", str(out)])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and "no input file: give it with `lexsem build RECIPE " \
        "--input FILE`" in res.output  # fmt: skip
    res = cli.invoke(app, ["build", "visla_spatial", "-o", str(out)])
    assert res.exit_code == 2 and "[input] source 'vsr'" in res.output and "--input" in res.output
    res = cli.invoke(app, ["build", "scpp_positive", "--input", str(tmp_path / "x.jsonl"),
                           "-o", str(out)])  # fmt: skip
    assert (
        res.exit_code == 2
        and res.output == f"error: --input {tmp_path / 'x.jsonl'}: no such file\n"
    )
    assert not out.exists()


def test_an_input_without_a_column_a_later_stage_reads_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    """scpp_positive's freeze reads `negative_caption`: captions without it are refused before
    the generator is asked (its server here does not exist), naming the column and the stage;
    a column an earlier stage makes (`caption2`) is not asked of the input."""
    items = write_jsonl(tmp_path / "items.jsonl", [{"caption": "a dog"}])
    out = tmp_path / "b"
    res = cli.invoke(app, ["build", "scpp_positive", "--input", str(items), "-o", str(out),
                           "--generator", "openai:m?base_url=http://127.0.0.1:9/v1"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert res.output == (
        f"error: input {items}: no column 'negative_caption', which stage 3/3 freeze reads "
        "(setting `n`); the input has caption\n"
    )
    assert not out.exists()
    res = cli.invoke(app, ["build", "scpp_positive", "--input", str(items), "-o", str(out),
                           "--set", "positive.column=text"])  # fmt: skip
    assert res.exit_code == 2 and "no column 'text', which stage 1/3 positive reads " \
        "(setting `column`)" in res.output  # fmt: skip


def test_input_generator_and_set_fill_the_recipe(tmp_path: Path) -> None:
    items = write_jsonl(tmp_path / "items.jsonl", [{"caption": "a", "negative_caption": "b"}])
    recipe = load_recipe("scpp_positive", input=items, generator="openai:m?base_url=http://h/v1",
                         sets=["positive.max_generations=2", "positive.column=caption",
                               'freeze.title="My triplets"', "validation.unvalidated=reject",
                               "freeze.licences={ x = 'CC BY 4.0' }"])  # fmt: skip
    assert recipe.input.path == str(items) and recipe.generator == "openai:m?base_url=http://h/v1"
    settings = {s.label: s.settings for s in recipe.stages}
    assert (
        settings["positive"]["max_generations"] == 2 and settings["positive"]["column"] == "caption"
    )
    assert settings["freeze"]["title"] == "My triplets"
    assert settings["freeze"]["licences"] == {"x": "CC BY 4.0"}
    assert settings["validation"]["unvalidated"] == "reject"
    # a built-in source: --input is its `path`, and "{input}" in a stage setting is that file
    vsr = write_jsonl(tmp_path / "vsr.jsonl", [])
    visla = load_recipe("visla_spatial", input=vsr, sets=["candidates.top_k=5"])
    assert visla.input.source == "vsr" and visla.input.settings == {"path": str(vsr)}
    cands = next(s for s in visla.stages if s.label == "candidates")
    assert cands.settings == {"path": str(vsr), "top_k": 5}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "candidate.top_k=5",
            r"--set candidate.top_k=5: .* has no stage 'candidate' \(did you "
            r"mean 'candidates'\?\); its stages: pairs, sample, candidates, ",
        ),
        (
            "candidates.topk=5",
            r"stage 'candidates' \(vsr_negative_candidates\) has no setting "
            r"'topk' \(did you mean 'top_k'\?\); its settings: captions, path",
        ),
        ("top_k=5", r"--set top_k=5: write STAGE.KEY=VALUE"),
        ("candidates.top_k", r"--set candidates.top_k: write STAGE.KEY=VALUE"),
        ("input.pth=x", r"the input source 'vsr' has no setting 'pth' \(did you mean 'path'\?\)"),
    ],
)
def test_a_bad_set_is_one_line_naming_it(tmp_path: Path, item: str, message: str) -> None:
    vsr = tmp_path / "vsr.jsonl"
    vsr.write_text(json.dumps({"image": "A", "caption": "The cat is in the box.",
                               "relation": "in", "label": 1}) + "\n")  # fmt: skip
    out = tmp_path / "b"
    res = cli.invoke(app, ["build", "visla_spatial", "--input", str(vsr), "--set", item,
                           "-o", str(out), "-q"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and res.output.count("\n") == 1
    import re

    assert re.search(message, res.output), res.output
    assert not out.exists()  # refused before any work


def test_set_values_are_toml_values_else_text() -> None:
    assert parse_value("3") == 3 and parse_value("0.5") == 0.5 and parse_value("true") is True
    assert parse_value("[1, 2]") == [1, 2] and parse_value('"a b"') == "a b"
    assert parse_value("/data/coco") == "/data/coco" and parse_value("caption") == "caption"
    assert parse_value("2024-01-01") == "2024-01-01"  # no TOML dates: the text


@pytest.mark.parametrize("name", SHIPPED)
def test_init_writes_the_shipped_recipe_to_edit(tmp_path: Path, name: str) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [{"caption": "a", "negative_caption": "b"}])
    target = tmp_path / "mine.toml"
    res = cli.invoke(app, ["build", "init", name, "--input", str(data), "-o", str(target)])
    assert res.exit_code == 0, res.output
    assert f"wrote {target}" in res.output
    shipped = RECIPES.get(name).read_text(encoding="utf-8")
    text = target.read_text(encoding="utf-8")
    assert "PATH/TO" not in text
    # the shipped text, comments included, and one more line: the input file
    assert sorted(set(text.splitlines()) - set(shipped.splitlines())) in (
        [f"path = {json.dumps(str(data))}"],
        ["[input.settings]", f"path = {json.dumps(str(data))}"],
    )
    recipe = load_recipe(target)
    assert recipe.input_file() == data
    assert tomllib.loads(text)["stages"] == tomllib.loads(shipped)["stages"]


def test_init_without_input_and_its_bad_inputs(tmp_path: Path) -> None:
    target = tmp_path / "s.toml"
    res = cli.invoke(app, ["build", "init", "scpp_positive", "-o", str(target),
                           "--generator", "openai:my-model?base_url=http://h:1/v1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    text = target.read_text(encoding="utf-8")
    assert 'generator = "openai:my-model?base_url=http://h:1/v1"' in text
    assert "# path = " in text  # explained, not a placeholder
    res = cli.invoke(app, ["build", str(target), "-o", str(tmp_path / "b")])
    assert res.exit_code == 2 and "no input file" in res.output
    again = cli.invoke(app, ["build", "init", "scpp_positive", "-o", str(target)])
    assert again.exit_code == 2 and "exists; choose another file" in again.output
    assert target.read_text(encoding="utf-8") == text
    typo = cli.invoke(app, ["build", "init", "scpp_positiv", "-o", str(tmp_path / "t.toml")])
    assert typo.exit_code == 2 and "did you mean 'scpp_positive'" in typo.output
    missing = cli.invoke(app, ["build", "init", "bivlc", "--input", str(tmp_path / "no.jsonl"),
                               "-o", str(tmp_path / "t.toml")])  # fmt: skip
    assert missing.exit_code == 2 and "--input" in missing.output
    assert not (tmp_path / "t.toml").exists()
    nogen = cli.invoke(app, ["build", "init", "visla_spatial", "--generator", "x:y", "-o",
                             str(tmp_path / "t.toml")])  # fmt: skip
    assert nogen.exit_code == 2 and "names no generator" in nogen.output


def test_init_and_input_name_what_is_wrong(tmp_path: Path) -> None:
    """`init scpp`: "did you mean" the one recipe the name is part of; `init bivlc -o B` with B
    a build folder: refused; `--input` naming a folder: said so."""
    res = cli.invoke(app, ["build", "init", "scpp", "-o", str(tmp_path / "t.toml")])
    assert res.exit_code == 2 and res.output.startswith(
        "error: unknown recipe 'scpp' (did you mean 'scpp_positive'?); known: bivlc, "
    ) and res.output.endswith("(lexsem build --list)\n")  # fmt: skip
    build_folder = tmp_path / "bivlc"
    build_folder.mkdir()
    (build_folder / "build.json").write_text("{}", encoding="utf-8")
    res = cli.invoke(app, ["build", "init", "bivlc", "-o", str(build_folder)])
    assert res.exit_code == 2 and res.output == (
        f"error: -o {build_folder}: a build folder (it holds build.json), not a place for a "
        "recipe: write the recipe elsewhere (-o FILE)\n"
    )
    assert sorted(p.name for p in build_folder.iterdir()) == ["build.json"]
    for args in (["build", "init", "bivlc", "-o", str(tmp_path / "t.toml")],
                 ["build", "scpp_positive", "-o", str(tmp_path / "b")]):  # fmt: skip
        res = cli.invoke(app, [*args, "--input", str(tmp_path)])
        assert res.exit_code == 2 and res.output == (
            f"error: --input {tmp_path}: a folder, not a file: give the input file in it\n"
        )
    assert not (tmp_path / "t.toml").exists() and not (tmp_path / "b").exists()


def test_quiet_says_only_the_last_line(tmp_path: Path) -> None:
    text = recipe_toml("tiny", 0, stage("caption_format", name="format", column="p1"),
                       stage("freeze", format="scpp", p2="p2", n="n"))  # fmt: skip
    write_recipe(tmp_path, text, [{"p1": "a dog", "p2": "a dog here", "n": "a cat"}])
    out = tmp_path / "b"
    res = cli.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "-q"])
    assert res.exit_code == 0 and res.output == f"done: {out / 'stages/02-freeze.parquet'} " \
        "(0 requests sent)\n", res.output  # fmt: skip
    loud = cli.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "--force"])
    assert loud.exit_code == 0 and "to run: format, freeze" in loud.output


PAUSING = recipe_toml(
    "pausing", 0,
    stage("fold_back_validation", name="validation", column="p2", original="p1"),
    stage("freeze", format="scpp"),
)  # fmt: skip


def test_a_pause_is_exit_status_3_with_what_to_do_and_no_error(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "triplets.jsonl", [{"p1": "a dog", "p2": "one dog", "n": "a cat"}])
    (tmp_path / "recipe.toml").write_text(PAUSING, encoding="utf-8")
    out = tmp_path / "b"
    args = ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "-q"]
    res = cli.invoke(app, args)
    assert res.exit_code == PAUSED == 3, res.output
    assert "error" not in res.output.lower()
    assert res.output.startswith("paused at stage 1/2 validation: fold_back_validation: waiting "
                                 "for people: no answers file ")  # -q: the pause alone  # fmt: skip
    assert f"The answers file the build reads: {out / 'human/validate/answers.parquet'}" in (
        res.output
    )
    assert f"run the same command again to go on: lexsem build {tmp_path / 'recipe.toml'} -o " \
        f"{out}" in res.output  # fmt: skip
    # a first stage's study is made from a copy of its rows
    assert f"  lexsem annotate create {out / 'human/validate/study.sqlite'} --from-build " \
        f"{out / 'human/validate/rows.parquet'} -k validate --column original=p1 --column " \
        "generated=p2 --name 'b: validation'\n" in res.output  # fmt: skip
    assert (out / "human" / "validate" / "rows.parquet").is_file()
    record = json.loads((out / "build.json").read_text())
    assert record["complete"] is False and record["stages"] == []
    again = cli.invoke(app, args)  # the same command, still no answers: the same pause
    assert again.exit_code == PAUSED and "waiting for people" in again.output


def test_a_pause_says_how_many_rows_people_see_and_how_to_show_fewer(tmp_path: Path) -> None:
    """The pause (and the step's README) says how many rows the study shows and the option that
    shows fewer; the printed create command with that option makes a study of that many."""
    import shlex

    pytest.importorskip("fastapi")
    from lexsem.annotate.store import connect

    write_jsonl(tmp_path / "triplets.jsonl", [{"p1": f"a dog {i}", "p2": f"one dog {i}",
                                               "n": f"a cat {i}"} for i in range(3)])  # fmt: skip
    (tmp_path / "recipe.toml").write_text(PAUSING, encoding="utf-8")
    out = tmp_path / "b"
    res = cli.invoke(app, ["build", str(tmp_path / "recipe.toml"), "-o", str(out), "-q"])
    assert res.exit_code == PAUSED, res.output
    said = "people will see all 3 rows; to show K of them, add --sample-total K"
    assert said in res.output, res.output
    assert said in (out / "human" / "validate" / "README.md").read_text()
    create = next(x.strip() for x in res.output.splitlines()
                  if x.strip().startswith("lexsem annotate create"))  # fmt: skip
    made = cli.invoke(app, [*shlex.split(create)[1:], "--sample-total", "2", "--base-url", ""])
    assert made.exit_code == 0, made.output
    con = connect(out / "human" / "validate" / "study.sqlite")
    assert con.execute("SELECT COUNT(*) FROM units").fetchone()[0] == 2
    con.close()
