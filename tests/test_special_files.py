"""A session file swapped for something that is not a regular file while a run goes on (a FIFO, a folder, a link
to a device): that file fails alone, named, and the run goes on. Opening a FIFO for reading blocked for ever,
holding the ledger lock; a device would be read for ever."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch import api
from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.test_prune import tree


def swap(path: Path, kind: str) -> None:
    """Put ``kind`` where the regular file ``path`` was."""
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link to a fifo":
        os.mkfifo(path.with_name("elsewhere.fifo"))
        path.symlink_to(path.with_name("elsewhere.fifo"))
    elif kind == "link to a device":
        path.symlink_to("/dev/zero")
    else:
        raise AssertionError(kind)


KINDS = ["fifo", "folder", "link to a fifo", "link to a device"]


def swapped_after_discovery(monkeypatch: pytest.MonkeyPatch, victim: Path, kind: str) -> None:
    """The file is found as a regular file, then swapped before it is read (as a run finds it mid-way)."""
    real: Callable[..., list[Path]] = api.find_session_files

    def find(*args: Any, **kwargs: Any) -> list[Path]:
        found = real(*args, **kwargs)
        swap(victim, kind)
        return found

    monkeypatch.setattr(api, "find_session_files", find)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("kind", KINDS)
def test_import_fails_a_file_swapped_for_a_special_file_and_imports_the_rest(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, jobs: str
) -> None:
    folder = tmp_path / "sessions"
    paths = []
    for n in range(3):
        b = SessionBuilder(session_id=f"s-{n}")
        b.user(f"question {n}")
        b.assistant(f"answer {n}")
        paths.append(b.write(folder / f"s{n}.jsonl"))
    swapped_after_discovery(monkeypatch, paths[1], kind)
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(folder), "--manifest", str(manifest), "--state", str(tmp_path / "state"),
                    "--jobs", jobs, "--json")
    assert result.exit_code == 1, result.stderr
    summary = json.loads(result.output)
    assert [(Path(f["file"]).name, f["reason"]) for f in summary["failed_files"]] == [
        ("s1.jsonl", "not a regular file (a folder)" if kind == "folder" else
         f"not a regular file (a {'character device' if kind == 'link to a device' else 'FIFO'})")]
    assert {Path(r["source_file"]).name for r in read_manifest(manifest)} == {"s0.jsonl", "s2.jsonl"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_prune_fails_a_file_swapped_for_a_special_file_and_prunes_the_rest(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    folder = tmp_path / "sessions"
    paths = [tree(tmp_path)[0].write(folder / f"s{n}.jsonl") for n in range(3)]
    old = 1_700_000_000
    for p in paths:
        os.utime(p, (old, old))
    swapped_after_discovery(monkeypatch, paths[1], kind)
    result = invoke(runner, "prune-recall-messages", str(folder), "--confirm", "--json")
    assert result.exit_code == 1, result.stderr
    files = {Path(f["file"]).name: f for f in json.loads(result.output)["files"]}
    assert files["s1.jsonl"]["status"] == "failed" and "not a regular file" in files["s1.jsonl"]["reason"]
    assert files["s0.jsonl"]["status"] == files["s2.jsonl"]["status"] == "pruned"
    assert not any(b"PRUNE-ME" in p.read_bytes() for p in (paths[0], paths[2]))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("which", ["queue", "dead letters", "quarantine"])
@pytest.mark.parametrize("kind", KINDS)
def test_flush_fails_a_queue_that_is_a_special_file_and_flushes_the_rest(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, which: str
) -> None:
    """A FIFO among the queue files (or where a queue's side file belongs) blocked flush for ever."""
    from hindsight_batch.sinks import client as client_module
    from tests.test_flush_robust import FakeServer, job, write_lines

    fake = FakeServer()
    monkeypatch.setattr(client_module, "client_for", lambda *args, **kwargs: fake.client())
    folder = tmp_path / "queues"
    lines = [json.dumps(job("one")), "{not json", json.dumps(job(f"two with {'ghp_' + 'a' * 36}"))]
    bad = write_lines(folder / "a.auto.jsonl", lines)
    write_lines(folder / "b.auto.jsonl", [json.dumps(job("delivered"))])
    victim = {"queue": bad, "dead letters": folder / "a.auto.dead.jsonl",
              "quarantine": folder / "a.auto.malformed.jsonl"}[which]
    victim.touch()
    swap(victim, kind)
    result = invoke(runner, "flush", str(folder), "--json")
    assert result.exit_code == 1, result.stderr
    reports = {Path(r["queue"]).name: r for r in json.loads(result.output)["queues"]}
    assert reports["a.auto.jsonl"]["failed"] and "not a regular file" in reports["a.auto.jsonl"]["errors"][0]
    assert reports["b.auto.jsonl"]["sent"] == 1
    assert "delivered" in [i["content"] for i in fake.accepted]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_queue_depths_count_around_a_special_file(tmp_path: Path, kind: str) -> None:
    """``status`` counts each queue's jobs and dead letters: a dead-letter file that is a FIFO blocked it."""
    from hindsight_batch.queue.discovery import queue_depths

    folder = tmp_path / "queues"
    folder.mkdir()
    (folder / "a.auto.jsonl").write_text('{"bankId":"b","content":"x"}\n')
    (folder / "b.auto.jsonl").write_text('{"bankId":"b","content":"y"}\n')
    dead = folder / "a.auto.dead.jsonl"
    dead.touch()
    swap(dead, kind)
    depths = {Path(d["queue"]).name: d for d in queue_depths([folder])}
    assert (depths["a.auto.jsonl"]["jobs"], depths["a.auto.jsonl"]["dead"]) == (None, None)
    assert depths["a.auto.jsonl"]["error"] == f"{dead}: not a regular file ({kind_named(kind)})"
    assert (depths["b.auto.jsonl"]["jobs"], depths["b.auto.jsonl"]["dead"]) == (1, 0)


def kind_named(kind: str) -> str:
    return {"fifo": "a FIFO", "folder": "a folder", "link to a fifo": "a FIFO",
            "link to a device": "a character device"}[kind]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_catch_up_fails_a_file_swapped_after_its_header_was_read(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Catch-up reads the session file again for hindsight-pi's switches and pi-hindsight's cursor after its header:
    a FIFO swapped in by then blocked the run for ever, holding the ledger lock."""
    from hindsight_batch.importing import selection

    folder = tmp_path / "sessions"
    paths = []
    for n in range(3):
        b = SessionBuilder(session_id=f"s-{n}", cwd=str(tmp_path / "project"))
        b.user(f"question {n}")
        b.assistant(f"answer {n}")
        paths.append(b.write(folder / f"s{n}.jsonl"))
    (tmp_path / "project" / ".pi" / "hindsight").mkdir(parents=True)
    (tmp_path / "project" / ".pi" / "hindsight" / "retain-cursors.json").write_text('{"version":3,"sessions":{}}')
    real = selection.peek_header

    def peek(path: Path) -> Any:
        header = real(path)
        if path == paths[1]:
            swap(path, kind)
        return header

    monkeypatch.setattr(selection, "peek_header", peek)
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(folder), "--catch-up", "--manifest", str(manifest), "--state",
                    str(tmp_path / "state"), "--jobs", "1", "--json")
    assert result.exit_code == 1, result.stderr
    summary = json.loads(result.output)
    assert [(Path(f["file"]).name, f["reason"]) for f in summary["failed_files"]] == [
        ("s1.jsonl", f"not a regular file ({kind_named(kind)})")]
    assert {Path(r["source_file"]).name for r in read_manifest(manifest)} == {"s0.jsonl", "s2.jsonl"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("which", ["session meta", "retain cursor"])
def test_catch_up_never_waits_on_a_fifo_where_the_extension_keeps_its_files(
    runner: CliRunner, tmp_path: Path, which: str
) -> None:
    """pi-hindsight's session meta and retain cursor live in the project: a FIFO there blocked catch-up for ever.
    A meta that cannot be read counts as ignored (fail closed); a cursor that cannot be read is not used."""
    from tests.test_catchup import meta_path, run, session

    _, path, project = session(tmp_path)
    target = meta_path(project, path) if which == "session meta" else project / ".pi/hindsight/retain-cursors.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(target)
    summary, rows = run(runner, tmp_path, "--catch-up")
    if which == "session meta":
        assert [r["status"] for r in rows] == ["switched-off"]
        assert "cannot be read (not a regular file (a FIFO))" in summary["switched_off"][0]["reason"]
    else:
        assert [r["status"] for r in rows] == ["planned"]
        assert "not a regular file (a FIFO)" in summary["cursor_fallbacks"][0]["note"]
