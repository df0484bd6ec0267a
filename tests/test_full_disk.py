"""A full disk under the state folder, the manifest or a prune's backups: one line naming the path, exit 2 (1 when
other files were done), and nothing half-written taken as complete: never exit 70, which the cron documentation
tells users to report as a bug.

Real full disks are small tmpfs mounts where the tests may mount one (as root); the same errors are also injected
where DuckDB raises them, so that the rule is tested everywhere."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from hindsight_batch.ledger import schema as ledger_schema
from tests.conftest import SessionBuilder, invoke
from tests.test_prune import tree

NO_SPACE = "No space left on device"


def many_sessions(folder: Path, count: int = 120) -> Path:
    """Enough rows to fill a 1 MB ledger or manifest."""
    for n in range(count):
        b = SessionBuilder(session_id=f"full-{n}")
        for turn in range(8):
            b.user(f"question {turn} of session {n}: " + "how do we deploy the service " * 20)
            b.assistant(f"answer {turn}: " + "with the blue-green script, as decided " * 20)
        b.write(folder / f"s{n:03d}.jsonl")
    return folder


@contextlib.contextmanager
def small_disk(path: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` (the test is skipped where none can be mounted: not root, no
    mount permission in this container)."""
    path.mkdir(parents=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr and "internal error" not in stderr, stderr
    return lines[0]


def test_a_full_disk_under_the_state_folder_is_one_line_naming_it_and_exit_2(
    runner: CliRunner, tmp_path: Path
) -> None:
    folder = many_sessions(tmp_path / "sessions")
    with small_disk(tmp_path / "disk") as disk:
        manifest = tmp_path / "m.jsonl"
        result = invoke(runner, "import", str(folder), "--state", str(disk / "state"), "--manifest", str(manifest),
                        "--include-content", "-q")
        assert result.exit_code == 2
        line = one_line(result.stderr)
        assert str(disk / "state") in line and NO_SPACE in line
        assert not manifest.exists() and list(tmp_path.glob(".m.jsonl*")) == []  # nothing taken as complete


def test_a_full_disk_under_the_manifest_is_one_line_naming_it_and_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    folder = many_sessions(tmp_path / "sessions")
    with small_disk(tmp_path / "disk") as disk:
        manifest = disk / "m.jsonl"
        result = invoke(runner, "import", str(folder), "--state", str(tmp_path / "state"), "--manifest",
                        str(manifest), "--include-content", "-q")
        assert result.exit_code == 2
        assert one_line(result.stderr) == f"hindsight-batch: error: --manifest {manifest}: cannot write: {NO_SPACE}"
        assert list(disk.iterdir()) == []  # neither the manifest nor its partial file
    report = invoke(runner, "report", "--state", str(tmp_path / "state"), "--json")
    assert json.loads(report.output)["runs"][0]["status"] == "failed"


def test_a_manifest_on_a_device_that_is_full_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    folder = many_sessions(tmp_path / "sessions", 3)
    result = invoke(runner, "import", str(folder), "--state", str(tmp_path / "state"), "--manifest", "/dev/full",
                    "-q")
    assert result.exit_code == 2
    assert one_line(result.stderr) == f"hindsight-batch: error: --manifest /dev/full: cannot write: {NO_SPACE}"


@pytest.mark.parametrize("error", [duckdb.IOException, duckdb.TransactionException, duckdb.FatalException])
def test_duckdb_refusing_a_write_for_want_of_room_is_one_line_naming_the_ledger(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: type[Exception]
) -> None:
    """As DuckDB words it: its write-ahead log or checkpoint could not be written. Every later statement of the
    run (recording it as failed) may fail too; the first error is the one shown."""
    state = tmp_path / "state"

    def full(db: Any, *args: Any, **kwargs: Any) -> None:
        raise error(f'Failed to commit: Could not write file "{state}/ledger.duckdb.wal": {NO_SPACE}')

    monkeypatch.setattr(ledger_schema, "load_records", full)
    result = invoke(runner, "import", str(many_sessions(tmp_path / "sessions", 3)), "--state", str(state),
                    "--manifest", str(tmp_path / "m.jsonl"), "-q")
    assert result.exit_code == 2
    line = one_line(result.stderr)
    assert line.startswith(f"hindsight-batch: error: ledger {state / 'ledger.duckdb'}: cannot write")
    assert NO_SPACE in line
    assert not (tmp_path / "m.jsonl").exists()


def test_a_prune_whose_backups_fill_their_disk_fails_those_files_alone_and_exits_1(
    runner: CliRunner, tmp_path: Path
) -> None:
    folder = tmp_path / "sessions"
    paths = []
    for n in range(3):
        b, _ = tree(tmp_path)
        for turn in range(40 if n == 1 else 1):  # the second file is too big for the backup disk
            b.user(f"filler {turn} " + "x" * 40_000)
        paths.append(b.write(folder / f"s{n}.jsonl"))
    old = time.time() - 7200
    for p in paths:
        os.utime(p, (old, old))
    originals = [p.read_bytes() for p in paths]
    with small_disk(tmp_path / "disk", "1m") as disk:
        result = invoke(runner, "prune-recall-messages", str(folder), "--confirm", "--backup-dir", str(disk),
                        "--json")
        assert result.exit_code == 1, result.stderr
        files = {Path(f["file"]).name: f for f in json.loads(result.output)["files"]}
        assert files["s1.jsonl"]["status"] == "failed" and NO_SPACE in files["s1.jsonl"]["reason"]
        assert files["s0.jsonl"]["status"] == files["s2.jsonl"]["status"] == "pruned"
        assert paths[1].read_bytes() == originals[1]  # untouched, and no half backup of it left
        assert sorted(p.name.split(".jsonl")[0] for p in disk.iterdir()) == ["s0", "s2"]
