"""Which session files an import finds under a folder, read from the directory listing: every kind of entry a
session folder may hold (hidden files, folders and links named like sessions, broken and looping links)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hindsight_batch.session.discovery import find_session_files


def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, elsewhere = tmp_path / "sessions", tmp_path / "elsewhere"
    (root / "--a--").mkdir(parents=True)
    elsewhere.mkdir()
    for name in ("--a--/1.jsonl", "--a--/.hidden.jsonl", "top.jsonl", "--a--/notes.JSONL", "--a--/1.jsonl.bak"):
        (root / name).write_text("{}\n")
    (root / "--a--" / "folder.jsonl").mkdir()  # a folder named like a session
    (root / ".trash").mkdir()
    (root / ".trash" / "old.jsonl").write_text("{}\n")  # a hidden folder is not looked into
    (root / "--a--" / "deeper").mkdir()
    (root / "--a--" / "deeper" / "2.jsonl").write_text("{}\n")  # two folders down: not looked into
    (elsewhere / "target.jsonl").write_text("{}\n")
    (root / "--a--" / "link.jsonl").symlink_to(elsewhere / "target.jsonl")
    (root / "--a--" / "broken.jsonl").symlink_to(root / "nowhere.jsonl")
    (root / "--a--" / "loop.jsonl").symlink_to(root / "--a--" / "loop.jsonl")
    (root / "--a--" / "to-folder.jsonl").symlink_to(root / "--a--" / "deeper")
    (root / "--linked--").symlink_to(elsewhere)  # a symlinked project folder is looked into
    return root, elsewhere


def test_a_folder_gives_its_session_files_and_symlinks_to_files_nothing_else(tmp_path: Path) -> None:
    root, _ = tree(tmp_path)
    a = root / "--a--"
    assert find_session_files([root]) == sorted([
        root / "top.jsonl", a / "1.jsonl", a / ".hidden.jsonl", a / "link.jsonl", root / "--linked--" / "target.jsonl"])


def test_an_import_names_each_file_by_its_resolved_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, elsewhere = tree(tmp_path)
    real = Path(os.path.realpath(root))
    monkeypatch.chdir(tmp_path)  # a relative root: resolved too
    found = find_session_files([Path("sessions")], resolve=True)
    assert found == sorted([real / "top.jsonl", real / "--a--" / "1.jsonl", real / "--a--" / ".hidden.jsonl",
                            Path(os.path.realpath(elsewhere)) / "target.jsonl"])  # the link and the linked folder
    # A file named on the command line beside its folder is found once.
    assert find_session_files([root / "top.jsonl", root, root], resolve=True) == found
