"""prune-recall-messages (S6): the cleaner that cannot lose a line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch import prune
from hindsight_batch.prune import write as prune_write
from hindsight_batch.session.reader import read_session
from hindsight_batch.session.tree import active_path
from tests.conftest import REAL_SAMPLES, SAMPLES, SessionBuilder, invoke

RECALL_TEXT = "<hindsight_memories>PRUNE-ME recalled memory</hindsight_memories>"


def recall_line(shape: int, entry_id: str | None, parent: str | None, ts: str = "2026-05-01T10:00:00.000Z") -> str:
    """A recall entry in shape 1 (custom_message) or 2 (message with role custom); v1 style when id is None."""
    ids: dict[str, Any] = {} if entry_id is None else {"id": entry_id, "parentId": parent}
    if shape == 1:
        obj = {"type": "custom_message", "customType": "hindsight-recall", "content": RECALL_TEXT, "display": False,
               **ids, "timestamp": ts}
    else:
        obj = {"type": "message", **ids, "timestamp": ts,
               "message": {"role": "custom", "customType": "hindsight-recall", "content": RECALL_TEXT,
                           "display": False, "timestamp": 1777629600000}}
    return json.dumps(obj, separators=(",", ":"))


def insert_recalls(data: bytes, count: int = 4) -> bytes:
    """Insert recall entries into a real file so that pruning them must give back the original bytes exactly.

    v2/v3: a recall is spliced between an entry and its next line's entry (the child is re-pointed to it, and the
    leaf gets one as its new last line). v1: recall lines are inserted and compaction indices shifted."""
    lines = data.split(b"\n")
    header = json.loads(lines[0])
    version = header.get("version", 1)
    entries = [i for i, line in enumerate(lines[1:], 1) if line.strip() and _object(line)]
    if not entries:
        return data.rstrip(b"\n") + b"\n" + recall_line(1, "rc-solo" if version > 1 else None, None).encode() + b"\n"
    picks = sorted({entries[len(entries) * k // (count + 1)] for k in range(1, count + 1)})
    out = list(lines)
    inserted_before: list[int] = []  # v1: entry indices (header = 0) at which recall entries were inserted
    for n, at in enumerate(reversed(picks)):
        shape = 1 + n % 2
        if version == 1:
            index = sum(1 for i in entries if i < at) + 1
            out.insert(at, recall_line(shape, None, None).encode())
            inserted_before.append(index)
            continue
        child = json.loads(out[at])
        if "parentId" not in child:
            continue
        rid = f"rc{n}"
        out.insert(at, recall_line(shape, rid, child["parentId"]).encode())
        raw = out[at + 1].decode()
        old = json.dumps(child["parentId"])
        assert raw.count(f'"parentId":{old}') == 1
        out[at + 1] = raw.replace(f'"parentId":{old}', f'"parentId":"{rid}"').encode()
    if version == 1:
        for i, line in enumerate(out):
            obj = _object(line)
            if obj and obj.get("type") == "compaction" and isinstance(obj.get("firstKeptEntryIndex"), int):
                old_index = obj["firstKeptEntryIndex"]
                shift = sum(1 for p in inserted_before if p <= old_index)
                text = line.decode()
                out[i] = text.replace(f'"firstKeptEntryIndex":{old_index}',
                                      f'"firstKeptEntryIndex":{old_index + shift}').encode()
    else:  # one more at the leaf: the last entry gets a recall child
        last = json.loads(out[entries[-1] + sum(1 for p in picks if p <= entries[-1])])
        body = b"\n".join(out).rstrip(b"\n")
        return body + b"\n" + recall_line(2, "rc-leaf", last["id"]).encode() + b"\n"
    return b"\n".join(out)


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def confirm(path: Path, **options: Any) -> prune.PruneResult:
    return prune.prune_file(path, confirm=True, force=True, **options)


@pytest.mark.parametrize("name", sorted(p.name for p in REAL_SAMPLES.glob("*.jsonl")))
def test_pruning_inserted_recall_gives_back_every_real_file_byte_for_byte(tmp_path: Path, name: str) -> None:
    original = (REAL_SAMPLES / name).read_bytes()
    path = tmp_path / name
    path.write_bytes(insert_recalls(original))
    assert RECALL_TEXT.encode() in path.read_bytes()
    before = [n.id for n in active_path(read_session(path).entries)]
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert path.read_bytes() == original
    after = [n.id for n in active_path(read_session(path).entries)]
    if "version" in json.loads(original.split(b"\n")[0]):  # v2/v3 ids survive; v1 ids are line numbers
        assert after == [i for i in before if not i.startswith("rc")]
    assert Path(result.backup or "").read_bytes() == insert_recalls(original)


@pytest.mark.parametrize("sample", sorted(p for p in SAMPLES.glob("*/*.jsonl") if p.stat().st_size))
def test_own_samples_prune_cleanly(tmp_path: Path, sample: Path) -> None:
    path = tmp_path / sample.name
    path.write_bytes(sample.read_bytes())
    result = confirm(path)
    assert result.status in ("pruned", "clean"), result.reason
    text = path.read_bytes()
    assert b"hindsight-recall" not in text
    if result.status == "pruned":
        assert Path(result.backup or "").read_bytes() == sample.read_bytes()
        session = read_session(path)
        ids = {n.id for n in session.entries}
        assert all(n.parent_id is None or n.parent_id in ids for n in session.entries)


def tree(tmp_path: Path) -> tuple[SessionBuilder, dict[str, str]]:
    b = SessionBuilder()
    ids: dict[str, str] = {}
    ids["u1"] = b.user("first question")
    b.raw(recall_line(1, "r1", ids["u1"]))
    b.leaf = "r1"
    ids["a1"] = b.assistant("answer one")  # child of r1
    ids["side"] = b.user("side branch", parent="r1")  # r1 has two children
    b.raw(recall_line(2, "r2", ids["a1"]))
    ids["u2"] = b.user("kept by the compaction", parent="r2")
    ids["a2"] = b.assistant("answer two")
    ids["comp"] = b.entry("compaction", summary="s", firstKeptEntryId="r2", tokensBefore=1)
    ids["label"] = b.entry("label", targetId="r1", label="bookmark")
    ids["bs"] = b.entry("branch_summary", fromId="r2", summary="came back")
    ids["u3"] = b.user("last question")
    return b, ids


def test_children_compaction_and_branch_summary_are_relinked_and_a_label_on_recall_dropped(tmp_path: Path) -> None:
    b, ids = tree(tmp_path)
    path = b.write(tmp_path / "s.jsonl")
    original_lines = path.read_bytes().split(b"\n")
    result = confirm(path)
    assert result.status == "pruned", result.reason
    entries = {json.loads(line)["id"]: json.loads(line) for line in path.read_bytes().split(b"\n")[1:] if line}
    assert "r1" not in entries and "r2" not in entries
    assert entries[ids["a1"]]["parentId"] == ids["u1"] and entries[ids["side"]]["parentId"] == ids["u1"]
    assert entries[ids["u2"]]["parentId"] == ids["a1"]
    assert entries[ids["comp"]]["firstKeptEntryId"] == ids["u2"]  # the next surviving entry on its path
    assert ids["label"] not in entries and result.plan["drop_labels"] == [ids["label"]]  # its target is gone
    assert entries[ids["bs"]]["fromId"] == ids["a1"] and entries[ids["bs"]]["parentId"] == ids["comp"]
    new_lines = path.read_bytes().split(b"\n")
    changed = {ids["a1"], ids["side"], ids["u2"], ids["comp"], ids["label"], ids["bs"]}
    untouched = [line for line in original_lines
                 if line and b'"r1"' not in line and b'"r2"' not in line]
    assert [line for line in new_lines if line and json.loads(line).get("id") not in changed] == untouched
    # A re-pointed child keeps every other byte: only the parentId value changed, key order included.
    old_a1 = next(line for line in original_lines if f'"id":"{ids["a1"]}"'.encode() in line)
    new_a1 = next(line for line in new_lines if f'"id":"{ids["a1"]}"'.encode() in line)
    assert new_a1 == old_a1.replace(b'"parentId":"r1"', f'"parentId":"{ids["u1"]}"'.encode())


def test_a_recall_leaf_on_another_branch_is_neutralised_not_removed(tmp_path: Path) -> None:
    b = SessionBuilder()
    u1 = b.user("question")
    b.assistant("answer")
    b.raw(recall_line(1, "rleaf", u1))  # the last line: pi resumes here
    path = b.write(tmp_path / "s.jsonl")
    before = [n.id for n in active_path(read_session(path).entries)]
    result = confirm(path)
    assert result.status == "pruned" and result.plan["neutralise"] == ["rleaf"]
    assert b"PRUNE-ME" not in path.read_bytes()
    assert [n.id for n in active_path(read_session(path).entries)] == before
    last = json.loads(path.read_bytes().split(b"\n")[-2])
    assert last["type"] == "custom" and last["id"] == "rleaf" and last["parentId"] == u1


def test_glued_malformed_blank_and_truncated_lines_stay_as_they_were(tmp_path: Path) -> None:
    b = SessionBuilder()
    u1 = b.user("one")
    b.raw(recall_line(1, "r1", u1))
    b.leaf = "r1"
    b.assistant("two")
    b.raw('{"type":"message","id":"g1","parentId":"e2","message":{"role":"user","content":"x"}}'
          '{"type":"custom_message","customType":"hindsight-recall","content":"glued","id":"g2","parentId":"g1"}')
    b.raw("")
    b.raw('{"broken": ')
    b.assistant("three", parent="e2")
    path = b.write(tmp_path / "s.jsonl", trailing_newline=False)
    data = path.read_bytes() + b'\n{"type":"message","id":"half'
    path.write_bytes(data)
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert any("glued" in note for note in result.plan["left_alone"])
    expected = data.replace(recall_line(1, "r1", u1).encode() + b"\n", b"").replace(b'"parentId":"r1"',
                                                                                   f'"parentId":"{u1}"'.encode())
    assert path.read_bytes() == expected


@pytest.mark.parametrize("chain", ["its parent is missing", "it is its own parent", "two recall in a cycle"])
def test_a_recall_with_no_surviving_ancestor_leaves_its_child_a_root(tmp_path: Path, chain: str) -> None:
    """A damaged tree: the recall's ancestors end at a parent no line has, or loop among recall entries. Its child
    becomes a root (parentId null: pi's path ended there anyway), never a parent that does not resolve, and the
    file is pruned, not refused by the check."""
    b = SessionBuilder()
    b.user("an earlier question")
    parents = {"its parent is missing": ["lost"], "it is its own parent": ["r1"], "two recall in a cycle": ["r2", "r1"]}
    for n, parent in enumerate(parents[chain], 1):
        b.raw(recall_line(1 + n % 2, f"r{n}", parent))
    b.leaf = "r1"
    b.assistant("answer")
    b.user("next")
    path = b.write(tmp_path / "s.jsonl")
    result = confirm(path)
    assert result.status == "pruned", result.reason
    data = path.read_bytes()
    assert b"PRUNE-ME" not in data
    answer = json.loads(data.split(b"\n")[-3])
    assert answer["message"]["content"][0]["text"] == "answer" and answer["parentId"] is None
    assert [n.id for n in active_path(read_session(path).entries)] == [answer["id"], "e" + str(b.count)]


def test_a_child_nested_past_the_standard_librarys_limit_is_re_pointed(tmp_path: Path) -> None:
    """orjson reads 1,024 levels, the standard library 1,000 by default: a child of recall nested in between, not
    in pi's key order (so re-serialized), made planning raise RecursionError (exit 70)."""
    b = SessionBuilder()
    u1 = b.user("question")
    b.raw(recall_line(1, "r1", u1))
    deep = "[" * 1010 + "]" * 1010
    b.raw('{"id":"a3","type":"message","parentId":"r1","message":{"role":"user","content":"x","d":' + deep + "}}")
    b.leaf = "a3"
    b.user("next")
    path = b.write(tmp_path / "s.jsonl")
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert result.plan["relink"] == [{"id": "a3", "from": "r1", "to": u1}]
    assert [n.id for n in active_path(read_session(path).entries)] == [u1, "a3", "e2"]
    assert b"[" * 1010 + b"]" * 1010 in path.read_bytes()


def test_a_recall_line_whose_id_a_later_line_reuses_goes_too(tmp_path: Path) -> None:
    """pi resolves an id two lines share to the later line, so no path reaches the earlier one; a recall there
    is taken out all the same (its text would stay in the file), and the later line and its children stay."""
    b = SessionBuilder()
    u1 = b.user("question")
    b.raw(recall_line(2, "dup", u1))
    b.assistant("an answer that reuses the id", entry_id="dup", parent=u1)
    b.user("next")
    path = b.write(tmp_path / "s.jsonl")
    before = [n.id for n in active_path(read_session(path).entries)]
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert result.plan["remove"] == ["dup"] and result.plan["relink"] == []
    assert b"PRUNE-ME" not in path.read_bytes()
    assert [n.id for n in active_path(read_session(path).entries)] == before == [u1, "dup", "e3"]


@pytest.mark.parametrize("fault", ["a changed line that is not JSON", "the check itself fails"])
def test_a_rewrite_the_check_cannot_vouch_for_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """Whatever goes wrong reading the new file back, the original is put back and the file is reported failed:
    the run goes on to the next file, with nothing changed and no traceback."""
    from hindsight_batch.prune import check

    b, _u1, _a1 = question_recall_answer()
    path = b.write(tmp_path / "s.jsonl")
    original = path.read_bytes()
    if fault == "the check itself fails":
        monkeypatch.setattr(prune, "check_file", lambda *args: 1 / 0)
    else:
        real_plan = prune.plan_prune

        def broken_plan(path: Path, types: Any = prune.DEFAULT_TYPES) -> prune.PrunePlan:
            plan = real_plan(path, types)
            relink = next(edit for edit in plan.edits if edit.replacement)
            relink.replacement = relink.replacement[:-1]  # '"e1' where '"e1"' belongs: the line is cut
            return plan

        monkeypatch.setattr(prune, "plan_prune", broken_plan)
        assert check.check_file is prune.check_file  # the real check reads the cut line back
    result = confirm(path)
    assert result.status == "failed"
    assert "the original was put back" in (result.reason or "")
    assert ("not JSON" if fault != "the check itself fails" else "ZeroDivisionError") in (result.reason or "")
    assert path.read_bytes() == original


def test_lines_of_text_stay_as_they_were_and_are_not_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log spliced into a session, before its header too: the lines of text are copied byte for byte, the recall
    among them is removed and its child re-linked, and no line of text is parsed (they hold no JSON object: a
    45 MB log took 44 s to be indexed line by line)."""
    from hindsight_batch.prune import index

    parsed: list[int] = []
    real = index.parse_line
    monkeypatch.setattr(index, "parse_line",
                        lambda stream, line, **kw: parsed.append(line.lineno) or real(stream, line, **kw))
    log = [f"2026-05-01 10:00:{i:02d} INFO served" if i % 2 else f"  {i}" for i in range(60)]
    b = SessionBuilder()
    b.lines[0:0] = log[:5]  # before the header: pi skips them too
    u1 = b.user("one")
    for line in log[5:30]:
        b.raw(line)
    b.raw(recall_line(1, "r1", u1))
    b.leaf = "r1"
    for line in log[30:]:
        b.raw(line)
    b.assistant("two")
    path = b.write(tmp_path / "s.jsonl")
    data = path.read_bytes()
    result = confirm(path)
    assert result.status == "pruned", result.reason
    expected = data.replace(recall_line(1, "r1", u1).encode() + b"\n", b"").replace(b'"parentId":"r1"',
                                                                                   f'"parentId":"{u1}"'.encode())
    assert path.read_bytes() == expected
    assert not set(parsed) & {n for n, line in enumerate(data.split(b"\n"), 1) if line.decode() in log}


def test_extra_custom_types(tmp_path: Path) -> None:
    b = SessionBuilder()
    u1 = b.user("q")
    b.entry("custom_message", customType="hindsight-mm", content="mental model", display=False)
    b.assistant("a")
    b.user("q2")
    path = b.write(tmp_path / "s.jsonl")
    assert prune.prune_file(path, confirm=False).status == "clean"
    result = confirm(path, types=("hindsight-recall", "hindsight-mm"))
    assert result.status == "pruned" and b"mental model" not in path.read_bytes()
    assert json.loads(path.read_bytes().split(b"\n")[2])["parentId"] == u1


def test_preview_writes_nothing(runner: CliRunner, tmp_path: Path) -> None:
    b, _ = tree(tmp_path)
    path = b.write(tmp_path / "sessions" / "--x--" / "s.jsonl")
    stat = path.stat()
    data = path.read_bytes()
    result = invoke(runner, "prune-recall-messages", str(tmp_path / "sessions"), "--json")
    assert result.exit_code == 0
    report = json.loads(result.output)["files"][0]
    assert report["status"] == "preview" and sorted(report["remove"]) == ["r1", "r2"]
    assert path.read_bytes() == data and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert list(path.parent.iterdir()) == [path]


def test_min_age_refuses_a_fresh_file_unless_forced(runner: CliRunner, tmp_path: Path) -> None:
    b, _ = tree(tmp_path)
    path = b.write(tmp_path / "s.jsonl")
    data = path.read_bytes()
    refused = invoke(runner, "prune-recall-messages", str(path), "--confirm")
    assert refused.exit_code == 1 and "min-age" in refused.stderr and path.read_bytes() == data
    old = time.time() - 3600
    os.utime(path, (old, old))
    done = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--min-age", "30m")
    assert done.exit_code == 0 and b"PRUNE-ME" not in path.read_bytes()


def test_a_file_modified_during_the_run_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b, _ = tree(tmp_path)
    path = b.write(tmp_path / "sessions" / "s.jsonl")
    real_write = prune_write.write_new

    def write_while_pi_appends(plan: prune.PrunePlan, out: int) -> str:
        digest = real_write(plan, out)
        with path.open("a") as live:
            live.write('{"type":"message","id":"late","parentId":"e9","message":{"role":"user","content":"x"}}\n')
        return digest

    monkeypatch.setattr(prune_write, "write_new", write_while_pi_appends)
    data_before = path.read_bytes()
    result = confirm(path)
    assert result.status == "refused" and "changed" in (result.reason or "")
    assert path.read_bytes().startswith(data_before) and b'"id":"late"' in path.read_bytes()
    assert sorted(p.name for p in path.parent.iterdir()) == ["s.jsonl"]  # no backup, no temp file


def test_permissions_and_mtime_are_kept_and_restore_round_trips(runner: CliRunner, tmp_path: Path) -> None:
    b, _ = tree(tmp_path)
    path = b.write(tmp_path / "s.jsonl")
    path.chmod(0o640)
    os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_123_456_789))
    original = path.read_bytes()
    result = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--backup-dir", str(tmp_path / "bk"))
    assert result.exit_code == 0, result.stderr
    assert path.stat().st_mtime_ns == 1_700_000_000_123_456_789 and path.stat().st_mode & 0o777 == 0o640
    backup = next((tmp_path / "bk").iterdir())
    assert backup.read_bytes() == original and backup.stat().st_mode & 0o777 == 0o600  # private, see fsutil
    pruned = path.read_bytes()
    # A backup in --backup-dir does not know where its file is: without --to it is refused, nothing written.
    nowhere = invoke(runner, "prune-recall-messages", "--restore", str(backup), "--force")
    assert nowhere.exit_code == 2 and "--to" in nowhere.stderr
    assert [p.name for p in (tmp_path / "bk").iterdir()] == [backup.name] and path.read_bytes() == pruned
    restored = invoke(runner, "prune-recall-messages", "--restore", str(backup), "--to", str(path), "--force")
    assert restored.exit_code == 0, restored.stderr
    assert path.read_bytes() == original and path.stat().st_mtime_ns == 1_700_000_000_123_456_789
    assert path.stat().st_mode & 0o777 == 0o640  # the session file's own mode, not the backup's
    assert pruned != original
    # Without --to, a backup beside the file knows where it belongs.
    beside = confirm(path)
    assert prune.restore(Path(beside.backup or ""), force=True) == path and path.read_bytes() == original


def test_v1_files_prune_by_position_and_renumber_compactions(tmp_path: Path) -> None:
    sample = SAMPLES / "--home-dev-acme-web--" / "2026-05-01T10-00-00-000Z_11111111-2222-4333-8444-555555555555.jsonl"
    original = sample.read_bytes()
    lines = original.split(b"\n")
    lines.insert(2, recall_line(1, None, None).encode())  # before the compaction's first kept entry (index 4)
    lines = [line.replace(b'"firstKeptEntryIndex":4', b'"firstKeptEntryIndex":5') for line in lines]
    path = tmp_path / "v1.jsonl"
    path.write_bytes(b"\n".join(lines))
    result = confirm(path)
    assert result.status == "pruned" and result.plan["fix_references"][0]["firstKeptEntryIndex"] == 4
    assert path.read_bytes() == original


def _big_session(path: Path, megabytes: int) -> bytes:
    b = SessionBuilder()
    filler = "x" * 20_000
    while sum(len(line) for line in b.lines) < megabytes * 1_000_000:
        u = b.user(f"question {b.count} {filler}")
        b.raw(recall_line(1, f"r{b.count}", u))
        b.leaf = f"r{b.count}"
        b.assistant(f"answer {filler}")
    return b.write(path).read_bytes()


def _prune_process(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "hindsight_batch", "prune-recall-messages", str(path),
                             "--confirm", "--force", "-q"])


@pytest.mark.timeout(600)
def test_sigkill_at_any_point_leaves_the_original_or_the_new_file_and_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "big.jsonl"
    original = _big_session(path, 60)
    # Time one whole run, then kill at points spread over that span: fixed delays would all land after the end
    # on a fast build (the compiled one) and prove nothing.
    started = time.monotonic()
    assert _prune_process(path).wait(300) == 0
    whole_run = time.monotonic() - started
    pruned = path.read_bytes()
    assert pruned != original
    outcomes = []
    for fraction in (0.15, 0.3, 0.45, 0.6, 0.7, 0.8, 0.9, 1.0, 1.3):
        path.write_bytes(original)
        for stale in path.parent.glob("big.jsonl.hindsight-prune-*.bak"):
            stale.unlink()
        process = _prune_process(path)
        time.sleep(whole_run * fraction)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        data = path.read_bytes()
        assert data in (original, pruned)
        assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
        outcomes.append("original" if data == original else "new")
    assert "original" in outcomes


def test_not_a_session_and_header_only_files_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"hello": 1}\n')
    assert prune.prune_file(tmp_path / "a.jsonl", confirm=True, force=True).status == "not-a-session"
    (tmp_path / "b.jsonl").write_bytes((REAL_SAMPLES / "pi-v3-header-only.jsonl").read_bytes())
    assert prune.prune_file(tmp_path / "b.jsonl", confirm=True, force=True).status == "clean"


def test_a_parent_cycle_through_a_recall_entry_becomes_a_root_not_a_self_loop(tmp_path: Path) -> None:
    b = SessionBuilder()
    b.user("x", parent="y", entry_id="x")
    b.raw(recall_line(1, "y", "x"))
    b.user("z", parent="x", entry_id="z")
    path = b.write(tmp_path / "s.jsonl")
    result = confirm(path)
    assert result.status == "pruned", result.reason
    lines = [json.loads(line) for line in path.read_bytes().split(b"\n")[1:] if line]
    assert [(e["id"], e["parentId"]) for e in lines] == [("x", None), ("z", "x")]


# -- labels: pi's rule ---------------------------------------------------------------------------------------------

def pi_labels(path: Path) -> dict[Any, str]:
    """The label pi shows for each entry id, by pi's own rule (pi-coding-agent 0.73.1, dist/core/session-manager.js,
    ``_buildIndex``): label entries are read in file order, the last one for a ``targetId`` wins, and one with an
    empty label clears it. A ``targetId`` no entry has is kept in that map but never shown."""
    labels: dict[Any, str] = {}
    for line in path.read_bytes().split(b"\n")[1:]:
        obj = _object(line)
        if obj is None or obj.get("type") != "label":
            continue
        if obj.get("label"):
            labels[obj.get("targetId")] = obj["label"]
        else:
            labels.pop(obj.get("targetId"), None)
    return labels


def shown_labels(path: Path) -> dict[str, str]:
    """The labels pi actually shows: those whose target is an entry of the file."""
    ids = {n.id for n in read_session(path).entries}
    return {target: label for target, label in pi_labels(path).items() if target in ids}


def question_recall_answer() -> tuple[SessionBuilder, str, str]:
    """u1, recall r1 (child of u1), a1 (child of r1)."""
    b = SessionBuilder()
    u1 = b.user("question")
    b.raw(recall_line(1, "r1", u1))
    b.leaf = "r1"
    return b, u1, b.assistant("answer")


def test_a_label_on_removed_recall_never_overwrites_the_users_label_on_another_entry(tmp_path: Path) -> None:
    b, u1, a1 = question_recall_answer()
    b.entry("label", targetId=u1, label="mine")  # the user's own label on u1
    b.entry("label", targetId="r1", label="recall bookmark")  # later: pi shows the last one for a target
    b.user("next")
    path = b.write(tmp_path / "s.jsonl")
    before = shown_labels(path)
    assert before == {u1: "mine", "r1": "recall bookmark"}
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert shown_labels(path) == {u1: "mine"}  # unchanged for every surviving entry
    assert pi_labels(path) == {u1: "mine"}  # and nothing left pointing anywhere
    assert result.plan["drop_labels"] == ["e4"] and json.loads(path.read_bytes().split(b"\n")[-2])["parentId"] == "e3"
    assert a1 in {n.id for n in active_path(read_session(path).entries)}


def test_a_label_on_a_first_entry_recall_is_dropped_and_reported_not_left_without_target(
    runner: CliRunner, tmp_path: Path
) -> None:
    b = SessionBuilder()
    b.raw(recall_line(2, "r0", None))  # recall as the very first entry (a root)
    b.leaf = "r0"
    u1 = b.user("question")
    b.entry("label", targetId="r0", label="start")
    b.entry("label", targetId="r0", label="")  # a cleared label on it too
    lab = b.entry("label", targetId="e3", label="label on a label")  # on the dropped label: goes as well
    b.assistant("answer")
    path = b.write(tmp_path / "sessions" / "s.jsonl")
    old = time.time() - 7200
    os.utime(path, (old, old))
    result = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.output)["files"][0]
    assert report["remove"] == ["r0"] and report["drop_labels"] == ["e2", "e3", lab]
    assert pi_labels(path) == {}  # no label with a missing targetId (pi would key it by undefined)
    assert all("targetId" in obj for obj in map(_object, path.read_bytes().split(b"\n")[1:])
               if obj and obj.get("type") == "label")
    session = read_session(path)
    assert [n.id for n in active_path(session.entries)] == [u1, "e5"]
    human = invoke(runner, "prune-recall-messages", str(tmp_path / "sessions"))
    assert "clean 1" in human.stderr  # a second look finds nothing left to do


def test_a_label_that_is_the_active_leaf_is_neutralised_when_removing_it_would_move_pi(tmp_path: Path) -> None:
    b, u1, a1 = question_recall_answer()
    b.user("a side branch", parent=u1)  # written after a1; then the user went back to a1 and labelled r1
    label = b.entry("label", parent=a1, targetId="r1", label="here")
    path = b.write(tmp_path / "s.jsonl")
    before = [n.id for n in active_path(read_session(path).entries)]
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert result.plan["neutralise"] == [label] and pi_labels(path) == {}
    last = json.loads(path.read_bytes().split(b"\n")[-2])
    assert last == {**last, "type": "custom", "customType": "hindsight-label-pruned", "id": label, "parentId": a1}
    assert [n.id for n in active_path(read_session(path).entries)] == [i for i in before if i != "r1"]


@pytest.mark.parametrize("sample", sorted(p for p in SAMPLES.glob("*/*.jsonl") if p.stat().st_size))
def test_every_label_pi_shows_on_a_surviving_entry_is_unchanged(tmp_path: Path, sample: Path) -> None:
    path = tmp_path / sample.name
    path.write_bytes(sample.read_bytes())
    before = shown_labels(path)
    assert confirm(path).status in ("pruned", "clean")
    ids = {n.id for n in read_session(path).entries}
    assert shown_labels(path) == {k: v for k, v in before.items() if k in ids}
    assert set(pi_labels(path)) <= ids  # no label left pointing at a removed entry


# -- links ---------------------------------------------------------------------------------------------------------

def test_a_symlinked_session_is_pruned_at_its_target_and_the_link_stays_a_link(
    runner: CliRunner, tmp_path: Path
) -> None:
    b, _ = tree(tmp_path)
    real = b.write(tmp_path / "elsewhere" / "real.jsonl")
    old = time.time() - 7200
    os.utime(real, (old, old))
    original = real.read_bytes()
    link = tmp_path / "sessions" / "--x--" / "s.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    result = invoke(runner, "prune-recall-messages", str(tmp_path / "sessions"), "--confirm", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.output)["files"][0]
    assert report["status"] == "pruned" and (report["file"], report["target"]) == (str(link), str(real))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert b"PRUNE-ME" not in real.read_bytes() and real.stat().st_mtime == old
    backup = Path(report["backup"])
    assert backup.parent == real.parent and backup.read_bytes() == original  # beside the real file
    assert list(link.parent.iterdir()) == [link]  # nothing written beside the link
    # --restore through the link puts the bytes back into the real file; the link is still a link.
    restored = invoke(runner, "prune-recall-messages", "--restore", str(backup), "--to", str(link), "--force")
    assert restored.exit_code == 0, restored.stderr
    assert link.is_symlink() and real.read_bytes() == original


def test_a_hard_linked_session_is_refused_unless_forced_and_the_other_name_keeps_the_original(
    runner: CliRunner, tmp_path: Path
) -> None:
    b, _ = tree(tmp_path)
    path = b.write(tmp_path / "s.jsonl")
    other = tmp_path / "other-name.jsonl"
    os.link(path, other)
    old = time.time() - 7200
    os.utime(path, (old, old))
    original = path.read_bytes()
    preview = invoke(runner, "prune-recall-messages", str(path))
    assert preview.exit_code == 0 and "1 other hard link(s)" in preview.stderr
    refused = invoke(runner, "prune-recall-messages", str(path), "--confirm")
    assert refused.exit_code == 1 and "refused" in refused.stderr and "other hard link" in refused.stderr
    assert path.read_bytes() == original and path.stat().st_ino == other.stat().st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "other-name.jsonl", "s.jsonl"]
    forced = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--force", "--json")
    assert forced.exit_code == 0, forced.stderr
    report = json.loads(forced.output)["files"][0]
    assert report["status"] == "pruned" and "this name only" in report["reason"]
    assert b"PRUNE-ME" not in path.read_bytes() and path.stat().st_nlink == 1
    assert other.read_bytes() == original and other.stat().st_nlink == 1  # the other name: the old file, as it was
    backup = Path(report["backup"])
    assert backup.read_bytes() == original and backup.stat().st_ino != other.stat().st_ino  # a copy, not a link
    assert backup.stat().st_mode & 0o777 == 0o600
    with other.open("a") as live:  # pi appending under the other name never changes the backup
        live.write("{}\n")
    assert backup.read_bytes() == original


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_backups_are_private_whatever_the_umask_and_the_session_keeps_its_mode(tmp_path: Path, umask: int) -> None:
    old_umask = os.umask(umask)
    try:
        b, _ = tree(tmp_path)
        path = b.write(tmp_path / "s.jsonl")
        path.chmod(0o644)
        beside = confirm(path)
        backup_dir = tmp_path / "new" / "backups"
        path.write_bytes(Path(beside.backup or "").read_bytes())
        elsewhere = confirm(path, backup_dir=backup_dir)
    finally:
        os.umask(old_umask)
    assert beside.status == elsewhere.status == "pruned"
    for result in (beside, elsewhere):
        assert Path(result.backup or "").stat().st_mode & 0o777 == 0o600
    assert backup_dir.stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o777 == 0o644  # the session file itself is pi's: its mode is kept


@pytest.mark.parametrize("trailing", ["}", "]", '{"type":"custom","id":"x9","parentId":null}', "} "])
@pytest.mark.parametrize("key_order", ["pi's", "another"])
def test_a_child_of_recall_on_a_line_with_trailing_data_is_a_line_pi_drops_and_stays_as_it_was(
    runner: CliRunner, tmp_path: Path, trailing: str, key_order: str
) -> None:
    """An object followed on its line by "}", "]" or a second object: JSON.parse refuses the line, so pi drops it
    whole, like a glued line. As the child of a removed recall it stays byte for byte (planning it once raised
    JSONDecodeError, exit 70, and every later file kept its recall); the other files are pruned."""
    b = SessionBuilder()
    u1 = b.user("question")
    b.raw(recall_line(1, "r1", u1))
    child: dict[str, Any] = {"type": "message", "id": "a1", "parentId": "r1",
                             "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}]}}
    if key_order != "pi's":
        child = {"id": child.pop("id"), **child}
    damaged = json.dumps(child, separators=(",", ":")) + trailing
    b.raw(damaged)
    b.leaf = "a1"
    b.user("next")
    folder = tmp_path / "sessions"
    path = b.write(folder / "a.jsonl")
    other, _ = tree(tmp_path)
    other_path = other.write(folder / "b.jsonl")
    old = time.time() - 7200
    for p in (path, other_path):
        os.utime(p, (old, old))
    preview = invoke(runner, "prune-recall-messages", str(folder), "--json")
    assert preview.exit_code == 0, preview.stderr
    assert [f["status"] for f in json.loads(preview.output)["files"]] == ["preview", "preview"]
    done = invoke(runner, "prune-recall-messages", str(folder), "--confirm", "--json")
    assert done.exit_code == 0, done.stderr
    assert [f["status"] for f in json.loads(done.output)["files"]] == ["pruned", "pruned"]
    data = path.read_bytes()
    assert b"PRUNE-ME" not in data and b"PRUNE-ME" not in other_path.read_bytes()
    assert damaged.encode() + b"\n" in data  # the line pi drops: as it was


def test_a_bug_met_in_one_file_names_it_and_every_other_file_is_pruned(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    paths = [tree(tmp_path)[0].write(folder / f"{name}.jsonl") for name in "abc"]
    old = time.time() - 7200
    for p in paths:
        os.utime(p, (old, old))
    original = paths[1].read_bytes()
    real_plan = prune.plan_prune

    def plan_failing_on_b(path: Path, types: Any = prune.DEFAULT_TYPES) -> prune.PrunePlan:
        if path.name == "b.jsonl":
            raise ValueError("something unforeseen")
        return real_plan(path, types)

    monkeypatch.setattr(prune, "plan_prune", plan_failing_on_b)
    result = invoke(runner, "prune-recall-messages", str(folder), "--confirm")
    assert result.exit_code == 1
    assert f"failed: {paths[1]}" in result.stderr and "ValueError: something unforeseen" in result.stderr
    assert "pruned 2" in result.stderr
    assert paths[1].read_bytes() == original
    assert all(b"PRUNE-ME" not in p.read_bytes() for p in (paths[0], paths[2]))


@pytest.mark.parametrize("where", ["beside", "backup-dir"])
def test_a_rerun_after_a_kill_that_left_its_backup_link_finishes_the_job(
    runner: CliRunner, tmp_path: Path, where: str
) -> None:
    """A run killed between linking its backup and the rename leaves the backup as a second name of the session
    file: the re-run must not take its own backup for another hard link (it refused, asking for --force)."""
    b, _ = tree(tmp_path)
    path = b.write(tmp_path / "sessions" / "s.jsonl")
    old = time.time() - 7200
    os.utime(path, (old, old))
    original = path.read_bytes()
    backup_dir = tmp_path / "backups" if where == "backup-dir" else None
    if backup_dir is not None:
        backup_dir.mkdir()
    stale = prune_write.backup_path(path, backup_dir)
    os.link(path, stale)  # what the killed run had done
    options = ["--backup-dir", str(backup_dir)] if backup_dir is not None else []
    preview = invoke(runner, "prune-recall-messages", str(path), *options)
    assert preview.exit_code == 0 and "hard link" not in preview.stderr
    done = invoke(runner, "prune-recall-messages", str(path), "--confirm", "--json", *options)
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.output)["files"][0]
    assert report["status"] == "pruned" and report["reason"] is None
    assert b"PRUNE-ME" not in path.read_bytes() and path.stat().st_nlink == 1
    assert Path(report["backup"]).read_bytes() == original
    assert not stale.exists()  # the killed run's backup was the session file itself: nothing of it is lost


@pytest.mark.parametrize("value", ['"3"', "3.0"])
def test_a_header_version_pi_reads_as_3_is_pruned_as_version_3(tmp_path: Path, value: str) -> None:
    b, _ = tree(tmp_path)
    b.lines[0] = b.lines[0].replace('"version":3', f'"version":{value}')
    path = b.write(tmp_path / "s.jsonl")
    result = confirm(path)
    assert result.status == "pruned", result.reason
    assert b"PRUNE-ME" not in path.read_bytes() and path.read_bytes().startswith(b.lines[0].encode() + b"\n")
