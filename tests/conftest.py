"""Shared fixtures. Every test runs with a private HOME and state folder, so no real config or ledger is touched."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import HTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.cli import cli
from hindsight_batch.config.families import ENV_NAMES

pytest_plugins = ["tests.server"]  # the real Hindsight server fixtures

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"
REAL_SAMPLES = REPO.parent / "shared" / "samples-real" / "pi"
MAIN_SAMPLE = SAMPLES / "--home-dev-acme-api--" / "2026-05-01T10-00-00-000Z_0196a1b2-0000-7000-8000-000000000001.jsonl"


def seeded(name: str) -> list[str]:
    return [line for line in (SAMPLES / name).read_text().splitlines() if line]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("HINDSIGHT_API_KEY", "HINDSIGHT_BASE_URL", "HINDSIGHT_API_URL", "HINDSIGHT_BANK_ID",
                 "HINDSIGHT_USER_BANK_ID", "HINDSIGHT_USER_RETAIN_MODE", "HINDSIGHT_PROJECT_NAME",
                 "HINDSIGHT_REDACTION_POLICY", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR",
                 *ENV_NAMES, "HINDSIGHT_QUEUE_ROOT"):
        monkeypatch.delenv(name, raising=False)
    yield home


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str, input: str | None = None) -> Any:
    """Run the CLI; stdout and stderr are kept apart (click >= 8.2)."""
    return runner.invoke(cli, list(args), input=input, catch_exceptions=False)


def without_run_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Manifest rows without the run id (which every run has its own of)."""
    return [{k: v for k, v in row.items() if k != "run_id"} for row in rows]


def read_manifest(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON-lines file, split on newlines only (``str.splitlines`` also splits at U+0085 and U+2028,
    which a JSON string may hold as they are)."""
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


class SessionBuilder:
    """Writes small v3 session files for tests: entries chain onto the last one unless a parent is given."""

    def __init__(self, cwd: str = "/work/demo", session_id: str = "sess-1", version: int | None = 3) -> None:
        header: dict[str, Any] = {"type": "session", "id": session_id, "timestamp": "2026-05-01T10:00:00.000Z",
                                  "cwd": cwd}
        if version is not None:
            header["version"] = version
        self.lines: list[str] = [json.dumps(header, separators=(",", ":"))]
        self.leaf: str | None = None
        self.count = 0

    def entry(self, kind: str, parent: str | bool | None = True, entry_id: str | None = None, **fields: Any) -> str:
        self.count += 1
        entry_id = entry_id or f"e{self.count}"
        parent_id = self.leaf if parent is True else (None if parent is False else parent)
        obj = {"type": kind, "id": entry_id, "parentId": parent_id,
               "timestamp": f"2026-05-01T10:{self.count // 60:02d}:{self.count % 60:02d}.000Z", **fields}
        self.lines.append(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))  # as pi writes
        self.leaf = entry_id
        return entry_id

    def message(self, role: str, content: Any, parent: str | bool | None = True, entry_id: str | None = None,
                **extra: Any) -> str:
        return self.entry("message", parent, entry_id, message={"role": role, "content": content,
                                                                "timestamp": 1777629600000 + self.count, **extra})

    def user(self, text: str, **kw: Any) -> str:
        return self.message("user", [{"type": "text", "text": text}], **kw)

    def assistant(self, *blocks: Any, **kw: Any) -> str:
        content = [b if isinstance(b, dict) else {"type": "text", "text": b} for b in blocks]
        return self.message("assistant", content, stopReason="stop", **kw)

    def tool_result(self, name: str, text: str, call_id: str = "c1", **kw: Any) -> str:
        return self.message("toolResult", [{"type": "text", "text": text}], toolName=name, toolCallId=call_id,
                            isError=False, **kw)

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def write(self, path: Path, trailing_newline: bool = True) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
        return path


def small_sessions(folder: Path, prefix: str, count: int = 3) -> Path:
    """``count`` one-turn sessions of one project (cwd ``/work/<prefix>``, ids ``<prefix>-<n>``) as
    ``folder/s<n>.jsonl``: a small corpus for tests about the run rather than the content."""
    for n in range(count):
        session = SessionBuilder(cwd=f"/work/{prefix}", session_id=f"{prefix}-{n}")
        session.user(f"session {n}: we moved the build of this project to ninja")
        session.assistant("done; the build runs ninja now")
        session.write(folder / f"s{n}.jsonl")
    return folder


@contextlib.contextmanager
def serving(server: HTTPServer, poll_interval: float = 0.5) -> Iterator[int]:
    """Serve ``server`` (bound to 127.0.0.1) in a thread while the block runs; yields its port."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": poll_interval}, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
