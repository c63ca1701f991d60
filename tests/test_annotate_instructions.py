"""A study's instructions page (FastAPI TestClient) names exactly the keys its question pages
take, kind by kind, quotes the papers' instructions as they are, and says of practice,
attention checks and the number of questions only what the study has; a study's own
`--instructions` text is kept unchanged; the Label Studio export's instructions say the same
parts, without the study page's keys and feedback."""

from __future__ import annotations

import json
import re
from html import escape as html_escape  # as the Label Studio export escapes
from pathlib import Path

import pytest
from markupsafe import escape  # as the study's pages escape
from typer.testing import CliRunner

from builders.annotate_studies import make_study, need_annotate_extra
from lexsem.annotate.instructions import INSTRUCTIONS, QUESTIONS
from lexsem.cli import app

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.simulate import parse_page  # noqa: E402

SELECTORS = {
    **dict.fromkeys(("tot", "itt", "pair", "validate"), "synthetic/swap_att"),
    **dict.fromkeys(("bivlc_i2t", "bivlc_t2i", "best_of_k", "ambiguity"), "synthetic_bi/swap_att"),
}
_KEYS_PARAGRAPH = re.compile(r'<p class="hint keys">(.*?)</p>', re.S)
_COMBO = re.compile(r"<kbd>[^<]+</kbd>(?:\+<kbd>[^<]+</kbd>)*")
_DATA_KEY = re.compile(r'data-key="([^"]+)"')
_TOTAL = re.compile(r"(?:Question|Practice) \d+ of (\d+)")


def said_keys(paragraph: str) -> set[str]:
    """The keys a paragraph of the instructions names (keys pressed together as `Ctrl+Enter`)."""
    return {re.sub(r"</?kbd>", "", m) for m in _COMBO.findall(paragraph)}


def taken_keys(page: str) -> set[str]:
    """The keys a question page takes: the `data-key`s of its content, and `Ctrl+Enter` where
    a field's edit is saved with it (the page's script, left out)."""
    content = page.split("<script", 1)[0]
    keys = {k.upper() for k in _DATA_KEY.findall(content)}
    return keys | ({"Ctrl+Enter"} if "data-submit" in content else set())


def test_the_key_checks_can_fail() -> None:
    para = "Answer: <kbd>1</kbd> <kbd>2</kbd> choose, <kbd>Ctrl</kbd>+<kbd>Enter</kbd> save."
    assert said_keys(para) == {"1", "2", "Ctrl+Enter"}
    page = '<button data-key="1"></button><button data-key="" data-submit></button>'
    page += "<script>q('[data-key=\"' + k + '\"]')</script>"
    assert taken_keys(page) == {"1", "Ctrl+Enter"}


def instructions_page(c: TestClient, link: str) -> str:
    """Consent, then the instructions page of `link`'s annotator."""
    page = parse_page(c.get(link).text)
    assert c.post(page.action, data={"csrf": page.csrf}).status_code == 200
    html = c.get(link).text
    assert "<h1>Instructions</h1>" in html
    return html


def question_pages(c: TestClient, link: str, instructions: str) -> list[str]:
    """Start, then every question page of the annotator's work, each answered with a skip."""
    page = parse_page(instructions)
    assert c.post(page.action, data={"csrf": page.csrf}).status_code == 200
    pages = []
    for _ in range(200):
        html = c.get(link).text
        page = parse_page(html)
        if page.done:
            return pages
        if page.page is None:  # practice feedback
            continue
        pages.append(html)
        c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "skip"})
    raise AssertionError("the study did not end")


@pytest.mark.parametrize("kind", list(SELECTORS))
def test_a_study_page_names_exactly_its_kinds_keys_and_no_practice_it_lacks(
    tmp_path: Path, kind: str
) -> None:
    made = make_study(tmp_path, "-b", SELECTORS[kind], "--sample", "2", "-k", kind, "-n", "1")
    c = TestClient(create_app(made.path))
    link = made.annotators["a0001"]
    html = instructions_page(c, link)
    (keys,) = _KEYS_PARAGRAPH.findall(html)
    pages = question_pages(c, link, html)
    taken = set().union(*(taken_keys(p) for p in pages))
    assert said_keys(keys) == taken, (kind, said_keys(keys), taken)
    assert escape(INSTRUCTIONS[kind]) in html  # the paper's words, as they are
    text = html.lower()
    assert "practice" not in text and "check attention" not in text
    assert "checks attention" not in text
    assert f"at most {len(pages)} questions." in html
    assert {int(_TOTAL.search(p).group(1)) for p in pages} == {len(pages)}  # type: ignore[union-attr]


