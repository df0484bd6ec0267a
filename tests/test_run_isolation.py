"""One bad file never stops an import; no traceback reaches the user; bad output paths are one clear line.

The failures are injected at seams in modules that stay interpreted in the compiled build (``importer``,
``workers``): the names those modules imported are replaced, never a compiled function itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from hindsight_batch.errors import EXIT_CONFIG, EXIT_INTERNAL, ConfigError
from hindsight_batch.importing import importer, selection, workers
from hindsight_batch.ledger import core as ledger_module
from hindsight_batch.plan.rows import ManifestRow
from tests.conftest import REPO, SessionBuilder, invoke, read_manifest

SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


def sessions(folder: Path, count: int, prefix: str = "s") -> list[Path]:
    paths = []
    for n in range(count):
        b = SessionBuilder(cwd="/work/demo", session_id=f"{prefix}-{n}")
        b.user(f"question number {n} about the build")
        b.assistant(f"answer number {n}: run make")
        paths.append(b.write(folder / f"{prefix}{n}.jsonl"))
    return paths


def damaged_files(folder: Path) -> dict[str, Path]:
    """Real damaged files: not a session at all, a version this tool does not read, a header that is garbage."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"note": folder / "note.jsonl", "v9": folder / "v9.jsonl", "garbage": folder / "garbage.jsonl"}
    files["note"].write_text('{"type":"note","text":"not a session"}\n')
    files["v9"].write_text('{"type":"session","id":"x","version":9}\n')
    files["garbage"].write_text("\x00\x01 not json\n{broken\n")
    return files


def ledger_rows(state: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(state / "ledger.duckdb"), read_only=True) as db:
        return db.execute(sql).fetchall()


