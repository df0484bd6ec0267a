"""The review page in a real browser: Debian's chromium, driven by Playwright (never Playwright's own browsers).

`bash scripts/test.sh` installs chromium when it is missing, so a missing browser fails these tests (it does not
skip them): a review page nobody opened in a browser is not tested. Every wait is bounded; the network is
blocked and every request recorded: the page must make none but its own file.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from hindsight_batch.review.query import rows_view
from tests.conftest import SAMPLES, SessionBuilder, invoke
from tests.test_review import HOSTILE

CHROMIUM = os.environ.get("HINDSIGHT_BATCH_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 15_000


class Browser:
    """One page in a fresh chromium profile, with every network request recorded and refused."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.set_default_timeout(WAIT_MS)

    def open(self, path: Path) -> None:
        self.page.goto(path.as_uri(), timeout=WAIT_MS)
        self.page.wait_for_selector("body[data-ready='1']", timeout=WAIT_MS)

    def assert_offline(self, path: Path) -> None:
        assert self.requests == [path.as_uri()], self.requests  # the page itself, nothing else
        assert self.errors == []


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    assert Path(CHROMIUM).is_file(), (f"{CHROMIUM} is missing: bash scripts/test.sh installs it "
                                      "(apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=ARGS, headless=True, offline=True,
            viewport={"width": 1100, "height": 900}, timeout=60_000)
        try:
            def refuse(route: Any) -> None:
                route.abort() if not route.request.url.startswith("file:") else route.continue_()

            context.route("**/*", refuse)
            yield Browser(context.new_page())
        finally:
            context.close()


def import_and_review(runner: CliRunner, tmp_path: Path, source: Path) -> tuple[Path, Path]:
    state, page = tmp_path / "state", tmp_path / "page.html"
    assert invoke(runner, "import", str(source), "--include-content", "--state", str(state), "--live-retained",
                  "include", "-q").exit_code == 0
    result = invoke(runner, "review", "--state", str(state), "-o", str(page))
    assert result.exit_code == 0, result.output
    return page, state / "ledger.duckdb"


def ledger_query(ledger: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Plain SQL on the ledger, over the manifest row contract's columns."""
    with duckdb.connect(str(ledger), read_only=True) as db:
        rows_view(db)
        return db.execute(sql, params or []).fetchall()


def test_samples_page_in_chromium(runner: CliRunner, tmp_path: Path, browser: Browser) -> None:
    page_file, ledger = import_and_review(runner, tmp_path, SAMPLES)
    page = browser.page
    browser.open(page_file)
    chunks, sessions = ledger_query(
        ledger, "SELECT count(DISTINCT (source_file, segment, chunk_index)), count(DISTINCT source_file) "
        "FROM review_rows")[0]
    assert page.inner_text("#total-chunks") == str(chunks)
    assert page.inner_text("#count").startswith(f"{sessions} session(s), {chunks} chunk(s)")
    # filter by bank: the sessions and chunks of that bank only
    bank, bank_sessions, bank_chunks = ledger_query(
        ledger, "SELECT bank_id, count(DISTINCT source_file), count(*) FROM review_rows WHERE bank_id IS NOT NULL "
        "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1")[0]
    page.select_option("#f-bank", bank, timeout=WAIT_MS)
    assert page.inner_text("#count").startswith(f"{bank_sessions} session(s), {bank_chunks} chunk(s)")
    heads = page.locator(".session-head")
    assert heads.count() == bank_sessions
    assert all(bank in text for text in heads.all_inner_texts())
    # open the session with the redacted secrets, then its chunk: what it shows is what the ledger holds
    source, first, last, route, confidence, reason, content = ledger_query(
        ledger, "SELECT source_file, first_entry_id, last_entry_id, route, confidence, reason, content "
        "FROM review_rows WHERE bank_id = ? ORDER BY len(map_keys(redactions)) DESC, source_file LIMIT 1",
        [bank])[0]
    session = page.locator(".session", has_text=Path(source).name)
    session.locator(".session-head").click()
    chunk = session.locator(".chunk").first
    head = chunk.locator(".chunk-head").inner_text()
    assert f"entries {first} … {last}" in head and f"{route} ({confidence})" in head
    chunk.locator(".chunk-head").click()
    assert chunk.locator(".reason").inner_text() == f"reason: {reason}"
    assert chunk.locator("pre.text").text_content() == content
    markers = re.findall(r"\[REDACTED:[^\]]+\]", content)
    assert markers and chunk.locator("mark.redacted").all_text_contents() == markers
    page.screenshot(path=str(tmp_path / "review.png"), full_page=True, timeout=WAIT_MS)
    assert (tmp_path / "review.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("HINDSIGHT_BATCH_REVIEW_SCREENSHOT"):  # the README's picture: docs/review.png
        shutil.copyfile(tmp_path / "review.png", os.environ["HINDSIGHT_BATCH_REVIEW_SCREENSHOT"])
    browser.assert_offline(page_file)


def test_hostile_transcript_is_shown_as_text(runner: CliRunner, tmp_path: Path, browser: Browser) -> None:
    b = SessionBuilder(cwd="/work/<img src=y onerror=alert(2)>", session_id="s-xss")
    b.user(f"please look at {HOSTILE}")
    path = b.write(tmp_path / "sessions" / "--x--" / "2026-05-01T10-00-00-000Z_s-xss.jsonl")
    page_file, _ = import_and_review(runner, tmp_path, path)
    page = browser.page
    browser.open(page_file)
    page.locator(".session-head").first.click()
    page.locator(".chunk-head").first.click()
    assert HOSTILE in (page.locator("pre.text").text_content() or "")
    assert "<img src=y onerror=alert(2)>" in page.locator(".session-head").inner_text()
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    assert browser.dialogs == []
    browser.assert_offline(page_file)
