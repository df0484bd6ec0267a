"""Conformance with the real pi (issue 13): pi's own ``SessionManager`` loads every sample, and what we import
from its active branch is what pi sees; every file ``prune-recall-messages --confirm`` writes loads in pi as the
original minus the recall messages, and pi can append to it and load it again.

pi is installed once per machine with npm, pinned (``PI_VERSION``), into ``~/.cache/hindsight-batch/pi/<version>``
(``$HINDSIGHT_BATCH_PI_HOME`` overrides the folder; a lock keeps concurrent test runs apart). If the install fails
these tests fail: they are not skipped.

The deliberate differences, documented in the README, are applied before comparing: S1 (memory blocks dropped
or excised), redaction and the text cut at ``import.maxBlockChars`` to pi's side; glued lines (pi drops the whole
line, we recover its objects) are blanked in the copy we import. Only user and assistant text and, with
``--compaction context``, the compaction summary are compared: that is what a default import retains.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.redaction.redactor import Findings, Redactor
from hindsight_batch.retention.memory_filter import excise_memory, starts_with_memory
from hindsight_batch.session.reader import read_session
from tests.conftest import REAL_SAMPLES, SAMPLES, SessionBuilder, invoke, read_manifest

PI_VERSION = "0.73.1"
PI_HOME = Path(os.environ.get("HINDSIGHT_BATCH_PI_HOME") or Path.home() / ".cache" / "hindsight-batch" / "pi")
REAL_HOME = Path.home()  # read at import, before the tests' private HOME
VIEW = Path(__file__).resolve().parent / "pi" / "session_view.mjs"
MAX_CHARS = 32768
SESSIONS = sorted([*SAMPLES.rglob("*.jsonl"), *REAL_SAMPLES.glob("*.jsonl")])
RECALL_SAMPLES = [p for p in SESSIONS if b"hindsight-recall" in p.read_bytes()]


def install_pi() -> Path:
    """The pinned pi package, installed once (under a lock) into the cache folder."""
    root = PI_HOME / PI_VERSION
    PI_HOME.mkdir(parents=True, exist_ok=True)
    with (PI_HOME / f"{PI_VERSION}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second test run waits here for the first one's install
        if (root / "installed.json").exists():
            return root
        partial = PI_HOME / f"{PI_VERSION}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        done = subprocess.run(
            ["npm", "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--loglevel=error",
             f"@mariozechner/pi-coding-agent@{PI_VERSION}"],
            capture_output=True, text=True, timeout=900, env={**os.environ, "HOME": str(REAL_HOME)},
        )
        if done.returncode != 0:
            pytest.fail(f"npm could not install pi {PI_VERSION}: {done.stderr[-2000:]}")
        (partial / "installed.json").write_text(json.dumps({"package": "@mariozechner/pi-coding-agent",
                                                             "version": PI_VERSION}))
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)
        return root


@pytest.fixture(scope="session")
def pi() -> Path:
    return install_pi()


def pi_view(pi: Path, path: Path, command: str = "view") -> dict[str, Any]:
    done = subprocess.run(["node", str(VIEW), str(pi), command, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    view: dict[str, Any] = json.loads(done.stdout)
    return view


def texts_of(message: dict[str, Any]) -> list[str]:
    if message.get("role") == "compactionSummary" and "summary" in message:  # pi's shape (ours has content)
        return [message.get("summary") or ""]
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            and isinstance(b.get("text"), str)]


def as_imported(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """pi's messages with our deliberate differences applied: S1, the text cut, redaction."""
    redactor = Redactor(b"conformance")
    out = []
    for message in messages:
        if message.get("role") not in ("user", "assistant", "compactionSummary"):
            continue
        kept = []
        for text in texts_of(message):
            if starts_with_memory(text):
                continue
            text, _spans = excise_memory(text)
            if not text or text.isspace():
                continue
            if len(text) > MAX_CHARS:
                text = text[:MAX_CHARS] + f"…[cut {len(text) - MAX_CHARS} chars]"
            kept.append(redactor.redact_text(text, Findings()))
        if kept:
            out.append((message["role"], kept))
    return out


