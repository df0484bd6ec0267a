"""Something other than Hindsight at the base URL (a 404 for everything, an HTML page), or a URL that cannot be
used: every command ends with exit 4 (or 3 for a bad configured URL) and one clear line naming the server by its
masked URL; nothing is marked missing or forgotten, no session file is blamed, the dry run's live check says it
could not check."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch.errors import EXIT_SERVER
from hindsight_batch.ledger import Ledger
from hindsight_batch.sinks import hindsight
from hindsight_batch.sinks.hindsight import BadAnswer, HindsightClient
from tests.conftest import invoke, serving, small_sessions
from tests.fake_hindsight import FakeState, fake_hindsight

ANSWERS = {"404": (404, "application/json", b'{"detail": "Not Found"}'),
           "html": (200, "text/html; charset=utf-8", b"<html><body>Welcome to nginx!</body></html>")}


@contextlib.contextmanager
def not_hindsight(kind: str) -> Iterator[str]:
    """A server on 127.0.0.1 giving the same answer to every request; yields its URL with a password in it."""
    status, content_type, body = ANSWERS[kind]

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, *_: object) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"http://user:hunter2secret@127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def instant(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hindsight, "pause", lambda _: None)


def _config(tmp_path: Path, url: str) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"baseUrl": url, "banks": {"project": {"bankId": "nh-bank"}},
                                "upload": {"timeoutSeconds": 2.0, "maxAttempts": 2}}))
    return str(path)


def _sessions(tmp_path: Path) -> Path:
    return small_sessions(tmp_path / "sessions", "nh")


def _statuses(state: Path) -> dict[str, str]:
    with Ledger(state) as ledger:
        return dict(ledger.db.execute("SELECT document_id, status FROM documents").fetchall())


@pytest.mark.parametrize("kind", ["404", "html"])
def test_something_else_at_the_url_ends_every_server_command_with_exit_4(
    tmp_path: Path, runner: CliRunner, kind: str
) -> None:
    sessions = _sessions(tmp_path)
    state = tmp_path / "state"
    with fake_hindsight(FakeState()) as good:  # a real upload first: the ledger then has confirmed documents
        done = invoke(runner, "import", str(sessions), "--apply", "--wait", "--config", _config(tmp_path, good),
                      "--state", str(state))
        assert done.exit_code == 0, done.output
    before = _statuses(state)
    assert before and set(before.values()) == {"confirmed"}
    with not_hindsight(kind) as url:
        config = _config(tmp_path, url)
        run_id = json.loads(invoke(runner, "report", "--state", str(state), "--json").stdout)["run_id"]
        for command in (["status", "--server"], ["verify"], ["forget", "--run", run_id, "--confirm"],
                        ["import", str(sessions), "--apply"]):
            result = invoke(runner, *command, "--config", config, "--state", str(state), "--json")
            assert result.exit_code == EXIT_SERVER, (command, result.output)
            message = json.loads(result.stdout)["error"]["message"]
            assert message.startswith("not a Hindsight server at http://user:***@127.0.0.1:"), (command, message)
            assert "hunter2secret" not in result.stdout + result.stderr and "bug" not in message
    assert _statuses(state) == before  # nothing marked missing or forgotten


@pytest.mark.parametrize("kind", ["404", "html"])
def test_a_dry_run_says_the_live_check_could_not_check_and_blames_no_file(
    tmp_path: Path, runner: CliRunner, kind: str
) -> None:
    sessions = _sessions(tmp_path)
    with not_hindsight(kind) as url:
        result = invoke(runner, "import", str(sessions), "--config", _config(tmp_path, url),
                        "--state", str(tmp_path / "state"), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["failed_files_total"] == 0
    assert summary["live_retained"] == {"unchecked": 3}  # never "none": that would double live retains
    assert summary["live_retained_unchecked"].startswith("not a Hindsight server at http://user:***@127.0.0.1:")


@pytest.mark.parametrize(("url", "problem"), [
    ("http://[::1", "not a usable URL"), ("ftp://x", "not ftp://"), ("http://", "with a host"),
    ("http://h:port", "not a usable URL"),
])
def test_an_unusable_base_url_is_a_config_error_naming_where_it_came_from(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, url: str, problem: str
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", url)
    for command in (["status", "--server"], ["verify"], ["import", str(tmp_path)]):
        result = invoke(runner, *command, "--state", str(tmp_path / "state"), "--json")
        assert result.exit_code == 3, (command, result.output)
        message = json.loads(result.stdout)["error"]["message"]
        assert "HINDSIGHT_BASE_URL" in message and "baseUrl" in message and problem in message
    monkeypatch.delenv("HINDSIGHT_BASE_URL")
    config = tmp_path / "bad.json"
    config.write_text(json.dumps({"baseUrl": url}))
    result = invoke(runner, "status", "--server", "--config", str(config), "--json")
    assert result.exit_code == 3 and str(config) in result.stdout and "baseUrl" in result.stdout


def test_the_client_refuses_an_unusable_url_as_a_server_error() -> None:
    for url in ("http://[::1", "ftp://x/"):
        with pytest.raises(BadAnswer, match="cannot use the server URL"):
            HindsightClient(url)


def test_one_attempt_is_said_in_the_singular(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with HindsightClient(f"http://127.0.0.1:{port}", max_attempts=1) as client, \
            pytest.raises(hindsight.UnreachableError, match=r"after 1 attempt \("):
        client.preflight()