def test_practice_gold_and_the_number_of_questions_are_the_studys(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "4", "-k", "tot",
                      "--practice", "2", "--gold", "1", "--quota", "3", "-n", "1")  # fmt: skip
    c = TestClient(create_app(made.path))
    link = made.annotators["a0001"]
    html = instructions_page(c, link)
    assert "The first 2 questions are practice: you will see the right answer after each." in html
    assert "1 of the questions checks attention" in html
    assert "You will answer at most 6 questions, practice included." in html  # 2 + 1 + 3
    assert len(question_pages(c, link, html)) == 6
    # validation has no right answer: the practice feedback shows the annotator's own
    made = make_study(tmp_path, "-b", "synthetic/swap_att", "--sample", "2", "-k", "validate",
                      "--practice", "1", "-n", "1", name="validate")  # fmt: skip
    html = instructions_page(TestClient(create_app(made.path)), made.annotators["a0001"])
    assert "The first question is practice: you will see your answer again after it." in html
    assert "right answer" not in html and "attention" not in html


def test_kinds_with_other_keys_each_have_their_own(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic_bi/swap_att", "--sample", "1",
                      "-k", "best_of_k", "-k", "ambiguity", "--gold", "1", "-n", "1")  # fmt: skip
    c = TestClient(create_app(made.path))
    html = instructions_page(c, made.annotators["a0001"])
    paragraphs = _KEYS_PARAGRAPH.findall(html)
    assert len(paragraphs) == 2
    for kind, para in zip(("best_of_k", "ambiguity"), paragraphs, strict=True):
        assert escape(QUESTIONS[kind]) in para
    assert said_keys(paragraphs[0]) == {"1", "2", "N", "S"}
    assert said_keys(paragraphs[1]) == {"1", "2", "B", "S"}
    assert "practice" not in html.lower() and "2 of the questions check attention" in html


OWN = "Pick the odd one out.\n\nTake your time & <don't> guess."


def test_a_studys_own_instructions_are_kept_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "i.txt").write_text(OWN + "\n")
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "2", "-k", "pair",
                      "--instructions", str(tmp_path / "i.txt"), "-n", "1")  # fmt: skip
    c = TestClient(create_app(made.path))
    html = instructions_page(c, made.annotators["a0001"])
    assert f"<p>{escape(OWN)}</p>" in html
    assert escape(INSTRUCTIONS["pair"]) not in html
    (keys,) = _KEYS_PARAGRAPH.findall(html)
    assert said_keys(keys) == {"1", "2", "S"}
    out = tmp_path / "ls"
    res = CliRunner().invoke(app, ["annotate", "labelstudio-export", str(made.path), "-o",
                                   str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    said = json.loads((out / "pair" / "project.json").read_text())["expert_instruction"]
    assert said == "".join(f"<p>{html_escape(p)}</p>" for p in OWN.split("\n\n"))


def test_label_studio_instructions_say_the_projects_parts(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic_bi/replace_obj", "--sample", "2",
                      "--practice", "1", "--gold", "1", "-k", "bivlc_i2t", "-k", "bivlc_t2i",
                      name="bi")  # fmt: skip
    bare = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "2", "-k", "tot",
                      name="bare")  # fmt: skip
    for study in (made, bare):
        res = CliRunner().invoke(app, ["annotate", "labelstudio-export", str(study.path), "-o",
                                       str(tmp_path / study.path.stem)])  # fmt: skip
        assert res.exit_code == 0, res.output
    for project, kind in (("i2t", "bivlc_i2t"), ("t2i", "bivlc_t2i")):
        said = json.loads((tmp_path / "bi" / project / "project.json").read_text())
        text = said["expert_instruction"]
        assert "".join(f"<p>{html_escape(p)}</p>" for p in INSTRUCTIONS[kind].split("\n\n")) in text
        # each direction: 2 practice queries, 2 gold queries; Label Studio shows no answers
        assert "The first 2 questions are practice." in text
        assert "2 of the questions check attention" in text
        assert "kbd" not in text and "right answer" not in text and "at most" not in text
    said = json.loads((tmp_path / "bare" / "tot" / "project.json").read_text())
    text = said["expert_instruction"]
    assert text == f"<p>{html_escape(INSTRUCTIONS['tot'])}</p>"
