"""Two S4 rules a re-run relies on: a side branch's document ids do not move when the main branch grows, and an
unchanged file is read again when the settings that shape its rows changed (reused only when they did not)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import SessionBuilder, invoke, read_manifest


def _import(runner: CliRunner, tmp_path: Path, path: Path, *args: str, name: str = "out.jsonl"
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    manifest = tmp_path / name
    result = invoke(runner, "import", str(path), "--state", str(tmp_path / "state"), "--manifest", str(manifest),
                    "--live-retained", "include", "--json", "-q", *args)
    assert result.exit_code == 0, result.stderr
    return read_manifest(manifest), json.loads(result.output)


def _touch(path: Path) -> None:
    """A later mtime, as a real append gives (the file system's clock may not tick between two writes)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def _side_rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted((r["segment"], r["document_id"], r["content_sha256"]) for r in rows if r["segment"] != "main")


def test_side_branch_document_ids_stay_the_same_as_the_main_branch_grows(runner: CliRunner, tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"import": {"turnsPerChunk": 2}}))  # several windows on each branch
    b = SessionBuilder(cwd=str(tmp_path / "proj"), session_id="s-branches")
    b.user("Where does the reader keep its index?")
    fork_point = b.assistant("In session/tree.py, one row per entry.")
    # A side branch of three turns off the second entry (the user went back and asked something else)...
    b.user("Instead: how are malformed lines reported?", parent=fork_point)
    for i in range(2):
        b.assistant(f"As file:line: reason, side answer {i}.")
        b.user(f"Side follow-up {i} about glued lines.")
    b.assistant("Both objects of a glued line are kept.")
    # ...then the main branch goes on from the same point, and is the active one (its entry is the last).
    b.user("Back on track: does the tree survive a cycle?", parent=fork_point)
    b.assistant("Yes, parentId walks have a cycle guard.")
    path = b.write(tmp_path / "sessions" / "s.jsonl")

    before, s1 = _import(runner, tmp_path, path, "--config", str(config), "--branches", "all", name="a.jsonl")
    side_before = _side_rows(before)
    assert len({segment for segment, _, _ in side_before}) == 1 and len(side_before) == 2  # one side branch, 2 windows
    assert all(doc.startswith("pi-import:s-branches:project:fork-") for _, doc, _ in side_before)
    main_before = [r["document_id"] for r in before if r["segment"] == "main"]

    for turn in range(7):  # the main branch grows by several windows
        b.user(f"Main question {turn} about chunk windows and document ids.")
        b.assistant(f"Main answer {turn}: windows are filled greedily from the start.")
    b.write(path)
    _touch(path)
    after, s2 = _import(runner, tmp_path, path, "--config", str(config), "--branches", "all", name="b.jsonl")
    assert s2["unchanged_files"] == 0 and s2["entries"] > s1["entries"]  # the file was read again
    main_after = [r["document_id"] for r in after if r["segment"] == "main"]
    assert len(main_after) > len(main_before) + 2 and main_after[: len(main_before) - 1] == main_before[:-1]
    assert _side_rows(after) == side_before  # the same ids, holding the same content


# Each change alters what a row holds or where it goes, with the file itself untouched.
SHAPING_CHANGES: dict[str, dict[str, Any]] = {
    "retainContent": {"retainContent": {"toolResult": ["text"]}},
    "strip": {"strip": {"message": ["api", "provider"]}},
    "toolFilter": {"toolFilter": {"toolCall": {"exclude": ["bash"]}}},
    "routing mode": {"userRetain": {"mode": "router"}},
}


@pytest.mark.parametrize("catch_up", [False, True], ids=["plain", "catch-up"])
@pytest.mark.parametrize("change", list(SHAPING_CHANGES))
def test_a_settings_change_reads_an_unchanged_file_again(
    runner: CliRunner, tmp_path: Path, change: str, catch_up: bool
) -> None:
    b = SessionBuilder(cwd=str(tmp_path / "proj"), session_id="s-settings")
    b.user("Run the tests for the uploader.")
    b.assistant("Running them.", {"type": "toolCall", "id": "c1", "name": "bash",
                                  "arguments": {"command": "pytest -q tests/test_upload.py"}})
    b.tool_result("bash", "12 passed in 0.4s")
    b.assistant("All 12 upload tests pass.")
    path = b.write(tmp_path / "sessions" / "s.jsonl")
    mode = ("--catch-up",) if catch_up else ()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"retainContent": {"assistant": ["text", "toolCall"]}}))

    first, s1 = _import(runner, tmp_path, path, "--config", str(config), *mode, name="a.jsonl")
    assert s1["unchanged_files"] == 0 and s1["entries"] > 0 and first
    same, s2 = _import(runner, tmp_path, path, "--config", str(config), *mode, name="b.jsonl")
    assert s2["unchanged_files"] == 1 and s2["entries"] == 0  # same file, same settings: reused, not parsed
    assert [r["content_sha256"] for r in same] == [r["content_sha256"] for r in first]

    settings = json.loads(config.read_text())
    for key, value in SHAPING_CHANGES[change].items():
        settings[key] = {**settings.get(key, {}), **value}
    config.write_text(json.dumps(settings))
    redone, s3 = _import(runner, tmp_path, path, "--config", str(config), *mode, name="c.jsonl")
    assert s3["unchanged_files"] == 0 and s3["entries"] == s1["entries"]  # read and planned again
    if change == "routing mode":  # the rows are routed again, in the mode now configured
        assert {r["decision"]["mode"] for r in first} == {"explicit-only"}
        assert {r["decision"]["mode"] for r in redone} == {"router"}
    else:  # the rows now hold something else: reusing the old ones would have been wrong
        assert [r["content_sha256"] for r in redone] != [r["content_sha256"] for r in first]
    again, s4 = _import(runner, tmp_path, path, "--config", str(config), *mode, name="d.jsonl")
    assert s4["unchanged_files"] == 1 and s4["entries"] == 0  # and reused again once the settings hold still
    assert [r["content_sha256"] for r in again] == [r["content_sha256"] for r in redone]