def fail_for(names: set[str], original: Any, exc: BaseException) -> Any:
    def wrapped(path: Path, *args: Any, **kwargs: Any) -> Any:
        if path.name in names:
            raise exc
        return original(path, *args, **kwargs)

    return wrapped


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_every_kind_of_file_failure_is_listed_and_the_other_files_are_imported(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    folder = tmp_path / "sessions"
    good = sessions(folder, 3)
    damaged_files(folder)
    sessions_unreadable = sessions(tmp_path / "more", 2, prefix="other")
    unreadable, crashing = sessions_unreadable
    # Unreadable at the header peek (tests run as root, who can read a 0000 file: the error is injected).
    monkeypatch.setattr(selection, "peek_header", fail_for({unreadable.name}, selection.peek_header,
                                                          PermissionError(13, "Permission denied")))
    # Planning fails inside the planner (here or in a worker process), quoting a secret it choked on.
    error = ValueError(f"cannot handle token {SECRET} in entry")
    monkeypatch.setattr(importer, "plan_session", fail_for({crashing.name}, importer.plan_session, error))
    monkeypatch.setattr(workers, "plan_session", fail_for({crashing.name}, workers.plan_session, error))
    manifest, state = tmp_path / "m.jsonl", tmp_path / "state"
    args = ["import", str(folder), str(unreadable), str(crashing), "--manifest", str(manifest), "--state",
            str(state), "--jobs", jobs]

    result = invoke(runner, *args, "--json")

    assert result.exit_code == 1, result.stderr
    summary = json.loads(result.output)
    failed = {Path(f["file"]).name: f for f in summary["failed_files"]}
    assert set(failed) == {"note.jsonl", "v9.jsonl", "garbage.jsonl", unreadable.name, crashing.name}
    assert summary["failed_files_total"] == 5
    assert failed[unreadable.name]["reason"] == "Permission denied"
    assert "not a Pi session header" in failed["note.jsonl"]["reason"]
    assert "unsupported session version 9" in failed["v9.jsonl"]["reason"]
    assert failed["garbage.jsonl"]["reason"] == "no readable session header"
    assert failed[crashing.name]["reason"].startswith("ValueError: cannot handle token [REDACTED:")
    assert SECRET not in result.output + result.stderr and "Traceback" not in result.stderr
    # The good files went through, in the manifest and as read sources; the failed ones are tried next run.
    assert {Path(r["source_file"]).name for r in read_manifest(manifest)} == {p.name for p in good}
    sources = {Path(r[0]).name for r in ledger_rows(state, "SELECT path FROM sources")}
    assert sources == {p.name for p in good}
    recorded = ledger_rows(state, "SELECT path, line, reason FROM failed_files")
    assert {Path(r[0]).name for r in recorded} == set(failed) and SECRET not in repr(recorded)
    assert ledger_rows(state, "SELECT status FROM runs") == [("partial",)]
    # The human summary says the same, one line per file.
    human = invoke(runner, *args)
    assert human.exit_code == 1
    assert "FAILED FILES 5" in human.stderr and f"failed: {unreadable}: Permission denied" in human.stderr
    assert "Traceback" not in human.stderr and SECRET not in human.stderr
    report = invoke(runner, "report", "--state", str(state))
    assert report.exit_code == 0 and "partial" in report.output
    assert f"failed file: {unreadable}: Permission denied" in report.output


def test_a_worker_process_that_dies_fails_its_file_only(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    good = sessions(folder, 6)
    killer = good[2]

    def die(path: Path, *args: Any, **kwargs: Any) -> Any:
        if path == killer:
            os._exit(9)  # as a crash in C code or the OOM killer would end it
        return original(path, *args, **kwargs)

    original = workers.plan_session
    monkeypatch.setattr(workers, "plan_session", die)
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(folder), "--jobs", "3", "--manifest", str(manifest), "--json")
    assert result.exit_code == 1, result.stderr
    summary = json.loads(result.output)
    assert [f["file"] for f in summary["failed_files"]] == [str(killer)]
    assert "worker process" in summary["failed_files"][0]["reason"]
    imported = {Path(r["source_file"]) for r in read_manifest(manifest)}
    assert imported == set(good) - {killer}


class _NotRebuilt(Exception):
    """An exception that pickle cannot rebuild from its message, as many libraries' are: it used to break the
    whole worker pool when a worker sent it to the parent."""

    def __init__(self, what: str, line: int) -> None:
        super().__init__(f"{what} at line {line}")


def test_an_error_pickle_cannot_carry_from_a_worker_fails_its_file_only(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = sessions(tmp_path / "sessions", 5)
    odd = good[1]
    monkeypatch.setattr(workers, "plan_session", fail_for({odd.name}, workers.plan_session,
                                                          _NotRebuilt(f"cannot handle {SECRET}", 7)))
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "2", "--manifest", str(manifest),
                    "--state", str(tmp_path / "state"), "--json")
    assert result.exit_code == 1, result.stderr
    failed = json.loads(result.output)["failed_files"]
    assert [(f["file"], f["reason"][:36]) for f in failed] == [(str(odd), "_NotRebuilt: cannot handle [REDACTED")]
    assert failed[0]["reason"].endswith("at line 7") and SECRET not in result.output + result.stderr
    assert {Path(r["source_file"]) for r in read_manifest(manifest)} == set(good) - {odd}


def test_a_configuration_error_met_in_a_worker_stops_the_run_with_exit_3(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in one process (S8): a bad configuration found while planning ends the run, naming the file and key,
    and nothing is recorded as read."""
    good = sessions(tmp_path / "sessions", 5)
    problem = ConfigError("/work/demo/.pi/hindsight.json", "toolFilter.exclude", "not a list of tool names")
    monkeypatch.setattr(workers, "plan_session", fail_for({good[3].name}, workers.plan_session, problem))
    state = tmp_path / "state"
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "2", "--state", str(state))
    assert result.exit_code == EXIT_CONFIG, result.stderr
    assert "/work/demo/.pi/hindsight.json: toolFilter.exclude: not a list of tool names" in result.stderr
    assert "Traceback" not in result.stderr
    assert ledger_rows(state, "SELECT status FROM runs") == [("failed",)]
    assert ledger_rows(state, "SELECT count(*) FROM sources") == [(0,)]


def test_an_empty_file_is_not_a_failure(runner: CliRunner, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 1)
    (folder / "empty.jsonl").write_bytes(b"")  # pi has created it and written nothing yet
    result = invoke(runner, "import", str(folder), "--json")
    assert result.exit_code == 0
    summary = json.loads(result.output)
    assert summary["failed_files"] == [] and [Path(n["file"]).name for n in summary["not_sessions"]] == ["empty.jsonl"]


def test_an_unexpected_error_is_one_line_and_exit_70_and_debug_shows_the_traceback(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions(tmp_path / "s", 1)

    def broken(self: Any) -> Any:
        raise KeyError(f"Bearer {SECRET}")

    monkeypatch.setattr(importer.Importer, "run", broken)
    result = invoke(runner, "import", str(tmp_path / "s"))
    assert result.exit_code == EXIT_INTERNAL
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hindsight-batch: internal error: KeyError")
    assert "--debug" in lines[0]
    assert SECRET not in result.stderr
    debug = invoke(runner, "--debug", "import", str(tmp_path / "s"))
    assert debug.exit_code == EXIT_INTERNAL and "Traceback" in debug.stderr and "def broken" not in debug.output


def test_a_manifest_in_a_missing_or_unwritable_folder_is_one_line_and_leaves_nothing(
    runner: CliRunner, tmp_path: Path
) -> None:
    sessions(tmp_path / "s", 1)
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file: nothing can be created under it, not even by root")
    state = tmp_path / "state"
    for target in (tmp_path / "missing" / "m.jsonl", blocker / "m.jsonl"):
        result = invoke(runner, "import", str(tmp_path / "s"), "--manifest", str(target), "--state", str(state))
        assert result.exit_code == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(target) in lines[0] and "Traceback" not in result.stderr
        assert not state.exists()  # no empty ledger folder left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "home", "s"]


def test_a_manifest_through_a_symlink_keeps_the_link_and_one_into_a_pipe_is_streamed(
    runner: CliRunner, tmp_path: Path
) -> None:
    sessions(tmp_path / "s", 2)
    real = tmp_path / "plans" / "real.jsonl"
    real.parent.mkdir()
    real.write_text("an older manifest\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    result = invoke(runner, "import", str(tmp_path / "s"), "--manifest", str(link), "--state", str(tmp_path / "st"))
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and link.resolve() == real  # the link is still a link...
    assert len(read_manifest(real)) == 2  # ...and the file it points to holds the new, complete manifest
    assert [p.name for p in real.parent.iterdir()] == ["real.jsonl"]  # no temporary file left beside it
    # A named pipe (as /dev/stdout may be) is written to, not replaced by a regular file.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-c", f"import sys; sys.stdout.write(open({str(fifo)!r}).read())"],
                              stdout=subprocess.PIPE, text=True)
    try:
        piped = invoke(runner, "import", str(tmp_path / "s"), "--manifest", str(fifo), "--state",
                       str(tmp_path / "st2"))
        out, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert piped.exit_code == 0, piped.stderr
    assert len([line for line in out.splitlines() if line.strip()]) == 2
    assert fifo.is_fifo()


@pytest.mark.parametrize("command", [["import", "s"], ["report"]])
def test_a_state_folder_that_cannot_be_made_is_one_line_and_leaves_nothing(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    sessions(tmp_path / "s", 1)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    flag = invoke(runner, *command, "--state", str(blocker / "sub" / "deeper"))
    assert flag.exit_code == 2 and str(blocker / "sub" / "deeper") in flag.stderr
    assert len(flag.stderr.strip().splitlines()) == 1 and "Traceback" not in flag.stderr
    # From the environment it is a configuration error (report, which only reads, finds no runs there: exit 2).
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker / "xdg"))
    env = invoke(runner, *command)
    assert env.exit_code == (3 if command[0] == "import" else 2)
    assert str(blocker / "xdg") in env.stderr and "Traceback" not in env.stderr
    # A start that fails after making folders removes them again (the ledger cannot be opened: injected here).
    monkeypatch.delenv("XDG_STATE_HOME")
    (tmp_path / "new").mkdir()

    def no_disk(*args: Any, **kwargs: Any) -> Any:
        raise duckdb.IOException("IO Error: No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(ledger_module.duckdb, "connect", no_disk)
        nested = invoke(runner, *command, "--state", str(tmp_path / "new" / "a" / "b"))
    reason = "No space left on device" if command[0] == "import" else "no runs in ledger"  # (report makes none)
    assert nested.exit_code == 2 and reason in nested.stderr
    assert list((tmp_path / "new").iterdir()) == []
    # A damaged ledger file (a real one) is named too.
    (tmp_path / "new" / "ledger.duckdb").write_bytes(b"\x00garbage" * 100)
    damaged = invoke(runner, *command, "--state", str(tmp_path / "new"))
    assert damaged.exit_code == 2 and str(tmp_path / "new" / "ledger.duckdb") in damaged.stderr
    assert "Traceback" not in damaged.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "home", "new", "s"]


def test_a_file_whose_catch_up_verdict_cannot_be_read_fails_alone(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    paths = sessions(folder, 3)
    original = selection.cursor_verdict

    def verdict(cwd: str | None, path: Path, env: Any = None) -> Any:
        if path == paths[1]:
            raise IsADirectoryError(21, "Is a directory")
        if path == paths[2]:  # another file than the session: named in the reason
            raise PermissionError(13, "Permission denied", "/work/demo/.pi/hindsight/state.json")
        return original(cwd, path, env)

    monkeypatch.setattr(selection, "cursor_verdict", verdict)
    result = invoke(runner, "import", str(folder), "--catch-up", "--json")
    assert result.exit_code == 1
    summary = json.loads(result.output)
    assert summary["failed_files"] == [
        {"file": str(paths[1]), "line": None, "reason": "Is a directory"},
        {"file": str(paths[2]), "line": None, "reason": "Permission denied: /work/demo/.pi/hindsight/state.json"},
    ]
    assert summary["sessions"] == 1


def test_a_lone_surrogate_in_a_session_never_crashes_the_run_or_breaks_the_manifest(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Whether the reader replaces the surrogate (U+FFFD) or the file is failed, the run finishes, the other file
    is imported and the manifest is valid UTF-8 (a real damaged file: pi's JSON.stringify writes ``\\ud800``)."""
    folder = tmp_path / "sessions"
    sessions(folder, 1)
    b = SessionBuilder(session_id="surrogate")
    b.user("half an emoji MARK here")
    b.assistant("noted")
    b.lines = [line.replace("MARK", "\\ud83d") for line in b.lines]  # the JSON escape, as pi writes it
    b.write(folder / "z.jsonl")
    assert "\\ud83d" in (folder / "z.jsonl").read_text()
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(folder), "--manifest", str(manifest), "--include-content", "--json")
    assert result.exit_code in (0, 1) and "Traceback" not in result.stderr
    rows = [json.loads(line) for line in manifest.read_bytes().decode("utf-8").splitlines()]
    assert "s0.jsonl" in {Path(r["source_file"]).name for r in rows}
    summary = json.loads(result.output)
    if result.exit_code == 1:
        assert [Path(f["file"]).name for f in summary["failed_files"]] == ["z.jsonl"]


def test_a_file_whose_rows_cannot_be_written_fails_alone_before_anything_is_written(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose rows hold text no UTF-8 manifest can (a lone surrogate: the reader, the configuration and
    file names no longer let one through, so it is injected into one file's rows): that file fails, with nothing
    of it in the manifest; the other file goes through."""
    folder = tmp_path / "sessions"
    good, odd = sessions(folder, 2)
    as_json = ManifestRow.as_json

    def unwritable(row: ManifestRow, **changes: Any) -> dict[str, Any]:
        data = as_json(row, **changes)
        if row.source_file == str(odd):
            data["bank_why"] += " \udce9"
        return data

    monkeypatch.setattr(ManifestRow, "as_json", unwritable)
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(folder), "--manifest", str(manifest), "--json")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    [failed] = json.loads(result.output)["failed_files"]
    assert failed["file"] == str(odd) and "UnicodeEncodeError" in failed["reason"]
    assert [Path(r["source_file"]) for r in read_manifest(manifest)] == [good]


SETPRIV = shutil.which("setpriv")


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root to run the CLI as another user")
def test_real_permissions_as_an_unprivileged_user() -> None:
    """Root reads every file, so the other tests inject permission errors; this one runs the real CLI as
    ``nobody``: an unreadable session file fails alone, an unwritable --manifest folder or --state parent is one
    line with exit 2 and nothing left behind."""
    base = Path(tempfile.mkdtemp(prefix="hb-perm-", dir="/tmp"))
    try:
        base.chmod(0o777)
        folder = base / "sessions"
        good, unreadable = sessions(folder, 2)
        unreadable.chmod(0o000)
        locked = base / "locked"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        command = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                   "hindsight_batch"]
        env = {**os.environ, "HOME": str(base), "XDG_STATE_HOME": str(base / "state"), "PYTHONPATH": str(REPO)}

        # Under a 0700 folder (a checkout in `mktemp -d`) `nobody` cannot even import the package: nothing to test.
        probe = subprocess.run([*command[:-2], "-c", "import hindsight_batch, duckdb"], env=env, cwd=base,
                               capture_output=True, timeout=60)
        if probe.returncode != 0:
            pytest.skip(f"the checkout or its .venv is not readable by nobody ({REPO})")

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*command, *args], env=env, cwd=base, capture_output=True, text=True, timeout=120)

        imported = run("import", str(folder), "--json", "--manifest", str(base / "m.jsonl"))
        assert imported.returncode == 1, imported.stderr
        summary = json.loads(imported.stdout)
        assert summary["failed_files"] == [{"file": str(unreadable), "line": None, "reason": "Permission denied"}]
        assert {Path(r["source_file"]) for r in read_manifest(base / "m.jsonl")} == {good}
        for args in (["--manifest", str(locked / "m.jsonl")], ["--state", str(locked / "state" / "deeper")]):
            refused = run("import", str(folder), *args)
            assert refused.returncode == 2 and str(locked) in refused.stderr, refused.stderr
            assert len(refused.stderr.strip().splitlines()) == 1 and "Permission denied" in refused.stderr
            assert list(locked.iterdir()) == []
    finally:
        for path in base.rglob("*"):
            with contextlib.suppress(OSError):
                path.chmod(0o700)
        shutil.rmtree(base, ignore_errors=True)


def _entry_point(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """The console entry point in a process of its own (click's runner bypasses it)."""
    return subprocess.run([sys.executable, "-m", "hindsight_batch", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120, cwd=REPO)


def test_a_usage_error_with_json_still_prints_one_json_object() -> None:
    for bad in (["--jobs", "0"], ["--branches", "bogus"]):
        done = _entry_point("import", "samples", "--json", *bad)
        assert done.returncode == 2
        error = json.loads(done.stdout)["error"]  # stdout is exactly one JSON object
        assert error["code"] == 2 and bad[0] in error["message"]
        assert "Usage:" in done.stderr  # people still get click's usage text


def test_output_into_a_closed_pipe_ends_quietly_with_141() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `| head` having exited: every write fails with EPIPE
    try:
        done = _entry_point("route", "We decided to keep the ledger in DuckDB", stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert done.stderr == ""  # not "internal error: Broken pipe"
