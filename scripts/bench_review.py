#!/usr/bin/env python3
"""The review page at scale: its size per 1,000 chunks and how long it takes to write and to open.

Writes synthetic pi sessions that plan to ``--chunks`` chunks (12 turns each, ordinary prose of a few hundred
bytes per message, a fake GitHub token in one message in twenty so the page has redaction markers), imports them
as a dry run (``--include-content``, and once more without, for the page without transcript text), then times
``hindsight-batch review`` (ledger SQL and HTML, in a child process), and in Debian's chromium (headless, network
refused) the load until the first page of sessions is shown, opening the largest session, opening a chunk, and a
filter change.

    .venv/bin/python scripts/bench_review.py [--chunks 10000] [--jobs 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.test_review_browser import ARGS, CHROMIUM  # noqa: E402 (the browser the tests use, set up the same way)

WORDS = ("the", "lock", "queue", "to", "and", "a", "parser", "test", "it", "of", "for", "we", "now", "file", "retry",
         "stream", "chunk", "bank", "owner", "heartbeat", "schema", "index", "build", "fix", "review", "page")
TURNS_PER_CHUNK = 12  # the default chunking.turnsPerChunk
CHUNKS_PER_SESSION = 5


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def write_sessions(root: Path, chunks: int) -> int:
    rng = random.Random(20)
    sessions = -(-chunks // CHUNKS_PER_SESSION)
    for s in range(sessions):
        project = f"proj{s % 12:02d}"
        day = (datetime(2026, 1, 1) + timedelta(days=s * 180 // sessions)).date().isoformat()  # half a year
        stamp = f"{day}T10-00-00-000Z"
        folder = root / f"--work-{project}--"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [{"type": "session", "version": 3, "id": f"bench-{s:06d}", "timestamp": f"{day}T10:00:00.000Z",
                  "cwd": f"/work/{project}"}]
        parent = None
        turns = min(CHUNKS_PER_SESSION, chunks - s * CHUNKS_PER_SESSION) * TURNS_PER_CHUNK
        for t in range(turns):
            for role, words in (("user", rng.randint(10, 40)), ("assistant", rng.randint(40, 120))):
                text = prose(rng, words)
                if rng.random() < 0.05:
                    text += " token ghp_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                                                    for _ in range(36))
                entry_id = f"{len(lines):08x}"
                lines.append({"type": "message", "id": entry_id, "parentId": parent,
                              "timestamp": f"{day}T10:{t // 60 % 60:02d}:{t % 60:02d}.000Z",
                              "message": {"role": role, "content": [{"type": "text", "text": text}]}})
                parent = entry_id
        path = folder / f"{stamp}_bench-{s:06d}.jsonl"
        path.write_text("\n".join(json.dumps(x, separators=(",", ":")) for x in lines) + "\n", encoding="utf-8")
    return sessions


def cli(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([str(REPO / ".venv" / "bin" / "hindsight-batch"), *args], check=True)
    return time.perf_counter() - start


def in_browser(page_file: Path, profile: Path) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    times: dict[str, float] = {}
    requests: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=ARGS, headless=True, offline=True,
            viewport={"width": 1100, "height": 900}, timeout=60_000)
        try:
            page = context.new_page()
            page.set_default_timeout(120_000)
            page.on("request", lambda r: requests.append(r.url))
            start = time.perf_counter()
            page.goto(page_file.as_uri(), timeout=120_000)
            page.wait_for_selector("body[data-ready='1']")
            times["load_to_first_page_s"] = time.perf_counter() - start
            start = time.perf_counter()
            page.locator(".session-head").first.click()
            page.wait_for_selector(".chunk-head")
            times["open_session_s"] = time.perf_counter() - start
            start = time.perf_counter()
            page.locator(".chunk-head").first.click()
            page.wait_for_selector(".chunk-body")
            times["open_chunk_s"] = time.perf_counter() - start
            start = time.perf_counter()
            page.select_option("#f-project", "proj03")
            page.wait_for_function("document.getElementById('count').textContent.indexOf('page 1') >= 0")
            times["filter_s"] = time.perf_counter() - start
        finally:
            context.close()
    assert requests == [page_file.as_uri()], requests
    return {k: round(v, 3) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="Work in this folder and keep it (default: a temporary one).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        sessions = write_sessions(work / "sessions", args.chunks)
        result: dict[str, object] = {"chunks": args.chunks, "sessions": sessions}
        for label, extra in (("with_content", ["--include-content"]), ("without_content", [])):
            state, page = work / f"state-{label}", work / f"review-{label}.html"
            cli("import", str(work / "sessions"), "--state", str(state), "--live-retained", "include", "--jobs",
                str(args.jobs), "-q", *extra)
            write_s = cli("review", "--state", str(state), "-o", str(page), "-q")
            size = page.stat().st_size
            result[label] = {"page_bytes": size, "bytes_per_1000_chunks": round(size * 1000 / args.chunks),
                             "review_command_s": round(write_s, 3),
                             **in_browser(page, work / f"profile-{label}")}
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
