"""What this tool writes is private (0700 folders, 0600 files, whatever the umask), and what it prints or stores
never holds a credential: URL userinfo, the API key, tokens in query strings."""

from __future__ import annotations

import base64
import http.server
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch.base import fsutil
from hindsight_batch.base.masking import mask, remember_secret
from hindsight_batch.ledger import Ledger
from hindsight_batch.sinks.hindsight import HindsightClient, UnreachableError
from tests.conftest import MAIN_SAMPLE, SAMPLES, invoke, serving

PASSWORD = "hunter2-Pw-9f3a"
TOKEN = "tok-7c1e55aa"
API_KEY = "hsk-live-0d9e8c7b6a5f4e3d"
CLOSED = "127.0.0.1:9"  # the discard port: nothing listens, a connection is refused at once


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield int(request.param)
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


# -- private files ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("umask", [0o022, 0o000], indirect=True)
def test_state_folder_ledger_lock_and_manifest_are_private_whatever_the_umask(
    runner: CliRunner, tmp_path: Path, umask: int
) -> None:
    state = tmp_path / "new" / "state"
    manifest = tmp_path / "out.jsonl"
    manifest.write_text("an older manifest, readable by all\n")
    manifest.chmod(0o644)  # overwriting keeps no old mode
    result = invoke(runner, "import", str(SAMPLES), "--manifest", str(manifest), "--include-content",
                    "--state", str(state), "-q")
    assert result.exit_code == 0, result.stderr
    assert "content" in manifest.read_text()
    assert mode(state) == 0o700
    assert {p.name: mode(p) for p in state.iterdir()} == {"ledger.duckdb": 0o600, "ledger.lock": 0o600}
    assert mode(manifest) == 0o600
    assert os.umask(umask) == umask  # the command gave the umask back


@pytest.mark.parametrize("umask", [0o022, 0o000], indirect=True)
def test_the_ledgers_write_ahead_log_is_private_while_it_exists(tmp_path: Path, umask: int) -> None:
    with Ledger(tmp_path / "state") as ledger:
        for n in range(3):  # DuckDB deletes the log at a checkpoint and makes a new one on the next write
            ledger.start_run(f"run-{n}", "import", "dry-run")
            wal = ledger.path.with_name("ledger.duckdb.wal")
            assert wal.exists() and mode(wal) == 0o600
            ledger.db.execute("CHECKPOINT")
    assert os.umask(umask) == umask


def test_a_ledger_an_older_version_left_readable_is_made_private(tmp_path: Path) -> None:
    with Ledger(tmp_path / "state"):
        pass
    (tmp_path / "state" / "ledger.duckdb").chmod(0o644)
    (tmp_path / "state" / "ledger.lock").chmod(0o644)
    with Ledger(tmp_path / "state"):
        pass
    assert mode(tmp_path / "state" / "ledger.duckdb") == mode(tmp_path / "state" / "ledger.lock") == 0o600
    assert mode(tmp_path / "state") == 0o700


