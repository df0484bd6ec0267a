"""Uploads against the real Hindsight server (S4, S5): apply, re-run, kill and resume, auth, banks, verify."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import Ledger
from hindsight_batch.sinks.hindsight import HindsightClient
from tests.conftest import REAL_SAMPLES, SAMPLES, SessionBuilder, invoke, read_manifest
from tests.server import Server
from tests.test_import_cli import routed_session

pytestmark = pytest.mark.timeout(900)


def bank_env(monkeypatch: pytest.MonkeyPatch, server: Server, bank: str | None = None) -> str:
    bank = bank or f"t-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("HINDSIGHT_BASE_URL", server.url)
    monkeypatch.setenv("HINDSIGHT_BANK_ID", bank)
    return bank


def server_documents(client: HindsightClient, bank: str) -> dict[str, dict[str, Any]]:
    return {doc["id"]: doc for doc in client.documents(bank)}


def apply(runner: CliRunner, tmp_path: Path, *args: str) -> dict[str, Any]:
    result = invoke(runner, "import", str(SAMPLES), "--apply", "--state", str(tmp_path / "state"), "--json", "-q",
                    *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.output)


def test_apply_uploads_the_samples_and_a_rerun_writes_nothing(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = bank_env(monkeypatch, hindsight_server)
    summary = apply(runner, tmp_path, "--wait", "--manifest", str(tmp_path / "m.jsonl"), "--include-content")
    assert summary["upload"]["documents"] == {"confirmed": 9} and summary["upload"]["failed"] == 0
    rows = [r for r in read_manifest(tmp_path / "m.jsonl") if r["document_id"]]
    with hindsight_server.client() as client:
        docs = server_documents(client, bank)
        assert set(docs) == {r["document_id"] for r in rows}
        for row in rows:
            doc = docs[row["document_id"]]
            assert doc["content_hash"] == hashlib.sha256(row["content"].encode()).hexdigest()
            assert sorted(doc["tags"]) == sorted(row["tags"])
            assert doc["document_metadata"]["content_hash"] == row["content_sha256"]
        secrets = (SAMPLES / "seeded-secrets.txt").read_text().split()
        for doc in docs.values():
            full = client.request("GET", f"/v1/default/banks/{bank}/documents/{doc['id']}").json()
            assert not any(secret in full["original_text"] for secret in secrets)
            assert "RECALLED-MEMORY" not in full["original_text"] and "HINDSIGHT-TOOL" not in full["original_text"]
        before = {d: docs[d]["updated_at"] for d in docs}
        again = apply(runner, tmp_path)
        assert again["upload"]["requests"] == 0 and again["statuses"] == {"unchanged": 9}
        assert {d: doc["updated_at"] for d, doc in server_documents(client, bank).items()} == before
    verified = invoke(runner, "verify", "--state", str(tmp_path / "state"))
    assert verified.exit_code == 0 and "verify: OK" in verified.output


def _signature(client: HindsightClient, bank: str) -> dict[str, tuple[str, tuple[str, ...], str]]:
    return {
        doc_id: (doc["content_hash"], tuple(sorted(doc["tags"])), json.dumps(doc["document_metadata"], sort_keys=True))
        for doc_id, doc in server_documents(client, bank).items()
    }


def _run_cli(
    tmp_path: Path, server: Server, bank: str, state: Path, config: Path, *args: str
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HINDSIGHT_BASE_URL": server.url, "HINDSIGHT_BANK_ID": bank, "HOME": str(tmp_path / "home")}
    return subprocess.Popen(
        [sys.executable, "-m", "hindsight_batch", "import", str(SAMPLES), str(REAL_SAMPLES), "--apply", "--wait",
         "--state", str(state), "--config", str(config), "-q", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def _processes_using(state: Path, within: float) -> list[int]:
    """Processes whose command line names ``state`` (forked workers keep their parent's), after up to
    ``within`` seconds for them to end."""
    deadline = time.monotonic() + within
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and str(state).encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def test_a_run_killed_at_any_point_and_resumed_ends_like_a_clean_run(
    tmp_path: Path, hindsight_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """S5: SIGKILL at several points (before, early in and late in the upload), then resume. The killed runs plan
    in worker processes (``--jobs 2``), which must not outlive them."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"upload": {"batchItems": 1, "inFlight": 1}}))
    clean_bank, killed_bank = f"clean-{uuid.uuid4().hex[:8]}", f"killed-{uuid.uuid4().hex[:8]}"
    assert _run_cli(tmp_path, hindsight_server, clean_bank, tmp_path / "clean", config).wait(600) == 0
    state = tmp_path / "killed"
    interrupted = 0
    with hindsight_server.client() as client:
        expected = _signature(client, clean_bank)
        assert len(expected) >= 20
        for threshold in (0, 3, 10, len(expected) - 4):
            process = _run_cli(tmp_path, hindsight_server, killed_bank, state, config, "--jobs", "2")
            deadline = time.monotonic() + 300
            while process.poll() is None and time.monotonic() < deadline:
                if threshold == 0 or len(server_documents(client, killed_bank)) >= threshold:
                    process.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.02)
            code = process.wait(60)
            if code == -signal.SIGKILL:
                interrupted += 1
        assert interrupted >= 3, "the kills must land while the run is working"
        assert _processes_using(state, within=10.0) == [], "a worker outlived its killed import"
        assert _run_cli(tmp_path, hindsight_server, killed_bank, state, config).wait(600) == 0
        assert _signature(client, killed_bank) == expected
    with Ledger(state) as ledger:
        statuses = dict(ledger.db.execute("SELECT status, count(*) FROM documents GROUP BY 1").fetchall())
    assert statuses == {"confirmed": len(expected)}
    env = {**os.environ, "HINDSIGHT_BASE_URL": hindsight_server.url, "HOME": str(tmp_path / "home")}
    verified = subprocess.run([sys.executable, "-m", "hindsight_batch", "verify", "--state", str(state)],
                              env=env, capture_output=True, text=True, timeout=120)
    with capsys.disabled():
        print(f"\nkill-and-resume verify: {verified.stdout.strip()}")
    assert verified.returncode == 0 and "verify: OK" in verified.stdout


