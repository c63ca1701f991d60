"""The study store owns its file: a study made with the previous schema opens, is migrated (a
copy of the old file kept, the answers it holds unchanged) and works (pages served, answers
recorded, exported); a failed migration leaves the file as it was; a study of a newer schema
is refused with one line; and no module of lexsem but the store runs SQL on a study."""

from __future__ import annotations

import ast
import sqlite3
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.annotate_studies import MadeStudy, make_study, need_annotate_extra, right_policy
from lexsem._version import __version__
from lexsem.annotate import store
from lexsem.annotate.answers import answers_table
from lexsem.cli import app
from lexsem.errors import LexsemError

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.simulate import ScriptedAnnotator  # noqa: E402

SRC = Path(__file__).resolve().parent.parent / "src" / "lexsem"

# Schema 1, as lexsem's first study store created it (src/lexsem/annotate/store.py at 5c6235d).
SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE images (sha TEXT PRIMARY KEY, mime TEXT NOT NULL, data BLOB NOT NULL);
CREATE TABLE units (
  id INTEGER PRIMARY KEY, kind TEXT NOT NULL, item_id TEXT NOT NULL, subset TEXT NOT NULL,
  benchmark TEXT NOT NULL, item_key TEXT NOT NULL, practice INTEGER NOT NULL,
  gold INTEGER NOT NULL, correct TEXT, payload TEXT NOT NULL, position INTEGER NOT NULL
);
CREATE INDEX units_item ON units (item_key);
CREATE TABLE annotators (
  id TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE, seed INTEGER NOT NULL,
  created_at TEXT NOT NULL, consented_at TEXT, started_at TEXT, reserved INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE assignments (
  annotator TEXT NOT NULL REFERENCES annotators (id), unit INTEGER NOT NULL REFERENCES units (id),
  seq INTEGER NOT NULL, options TEXT NOT NULL, served_at REAL, answer TEXT, edit TEXT,
  seconds REAL, answered_at TEXT, PRIMARY KEY (annotator, unit)
);
CREATE INDEX assignments_unit ON assignments (unit);
"""
TABLES_1 = ("meta", "images", "units", "annotators", "assignments")
# the schema-1 columns of the tables that later schemas widened
COLUMNS_1 = {
    "annotators": "id, token_hash, seed, created_at, consented_at, started_at, reserved",
    "assignments": "annotator, unit, seq, options, served_at, answer, edit, seconds, answered_at",
}


def as_schema_1(study: Path) -> Path:
    """The study's rows in a schema-1 file (WAL, `schema_version` 1), which replaces it."""
    old = study.with_name("old.sqlite")
    raw = sqlite3.connect(old, isolation_level=None)
    try:
        raw.execute("PRAGMA journal_mode=WAL")
        raw.executescript(SCHEMA_1)
        raw.execute("ATTACH DATABASE ? AS made", (str(study),))
        raw.execute("BEGIN")
        for table in TABLES_1:
            cols = COLUMNS_1.get(table, "*")
            raw.execute(f"INSERT INTO main.{table} SELECT {cols} FROM made.{table}")
        raw.execute("UPDATE main.meta SET value = '1' WHERE key = 'schema_version'")
        raw.execute("COMMIT")
        # the study's write-ahead log emptied: connections still open on it (the apps' of the
        # test) keep the log file, which must not be replayed onto the file that replaces it
        raw.execute("PRAGMA made.wal_checkpoint(TRUNCATE)")
        raw.execute("DETACH DATABASE made")
    finally:
        raw.close()
    old.replace(study)
    return study


def dump(path: Path) -> list[str]:
    """The file's schema and rows as SQL text."""
    raw = sqlite3.connect(path)
    try:
        return list(raw.iterdump())
    finally:
        raw.close()


def layout(path: Path) -> list[tuple[str, str, str]]:
    raw = sqlite3.connect(path)
    try:
        return raw.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        raw.close()


def answer_all(study: MadeStudy, who: str) -> None:
    c = TestClient(create_app(study.path))
    bot = ScriptedAnnotator(c, study.annotators[who], right_policy(study.path), seed=0)
    assert bot.run(max_steps=200) and bot.code is not None and bot.code.startswith("DONE-7-")


@pytest.fixture
def study(tmp_path: Path) -> MadeStudy:
    return make_study(tmp_path, "-b", "synthetic", "--sample", "2", "--seed", "3",
                      "--practice", "1", "--gold", "1", "--overlap", "2", "--quota", "2",
                      "-n", "3", "--completion-code", "DONE-7")  # fmt: skip


def test_migrations_are_numbered_one_step_per_version() -> None:
    assert [to for to, _ in store.MIGRATIONS] == list(range(2, store.SCHEMA_VERSION + 1))


def test_a_schema_1_study_is_migrated_and_works(study: MadeStudy) -> None:
    answer_all(study, "a0001")  # answers given before the upgrade
    fresh = layout(study.path)
    before = answers_table(store.connect(study.path)).to_pylist()
    as_schema_1(study.path)
    old_dump = dump(study.path)
    assert not any("schema_history" in line for line in old_dump)

    with pytest.warns(
        RuntimeWarning, match=f"migrated from schema 1 to {store.SCHEMA_VERSION}"
    ) as said:
        con = store.connect(study.path)
    backup = study.path.with_name("study.sqlite.schema1.bak")
    assert str(backup) in str(said[0].message)
    assert store.get_meta(con, "schema_version") == store.SCHEMA_VERSION
    created = store.get_meta(con, "created_at")
    (first, *later) = store.schema_history(con)
    assert first == (1, created, None)
    assert [v for v, _, _ in later] == list(range(2, store.SCHEMA_VERSION + 1))
    assert all(at >= created and by == __version__ for _, at, by in later)
    assert answers_table(con).to_pylist() == before  # the answers survive unchanged
    con.close()
    assert layout(study.path) == fresh  # the same tables and indexes as a new study
    assert dump(backup) == old_dump  # the schema-1 file, kept as it was

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # opened again: nothing more to migrate
        answer_all(study, "a0002")  # pages served and answers recorded on the migrated file
        store.connect(study.path).close()
    out = study.path.with_name("answers.parquet")
    res = CliRunner().invoke(app, ["annotate", "export", str(study.path), "--answers", str(out)])
    assert res.exit_code == 0, res.output
    rows = answers_table(store.connect(study.path)).to_pylist()
    assert rows[: len(before)] == before
    assert {r["annotator"] for r in rows} == {"a0001", "a0002"}
    assert len(rows) == 2 * len(before) and all(r["correct"] for r in rows)


def test_a_failed_migration_leaves_the_file_as_it_was(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    as_schema_1(study.path)
    old_dump = dump(study.path)

    (*before, (last, step)) = store.MIGRATIONS

    def broken(con: store.Connection) -> None:
        step(con)  # the real last step, then a failure
        raise ValueError("step failed")

    monkeypatch.setattr(store, "MIGRATIONS", [*before, (last, broken)])
    with pytest.raises(LexsemError) as err:
        store.connect(study.path)
    msg = str(err.value)
    assert "\n" not in msg and str(study.path) in msg
    assert f"from schema 1 to {store.SCHEMA_VERSION} (step failed); the file is unchanged" in msg
    assert dump(study.path) == old_dump
    monkeypatch.undo()
    res = CliRunner().invoke(app, ["annotate", "status", str(study.path)])  # a later open
    assert res.exit_code == 0, res.output
    said = f"study migrated from schema 1 to {store.SCHEMA_VERSION} (the schema-1 file"
    assert f"warning: {study.path}: {said}" in res.output
    con = store.connect(study.path)
    assert store.get_meta(con, "schema_version") == store.SCHEMA_VERSION
    con.close()


def test_a_newer_study_is_refused_in_one_line(study: MadeStudy) -> None:
    newer = store.SCHEMA_VERSION + 1
    raw = sqlite3.connect(study.path)
    with raw:
        raw.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(newer),))
    raw.close()
    before = dump(study.path)
    res = CliRunner().invoke(app, ["annotate", "status", str(study.path)])
    assert res.exit_code == 2
    assert res.output.strip() == (
        f"error: {study.path}: study schema {newer} is newer than this lexsem's "
        f"({store.SCHEMA_VERSION}); open it with a newer lexsem"
    )
    assert dump(study.path) == before
    assert not list(study.path.parent.glob("*.bak"))


