"""The study server's rate limits cannot be turned against people: the crowd link is limited
per client address, a participant's requests (their link and their sessions' pages) per
annotator and per address, requests with an unknown
token store nothing but one count per address, and the limiter's memory is bounded whatever
the number of distinct tokens and addresses."""

from __future__ import annotations

import secrets
import tracemalloc

import pytest

from builders.annotate_studies import HOME, MadeStudy, make_study, need_annotate_extra, open_link
from lexsem.annotate.security import RateLimiter, client_key

need_annotate_extra()

from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> MadeStudy:
    return make_study(tmp_path_factory.mktemp("limits"), "-b", "synthetic", "--sample", "2",
                      "-k", "tot", "--overlap", "2", "-n", "3")  # fmt: skip


def at(app: FastAPI, address: str) -> TestClient:
    """A client of `app` calling from `address`."""
    return TestClient(app, client=(address, 40000), follow_redirects=False)


def test_the_join_link_is_limited_per_address_not_for_everyone(study: MadeStudy) -> None:
    app = create_app(study.path, rate_limit=20)
    bot = at(app, "203.0.113.7")
    assert [bot.get(study.join).status_code for _ in range(20)] == [200] * 20
    assert bot.get(study.join).status_code == 429
    # the next real participant, from another address, is not held back
    assert at(app, "198.51.100.2").get(study.join).status_code == 200


def test_a_link_is_limited_per_token_and_per_address(study: MadeStudy) -> None:
    app = create_app(study.path, rate_limit=5, address_limit=8)
    links = list(study.annotators.values())
    one = at(app, "203.0.113.8")
    # each opening of the link is a 303 that begins a new session
    assert [one.get(links[0]).status_code for _ in range(6)] == [303] * 5 + [429]
    # the same address with another link: its address bucket (8, the 429 counted) runs out
    assert [one.get(links[1]).status_code for _ in range(3)] == [303, 303, 429]
    # another address, the same links: its own buckets (links[1]'s token still has 2 left)
    other = at(app, "198.51.100.3")
    assert other.get(links[2]).status_code == 303
    assert other.get(links[0]).status_code == 429  # the token's bucket is the token's


def test_a_session_is_limited_per_annotator_and_a_new_one_starts_no_new_bucket(
    study: MadeStudy,
) -> None:
    app = create_app(study.path, rate_limit=4)
    links = list(study.annotators.values())
    one = at(app, "203.0.113.20")
    open_link(one, links[0])  # 1 of the annotator's 4
    assert [one.get(HOME).status_code for _ in range(4)] == [200] * 3 + [429]
    # another browser (another address) opening the same link: the same annotator's bucket
    other = at(app, "198.51.100.20")
    assert other.get(links[0]).status_code == 429
    assert other.get(HOME).status_code == 403  # and no session there
    open_link(other, links[1])  # another annotator: their own bucket
    assert other.get(HOME).status_code == 200


def test_unknown_tokens_store_nothing_but_one_count_per_address(study: MadeStudy) -> None:
    app = create_app(study.path, miss_limit=100_000)
    c = at(app, "203.0.113.9")
    before = len(app.state.limits)
    for _ in range(1000):
        path = secrets.choice(["/a/", "/join/", "/admin/"]) + secrets.token_urlsafe(32)
        assert c.get(path).status_code == 404
    assert len(app.state.limits) - before == 1  # the address's count of unknown tokens


def test_guessed_tokens_are_throttled_per_address_without_locking_out_real_links(
    study: MadeStudy,
) -> None:
    app = create_app(study.path, miss_limit=10)
    c = at(app, "203.0.113.10")
    codes = [c.get(f"/a/{secrets.token_urlsafe(32)}").status_code for _ in range(12)]
    assert codes == [404] * 10 + [429] * 2
    # a real participant behind the same address (a lab, a NAT) still gets their page
    assert c.get(next(iter(study.annotators.values()))).status_code == 303
    assert at(app, "198.51.100.4").get(f"/a/{secrets.token_urlsafe(32)}").status_code == 404


def test_many_addresses_keep_the_tables_bounded(study: MadeStudy) -> None:
    app = create_app(study.path)
    for k in range(300):
        assert at(app, f"10.0.{k // 250}.{k % 250}").get("/a/nothing").status_code == 404
    limits = app.state.limits
    assert len(limits.miss) == 300 and len(limits.token) == len(limits.address) == 0


def test_the_limiter_table_is_bounded_in_entries_and_memory() -> None:
    lim = RateLimiter(limit=5, window=60.0, max_keys=1000)
    tracemalloc.start()
    try:
        for k in range(50_000):
            lim.allow(f"key-{k}")
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(lim) <= 1000
    assert size < 1_000_000  # 1000 small entries, not 50,000


def test_a_bucket_refills_and_full_buckets_are_dropped_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr("lexsem.annotate.security.time.monotonic", lambda: now[0])
    lim = RateLimiter(limit=2, window=10.0, max_keys=10)
    assert [lim.allow("busy") for _ in range(3)] == [True, True, False]
    now[0] += 5.0  # half a window: one request back
    assert [lim.allow("busy") for _ in range(2)] == [True, False]
    for k in range(9):
        lim.allow(f"idle-{k}")
    assert len(lim) == 10
    now[0] += 60.0  # every bucket full again: they hold nothing and go first
    lim.allow("fresh")
    assert len(lim) == 1
    # under pressure (no bucket full) the least recently used go, the recent stay
    for k in range(30):
        lim.allow(f"new-{k}")
    assert len(lim) <= 10
    assert lim.allow("new-29") and lim.allow("new-29") is False  # kept: its 2 are spent
    assert lim.allow("new-0")  # dropped: a new bucket


def test_client_keys_group_an_ipv6_host_by_its_64() -> None:
    assert client_key("2001:db8:1:2::5") == client_key("2001:db8:1:2:ffff::1")
    assert client_key("2001:db8:1:2::5") != client_key("2001:db8:1:3::5")
    assert client_key("::ffff:192.0.2.1") == client_key("192.0.2.1") == "192.0.2.1"
    assert client_key("testclient") == "testclient" and client_key(None) == "?"


def test_a_429_is_the_study_page_with_retry_after(study: MadeStudy) -> None:
    app = create_app(study.path, rate_limit=1)
    c = at(app, "203.0.113.11")
    link = next(iter(study.annotators.values()))
    c.get(link)
    res = c.get(link)
    assert res.status_code == 429 and res.headers["Retry-After"] == "60"
    assert "too many requests" in res.text and "<html" in res.text.lower()