def test_an_existing_folder_keeps_its_mode(tmp_path: Path) -> None:
    """``--state .`` must not lock anyone out of their own folder; the files in it are private anyway."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o755)
    with fsutil.open_private(fsutil.private_dir(folder) / "f", "w") as out:
        out.write("x")
    assert mode(folder) == 0o755 and mode(folder / "f") == 0o600


# -- masking ------------------------------------------------------------------------------------------------------

def test_mask_covers_userinfo_query_tokens_and_remembered_keys() -> None:
    remember_secret(API_KEY)
    cases = {
        f"http://alice:{PASSWORD}@host:8888/x": "http://alice:***@host:8888/x",
        f"https://alice:p@ss{PASSWORD}@host/": "https://alice:***@host/",  # "@" inside the password
        "https://ghp_abcdefTOKEN@github.com/o/r": "https://***@github.com/o/r",  # a bare token as user
        f"GET http://h/p?api_key={TOKEN}&page=2&Token={TOKEN}#top": "GET http://h/p?api_key=***&page=2&Token=***#top",
        f'"baseUrl": "http://h/?sig={TOKEN}&key={TOKEN}"': '"baseUrl": "http://h/?sig=***&key=***"',
        f"detail: bad header Bearer {API_KEY}": "detail: bad header Bearer ***",
        "plain http://host:8080/path and me@example.com": "plain http://host:8080/path and me@example.com",
    }
    for text, expected in cases.items():
        assert mask(text) == expected


def credential_env(monkeypatch: pytest.MonkeyPatch, url: str = f"http://alice:{PASSWORD}@{CLOSED}") -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", url)
    monkeypatch.setenv("HINDSIGHT_API_KEY", API_KEY)


def assert_no_credential(*outputs: str) -> None:
    for output in outputs:
        assert PASSWORD not in output and TOKEN not in output and API_KEY not in output, output


@pytest.mark.parametrize("as_json", [False, True])
def test_status_masks_the_url_the_key_and_query_tokens(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    credential_env(monkeypatch, f"http://alice:{PASSWORD}@{CLOSED}/api?token={TOKEN}")
    result = invoke(runner, "status", "--cwd", str(tmp_path), *(["--json"] if as_json else []))
    assert result.exit_code == 0, result.stderr
    assert_no_credential(result.stdout, result.stderr)
    assert f"http://alice:***@{CLOSED}/api?token=***" in result.stdout


@pytest.mark.parametrize("as_json", [False, True])
def test_status_server_against_an_unreachable_url_with_userinfo(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    credential_env(monkeypatch)
    result = invoke(runner, "status", "--server", "--cwd", str(tmp_path), *(["--json"] if as_json else []))
    assert result.exit_code == 4, result.stderr  # an unreachable server is exit 4 (issue 16)
    assert_no_credential(result.stdout, result.stderr)
    assert f"no answer from http://alice:***@{CLOSED}" in (result.stdout if as_json else result.stderr)


@pytest.mark.parametrize("command", [("import", str(MAIN_SAMPLE), "--apply"), ("flush",), ("verify",)])
def test_errors_against_an_unreachable_server_never_show_the_password(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    credential_env(monkeypatch)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"upload": {"maxAttempts": 1}}))
    queue = tmp_path / "proj" / ".pi" / "hindsight" / "retain-queue.jsonl"
    queue.parent.mkdir(parents=True)
    queue.write_text(json.dumps({"id": "j1", "bankId": "b", "documentId": "d", "updateMode": "replace",
                                 "item": {"content": "hello"}}) + "\n")
    extra = [str(tmp_path / "proj")] if command == ("flush",) else ["--state", str(tmp_path / "s")]
    if command == ("verify",):
        invoke(runner, "import", str(MAIN_SAMPLE), "--state", str(tmp_path / "s"), "-q")
        with Ledger(tmp_path / "s") as ledger:  # something to verify, so the server is asked
            ledger.db.execute("INSERT INTO documents (bank_id, document_id, status) VALUES ('b', 'd', 'sent')")
    result = invoke(runner, *command, *extra, "--config", str(config))
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert_no_credential(result.stdout, result.stderr)
    assert f"no answer from http://alice:***@{CLOSED}" in result.stderr


def test_the_client_names_the_server_by_its_masked_url() -> None:
    with HindsightClient(f"http://alice:{PASSWORD}@{CLOSED}", max_attempts=1) as client, \
            pytest.raises(UnreachableError) as raised:
        client.version()
    assert PASSWORD not in str(raised.value) and "alice:***@" in str(raised.value)


class _EchoingHandler(http.server.BaseHTTPRequestHandler):
    """A server that refuses the key and echoes the request's headers in its error detail, as some proxies do."""

    def do_GET(self) -> None:
        body = json.dumps({"detail": f"invalid credentials: {self.headers.get('Authorization')} "
                                     f"for {self.path}"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def echoing_server() -> Iterator[str]:
    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoingHandler)) as port:
        yield f"127.0.0.1:{port}"