def ours(runner: CliRunner, tmp_path: Path, path: Path, mode: str, *args: str) -> list[tuple[str, list[str]]]:
    """What a default import retains, by role and text, in order."""
    manifest = tmp_path / f"{mode}.jsonl"
    result = invoke(runner, "import", str(path), "--manifest", str(manifest), "--include-content", "--json", "-q",
                    "--compaction", mode, "--state", str(tmp_path / f"state-{mode}"), *args)
    assert result.exit_code == 0, result.stderr
    chunks = {(r["segment"], r["chunk_index"]): r["content"] for r in read_manifest(manifest) if r.get("content")}
    records = [json.loads(line) for key in sorted(chunks) for line in chunks[key].split("\n")]
    return [(r["message"]["role"], texts_of(r["message"])) for r in records]


def without_glued_lines(path: Path, target: Path) -> Path:
    """The file as pi reads it: a line holding two glued objects is blanked (pi drops it whole; we recover both
    objects, a documented difference that can move the active leaf or the last compaction)."""
    glued = set(read_session(path).glued_lines)
    lines = path.read_bytes().split(b"\n")
    target.write_bytes(b"\n".join(b"" if i + 1 in glued else line for i, line in enumerate(lines)))
    return target


@pytest.mark.parametrize("path", SESSIONS, ids=[p.name[-30:] for p in SESSIONS])
def test_default_import_of_the_active_branch_is_what_pi_sees(
    pi: Path, runner: CliRunner, tmp_path: Path, path: Path
) -> None:
    copy = tmp_path / "pi" / path.name  # pi rewrites an old-version file it opens
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    view = pi_view(pi, copy)
    branch = [e["message"] for e in view["branch"] if e.get("type") == "message"]
    ours_path = without_glued_lines(path, tmp_path / path.name)
    assert ours(runner, tmp_path, ours_path, "context") == as_imported(view["context"])
    assert ours(runner, tmp_path, ours_path, "full") == as_imported(branch)


@pytest.mark.parametrize("retain_tool_output", [False, True])
def test_a_tool_result_line_pi_cannot_parse_ends_the_branch_for_both(
    pi: Path, runner: CliRunner, tmp_path: Path, retain_tool_output: bool
) -> None:
    """The branch we import never depends on the retention settings: a tool-result line JSON.parse refuses is
    dropped by pi, so what hung off it starts pi's active path; it starts ours too."""
    b = SessionBuilder()
    b.user("before the broken tool result")
    b.assistant("calling", {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}})
    b.tool_result("bash", "BROKEN", call_id="c1")
    b.lines[-1] = b.lines[-1].replace('"BROKEN"', '"bad \\x escape"')
    b.assistant("after the broken tool result")
    b.user("and a last question")
    path = b.write(tmp_path / "s.jsonl")
    copy = tmp_path / "pi" / "s.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    view = pi_view(pi, copy)
    args: list[str] = []
    if retain_tool_output:
        config = tmp_path / "tools.json"
        config.write_text(json.dumps({"retainContent": {"toolResult": ["text"]}}))
        args = ["--config", str(config)]
    expected = as_imported(view["context"])
    assert [texts for _role, texts in expected] == [["after the broken tool result"], ["and a last question"]]
    assert ours(runner, tmp_path, path, "context", *args) == expected


def is_recall(entry: dict[str, Any]) -> bool:
    """A recall message in pi's context, or a recall entry on pi's branch (either shape)."""
    message = entry.get("message") if entry.get("type") == "message" else entry
    return isinstance(message, dict) and message.get("customType") == "hindsight-recall" and (
        entry.get("type") == "custom_message" or message.get("role") in ("custom", "hookMessage"))


def branch_keys(view: dict[str, Any]) -> list[str]:
    """The branch's entries without ids and parents (pruning re-points parents), and without what pruning
    leaves of a recall entry that was the leaf (a non-message ``custom`` entry)."""
    keys = []
    for entry in view["branch"]:
        if entry.get("type") == "custom" and entry.get("customType") == "hindsight-recall-pruned":
            continue
        keys.append(json.dumps({k: v for k, v in entry.items() if k not in ("id", "parentId")}, sort_keys=True))
    return keys


