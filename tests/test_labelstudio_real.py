"""A real Label Studio (`make .peer-labelstudio`: its own venv, the version the Makefile pins),
driven through its HTTP API as a team would: a BiVLC study exported by `labelstudio-export`
becomes two projects made from the export's `project.json`, `storage.json` and `tasks.json`;
two annotators, each signed up through Label Studio's form, take the tasks Label Studio serves
them (`next`), one skips one; each task goes to both (the study's overlap, 2); the images come
from the export's folder through Label Studio's local-files storage; both projects are
exported as JSON and read back by `labelstudio-import` into one answers table whose counts and
accuracies equal the hand counts; an annotator's second annotation of a task is flagged.

Locally the module is skipped where `.peer-labelstudio` is missing; in CI (`.ci/run` installs
it) it fails."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from builders.annotate_studies import make_study
from builders.backends import IN_CI
from builders.labelstudio_exports import shown_position
from builders.local_http import free_port
from lexsem.annotate import store
from lexsem.annotate.labelstudio import KEY_FILE, read_key
from lexsem.annotate.labelstudio_import import import_exports
from lexsem.cli import app
from lexsem.errors import DataError

REPO = Path(__file__).resolve().parents[1]
PEER = Path(os.environ.get("LEXSEM_PEER_LABELSTUDIO", REPO / ".peer-labelstudio"))
LABEL_STUDIO = PEER / "bin" / "label-studio"
START_TIMEOUT = 900.0  # the first start migrates a new database: minutes on 2 busy cores
ADMIN, PASSWORD = "admin@example.org", "lexsem-password-9"

if not LABEL_STUDIO.is_file():
    why = f"Label Studio is not installed at {PEER} (make .peer-labelstudio)"
    if IN_CI:
        pytest.fail(f"{why}; required in CI", pytrace=False)
    pytest.skip(why, allow_module_level=True)


@dataclass
class Setup:
    study: Path
    out: Path  # the export folder
    url: str
    admin: httpx.Client
    log: Path


@pytest.fixture(scope="module")
def ls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """A BiVLC study (overlap 2) exported, and Label Studio serving the export's images."""
    folder = tmp_path_factory.mktemp("labelstudio")
    made = make_study(folder, "-b", "synthetic_bi/replace_obj", "--sample", "1", "--practice",
                      "1", "--gold", "1", "--overlap", "2", "-k", "bivlc_i2t", "-k", "bivlc_t2i",
                      name="bi")  # fmt: skip
    res = CliRunner().invoke(app, ["annotate", "labelstudio-export", str(made.path), "-o",
                                   str(folder / "ls")])  # fmt: skip
    assert res.exit_code == 0, res.output
    out = (folder / "ls").resolve()
    port = free_port()
    env = {**os.environ, "LABEL_STUDIO_BASE_DATA_DIR": str(folder / "data"),
           "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true",
           "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(out),
           "LATEST_VERSION_CHECK": "false",
           "LABEL_STUDIO_LATEST_VERSION_CHECK": "false"}  # fmt: skip
    log = folder / "label-studio.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [str(LABEL_STUDIO), "start", "--no-browser", "--internal-host", "127.0.0.1",
             "--port", str(port), "--username", ADMIN, "--password", PASSWORD],
            env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"Label Studio exited ({proc.returncode}): {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Label Studio did not start in {START_TIMEOUT:.0f} s: "
                            f"{log.read_text()[-2000:]}")  # fmt: skip
            time.sleep(2)
        admin, _ = _session(url, ADMIN, PASSWORD, signup=False)
        yield Setup(made.path, out, url, admin, log)
        admin.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: Label Studio and its workers
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _ok(r: httpx.Response) -> Any:
    assert r.status_code < 300, (r.request.method, r.request.url, r.status_code, r.text[:500])
    return r.json() if r.content else None


def _session(url: str, email: str, password: str, *, signup: bool) -> tuple[httpx.Client, int]:
    """A user's session through Label Studio's own form (signed up, or logged in), and the
    user's id. (The API's legacy tokens are off by default in Label Studio 1.23.)"""
    c = httpx.Client(base_url=url, timeout=120, follow_redirects=True)
    page = "/user/signup/" if signup else "/user/login/"
    c.get(page)
    r = c.post(page, data={"email": email, "password": password,
                           "csrfmiddlewaretoken": c.cookies["csrftoken"]},
               headers={"Referer": f"{url}{page}"})  # fmt: skip
    assert r.status_code == 200, r.text[:500]
    c.headers.update({"X-CSRFToken": c.cookies["csrftoken"], "Referer": f"{url}/"})
    me = _ok(c.get("/api/current-user/whoami"))
    return c, int(me["id"])