def test_auth_on_requires_the_key_and_never_prints_it(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server_with_auth: Server
) -> None:
    server = hindsight_server_with_auth
    bank = bank_env(monkeypatch, server)
    denied = invoke(runner, "import", str(SAMPLES), "--apply", "--state", str(tmp_path / "s1"))
    assert denied.exit_code == 4 and "refused our credentials" in denied.stderr
    monkeypatch.setenv("HINDSIGHT_API_KEY", "wrong-key-0123456789")
    wrong = invoke(runner, "import", str(SAMPLES), "--apply", "--state", str(tmp_path / "s2"))
    assert wrong.exit_code == 4 and "wrong-key-0123456789" not in wrong.stderr + wrong.output
    assert server.api_key is not None
    monkeypatch.setenv("HINDSIGHT_API_KEY", server.api_key)
    ok = invoke(runner, "import", str(SAMPLES), "--apply", "--wait", "--state", str(tmp_path / "s3"))
    assert ok.exit_code == 0 and server.api_key not in ok.stderr + ok.output
    with server.client() as client:
        assert len(server_documents(client, bank)) == 9
    with Ledger(tmp_path / "s3") as ledger:
        dump = json.dumps(ledger.db.execute("SELECT * FROM documents").fetchall(), default=str)
        dump += json.dumps(ledger.db.execute("SELECT * FROM runs").fetchall(), default=str)
    assert server.api_key not in dump