# --- no SQL outside the study store ---------------------------------------------------------

_SQL_CALLS = {"execute", "executemany", "executescript", "cursor", "backup", "iterdump"}
_SQL_WORDS = ("SELECT ", "INSERT ", "UPDATE ", "DELETE FROM", "CREATE TABLE", "PRAGMA ", "BEGIN")


def sql_uses(source: str) -> list[str]:
    """What in `source` runs SQL: `sqlite3` imports, calls of a connection's SQL methods, and
    string constants that start with an SQL statement."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            if any(n.split(".")[0] == "sqlite3" for n in names):
                found.append(f"line {node.lineno}: imports sqlite3")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _SQL_CALLS:
                found.append(f"line {node.lineno}: .{node.func.attr}(...)")
        elif isinstance(node, ast.Constant) and str(node.value).lstrip().startswith(_SQL_WORDS):
            found.append(f"line {node.lineno}: SQL text {node.value[:30]!r}")
    return found


def uses_the_study_store(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = {f"{node.module}.{a.name}" for a in node.names} | {node.module}
            if any(n.startswith("lexsem.annotate.store") for n in names):
                return True
    return False


def test_the_checker_finds_sql() -> None:
    """The check below can fail: it finds each way of running SQL, and the store's own."""
    assert sql_uses("import sqlite3")
    assert sql_uses("from sqlite3 import connect")
    assert sql_uses("con.execute(q)")
    assert sql_uses("con.executemany(q, rows)")
    assert sql_uses("q = 'SELECT id FROM units'")
    assert not sql_uses("store.record_answer(con, aid, 1, 'a', None)")
    own = (SRC / "annotate" / "store.py").read_text(encoding="utf-8")
    assert len(sql_uses(own)) > 20 and uses_the_study_store("from lexsem.annotate import store")


def test_only_the_study_store_runs_sql_on_a_study() -> None:
    """In `lexsem.annotate` only `store.py` (and a `store_*.py`) runs SQL; elsewhere in lexsem,
    no module that opens a study through the store runs SQL on it."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "annotate" and (path.stem == "store" or path.stem.startswith("store_")):
            continue
        source = path.read_text(encoding="utf-8")
        if rel.parts[0] == "annotate" or uses_the_study_store(source):
            bad += [f"{rel}: {use}" for use in sql_uses(source)]
    assert not bad, "SQL outside the study store:\n" + "\n".join(bad)
