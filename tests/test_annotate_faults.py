"""Faults of the study server and its study file are pages and one-line errors, never a 500 or
a traceback: numbers out of range, a full disk, a read-only or damaged study file, a
hand-edited setting; files holding secrets are 0600; the access log holds no token; slow
clients are closed."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.annotate_studies import HOME, MadeStudy, make_study, need_annotate_extra, open_link
from builders.local_http import free_port
from lexsem.cli import app as cli_app

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate import store  # noqa: E402
from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.local_server import LocalServer  # noqa: E402
from lexsem.annotate.simulate import parse_page  # noqa: E402
from lexsem.errors import LexsemError  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"
NOBODY = 65534


@pytest.fixture
def study(tmp_path: Path) -> MadeStudy:
    return make_study(tmp_path, "-b", "synthetic", "--sample", "2", "-k", "tot",
                      "--practice", "1", "--overlap", "2", "-n", "2")  # fmt: skip


def cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli_app, ["annotate", *args])
    return res.exit_code, res.output


def at_question(c: TestClient, link: str) -> dict[str, str]:
    """Open `link` (its session in `c`'s cookies), consent and start its annotator; the first
    question's form: its hidden fields and its first answer."""
    here = open_link(c, link)
    for _ in range(2):
        page = parse_page(c.get(here).text)
        c.post(page.action, data={"csrf": page.csrf})
    html = c.get(here).text
    page = parse_page(html)
    assert page.answers and page.action is not None
    form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
    return {**form, "answer": page.answers[0], "action": page.action}


def damage(path: Path) -> None:
    """Overwrite one b-tree page of the study (an index of the meta table) with garbage."""
    data = bytearray(path.read_bytes())
    page = 4096
    data[4 * page : 5 * page] = b"\x07" * page
    path.write_bytes(bytes(data))


def one_line(out: str) -> str:
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    assert "Traceback" not in out
    return lines[0]


# --- pages, not 500s ------------------------------------------------------------------------


@pytest.mark.parametrize("n", ["9223372036854775808", "-9223372036854775809", "1" + "0" * 40])
def test_ids_out_of_range_are_a_400_or_404_page(study: MadeStudy, n: str) -> None:
    c = TestClient(create_app(study.path), follow_redirects=False)
    link = next(iter(study.annotators.values()))
    form = at_question(c, link)
    action = form.pop("action")
    res = c.post(action, data={**form, "unit": n, "page": n})  # whichever the form names
    assert res.status_code in (400, 404) and "<html" in res.text.lower()
    res = c.get(f"{HOME}/feedback/{n}")
    assert res.status_code in (400, 404) and "<html" in res.text.lower()


def test_an_overflow_anywhere_is_a_400_page(study: MadeStudy) -> None:
    app = create_app(study.path)

    @app.get("/probe/{n}")
    def probe(n: int) -> None:
        con = store.connect(study.path)
        try:
            con.execute("SELECT ?", (n,))  # SQLite's integers are 64-bit
        finally:
            con.close()

    res = TestClient(app).get("/probe/9223372036854775808")
    assert res.status_code == 400 and "out of range" in res.text


NOT_ASCII = ["ÄÖÜ☃", "é" * 64, "0" * 63 + "☃"]


def unsigned(html: str) -> str:
    """A page without its script's nonce (new on every response)."""
    return re.sub(r'nonce="[^"]*"', "", html)


@pytest.mark.parametrize("bad", NOT_ASCII)
def test_a_csrf_value_that_is_not_ascii_is_the_403_page_of_a_wrong_one(
    study: MadeStudy, bad: str
) -> None:
    """Every form of the study (the join link, a session's consent, start and answer, the
    admin's invite and state) refuses a CSRF value that is not ASCII as it refuses a wrong
    ASCII one: the same 403 page, never a 500."""
    c = TestClient(create_app(study.path), follow_redirects=False)
    link = study.annotators["a0001"]
    answer = at_question(c, link)
    forms = [
        (study.join, {}),
        (f"{HOME}/consent", {}),
        (f"{HOME}/start", {}),
        (answer.pop("action"), {k: v for k, v in answer.items() if k != "csrf"}),
        (f"{study.admin}/invite", {"n": "1"}),
        (f"{study.admin}/state", {"state": "paused"}),
    ]
    for action, data in forms:
        wrong = c.post(action, data={**data, "csrf": "x" * 64})
        res = c.post(action, data={**data, "csrf": bad})
        assert res.status_code == wrong.status_code == 403, (action, res.status_code)
        assert unsigned(res.text) == unsigned(wrong.text) and "<html" in res.text.lower()
    con = store.connect(study.path)
    assert store.answers(con) == [] and store.annotator_count(con) == 2
    con.close()


def test_secrets_are_compared_as_bytes_by_one_helper() -> None:
    from lexsem.annotate.security import same_secret

    assert same_secret("PAY-7Q2M", "PAY-7Q2M") and same_secret("PRÜF-1", "PRÜF-1")
    for given in ("PAY-ÄÖÜ☃", "PAY-7Q2\udcff", "", "PAY-7Q2"):
        assert not same_secret("PAY-7Q2M", given)
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in sorted(SRC.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "compare_digest(" in line
    ]
    assert found == [f"lexsem/annotate/security.py:{found[0].rsplit(':', 1)[1]}"], found


@pytest.mark.parametrize("code", ["PAY-ÄÖÜ☃", "☃", "DONE-" + "é" * 12, "PAY-\udcff"])
def test_verify_and_revoke_of_text_that_is_not_ascii_are_one_line(
    study: MadeStudy, code: str
) -> None:
    """A completion code or a link that is not ASCII (the last: a command line's byte that is
    not UTF-8) is no participant's: one line, exit status 2, as any unknown code or link."""
    status, out = cli("verify", str(study.path), code)
    assert status == 2
    assert one_line(out).endswith(f"no participant of {study.path} has this code")
    status, out = cli("revoke", str(study.path), code)
    assert status == 2 and "no annotator id or link token" in one_line(out)


def _full(*args: object, **kw: object) -> None:
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = 13  # type: ignore[attr-defined]
    raise exc


def test_a_full_disk_is_a_503_page_saying_the_answer_was_not_saved(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = TestClient(create_app(study.path), follow_redirects=False)
    link = next(iter(study.annotators.values()))
    form = at_question(c, link)
    action = form.pop("action")
    monkeypatch.setattr(store, "record_answer", _full)
    res = c.post(action, data=form)
    assert res.status_code == 503 and "disk is full" in res.text
    assert "your answer was not saved" in res.text and res.headers["Retry-After"]
    con = store.connect(study.path)
    assert [a for a in store.answers(con)] == []
    con.close()
    monkeypatch.undo()  # space again: the same form is taken
    assert c.post(action, data=form).status_code == 303


def test_a_full_disk_on_a_page_that_writes_is_a_503_page(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = TestClient(create_app(study.path), follow_redirects=False)
    link = next(iter(study.annotators.values()))
    open_link(c, link)
    for _ in range(2):
        page = parse_page(c.get(HOME).text)
        c.post(page.action, data={"csrf": page.csrf})
    monkeypatch.setattr(store, "next_unit", _full)
    res = c.get(HOME)
    assert res.status_code == 503 and "nothing was saved" in res.text


def test_pages_that_show_no_question_do_not_write(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consent, instructions, admin and the crowd link's page are served by a study file that
    refuses every write (a full disk is one); opening a personal link writes its session, so
    it is opened before."""
    real_connect = store.connect

    def read_only(path: str | Path, **kw: bool) -> sqlite3.Connection:
        con = real_connect(path, **kw)
        writes = {sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}
        con.set_authorizer(lambda op, *a: sqlite3.SQLITE_DENY if op in writes else 0)
        return con

    before = TestClient(create_app(study.path), follow_redirects=False)
    open_link(before, next(iter(study.annotators.values())))
    app = create_app(study.path)
    monkeypatch.setattr(store, "connect", read_only)
    c = TestClient(app, follow_redirects=False, cookies=before.cookies)
    res = c.get(HOME)
    assert res.status_code == 200 and "Consent" in res.text
    assert c.get(study.join).status_code == 200
    assert c.get(study.admin).status_code == 200


def test_a_hand_edited_setting_is_one_line_naming_it(study: MadeStudy) -> None:
    con = sqlite3.connect(study.path)
    settings = json.loads(con.execute("SELECT value FROM meta WHERE key='settings'").fetchone()[0])
    settings["overlap"] = "x"
    con.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(settings),))
    con.commit()
    con.close()
    for args in (["status", str(study.path)], ["serve", str(study.path), "--port", "1"]):
        code, out = cli(*args)
        line = one_line(out)
        assert code == 2 and "setting overlap is 'x'" in line and "integer" in line
    with pytest.raises(LexsemError, match="setting overlap"):
        create_app(study.path)


# --- the study file checked before use ------------------------------------------------------


def test_a_damaged_study_is_one_line_for_status_export_and_serve(
    study: MadeStudy, tmp_path: Path
) -> None:
    damage(study.path)
    for args in (
        ["status", str(study.path)],
        ["export", str(study.path), "--answers", str(tmp_path / "a.parquet")],
        ["serve", str(study.path), "--port", "1"],
    ):
        code, out = cli(*args)
        line = one_line(out)
        assert code == 2 and "the study file is damaged" in line and "integrity check" in line
    assert not (tmp_path / "a.parquet").exists()


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder outside pytest's root-only temporary folder, owned by the unprivileged user
    the read-only tests run as."""
    folder = Path(tempfile.mkdtemp(prefix="lexsem-ro-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def unprivileged(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`lexsem ARGS` run by a user that file modes apply to (root ignores them: it is run as
    `nobody` through `setpriv`)."""
    cmd = [sys.executable, "-c", "import sys; from lexsem.cli import app; sys.exit(app())", *args]
    if os.geteuid() == 0:
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": str(cwd),
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_serve_refuses_a_read_only_study_file_at_start(
    study: MadeStudy, shared_folder: Path
) -> None:
    ro = shared_folder / "study.sqlite"
    shutil.copy(study.path, ro)
    if os.geteuid() == 0:
        os.chown(ro, NOBODY, NOBODY)
    ro.chmod(0o444)
    res = unprivileged(["annotate", "serve", str(ro), "--port", "1"], shared_folder)
    line = one_line(res.stderr)
    assert res.returncode == 2 and "cannot be served" in line and "read-only (mode 0444)" in line
    # status and export still read it
    res = unprivileged(["annotate", "status", str(ro)], shared_folder)
    assert res.returncode == 0, res.stderr


def test_serve_refuses_a_study_in_a_read_only_folder(study: MadeStudy, shared_folder: Path) -> None:
    inner = shared_folder / "inner"
    inner.mkdir()
    ro = inner / "study.sqlite"
    shutil.copy(study.path, ro)
    if os.geteuid() == 0:
        os.chown(ro, NOBODY, NOBODY)  # the file is the user's, its folder is not
    res = unprivileged(["annotate", "serve", str(ro), "--port", "1"], shared_folder)
    line = one_line(res.stderr)
    assert res.returncode == 2 and "its folder" in line and "-wal and -shm" in line


def test_serve_refuses_a_study_on_a_read_only_file_system(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.statvfs

    class ReadOnly:
        def __init__(self, st: os.statvfs_result) -> None:
            self.f_flag = st.f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly(real(p)))
    code, out = cli("serve", str(study.path), "--port", "1")
    assert code == 2 and "read-only file system" in one_line(out)


# --- secrets on disk and in logs ------------------------------------------------------------


def test_the_study_and_links_files_are_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        made = make_study(tmp_path, "-b", "synthetic", "--sample", "1", "-k", "tot")
    finally:
        os.umask(old)
    for path in (made.path, tmp_path / "study.links.json"):
        assert (path.stat().st_mode & 0o777) == 0o600, path
    with LocalServer(made.path) as srv:  # serving makes the -wal and -shm files
        import httpx

        assert httpx.get(srv.url + made.join).status_code == 200
        for suffix in ("-wal", "-shm"):
            side = Path(f"{made.path}{suffix}")
            assert (side.stat().st_mode & 0o777) == 0o600, side


def test_the_copy_kept_by_a_migration_is_0600(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = store.SCHEMA_VERSION  # a lexsem one schema newer opens the study
    monkeypatch.setattr(store, "SCHEMA_VERSION", now + 1)
    monkeypatch.setattr(store, "MIGRATIONS", [*store.MIGRATIONS, (now + 1, lambda con: None)])
    old = os.umask(0o022)
    try:
        with pytest.warns(RuntimeWarning, match="migrated"):
            store.connect(study.path).close()
    finally:
        os.umask(old)
    backup = study.path.with_name(f"{study.path.name}.schema{now}.bak")
    assert (backup.stat().st_mode & 0o777) == 0o600


def test_serve_warns_about_a_study_file_others_can_read(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    study.path.chmod(0o644)
    ran: list[object] = []
    monkeypatch.setattr("lexsem.annotate.http_server.run", lambda *a, **k: ran.append(a))
    code, out = cli("serve", str(study.path), "--port", str(free_port()))  # 8000 may be taken
    assert code == 0 and ran and "mode 0644" in out and "chmod 600" in out


def test_the_access_log_holds_no_token(study: MadeStudy) -> None:
    import httpx

    srv = LocalServer(study.path, extra=["--access-log"])
    with srv:
        for path in (study.admin, study.join, next(iter(study.annotators.values()))):
            assert httpx.get(srv.url + path, follow_redirects=True).status_code == 200
        time.sleep(0.3)
    log = srv.log()
    tokens = [p.rsplit("/", 1)[1] for p in (study.admin, study.join, *study.annotators.values())]
    assert "GET /admin/… " in log and "GET /join/… " in log and "GET /a/… " in log
    assert "GET /s " in log  # the participant's pages: no token to redact
    assert not any(t in log for t in tokens)


# --- slow clients ---------------------------------------------------------------------------


def test_slow_header_connections_are_closed(study: MadeStudy) -> None:
    import httpx

    from lexsem.annotate.http_server import HEADER_TIMEOUT

    with LocalServer(study.path) as srv:
        socks = []
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and never the end of the headers
            socks.append(s)
        time.sleep(HEADER_TIMEOUT + 1.5)
        closed = 0
        for s in socks:
            s.settimeout(2.0)
            try:
                closed += s.recv(1024) == b""
            except (ConnectionResetError, TimeoutError):
                closed += 0
            s.close()
        assert closed == 20
        assert httpx.get(srv.url + study.join).status_code == 200  # served meanwhile


# --- launch bursts --------------------------------------------------------------------------


def test_writers_of_one_server_take_turns_instead_of_polling_sqlite(study: MadeStudy) -> None:
    """With SQLite's busy wait off, concurrent write transactions of one process still all
    commit: they queue on the store's lock, never on SQLite's busy handler."""
    import threading

    cons = [store.connect(study.path) for _ in range(8)]
    for con in cons:
        con.execute("PRAGMA busy_timeout = 0")
    errors: list[BaseException] = []
    gate = threading.Barrier(len(cons))

    def work(k: int, con: sqlite3.Connection) -> None:
        gate.wait()
        try:
            for i in range(40):
                with store.write(con):
                    store.set_meta(con, f"probe{k}", i)
        except sqlite3.OperationalError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k, c)) for k, c in enumerate(cons)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [store.get_meta(cons[0], f"probe{k}") for k in range(8)] == [39] * 8
    for con in cons:
        con.close()


def test_a_launch_burst_through_the_join_link_loses_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    import threading

    import httpx

    from lexsem.annotate.simulate import ScriptedAnnotator

    n = 30  # 30 participants x 1 item x overlap 2: 15 of the study's items
    study = make_study(tmp_path, "-b", "synthetic", "--sample", "10", "-k", "tot",
                       "--overlap", "2", "--quota", "1")  # fmt: skip
    bots: list[ScriptedAnnotator] = []
    sessions: set[str] = set()  # each participant's session cookie
    errors: list[BaseException] = []
    gate = threading.Barrier(n)
    with LocalServer(study.path) as srv:

        def work(i: int) -> None:
            try:
                with httpx.Client(base_url=srv.url, timeout=60) as c:
                    bot = ScriptedAnnotator(c, study.join, seed=i)
                    bots.append(bot)
                    gate.wait(timeout=60)
                    bot.link = bot.join()
                    sessions.add(c.cookies["lexsem-session"])
                    assert bot.run(max_steps=100)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=240)
    assert errors == []
    con = store.connect(study.path)
    try:
        rows = store.answers(con)
        joined = len(store.annotators(con)) - len(study.annotators)
    finally:
        con.close()
    assert joined == n and len(sessions) == n
    sent = sorted((i, u) for i, b in enumerate(bots) for u, _ in b.answered)
    keys = [(r.annotator, r.kind, r.item_id, r.practice) for r in rows]
    assert len(rows) == len(sent) and len(set(keys)) == len(keys)
