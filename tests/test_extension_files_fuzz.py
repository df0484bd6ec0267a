"""The live extension's own files, read to choose a session's bank and to respect its modes and retain cursor: its
retain queues, persisted recall entries, ``session-meta/<hash>.json`` and ``retain-cursors.json``. Generated
contents, damaged every way a line can be: whatever they hold, reading them never raises (a junk line in a queue
made every session of that project fail to import, every run, blamed on the session file), what can be read in
them is found, and what cannot never widens what is retained (S8).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight_batch.extension import catchup, switches
from hindsight_batch.extension.switches import path_hashes
from hindsight_batch.plan import banks

GOOD_QUEUE_LINE = b'{"bankId":"found-bank","documentId":"doc-1","item":{"content":"x"}}'
GOOD_RECALL_LINE = (b'{"type":"custom_message","customType":"hindsight-recall","content":"m",'
                    b'"details":{"bankId":"recall-bank"}}')
JUNK = st.sampled_from([
    b"[" * 50_000 + b"]" * 50_000,  # deeper than the standard library's recursion limit
    b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b"9" * 20_000,  # a number literal past int()'s digit limit
    b'["hindsight-recall","bankId"]', b'"hindsight-recall bankId"', b"null", b"NaN", b"[]",
    b'{"bankId":5,"documentId":"doc-1"}', b'{"bankId":"b2","documentId":["doc-1"]}', b'{"bankId":null}',
    b'{"message":"hindsight-recall","details":{"bankId":7}}', b'{"bankId":"b\\ud800","documentId":"doc-1"}',
    b"\xff\xfe not UTF-8 hindsight-recall bankId", b'{"bankId":"cut', b"", b"   ",
]) | st.binary(max_size=24)


@settings(max_examples=150, deadline=None)
@given(st.lists(JUNK, max_size=6), st.integers(0, 6))
def test_a_queue_and_a_session_with_any_lines_give_the_banks_they_hold(junk: list[bytes], at: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        queue = Path(folder) / "s1.auto.jsonl"
        queue.write_bytes(b"\n".join([*junk[:at], GOOD_QUEUE_LINE, *junk[at:]]) + b"\n")
        found = banks._queue_banks(str(queue), 0, len(junk) * 1000 + at)  # a fresh cache key per example
        session = Path(folder) / "s.jsonl"
        session.write_bytes(b"\n".join([*junk, GOOD_RECALL_LINE, *(j for j in junk if b"recall-bank" not in j)]))
        recall_bank = banks.persisted_recall_bank(session)
    assert "found-bank" in found[""] and "found-bank" in found["doc-1"]
    assert all(isinstance(bank, str) for banks_of in found.values() for bank in banks_of)
    assert recall_bank == "recall-bank"  # the last persisted recall that names a bank; junk names none


CURSOR_JUNK = JUNK | st.sampled_from([b'{"version":3,"sessions":[]}', b'{"version":"3","sessions":{}}',
                                      b'{"mode":"nonsense"}', b'{"mode":["normal"]}', b'{"retainMode":false}',
                                      b'{"mode":"normal","retainMode":"normal","recallMode":"normal",'
                                      b'"retained":true,"tags":[],"createdAt":"x"}'])


@settings(max_examples=150, deadline=None)
@given(CURSOR_JUNK, CURSOR_JUNK)
def test_any_session_meta_or_cursor_file_is_read_without_raising_and_never_widens_retention(
    meta: bytes, cursors: bytes
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder) / "project"
        session = Path(folder) / "s.jsonl"
        session.write_text('{"type":"message","id":"e1","message":{"role":"user","content":"hi"}}\n')
        state = cwd / ".pi" / "hindsight"
        (state / "session-meta").mkdir(parents=True)
        (state / "session-meta" / f"{path_hashes(session)[-1]}.json").write_bytes(meta)
        (state / "retain-cursors.json").write_bytes(cursors)
        luxus = switches.luxus_session(str(cwd), session)
        verdict = catchup.cursor_verdict(str(cwd), session)
    # A meta file that is not a whole record (isSessionMemoryMetaRecord) never lets the session through (S8); a
    # cursor file, whatever it holds, never skips the session (it falls back, and says so).
    assert not luxus.retain and luxus.reason
    assert verdict.retain and verdict.handled_id is None
