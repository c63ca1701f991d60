"""`lexsem annotate status|export|invite` on a study answered by scripted annotators: what
`status` prints agrees with the answers, `export` writes exactly the answers table, and
outputs never replace the study."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from builders.annotate_studies import make_study, need_annotate_extra, right_policy, wrong_policy
from lexsem.annotate.answers import answers_table
from lexsem.annotate.store import connect
from lexsem.cli import app
from lexsem.results.answers_table import ANSWERS_SCHEMA

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.simulate import ScriptedAnnotator  # noqa: E402


def cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["annotate", *args])
    return res.exit_code, res.output


def test_status_export_invite(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "2", "-k", "tot",
                      "--gold", "2", "--overlap", "2", "-n", "2")  # fmt: skip
    con = connect(made.path)
    c = TestClient(create_app(made.path))
    assert ScriptedAnnotator(c, made.annotators["a0001"], right_policy(made.path)).run()
    assert ScriptedAnnotator(c, made.annotators["a0002"], wrong_policy(made.path)).run()
    code, out = cli("status", str(made.path))
    assert code == 0, out
    assert "agreement tot: 0.0% over 2 pairs" in out  # one right, one wrong, on 2 items
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("a0")}
    assert "2/2" in lines["a0001"] and "done" in lines["a0001"]
    assert "0/2" in lines["a0002"] and "FLAGGED" in lines["a0002"]
    status_json = tmp_path / "status.json"
    code, out = cli("status", str(made.path), "--json", str(status_json))
    assert code == 0 and "agreement tot: 0.0% over 2 pairs" in out  # and printed as before
    data = json.loads(status_json.read_text())
    assert data["generator"] == "lexsem" and f"overlap 2; {data['answers']} answers" in out
    assert [a["flagged"] for a in data["annotators"]] == [False, True]
    assert cli("status", str(made.path), "--json", str(status_json))[0] == 0  # lexsem's own
    code, out = cli("status", str(made.path), "--json", str(made.path))
    assert code == 2 and "--json" in out  # never over the study
    code, out = cli("export", str(made.path), "--answers", str(tmp_path / "answers.parquet"))
    assert code == 0 and "8 answers" in out
    table = pq.read_table(tmp_path / "answers.parquet")
    assert table.schema.remove_metadata() == ANSWERS_SCHEMA
    assert table.to_pylist() == answers_table(con).to_pylist()
    code, out = cli("export", str(made.path), "--answers", str(made.path))
    assert code == 2 and "that is the study file" in out
    code, out = cli("invite", str(made.path), "-n", "2")
    assert code == 0 and out.count("/a/") == 2 and "a0003" in out


def test_missing_or_foreign_study_is_one_line(tmp_path: Path) -> None:
    code, out = cli("status", str(tmp_path / "nope.sqlite"))
    assert code == 2 and "no such study" in out
    (tmp_path / "x.sqlite").write_bytes(b"not sqlite at all" * 100)
    code, out = cli("status", str(tmp_path / "x.sqlite"))
    assert code == 2 and "not a lexsem study" in out