def test_a_server_error_that_echoes_the_api_key_is_masked(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, echoing_server: str
) -> None:
    credential_env(monkeypatch, f"http://alice:{PASSWORD}@{echoing_server}")
    result = invoke(runner, "import", str(MAIN_SAMPLE), "--apply", "--state", str(tmp_path / "s"))
    assert result.exit_code == 4 and "refused our credentials (HTTP 401)" in result.stderr
    assert "Bearer ***" in result.stderr  # the key goes as Bearer, whatever userinfo the URL has
    assert_no_credential(result.stdout, result.stderr)
    # Without a key, httpx sends the URL's userinfo as Basic auth: that header is a credential too.
    monkeypatch.delenv("HINDSIGHT_API_KEY")
    status = invoke(runner, "status", "--server", "--json", "--cwd", str(tmp_path))
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert "HTTP 401" in status.stdout and "Basic ***" in status.stdout and basic not in status.stdout
    assert_no_credential(status.stdout, status.stderr)


def test_every_line_the_cli_prints_goes_through_the_masking_helpers(capsys: pytest.CaptureFixture[str]) -> None:
    from hindsight_batch import cli

    cli.echo(f"out http://alice:{PASSWORD}@h/?token={TOKEN}")
    cli.echo_err(f"err http://alice:{PASSWORD}@h/?token={TOKEN}")
    captured = capsys.readouterr()
    assert_no_credential(captured.out, captured.err)
    assert "alice:***@h/?token=***" in captured.out and "alice:***@h/?token=***" in captured.err
    sources = [path.read_text() for path in Path(cli.__file__).parent.glob("*.py")]
    assert len(sources) > 2 and sum(source.count("click.echo(") for source in sources) == 2  # only in echo, echo_err


def test_a_rejected_request_stores_the_servers_detail_masked(tmp_path: Path) -> None:
    """An error detail is kept in the ledger and in a queue's lastError: it is masked before it is stored."""
    import httpx

    from hindsight_batch.sinks.hindsight import RequestRejected

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(422, json={"detail": f"bad item from {request.headers['Authorization']} "
                                                   f"at http://alice:{PASSWORD}@proxy/?sig={TOKEN}"})

    with HindsightClient("http://127.0.0.1:9", API_KEY, transport=httpx.MockTransport(handler),
                         max_attempts=1) as client, pytest.raises(RequestRejected) as raised:
        client.retain("b", [{"content": "x"}], "op")
    assert_no_credential(str(raised.value), raised.value.detail)
    assert "Bearer ***" in raised.value.detail


def test_a_new_private_folder_is_0700_even_under_a_umask_that_takes_owner_bits(tmp_path: Path) -> None:
    old = os.umask(0o277)
    try:
        folder = fsutil.private_dir(tmp_path / "state")
    finally:
        os.umask(old)
    assert mode(folder) == 0o700


def test_a_failed_operations_error_is_stored_masked_in_the_ledger(tmp_path: Path) -> None:
    import httpx

    from hindsight_batch.sinks.upload import operation_id
    from tests.test_upload_errors import ok, row, uploader

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"status": "failed", "error_message":
                                             f"fetch http://alice:{PASSWORD}@kb/?token={TOKEN} failed"})
        return ok(request)

    up, ledger = uploader(tmp_path, handler)
    up.add(row("d"), {"content": "d", "document_id": "d"}, 10)
    up.finish()
    assert up.wait_for_operations(30, sleep=lambda _: None) == 0
    stored = ledger.db.execute("SELECT error FROM documents WHERE document_id = 'd'").fetchone()
    ledger.close()
    assert stored is not None and "alice:***@kb/?token=***" in stored[0]
    assert_no_credential(stored[0], *up.stats.errors)
    assert operation_id("bank", ["h-d"])  # the operation the server was asked about