def test_a_study_round_trips_through_a_real_label_studio(ls: Setup) -> None:
    key = read_key(ls.out / KEY_FILE)
    con = store.connect(ls.study)
    by_item = {(u.kind, u.item_id): u for u in store.units(con)}
    con.close()
    # the projects made as the export's README says: an access token from a personal one
    pat = _ok(ls.admin.post("/api/token/"))["token"]
    access = _ok(httpx.post(f"{ls.url}/api/token/refresh", json={"refresh": pat}))["access"]
    api = httpx.Client(base_url=ls.url, timeout=120,
                       headers={"Authorization": f"Bearer {access}"})  # fmt: skip
    projects = {}
    for name in ("i2t", "t2i"):
        settings = json.loads((ls.out / name / "project.json").read_text(encoding="utf-8"))
        p = _ok(api.post("/api/projects", json=settings))
        assert p["maximum_annotations"] == 2 and p["overlap_cohort_percentage"] == 100
        storage = json.loads((ls.out / name / "storage.json").read_text(encoding="utf-8"))
        _ok(api.post("/api/storages/localfiles", json={**storage, "project": p["id"]}))
        tasks = json.loads((ls.out / name / "tasks.json").read_text(encoding="utf-8"))
        done = _ok(api.post(f"/api/projects/{p['id']}/import", json=tasks))
        assert done["task_count"] == len(tasks) == 6  # 3 instances x 2 queries
        projects[name] = (p["id"], tasks)
    api.close()
    people = [_session(ls.url, f"annotator{k}@example.org", PASSWORD, signup=True)
              for k in (1, 2)]  # fmt: skip
    right = {"i2t": 0, "t2i": 0}
    answers = {"i2t": 0, "t2i": 0}
    for name, (pid, tasks) in projects.items():
        first_key = tasks[0]["data"]["lexsem_task"]
        for who, (client, _) in enumerate(people):
            served = []
            while True:
                r = client.get(f"/api/projects/{pid}/next")
                if r.status_code == 404:
                    break
                task = _ok(r)
                served.append(task["id"])
                info = key.tasks[task["data"]["lexsem_task"]]
                unit = by_item[info.kind, info.item_id]
                good = shown_position(task["data"], unit, unit.correct)
                pick = good if name == "t2i" or who == 0 else 3 - good
                skip = name == "i2t" and who == 0 and len(served) == 2
                body = {"result": [] if skip else [
                    {"from_name": "choice", "to_name": "base", "type": "choices",
                     "value": {"choices": [str(pick)]}}],
                    "was_cancelled": skip, "lead_time": 2.5}  # fmt: skip
                _ok(client.post(f"/api/tasks/{task['id']}/annotations/?project={pid}",
                                json=body))  # fmt: skip
                answers[name] += 1
                right[name] += not skip and pick == good
                if len(served) == 1 and who == 0:  # practice first, kept to 2 annotators
                    assert info.practice and task["data"]["lexsem_task"] == first_key
                    one = _ok(ls.admin.get(f"/api/tasks/{task['id']}"))
                    assert one["is_labeled"] is False and one["overlap"] == 2
                if name == "i2t" and len(served) == 1:
                    image = client.get(task["data"]["base_image"])  # local-files storage
                    assert image.status_code == 200, image.text[:300]
                    assert hashlib.sha256(image.content).hexdigest() in task["data"]["base_image"]
                assert len(served) <= len(tasks), "Label Studio served a task twice"
            assert len(served) == len(tasks)  # overlap 2: each of the two gets every task
    assert answers == {"i2t": 12, "t2i": 12} and right == {"i2t": 5, "t2i": 12}
    exports = []
    for name, (pid, _) in projects.items():
        body = _ok(ls.admin.get(f"/api/projects/{pid}/export", params={"exportType": "JSON"}))
        assert all(len(t["annotations"]) == 2 for t in body)  # overlap 2: both annotators
        path = ls.out.parent / f"{name}-export.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        exports.append(path)
    answers_path = ls.out.parent / "answers.parquet"
    res = CliRunner().invoke(app, ["annotate", "labelstudio-import", *map(str, exports), "--key",
                                   str(ls.out / KEY_FILE), "-o", str(answers_path)])  # fmt: skip
    assert res.exit_code == 0 and res.output.strip().startswith("24 answers"), res.output
    rows = import_exports(exports, key).to_pylist()
    ids = {people[0][1]: "ls-" + str(people[0][1]), people[1][1]: "ls-" + str(people[1][1])}
    for name, kind in (("i2t", "bivlc_i2t"), ("t2i", "bivlc_t2i")):
        mine = [r for r in rows if r["kind"] == kind]
        assert len(mine) == answers[name] and sum(bool(r["correct"]) for r in mine) == right[name]
    assert {r["annotator"] for r in rows} == set(ids.values())
    skips = [r for r in rows if r["answer"] == "skip"]
    assert [(r["kind"], r["annotator"]) for r in skips] == [("bivlc_i2t", ids[people[0][1]])]
    # Label Studio's JSON_MIN and CSV exports are named, with the format to use
    for fmt, said in (("JSON_MIN", "JSON_MIN export"), ("CSV", "CSV/TSV export"),
                      ("TSV", "CSV/TSV export")):  # fmt: skip
        r = ls.admin.get(f"/api/projects/{projects['i2t'][0]}/export", params={"exportType": fmt})
        assert r.status_code == 200, (fmt, r.text[:300])
        path = ls.out.parent / f"i2t-export.{fmt.lower()}"
        path.write_bytes(r.content)
        with pytest.raises(DataError, match=said):
            import_exports([path], key)
    # one annotator annotating a task a second time (through the API) is flagged at import
    pid, tasks = projects["t2i"]
    listed = _ok(ls.admin.get("/api/tasks", params={"project": pid}))
    task_id = (listed["tasks"] if isinstance(listed, dict) else listed)[0]["id"]
    client = people[1][0]
    again = {"result": [{"from_name": "choice", "to_name": "base", "type": "choices",
                         "value": {"choices": ["1"]}}]}  # fmt: skip
    _ok(client.post(f"/api/tasks/{task_id}/annotations/?project={pid}", json=again))
    body = _ok(ls.admin.get(f"/api/projects/{pid}/export", params={"exportType": "JSON"}))
    exports[1].write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(DataError, match=f"annotated twice by ls-{people[1][1]}"):
        import_exports(exports, key)