@pytest.mark.parametrize("path", RECALL_SAMPLES, ids=[p.name[-30:] for p in RECALL_SAMPLES])
def test_every_pruned_file_loads_in_pi_without_exactly_the_recall_messages(
    pi: Path, runner: CliRunner, tmp_path: Path, path: Path
) -> None:
    before, pruned = tmp_path / "before" / path.name, tmp_path / "pruned" / path.name
    for target in (before, pruned):
        target.parent.mkdir()
        shutil.copyfile(path, target)
    result = invoke(runner, "prune-recall-messages", str(pruned), "--confirm", "--force")
    assert result.exit_code == 0, result.stderr
    assert pruned.read_bytes() != path.read_bytes()
    original = pi_view(pi, before)
    after = pi_view(pi, pruned)
    assert any(is_recall(e) for e in original["branch"])
    assert after["context"] == [m for m in original["context"] if not is_recall(m)]
    assert branch_keys(after) == branch_keys({"branch": [e for e in original["branch"] if not is_recall(e)]})
    ids = {e["id"] for e in after["entries"]}
    assert all(e.get("parentId") is None or e["parentId"] in ids for e in after["entries"])
    appended = pi_view(pi, pruned, "append")
    reloaded = pi_view(pi, pruned)
    assert reloaded["context"] == appended["context"]
    assert reloaded["context"][:-2] == after["context"]
    assert [texts_of(m) for m in reloaded["context"][-2:]] == [["appended by pi"], ["pi answered"]]


@pytest.mark.parametrize("damage", ["cut, unterminated", "cut, terminated", "glued"])
def test_a_last_line_pi_drops_is_not_taken_for_the_leaf_when_pruning(
    pi: Path, runner: CliRunner, tmp_path: Path, damage: str
) -> None:
    """pi died while writing the answer to a recalled prompt on a branch the user went back to: the last line
    starts as pi writes a message, but is cut short (or glued to another object), and pi drops it. The recall
    entry is then pi's leaf, and removing it would make pi resume on the other branch: it must be neutralised,
    and pi must see its context as before, without the recall."""
    b = SessionBuilder()
    b.user("first question")
    a1 = b.assistant("first answer")
    b.user("a side branch")
    b.assistant("side answer")
    b.raw(json.dumps({"type": "custom_message", "customType": "hindsight-recall", "content": "<hindsight_memories>"
                      "PRUNE-ME</hindsight_memories>", "display": False, "id": "r1", "parentId": a1,
                      "timestamp": "2026-05-01T11:00:00.000Z"}, separators=(",", ":")))
    answer = json.dumps({"type": "message", "id": "a9", "parentId": "r1", "timestamp": "2026-05-01T11:00:01.000Z",
                         "message": {"role": "assistant", "content": [{"type": "text", "text": "cut short"}]}},
                        separators=(",", ":"))
    b.raw(answer + '{"type":"custom","id":"g1","parentId":null}' if damage == "glued" else answer[:110])
    path = b.write(tmp_path / "pruned" / "s.jsonl", trailing_newline=damage != "cut, unterminated")
    before = tmp_path / "before" / "s.jsonl"
    before.parent.mkdir()
    shutil.copyfile(path, before)
    result = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--force", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.output)["files"][0]["neutralise"] == ["r1"]
    original, after = pi_view(pi, before), pi_view(pi, path)
    assert original["leafId"] == after["leafId"] == "r1"
    assert [texts_of(m) for m in original["context"][:2]] == [["first question"], ["first answer"]]
    assert len(original["context"]) == 3 and is_recall(original["context"][2])
    assert after["context"] == [m for m in original["context"] if not is_recall(m)]
    assert b"PRUNE-ME" not in path.read_bytes()


@pytest.mark.parametrize("value", ['"3"', "3.0", '"3.0"', '" 3 "', '"2"', "2.0", '"1"', "null", "true", "3", "2"])
def test_a_header_version_is_the_version_pi_reads_it_as(pi: Path, tmp_path: Path, value: str) -> None:
    """pi compares ``version ?? 1`` as a number: what it migrates (v1: ids given, v1 and v2: hookMessage becomes
    custom) says which version it took the file for, and the reader takes it for the same one."""
    text = (f'{{"type":"session","version":{value},"id":"x","cwd":"/w"}}\n'
            '{"type":"message","timestamp":"2026-05-01T10:00:01.000Z","message":{"role":"hookMessage",'
            '"customType":"c","content":"hi","display":true,"timestamp":1}}\n')
    mine, theirs = tmp_path / "s.jsonl", tmp_path / "pi" / "s.jsonl"  # pi rewrites a file it migrates
    theirs.parent.mkdir()
    for path in (mine, theirs):
        path.write_text(text)
    entries = pi_view(pi, theirs)["entries"]
    pi_version = 1 if entries[0].get("id") else (2 if entries[0]["message"]["role"] == "custom" else 3)
    header = read_session(mine).header
    assert header is not None and header.version == pi_version