def test_auth_off_server_takes_requests_without_a_key(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = bank_env(monkeypatch, hindsight_server)
    monkeypatch.delenv("HINDSIGHT_API_KEY", raising=False)
    result = invoke(runner, "import", str(SAMPLES / "real"), "--apply", "--wait", "--state", str(tmp_path / "s"))
    assert result.exit_code == 0
    with hindsight_server.client() as client:
        assert len(server_documents(client, bank)) == 5


def test_router_mode_writes_both_banks(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    monkeypatch.setenv("HINDSIGHT_BASE_URL", hindsight_server.url)
    path = routed_session(tmp_path, "router")
    suffix = uuid.uuid4().hex[:8]
    home_config = tmp_path / "home" / ".hindsight" / "config.json"
    config = json.loads(home_config.read_text())
    config["banks"] = {"project": {"bankId": f"proj-{suffix}"}, "user": {"bankId": f"user-{suffix}", "enabled": True}}
    home_config.write_text(json.dumps(config))
    result = invoke(runner, "import", str(path), "--apply", "--wait", "--state", str(tmp_path / "s"))
    assert result.exit_code == 0, result.stderr
    with hindsight_server.client() as client:
        user = server_documents(client, f"user-{suffix}")
        project = server_documents(client, f"proj-{suffix}")
    assert sorted(user) == ["pi-import:routed:global:main:w0000", "pi-import:routed:global:main:w0001"]
    assert sorted(project) == [f"pi-import:routed:project:main:w000{i}" for i in (1, 3, 4)]
    assert user["pi-import:routed:global:main:w0001"]["document_metadata"]["other_document_id"] == \
        "pi-import:routed:project:main:w0001"
    assert "ghp_" not in json.dumps(user)


def test_verify_catches_a_deleted_and_a_modified_document(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = bank_env(monkeypatch, hindsight_server)
    apply(runner, tmp_path, "--wait")
    with hindsight_server.client() as client:
        ids = sorted(server_documents(client, bank))
        assert client.delete_document(bank, ids[0])
        client.retain(bank, [{"content": "tampered", "document_id": ids[1], "tags": ["x"]}], str(uuid.uuid4()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server_documents(client, bank)[ids[1]]["tags"] != ["x"]:
            time.sleep(0.2)
        client.retain(bank, [{"content": "stranger", "document_id": "pi-import:nobody:project:main:w0000"}],
                      str(uuid.uuid4()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "pi-import:nobody:project:main:w0000" not in server_documents(client,
                                                                                                              bank):
            time.sleep(0.2)
    result = invoke(runner, "verify", "--state", str(tmp_path / "state"), "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert [m["document_id"] for m in report["missing"]] == [ids[0]]
    assert [(m["document_id"], m["fields"]) for m in report["mismatched"]] == [
        (ids[1], ["content_hash", "tags", "metadata"])]
    assert [e["document_id"] for e in report["extra"]] == ["pi-import:nobody:project:main:w0000"]
    assert all(m["ledger_status"] == "confirmed" for m in report["missing"])
    with hindsight_server.client() as client:  # a plain re-run sends the missing and the changed one back
        assert client.delete_document(bank, "pi-import:nobody:project:main:w0000")
    again = apply(runner, tmp_path, "--wait")
    assert again["upload"]["documents"] == {"confirmed": 2}
    verified = invoke(runner, "verify", "--state", str(tmp_path / "state"))
    assert verified.exit_code == 0 and "verify: OK" in verified.output


def _long_session(tmp_path: Path, turns: int, session_id: str = "stale-1", cwd: str = "/work/stale") -> Path:
    session = SessionBuilder(cwd=cwd, session_id=session_id)
    for turn in range(turns):
        session.user(f"turn {turn}: we switched the project build to ninja and cached the toolchain")
        session.assistant(f"step {turn} done; the project build uses ninja now")
    return session.write(tmp_path / "sessions" / f"{session_id}.jsonl")


def _geometry(tmp_path: Path, turns_per_chunk: int) -> str:
    config = tmp_path / f"geometry-{turns_per_chunk}.json"
    config.write_text(json.dumps({"import": {"turnsPerChunk": turns_per_chunk}}))
    return str(config)


def test_stale_windows_are_listed_by_verify_and_removed_by_delete_stale(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = bank_env(monkeypatch, hindsight_server)
    session = _long_session(tmp_path, 6)
    state = str(tmp_path / "state")
    first = invoke(runner, "import", str(session), "--apply", "--wait", "--state", state, "--json",
                   "--config", _geometry(tmp_path, 1))
    assert first.exit_code == 0 and json.loads(first.stdout)["upload"]["documents"] == {"confirmed": 6}
    second = invoke(runner, "import", str(session), "--apply", "--wait", "--state", state, "--json",
                    "--config", _geometry(tmp_path, 3))  # the windows shrink to two
    assert second.exit_code == 0 and json.loads(second.stdout)["upload"]["documents"] == {"confirmed": 2}
    stale = [f"pi-import:stale-1:project:main:w{i:04d}" for i in range(2, 6)]
    verified = invoke(runner, "verify", "--state", state, "--json")
    assert verified.exit_code == 1
    assert sorted(d["document_id"] for d in json.loads(verified.stdout)["stale"]) == stale
    preview = invoke(runner, "import", str(session), "--delete-stale", "--state", state, "--json",
                     "--config", _geometry(tmp_path, 3))
    assert sorted(d["document_id"] for d in json.loads(preview.stdout)["stale"]["documents"]) == stale
    with hindsight_server.client() as client:
        assert len(server_documents(client, bank)) == 6  # a preview deletes nothing
        deleted = invoke(runner, "import", str(session), "--apply", "--delete-stale", "--state", state, "--json",
                         "--config", _geometry(tmp_path, 3))
        assert deleted.exit_code == 0 and json.loads(deleted.stdout)["stale"]["deleted"] == 4
        assert sorted(server_documents(client, bank)) == [f"pi-import:stale-1:project:main:w000{i}" for i in (0, 1)]
    verified = invoke(runner, "verify", "--state", state)
    assert verified.exit_code == 0 and "verify: OK" in verified.stdout


def test_forget_deletes_what_one_run_wrote_and_keeps_what_another_run_also_wrote(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    bank = bank_env(monkeypatch, hindsight_server)
    state = str(tmp_path / "state")
    session = _long_session(tmp_path, 3, "forget-1")
    geometry = _geometry(tmp_path, 1)
    first = invoke(runner, "import", str(session), "--apply", "--wait", "--state", state, "--json",
                   "--config", geometry)
    run_a = json.loads(first.stdout)["run_id"]
    session = _long_session(tmp_path, 4, "forget-1")  # a fourth turn: a new window, the others unchanged
    other = _long_session(tmp_path, 1, "forget-2", cwd="/work/other")
    second = invoke(runner, "import", str(session), str(other), "--apply", "--wait", "--state", state, "--json",
                    "--config", geometry)
    assert json.loads(second.stdout)["upload"]["documents"] == {"confirmed": 2}
    # run A's last window is written again by a third run (its content changed and changed back)
    doc_a2 = "pi-import:forget-1:project:main:w0002"
    with Ledger(Path(state)) as ledger:
        ledger.db.execute("INSERT INTO deliveries VALUES ('later-run', ?, ?, 'h', now())", [bank, doc_a2])
    with hindsight_server.client() as client:
        before = sorted(server_documents(client, bank))
        preview = invoke(runner, "forget", "--run", run_a, "--state", state, "--json")
        assert preview.exit_code == 0
        actions = {d["document_id"]: d["action"] for d in json.loads(preview.stdout)["documents"]}
        assert actions == {"pi-import:forget-1:project:main:w0000": "would-delete",
                           "pi-import:forget-1:project:main:w0001": "would-delete", doc_a2: "kept-shared"}
        assert sorted(server_documents(client, bank)) == before
        done = invoke(runner, "forget", "--run", run_a, "--confirm", "--state", state)
        assert done.exit_code == 0 and "deleted 2" in done.stdout and "kept-shared 1" in done.stdout
        assert sorted(server_documents(client, bank)) == sorted([doc_a2, "pi-import:forget-1:project:main:w0003",
                                                                 "pi-import:forget-2:project:main:w0000"])
        forced = invoke(runner, "forget", "--run", run_a, "--confirm", "--force", "--state", state)
        assert forced.exit_code == 0 and doc_a2 not in server_documents(client, bank)
    report = invoke(runner, "report", "--run", run_a, "--state", state, "--json")
    assert json.loads(report.stdout)["forgotten"] == {"already-gone": 2, "deleted": 3, "kept-shared": 1}
    shown = invoke(runner, "report", "--run", run_a, "--state", state)
    assert "forgotten: already-gone 2, deleted 3, kept-shared 1" in shown.stdout


def test_a_forgotten_run_imported_again_is_on_the_server_again(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    """The resend after forget is a new request: the server must not take it for a retry of the first one."""
    bank = bank_env(monkeypatch, hindsight_server)
    state = str(tmp_path / "state")
    session = str(_long_session(tmp_path, 1, "again-1"))
    first = invoke(runner, "import", session, "--apply", "--wait", "--state", state, "--json")
    assert first.exit_code == 0, first.stderr
    doc = "pi-import:again-1:project:main:w0000"
    forgot = invoke(runner, "forget", "--run", json.loads(first.stdout)["run_id"], "--confirm", "--state", state)
    assert forgot.exit_code == 0 and "deleted 1" in forgot.stdout
    with hindsight_server.client() as client:
        assert doc not in server_documents(client, bank)
        again = invoke(runner, "import", session, "--apply", "--wait", "--state", state, "--json")
        assert again.exit_code == 0, again.stderr
        assert json.loads(again.stdout)["upload"]["documents"] == {"confirmed": 1}
        assert doc in server_documents(client, bank)
    checked = invoke(runner, "verify", "--state", state)
    assert checked.exit_code == 0 and "verify: OK" in checked.stdout


def test_server_script_stop_drops_the_data(tmp_path: Path) -> None:
    """A stopped instance started again with the same state folder serves no old bank."""
    from tests.server import _start, _stop

    state = tmp_path / "server-state"
    bank = "dropped-on-stop"
    try:
        server = _start(state, None)
        with server.client() as client:
            client.retain(bank, [{"content": "kept only until stop", "document_id": "d1"}], str(uuid.uuid4()))
            banks = client.request("GET", "/v1/default/banks").json()["banks"]
            assert bank in [b["bank_id"] for b in banks]
        _stop(state)
        assert not (state / "state.json").exists()
        server = _start(state, None)
        with server.client() as client:
            banks = client.request("GET", "/v1/default/banks").json()["banks"]
            assert bank not in [b["bank_id"] for b in banks]
    finally:
        _stop(state)


def test_server_script_install_waits_for_another_runs_install(tmp_path: Path) -> None:
    """Several test runs share the server install: one waits on the lock while another installs."""
    import fcntl
    import runpy

    from tests.server import SCRIPT

    home = tmp_path / "server-home"
    (home / "venv" / "bin").mkdir(parents=True)
    (home / "venv" / "bin" / "hindsight-api").touch()
    (home / "installed.json").write_text(json.dumps(runpy.run_path(str(SCRIPT))["PINS"]))
    env = {**os.environ, "HINDSIGHT_SERVER_HOME": str(home)}
    with (home / "install.lock").open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another run is installing
        waiting = subprocess.Popen([sys.executable, str(SCRIPT), "install"], env=env, stdout=subprocess.PIPE)
        with pytest.raises(subprocess.TimeoutExpired):
            waiting.wait(1.0)
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    out, _ = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and out.decode().strip() == str(home / "venv")
