"""Delivery against a server that misbehaves (tests/fake_hindsight.py, a real socket on 127.0.0.1): every document
arrives once, except the refused ones, after a bounded number of plain re-runs; crashes at the two dangerous
points of an upload resume to exactly the clean set; preflight and --json error paths."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import Ledger
from hindsight_batch.sinks import hindsight
from tests.conftest import SessionBuilder, invoke
from tests.fake_hindsight import FakeState, fake_hindsight

BANK = "fault-bank"
TURNS = 40
REFUSED_TURNS = (9, 10)
MARKERS = {**{t: "FAULT:refuse" for t in REFUSED_TURNS}, 5: "FAULT:drop", 17: "FAULT:nostore",
           26: "FAULT:drop", 33: "FAULT:nostore"}
# Request number -> fault. The bisecting of the refused batch and the retries shift which request gets which, so
# the exact pairing does not matter; each fault class occurs.
SCHEDULE = {2: "429", 4: "503", 5: "500", 7: "timeout", 9: "reset", 11: "reset-after", 14: "401"}
MAX_RERUNS = 3  # the most plain re-runs needed: one for the 401, one for losses found by it, one to spare


def _session(folder: Path, faults: bool = True) -> Path:
    session = SessionBuilder(cwd="/work/faults", session_id="0196f000-0000-7000-8000-00000000fa17")
    for turn in range(TURNS):
        marker = MARKERS.get(turn, "") if faults else ""
        session.user(f"turn {turn}: we changed the build script of this project to use ninja {marker}".strip())
        session.assistant(f"done with step {turn}; the project build now runs ninja")
    return session.write(folder / "--work-faults--" / "s.jsonl")


def _config(tmp_path: Path, url: str, key: str | None = None) -> Path:
    config = {"baseUrl": url, "import": {"turnsPerChunk": 1}, "banks": {"project": {"bankId": BANK}},
              "upload": {"batchItems": 4, "inFlight": 2, "timeoutSeconds": 2.0, "maxAttempts": 4}}
    if key:
        config["apiKey"] = key
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every wait of the client and the uploader, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(hindsight, "pause", recorded.append)
    return recorded


def _planned(state: Path) -> dict[str, tuple[str, str]]:
    with Ledger(state) as ledger:
        rows = ledger.db.execute("SELECT document_id, content_hash, status FROM documents").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def _figures(fake: FakeState, state: Path) -> dict[str, Any]:
    planned = _planned(state)
    held = fake.held(BANK)
    refused = sorted(d for d, (_, status) in planned.items() if status == "failed")
    delivered = [d for d, (digest, _) in planned.items() if held.get(d) == digest]
    lost = [d for d in planned if d not in refused and d not in delivered]
    return {"planned": len(planned), "delivered": len(delivered), "doubled": fake.doubled, "refused": refused,
            "lost": lost, "statuses": sorted({s for _, s in planned.values()})}


@pytest.mark.parametrize("wait", [False, True], ids=["plain", "wait"])
def test_every_fault_class_ends_with_nothing_lost_nothing_doubled_only_refused_failed(
    tmp_path: Path, runner: CliRunner, sleeps: list[float], wait: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeState(schedule=dict(SCHEDULE))
    sessions = _session(tmp_path / "sessions")
    state = tmp_path / "state"
    with fake_hindsight(fake) as url:
        config = _config(tmp_path, url)
        args = ["import", str(sessions.parent.parent), "--apply", "--config", str(config), "--state", str(state),
                "--json", *(["--wait", "--wait-timeout", "5"] if wait else [])]
        first = invoke(runner, *args)
        assert first.exit_code == 4, first.stderr  # the 401 mid-run ends it; nothing lost, see below
        assert json.loads(first.stdout)["error"]["code"] == 4
        needed = None
        for rerun in range(1, MAX_RERUNS + 1):
            again = invoke(runner, *args)
            assert again.exit_code in (0, 1), again.stderr
            if needed is None and not _figures(fake, state)["lost"]:
                needed = rerun
        figures = _figures(fake, state)
        verified = invoke(runner, "verify", "--config", str(config), "--state", str(state), "--json")
    with capsys.disabled():
        print(f"\nfault server ({'--wait' if wait else 'plain'}): planned {figures['planned']}, delivered "
              f"{figures['delivered']}, doubled {figures['doubled']}, refused {len(figures['refused'])}, "
              f"re-runs needed {needed} of {MAX_RERUNS}; faults injected: {', '.join(fake.injected)}")
    assert sorted(set(fake.injected)) == sorted(set(SCHEDULE.values()))
    assert 7.0 in sleeps, "a 429's Retry-After is what the client waited"
    assert figures["planned"] >= TURNS - 2
    assert needed is not None and figures["lost"] == [] and figures["doubled"] == 0
    assert len(figures["refused"]) == len(REFUSED_TURNS)
    assert figures["delivered"] == figures["planned"] - len(REFUSED_TURNS)
    report = json.loads(verified.stdout)
    assert verified.exit_code == 1 and not report["ok"]  # never ok while a planned document is missing
    assert sorted(m["document_id"] for m in report["missing"]) == figures["refused"]
    with Ledger(state) as ledger:
        errors = [r[0] for r in ledger.db.execute("SELECT error FROM documents WHERE status = 'failed'").fetchall()]
    assert all("content refused by the extraction guard" in e for e in errors) and len(errors) == 2


def test_a_refused_item_is_isolated_in_the_same_run(tmp_path: Path, runner: CliRunner, sleeps: list[float]) -> None:
    """Per-item isolation: one refused item costs only itself, in the very first run."""
    fake = FakeState()
    sessions = _session(tmp_path / "sessions")
    with fake_hindsight(fake) as url:
        config = _config(tmp_path, url)
        text = sessions.read_text().replace("FAULT:drop", "").replace("FAULT:nostore", "")
        sessions.write_text(text)
        result = invoke(runner, "import", str(sessions), "--apply", "--config", str(config), "--state",
                        str(tmp_path / "state"), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    figures = _figures(fake, tmp_path / "state")
    assert data["upload"]["failed"] == len(REFUSED_TURNS) == len(figures["refused"])
    assert figures["delivered"] == figures["planned"] - len(REFUSED_TURNS) and figures["doubled"] == 0
    assert any("content refused by the extraction guard" in e for e in data["upload"]["errors"])


def test_429_waits_for_its_retry_after(tmp_path: Path, runner: CliRunner, sleeps: list[float]) -> None:
    fake = FakeState(schedule={1: "429"}, retry_after="9")
    sessions = _session(tmp_path / "sessions", faults=False)
    with fake_hindsight(fake) as url:
        result = invoke(runner, "import", str(sessions), "--apply", "--config", str(_config(tmp_path, url)),
                        "--state", str(tmp_path / "state"))
    assert result.exit_code == 0, result.stderr
    assert sleeps.count(9.0) == 1 and fake.injected == ["429"]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hindsight_batch", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("point", ["pending", "sent"])
def test_a_crash_at_each_point_of_a_request_resumes_to_exactly_the_clean_set(tmp_path: Path, point: str) -> None:
    """SIGKILL right after documents are recorded ``pending`` (nothing sent) and right after the server accepted
    them (before they are recorded ``sent``); a plain re-run then delivers exactly the clean set, nothing twice."""
    sessions = _session(tmp_path / "sessions", faults=False)
    clean, crashed = FakeState(), FakeState(processing_polls=1)  # the crashed run's request is still in work
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with fake_hindsight(clean) as url:
        done = _run(["import", str(sessions), "--apply", "--config", str(_config(tmp_path, url)), "--state",
                     str(tmp_path / "clean")], env)
        assert done.returncode == 0, done.stderr
    with fake_hindsight(crashed) as url:
        args = ["import", str(sessions), "--apply", "--config", str(_config(tmp_path, url)), "--state",
                str(tmp_path / "crashed")]
        killed = _run(args, {**env, "HINDSIGHT_BATCH_CRASH_AT": point})
        assert killed.returncode == -signal.SIGKILL
        statuses = {s for _, s in _planned(tmp_path / "crashed").values()}
        assert statuses == {"pending"}
        assert (crashed.stores > 0) == (point == "sent")
        # The re-run batches differently (so its requests get other operation ids): only the ledger and the
        # server's answer about the crashed run's operation keep the accepted documents from going out twice.
        config = json.loads(Path(args[4]).read_text())
        config["upload"]["batchItems"] = 3
        Path(args[4]).write_text(json.dumps(config))
        resumed = _run(args, env)
        assert resumed.returncode == 0, resumed.stderr
    assert crashed.held(BANK) == clean.held(BANK) and len(clean.held(BANK)) >= TURNS - 2
    assert crashed.doubled == 0


def test_preflight_refuses_a_wrong_key_even_with_nothing_to_send(tmp_path: Path, runner: CliRunner,
                                                                  sleeps: list[float]) -> None:
    fake = FakeState(api_key="right-key-0123456789")
    empty = tmp_path / "empty"
    empty.mkdir()
    with fake_hindsight(fake) as url:
        config = _config(tmp_path, url, key="wrong-key-9876543210")
        # verify has something to check only once a run is in the ledger (with none it says so, offline, exit 2)
        assert invoke(runner, "import", str(empty), "--config", str(config), "--state", str(tmp_path / "state"),
                      "--quiet").exit_code == 0
        commands = [["import", str(empty), "--apply"], ["verify"], ["status", "--server"], ["forget", "--run", "x"]]
        for command in commands:
            result = invoke(runner, *command, "--config", str(config), "--state", str(tmp_path / "state"), "--json")
            assert result.exit_code == 4, (command, result.output)
            error = json.loads(result.stdout)["error"]  # exactly one JSON object on stdout
            assert error["code"] == 4 and "refused our credentials" in error["message"]
            assert "wrong-key" not in result.stdout + result.stderr
        good = _config(tmp_path, url, key="right-key-0123456789")
        status = invoke(runner, "status", "--server", "--config", str(good), "--json")
        assert status.exit_code == 0 and "credentials accepted" in json.loads(status.stdout)["server"]
        assert "right-key" not in status.stdout + status.stderr


def test_preflight_names_an_unreachable_server_without_its_password(tmp_path: Path, runner: CliRunner,
                                                                     sleeps: list[float]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once closed
    config = _config(tmp_path, f"http://user:hunter2secret@127.0.0.1:{port}")
    empty = tmp_path / "empty"
    empty.mkdir()
    # a dry run puts a run in the ledger, so verify goes on to ask the server
    assert invoke(runner, "import", str(empty), "--config", str(config), "--state", str(tmp_path / "state"),
                  "--quiet").exit_code == 0
    for command in (["status", "--server"], ["verify"], ["import", str(tmp_path), "--apply"]):
        result = invoke(runner, *command, "--config", str(config), "--state", str(tmp_path / "state"), "--json")
        assert result.exit_code == 4, (command, result.output)
        assert "no answer from http://user:***@127.0.0.1" in json.loads(result.stdout)["error"]["message"]
        assert "hunter2secret" not in result.stdout + result.stderr


def test_the_same_file_by_another_spelling_is_the_same_source(
    tmp_path: Path, runner: CliRunner, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """S4: relative, absolute and symlinked paths to one file: one source; the later runs send nothing."""
    fake = FakeState()
    sessions = _session(tmp_path / "sessions", faults=False)
    link = tmp_path / "elsewhere" / "link.jsonl"
    link.parent.mkdir()
    link.symlink_to(sessions)
    monkeypatch.chdir(sessions.parent)
    state = str(tmp_path / "state")
    with fake_hindsight(fake) as url:
        config = str(_config(tmp_path, url))
        for spelling in ("s.jsonl", str(sessions), str(link), "../--work-faults--/./s.jsonl"):
            before = fake.retain_requests
            result = invoke(runner, "import", spelling, "--apply", "--config", config, "--state", state, "--json")
            assert result.exit_code == 0, result.stderr
            if spelling != "s.jsonl":
                assert fake.retain_requests == before, f"{spelling} was sent again"
                assert json.loads(result.stdout)["unchanged_files"] == 1
    with Ledger(Path(state)) as ledger:
        sources = [r[0] for r in ledger.db.execute("SELECT path FROM sources").fetchall()]
    assert sources == [str(sessions.resolve())]
    assert fake.doubled == 0 and len(fake.held(BANK)) >= TURNS - 2


def test_a_ledger_that_recorded_a_relative_spelling_still_owns_its_session(
    tmp_path: Path, runner: CliRunner, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source row written by an older version under a relative path is the same file, not a duplicate."""
    fake = FakeState()
    sessions = _session(tmp_path / "sessions", faults=False)
    monkeypatch.chdir(sessions.parent)
    state = str(tmp_path / "state")
    with fake_hindsight(fake) as url:
        config = str(_config(tmp_path, url))
        assert invoke(runner, "import", "s.jsonl", "--apply", "--config", config, "--state", state).exit_code == 0
        with Ledger(Path(state)) as ledger:
            ledger.db.execute("UPDATE sources SET path = '../--work-faults--/s.jsonl'")
        before = fake.retain_requests
        result = invoke(runner, "import", "s.jsonl", "--apply", "--config", config, "--state", state, "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["duplicate_sessions"] == [] and data["sessions"] == 1
    assert fake.retain_requests == before


def test_a_server_that_keeps_failing_a_read_ends_verify_with_exit_4_and_one_json_object(
    tmp_path: Path, runner: CliRunner, sleeps: list[float]
) -> None:
    fake = FakeState()
    sessions = _session(tmp_path / "sessions", faults=False)
    state = str(tmp_path / "state")
    with fake_hindsight(fake) as url:
        config = str(_config(tmp_path, url))
        assert invoke(runner, "import", str(sessions), "--apply", "--config", config, "--state", state).exit_code == 0
        fake.broken_reads = True
        result = invoke(runner, "verify", "--config", config, "--state", state, "--json")
    assert result.exit_code == 4
    assert json.loads(result.stdout)["error"]["message"] == "HTTP 500: database is down"


def test_status_masks_a_password_in_the_server_url(tmp_path: Path, runner: CliRunner) -> None:
    config = _config(tmp_path, "https://user:hunter2secret@hindsight.example:8443/base")
    result = invoke(runner, "status", "--config", str(config), "--json")
    assert result.exit_code == 0 and "hunter2secret" not in result.stdout
    settings = {row["key"]: row["value"] for row in json.loads(result.stdout)["settings"]}
    assert settings["baseUrl"] == "https://user:***@hindsight.example:8443/base"
