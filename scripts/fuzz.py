#!/usr/bin/env python3
"""Fuzz campaign: damaged session files through the real import path, counting crashes, hangs and leaks.

Mutates ``samples/`` and ``../shared/samples-real/pi`` (seeded, so a run can be repeated) with the kinds of damage
in ``KINDS`` (one or more per file), then runs each file through what ``import`` does per file (``peek_header``,
``plan_session`` with content, the manifest row and upload payload serialized strictly as UTF-8) in a worker
process with an address-space limit; the parent gives every file a timeout. A crash is any exception or a worker
killed by a signal (a segfault, the memory limit); a hang is a file past its timeout. The output of every file is
searched for the seeded recall and hindsight-tool text (``samples/seeded-memory-markers.txt``) and the seeded
secrets (``samples/seeded-secrets.txt``): a leak from a line the damage left intact is a finding ("intact"); one
whose own line was damaged (its marker destroyed) is listed apart. Most files get recall entries spliced in
before the damage, and every file is then pruned (``prune-recall-messages --confirm``, on a copy) and checked
against what pruning promises (:func:`prune_check`).

    .venv/bin/python scripts/fuzz.py [--files 2000] [--seed 13] [--timeout 30] [--keep DIR]

With ``--cli import prune flush`` it runs the real commands instead, each for ``--seconds``: on folders of such
files (queue files for flush), some swapped for FIFOs, folders and links while the command runs, some runs with
their outputs (state, manifest, backups, queues) on a full disk (a small tmpfs where one can be mounted, else
ENOSPC injected), some sent SIGINT or SIGTERM; it counts crashes, exit 70s, hangs and the peak RSS.

    .venv/bin/python scripts/fuzz.py --cli import prune flush --seconds 60 [--seed 13] [--timeout 60]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SOURCES = [REPO / "samples", REPO.parent / "shared" / "samples-real" / "pi"]
GIANT = 9 << 20  # over the reader's 8 MB big-line size
MEMORY_LIMIT = 2 << 30  # address space of a worker: a blow-up past it is a MemoryError or a kill, counted


# ---------------------------------------------------------------- damage kinds: (rng, lines) -> lines
Lines = list[bytes]


def _pick(rng: random.Random, lines: Lines, first: int = 1) -> int:
    return rng.randrange(first, len(lines)) if len(lines) > first else len(lines) - 1


def _objects(lines: Lines) -> list[tuple[int, dict[str, Any]]]:
    found = []
    for i, line in enumerate(lines):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            found.append((i, obj))
    return found


def _rewrite(rng: random.Random, lines: Lines, change: Callable[[dict[str, Any]], object]) -> Lines:
    """Apply ``change`` to a random entry (not the header) and write it back compactly."""
    entries = [(i, o) for i, o in _objects(lines) if i > 0]
    if not entries:
        return lines
    i, obj = rng.choice(entries)
    change(obj)
    lines[i] = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return lines


def truncate_file(rng: random.Random, lines: Lines) -> Lines:
    data = b"\n".join(lines)
    return (data[: rng.randrange(len(data) + 1)]).split(b"\n") if data else lines


def truncate_line(rng: random.Random, lines: Lines) -> Lines:
    i = _pick(rng, lines)
    lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return lines


def byte_flips(rng: random.Random, lines: Lines) -> Lines:
    for _ in range(rng.randint(1, 8)):
        i = _pick(rng, lines, 0)
        if lines[i]:
            line = bytearray(lines[i])
            j = rng.randrange(len(line))
            line[j] ^= 1 << rng.randrange(8)
            lines[i] = bytes(line).replace(b"\n", b" ")
    return lines


def invalid_utf8(rng: random.Random, lines: Lines) -> Lines:
    i = _pick(rng, lines)
    line = lines[i]
    j = rng.randrange(len(line) + 1)
    lines[i] = line[:j] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe9"]) + line[j:]
    return lines


def invalid_utf8_in_tool_result_ids(rng: random.Random, lines: Lines) -> Lines:
    hits = [i for i, line in enumerate(lines) if b'"toolResult"' in line]
    if not hits:
        return invalid_utf8(rng, lines)
    i = rng.choice(hits)
    for key in (b'"toolCallId":"', b'"toolName":"', b'"id":"'):
        lines[i] = lines[i].replace(key, key + b"\xfe\xff", 1)
    return lines


def lone_surrogate(rng: random.Random, lines: Lines) -> Lines:
    i = _pick(rng, lines)
    j = lines[i].find(b'"text":"')
    if j == -1:
        j = lines[i].find(b'":"')
        if j == -1:
            return lines
        j += 3
    else:
        j += 8
    lines[i] = lines[i][:j] + rng.choice([b"\\ud800", b"\\udfff", b"\\ud83d x", b"\\uDC00"]) + lines[i][j:]
    return lines


def deep_value(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def deep_nesting(rng: random.Random, lines: Lines) -> Lines:
    field = rng.choice(["timestamp", "arguments", "content", "extra", "id", "details"])
    levels = rng.choice([300, 990, 1030, 5000, 100_000])

    def change(obj: dict[str, Any]) -> None:
        message = obj.get("message")
        if field == "arguments" and isinstance(message, dict):
            message["content"] = [{"type": "toolCall", "id": "c", "name": "bash", "arguments": {"a": "@@DEEP@@"}}]
        elif field == "content" and isinstance(message, dict):
            message["content"] = "@@DEEP@@"
        else:
            obj[field] = "@@DEEP@@"

    lines = _rewrite(rng, lines, change)
    return [line.replace(b'"@@DEEP@@"', deep_value(levels).encode()) for line in lines]


def unbalanced_brackets(rng: random.Random, lines: Lines) -> Lines:
    i = _pick(rng, lines)
    lines[i] = lines[i][:-1] + rng.choice([b"[", b"{", b'{"a":']) * rng.choice([10, 2000, 50_000]) + lines[i][-1:]
    return lines


def huge_number(rng: random.Random, lines: Lines) -> Lines:
    digits = rng.choice([4301, 5000, 20_000, 1_000_000])
    literal = rng.choice([b"9" * digits, b"-1" + b"0" * digits, b"1." + b"5" * digits, b"1e" + b"9" * 50])
    lines = _rewrite(rng, lines, lambda obj: obj.__setitem__(rng.choice(["n", "timestamp", "parentId"]), "@@N@@"))
    return [line.replace(b'"@@N@@"', literal) for line in lines]


def nan_infinity(rng: random.Random, lines: Lines) -> Lines:
    lines = _rewrite(rng, lines, lambda obj: obj.__setitem__("n", "@@N@@"))
    token = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-0"])
    return [line.replace(b'"@@N@@"', token) for line in lines]


WRONG_VALUES: list[object] = [{"x": 1}, [1, "a"], 42, 1.5, True, None, "", [[["deep"]]], {"type": "message"}]


def wrong_type(rng: random.Random, lines: Lines) -> Lines:
    field = rng.choice(["type", "id", "parentId", "timestamp", "message", "role", "content", "customType",
                        "toolName", "toolCallId", "text", "blocks", "summary", "firstKeptEntryId", "command",
                        "name", "arguments", "usage", "data", "display"])
    value = rng.choice(WRONG_VALUES)

    def change(obj: dict[str, Any]) -> None:
        message = obj.get("message")
        if field in ("role", "content", "toolName", "toolCallId", "command", "usage") and isinstance(message, dict):
            message[field] = value
        elif field in ("text", "blocks", "name", "arguments", "data") and isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, list) and content:
                if field == "blocks":
                    content[rng.randrange(len(content))] = value
                elif isinstance(content[0], dict):
                    content[0][field] = value
        else:
            obj[field] = value

    return _rewrite(rng, lines, change)


def wrong_header(rng: random.Random, lines: Lines) -> Lines:
    def change(obj: dict[str, Any]) -> None:
        obj[rng.choice(["version", "id", "type", "cwd", "parentSession", "timestamp"])] = rng.choice(
            [*WRONG_VALUES, 99, "3", 0, -1, [3]])

    header = _objects(lines[:1])
    if header:
        obj = header[0][1]
        change(obj)
        lines[0] = json.dumps(obj).encode()
    return lines


def duplicate_lines(rng: random.Random, lines: Lines) -> Lines:
    for _ in range(rng.randint(1, 5)):
        i = _pick(rng, lines, 0)
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return lines


def remove_lines(rng: random.Random, lines: Lines) -> Lines:
    for _ in range(rng.randint(1, 5)):
        if len(lines) > 1:
            del lines[_pick(rng, lines)]
    return lines


def reorder_lines(rng: random.Random, lines: Lines) -> Lines:
    if len(lines) > 3:
        i = _pick(rng, lines)
        window = lines[i : i + rng.randint(2, 20)]
        rng.shuffle(window)
        lines[i : i + len(window)] = window
    return lines


def glue_lines(rng: random.Random, lines: Lines) -> Lines:
    for _ in range(rng.randint(1, 3)):
        if len(lines) > 2:
            i = _pick(rng, lines)
            if i + 1 < len(lines):
                lines[i : i + 2] = [lines[i] + rng.choice([b"", b" ", b"\r"]) + lines[i + 1]]
    return lines


def parent_cycle(rng: random.Random, lines: Lines) -> Lines:
    entries = [(i, o) for i, o in _objects(lines) if i > 0 and isinstance(o.get("id"), str)]
    if len(entries) < 2:
        return lines
    (i, a), (j, b) = sorted(rng.sample(entries, 2))
    a["parentId"] = b["id"]  # b descends from a: now a descends from b too
    lines[i] = json.dumps(a, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    if rng.random() < 0.3:
        b["parentId"] = b["id"]  # and one entry its own parent
        lines[j] = json.dumps(b, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return lines


def dangling_and_duplicate_ids(rng: random.Random, lines: Lines) -> Lines:
    entries = [(i, o) for i, o in _objects(lines) if i > 0]
    for i, obj in rng.sample(entries, min(3, len(entries))):
        if rng.random() < 0.5:
            obj["parentId"] = "nowhere"
        else:
            other = rng.choice(entries)[1]
            obj["id"] = other.get("id")
        lines[i] = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return lines


def missing_header(rng: random.Random, lines: Lines) -> Lines:
    return lines[1:] if rng.random() < 0.7 else [b"", b"garbage", *lines[1:]]


def text_lines(rng: random.Random, lines: Lines) -> Lines:
    """A log or other text spliced in: more lines than a file keeps reasons for, some before the header."""
    text = [b"2026-05-01 10:00:00 INFO served", b"Traceback (most recent call last):", b"  12", b"\t[1, 2]",
            b"null", b"\xff\xfe garbled", b'  "a string"', b"\x0b{}", b"}"]
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(lines) + 1)
        lines[at:at] = [rng.choice(text) for _ in range(rng.randint(1, 120))]
    return lines


def spaced_json(rng: random.Random, lines: Lines) -> Lines:
    for i, obj in _objects(lines):
        if rng.random() < 0.7:
            lines[i] = json.dumps(obj, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    return lines


def crlf_blank_and_separators(rng: random.Random, lines: Lines) -> Lines:
    out: Lines = []
    for line in lines:
        line = line.replace("\u2028".encode(), b"") + (b"\r" if rng.random() < 0.5 else b"")
        out.append(line)
        if rng.random() < 0.1:
            out.append(rng.choice([b"", b"   ", b"\t", b"\r"]))
    return out


def control_characters(rng: random.Random, lines: Lines) -> Lines:
    i = _pick(rng, lines)
    j = lines[i].find(b'"text":"')
    if j != -1:
        lines[i] = lines[i][: j + 8] + rng.choice([b"\x00", b"\x01\x1f", b"\x7f", b"\x0b"]) + lines[i][j + 8 :]
    return lines


def marker_fragments(rng: random.Random, lines: Lines) -> Lines:
    """Memory markers split, nested and glued into user text: S1 must still hold."""
    text = rng.choice([
        "<hindsight_<hindsight_memories>RECALLED-MEMORY-ALPHA</hindsight_memories>memories>RECALLED-MEMORY-BETA",
        "<hindsight-memory>RECALLED-MEMORY-GAMMA<hindsight_memories>x</hindsight-memory>y</hindsight_memories>",
        "ok " + "<mental_models>RECALLED-MEMORY-ALPHA</mental_models>" * 50 + " tail",
    ])
    def change(obj: dict[str, Any]) -> None:
        obj["type"] = "message"
        obj["message"] = {"role": "user", "content": [{"type": "text", "text": text}]}
    return _rewrite(rng, lines, change)


def trailing_data(rng: random.Random, lines: Lines) -> Lines:
    """An object followed on its line by "}", "]", a second object or text: JSON.parse refuses the line (pi drops
    it), and a child of a recall entry there is what prune once choked on."""
    for _ in range(rng.randint(1, 3)):
        i = _pick(rng, lines, 0)
        lines[i] = lines[i] + rng.choice([b"}", b"]", b" }", b"}}", b"]]", b'{"type":"custom","id":"t"}', b"x",
                                          b",", b'"s"', b" 1", b"\x00"])
    return lines


LONG_PATH = "/a" * 40_000  # 80 KB: 40,000 folders deep (6.3 GB once, as every parent of a path)


def long_header_values(rng: random.Random, lines: Lines) -> Lines:
    """A very long value in one or more header fields (id, cwd, timestamp, parentSession, version, ...)."""
    header = _objects(lines[:1])
    if not header:
        return lines
    obj = header[0][1]
    for _ in range(rng.randint(1, 3)):
        field = rng.choice(["id", "cwd", "timestamp", "parentSession", "branchedFrom", "version", "extra"])
        obj[field] = rng.choice([LONG_PATH, "x" * 200_000, "/" + "b" * 300, "/a" * 2000, "3" + " " * 80_000,
                                 "é" * 50_000, "\u2028" * 10_000, {"file": LONG_PATH, "id": "p"}])
    lines[0] = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return lines


def _giant(rng: random.Random, lines: Lines, body: bytes) -> Lines:
    parent = b"null"
    entries = [o for _, o in _objects(lines) if isinstance(o.get("id"), str)]
    if entries:
        parent = json.dumps(rng.choice(entries)["id"]).encode()
    line = (b'{"type":"message","id":"giant1","parentId":' + parent + b',"timestamp":"2026-05-01T10:00:00.000Z",'
            b'"message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":' + body + b"}}")
    lines.insert(_pick(rng, lines) + 1 if len(lines) > 1 else len(lines), line)
    return lines


def giant_string(rng: random.Random, lines: Lines) -> Lines:
    return _giant(rng, lines, b'[{"type":"text","text":"' + b"log line \\n" * (GIANT // 11) + b'"}]')


def giant_nested(rng: random.Random, lines: Lines) -> Lines:
    return _giant(rng, lines, b"[" * GIANT)


def giant_tiny_strings(rng: random.Random, lines: Lines) -> Lines:
    return _giant(rng, lines, b"[" + b'"a",' * (GIANT // 4) + b'"a"]')


def giant_number(rng: random.Random, lines: Lines) -> Lines:
    return _giant(rng, lines, b"9" * GIANT)


KINDS: dict[str, Callable[[random.Random, Lines], Lines]] = {
    f.__name__: f for f in (
        truncate_file, truncate_line, byte_flips, invalid_utf8, invalid_utf8_in_tool_result_ids, lone_surrogate,
        deep_nesting, unbalanced_brackets, huge_number, nan_infinity, wrong_type, wrong_header, duplicate_lines,
        remove_lines, reorder_lines, glue_lines, parent_cycle, dangling_and_duplicate_ids, missing_header,
        text_lines, spaced_json, crlf_blank_and_separators, control_characters, marker_fragments, giant_string,
        giant_nested, giant_tiny_strings, giant_number, trailing_data, long_header_values,
    )
}
GIANT_KINDS = {"giant_string", "giant_nested", "giant_tiny_strings", "giant_number"}


INSERTED_RECALL = "FUZZ-RECALL"  # searched for in the output like the seeded markers


def insert_recall(rng: random.Random, lines: Lines) -> Lines:
    """Splice recall entries (both of pi's shapes) between entries and their children, as the live extension
    leaves them: what ``prune-recall-messages`` then has to take out of the damaged file."""
    for n in range(rng.randint(1, 3)):
        entries = [(i, o) for i, o in _objects(lines) if i > 0 and isinstance(o.get("id"), str)]
        if not entries:
            return lines
        i, parent = rng.choice(entries)
        recall_id = f"fuzz-recall-{n}"
        text = f"<hindsight_memories>{INSERTED_RECALL}</hindsight_memories>"
        place = {"id": recall_id, "parentId": parent["id"], "timestamp": parent.get("timestamp")}
        if rng.random() < 0.5:
            recall = {"type": "custom_message", "customType": "hindsight-recall", "content": text, "display": False,
                      **place}
        else:
            recall = {"type": "message", **place, "message": {"role": "custom", "customType": "hindsight-recall",
                                                             "content": text, "display": False, "timestamp": 0}}
        for j, child in _objects(lines[i + 1:]):
            if child.get("parentId") == parent["id"]:  # its first child hangs off the recall now
                child["parentId"] = recall_id
                lines[i + 1 + j] = json.dumps(child, ensure_ascii=False, separators=(",", ":")).encode(
                    "utf-8", "surrogatepass")
                break
        lines.insert(i + 1, json.dumps(recall, separators=(",", ":")).encode())
    return lines


def mutate(rng: random.Random, source: bytes) -> tuple[bytes, list[str], set[bytes]]:
    """The damaged file, its kinds of damage, and the lines it had before the damage (recall spliced in)."""
    lines = source.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    kinds = []
    if rng.random() < 0.6:
        lines = insert_recall(rng, lines)
        kinds.append("recall")
    before = set(lines)
    for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 4)):
        kind = rng.choice([k for k in KINDS if k not in GIANT_KINDS]) if rng.random() < 0.97 else rng.choice(
            sorted(GIANT_KINDS))
        if kind in GIANT_KINDS and any(k in GIANT_KINDS for k in kinds):
            continue
        lines = KINDS[kind](rng, lines or [b""])
        kinds.append(kind)
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.9 else b""), kinds, before


# ---------------------------------------------------------------- the worker: one file at a time
def _is_recall(obj: dict[str, Any]) -> bool:
    """pi's two shapes of a recall entry (an independent reading of what prune-recall-messages removes)."""
    message = obj.get("message") if obj.get("type") == "message" else obj
    return isinstance(message, dict) and message.get("customType") == "hindsight-recall" and (
        obj.get("type") == "custom_message" or message.get("role") in ("custom", "hookMessage"))


def prune_check(path: Path) -> tuple[str, str | None]:
    """``prune-recall-messages --confirm`` on a copy of ``path``: its status, and what broke, if anything. Its
    promises: no file it cannot vouch for (``failed``), the original bytes as the backup, and, as pi reads the file
    (the reader's view with glued lines dropped), no recall entry left and the active path the old one minus the
    recall entries (a recall entry that was the leaf may stay neutralised)."""
    from hindsight_batch.prune import prune_file
    from hindsight_batch.session.reader import EntryCallback, read_session
    from hindsight_batch.session.tree import active_path

    copy = path.with_name(path.stem + ".pruned.jsonl")
    original = path.read_bytes()
    copy.write_bytes(original)
    try:
        def recall_ids(session_path: Path) -> tuple[list[str], set[str]]:
            """pi's active path and recall entries: the reader's, with glued lines dropped as pi drops them."""
            glued = set(read_session(session_path).glued_lines)
            as_pi = path.with_name(path.stem + ".as-pi.jsonl")
            as_pi.write_bytes(b"\n".join(b"" if n in glued else line
                                         for n, line in enumerate(session_path.read_bytes().split(b"\n"), 1)))
            session = read_session(as_pi, EntryCallback(lambda obj, node: _is_recall(obj)))
            last = {e.id: e for e in session.entries}  # an id two lines share is the later one's, as in pi
            return [e.id for e in active_path(session.entries)], {i for i, e in last.items() if e.payload}

        before, recall = recall_ids(copy)
        result = prune_file(copy, confirm=True, force=True)
        if result.status == "failed":
            return result.status, f"prune failed: {result.reason}"
        if result.status != "pruned":
            return result.status, None
        if Path(result.backup or "").read_bytes() != original:
            return result.status, "the backup is not the original"
        after, left = recall_ids(copy)
        if left:
            return result.status, f"recall left: {sorted(left)[:3]}"
        stays = left | set(result.plan["neutralise"])
        if after != [i for i in before if i not in recall or i in stays]:
            return result.status, "the active path is not the old one minus the recall"
        return result.status, None
    finally:
        for leftover in [*path.parent.glob(copy.name + "*"), path.with_name(path.stem + ".as-pi.jsonl")]:
            leftover.unlink(missing_ok=True)


def worker() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    sys.path.insert(0, str(REPO))
    from hindsight_batch.base import jsoncodec
    from hindsight_batch.config import Settings
    from hindsight_batch.plan.planning import plan_session
    from hindsight_batch.redaction.redactor import Redactor
    from hindsight_batch.retention.records import StageTimes
    from hindsight_batch.session.reader import peek_header

    settings = {
        "default": Settings(),
        "retain-all": Settings.model_validate({
            "retainContent": {"user": ["text", "thinking", "toolCall", "image"],
                              "assistant": ["text", "thinking", "toolCall", "image"], "toolResult": ["text"]},
            "toolFilter": {"toolCall": {"include": ["*"]}, "toolResult": {"include": ["*"]}},
            "strip": {"topLevel": [], "message": []},
            "import": {"compaction": "context", "branches": "all"},
        }),
    }
    redactor = Redactor(b"fuzz-key")
    needles = [line for name in ("seeded-memory-markers.txt", "seeded-secrets.txt")
               for line in (REPO / "samples" / name).read_text().splitlines() if line] + [INSERTED_RECALL]
    for request in sys.stdin:
        job = json.loads(request)
        path = Path(job["path"])
        result: dict[str, Any] = {"ok": True}
        try:
            header = peek_header(path)
            if isinstance(header, str):
                result["status"] = "not-a-session"
            else:
                plan = plan_session(path, header, settings[job["settings"]], redactor, "fuzz", True, StageTimes())
                out: list[str] = []
                for row in plan.rows:
                    out.append(json.dumps(row.as_json(), ensure_ascii=False))  # as the manifest writer does
                for planned in plan.items:
                    out.append(jsoncodec.dumps(planned.item.payload()).decode("utf-8"))  # as uploaded
                text = "\n".join(out)
                text.encode("utf-8")  # strict: a lone surrogate would fail here, as in the manifest or upload
                result["status"] = "planned"
                result["malformed"] = plan.session.malformed_total
                result["leaks"] = [n for n in needles if n in text]
            result["prune"], problem = prune_check(path)
            if problem:
                result = {"ok": False, "error": problem}
        except BaseException as exc:
            result = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


class Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def run(self, job: dict[str, str], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return {"ok": False, "hang": True, "error": f"no answer in {timeout:.0f} s"}
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            return {"ok": False, "error": f"worker died: {'signal ' + str(-code) if code < 0 else 'exit ' + str(code)}"}
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


# ---------------------------------------------------------------- the CLI campaign: import, prune and flush
# Each run is the real command in its own process (RLIMIT_AS as for the worker), on a folder of damaged files,
# sometimes with files swapped for special files while it runs, its outputs on a full disk, or a signal mid-run.
# A crash is exit 70, a traceback, a death by a signal not sent, or a failed item whose reason is MemoryError;
# a hang is a run past its timeout (then killed).

SPECIAL = ["fifo", "folder", "link to a fifo", "link to a device", "dangling link", "link loop"]
EXPECTED_EXITS = {"import": {0, 1, 2}, "prune": {0, 1, 2}, "flush": {0, 1, 2}}


def swap_for_special(path: Path, kind: str) -> None:
    """Put ``kind`` where ``path`` was (a regular file, or gone)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link to a fifo":
        target = path.with_name(path.name + ".fifo")
        with contextlib.suppress(FileExistsError):
            os.mkfifo(target)
        path.symlink_to(target.name)
    elif kind == "link to a device":
        path.symlink_to("/dev/zero")
    elif kind == "dangling link":
        path.symlink_to(path.name + ".nowhere")
    else:
        path.symlink_to(path.name)  # itself: ELOOP


def queue_lines(rng: random.Random, count: int) -> Lines:
    """Retain-queue jobs of both extensions' layouts, some holding recall or a secret, then damaged like a
    session's lines (the same kinds: a queue is JSON lines too)."""
    secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    lines: Lines = []
    for n in range(count):
        text = rng.choice(["fixed the build", "émoji 😀 日本語", f"token {secret}",
                           "<hindsight_memories>FUZZ-RECALL</hindsight_memories>", "a\nnew line"])
        if rng.random() < 0.5:
            job: dict[str, Any] = {"id": f"j{n}", "bankId": "fuzz", "createdAt": "2026-05-01T10:00:00.000Z",
                                   "documentId": f"d{n}", "updateMode": "replace", "retries": rng.choice([0, 2, 9]),
                                   "item": {"content": text, "context": "pi", "tags": ["harness:pi"]}}
        else:
            job = {"bankId": "fuzz", "content": text, "document_id": f"d{n}", "update_mode": "replace"}
        lines.append(json.dumps(job, ensure_ascii=False).encode())
    kinds = [k for k in KINDS if k not in GIANT_KINDS and k not in ("wrong_header", "missing_header",
                                                                     "long_header_values")]
    for _ in range(rng.randint(0, 3)):
        lines = KINDS[rng.choice(kinds)](rng, lines or [b""])
    return lines


class SmallDisk:
    """A tmpfs of ``size`` (as root, where mounts are allowed): each use leaves a random few KB free, so writes
    fail at varied points. Where none can be mounted, ``path`` is None and faults are injected instead."""

    def __init__(self, folder: Path, size: str = "1m", mount: bool = True) -> None:
        self.path: Path | None = folder / "disk"
        self.path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.path)],
                              capture_output=True, check=False) if mount and os.geteuid() == 0 else None
        if done is None or done.returncode != 0:
            self.path = None

    def fresh(self, rng: random.Random) -> Path:
        assert self.path is not None
        for child in self.path.iterdir():
            subprocess.run(["rm", "-rf", str(child)], check=False)
        free = os.statvfs(self.path).f_bavail * os.statvfs(self.path).f_frsize
        (self.path / "filler").write_bytes(b"\0" * max(0, free - rng.randrange(0, 600_000)))
        return self.path

    def close(self) -> None:
        if self.path is not None:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)


# Where no tmpfs can be mounted: the command runs through this driver, which makes writes fail with ENOSPC at a
# random point (the ledger's loads as DuckDB words it, the atomic rewrites, the manifest's writes).
FAKE_ENOSPC = r"""
import errno, os, random, sys
import duckdb
from hindsight_batch import cli
from hindsight_batch.base import fsutil
from hindsight_batch.sinks import manifest
from hindsight_batch.ledger import schema as ledger_schema
rng = random.Random(int(sys.argv[1]))
def failing(real, make):
    def wrapped(*args, **kwargs):
        if rng.random() < 0.2:
            raise make()
        return real(*args, **kwargs)
    return wrapped
no_space = lambda: OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
ledger_schema.load_records = failing(ledger_schema.load_records, lambda: duckdb.IOException(
    'Could not write file "ledger.duckdb.wal": No space left on device'))
fsutil.write_all = failing(fsutil.write_all, no_space)
real_write = manifest.ManifestWriter.write_lines
def write_lines(self, lines):
    if self._file is not None and rng.random() < 0.2:
        self._file = open("/dev/full", "wb", buffering=0)
    return real_write(self, lines)
manifest.ManifestWriter.write_lines = write_lines
sys.argv = ["hindsight-batch", *sys.argv[2:]]
cli.main()
"""


def _copy_what_fits(source: str, target: str) -> None:
    with contextlib.suppress(OSError):
        shutil.copy2(source, target)


def run_command(argv: list[str], env: dict[str, str], timeout: float, rng: random.Random,
                swap: list[Path] | None, signal_after: float | None) -> dict[str, Any]:
    """Run one command; its exit code, stderr, max RSS and whether it hung. ``swap``: files replaced by special
    files at random moments while it runs; ``signal_after``: SIGINT or SIGTERM sent then."""
    import signal as signals

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        signals.signal(signals.SIGINT, signals.SIG_DFL)

    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, preexec_fn=limit)
        started = time.monotonic()
        events = sorted([(rng.uniform(0, 1.5), ("swap", p)) for p in swap or []]
                        + ([(signal_after, ("signal", rng.choice([signals.SIGINT, signals.SIGTERM])))]
                           if signal_after is not None else []), key=lambda e: e[0])
        sent = None
        hang = False
        status = rusage = None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.monotonic() - started
            while events and events[0][0] <= elapsed:
                _, (what, arg) = events.pop(0)
                if what == "swap":
                    swap_for_special(arg, rng.choice(SPECIAL))
                else:
                    sent = arg
                    proc.send_signal(arg)
            if elapsed > timeout:
                hang = True
                proc.kill()
                pid, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return {"code": proc.returncode, "stderr": stderr, "rss_mb": rusage.ru_maxrss / 1024 if rusage else 0.0,
            "hang": hang, "signal": sent}


def campaign(target: str, seconds: float, seed: int, folder: Path, timeout: float,
             tmpfs: bool = True) -> dict[str, Any]:
    """Runs of ``target`` for ``seconds``: the counts, and what went wrong."""
    import signal as signals

    from tests.fake_hindsight import FakeState, fake_hindsight

    rng = random.Random(f"{seed}-{target}")
    sources = sorted(p for root in SOURCES for p in root.rglob("*.jsonl"))
    originals = {p: p.read_bytes() for p in sources}
    disk = SmallDisk(folder / target, mount=tmpfs)
    counts: Counter[str] = Counter()
    codes: Counter[int] = Counter()
    findings: list[str] = []
    peak = 0.0
    deadline = time.monotonic() + seconds
    try:
        with fake_hindsight(FakeState()) as url:
            while time.monotonic() < deadline:
                run = counts["runs"]
                case = folder / target / f"run{run:04d}"
                inputs = case / "in"
                inputs.mkdir(parents=True)
                home = case / "home"
                home.mkdir()
                env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(case / "xdg"),
                       "HINDSIGHT_BASE_URL": url, "PYTHONPATH": str(REPO)}
                env.pop("HINDSIGHT_API_KEY", None)
                files: list[Path] = []
                if target == "flush":
                    for n in range(rng.randint(1, 4)):
                        path = inputs / f"q{n}.auto.jsonl"
                        path.write_bytes(b"\n".join(queue_lines(rng, rng.randint(1, 30))) + b"\n")
                        files.append(path)
                else:
                    for n in range(rng.randint(2, 10)):
                        data, _kinds, _ = mutate(rng, originals[rng.choice(sources)])
                        path = inputs / f"--proj{n % 3}--" / f"s{n}.jsonl"
                        path.parent.mkdir(exist_ok=True)
                        path.write_bytes(data)
                        old = time.time() - 7200
                        os.utime(path, (old, old))
                        files.append(path)
                counts["files"] += len(files)
                special = rng.random() < 0.25
                full = rng.random() < 0.2
                interrupt = rng.random() < 0.1
                out = case / "out"
                if full and disk.path is not None:
                    out = disk.fresh(rng)
                else:
                    out.mkdir()
                if target == "import":
                    args = ["import", str(inputs), "--state", str(out / "state"), "--manifest",
                            str(out / "m.jsonl"), "--json", "-q", "--live-retained", "include"]
                    args += rng.choice([[], ["--include-content"], ["--apply"], ["--jobs", "2"],
                                        ["--branches", "all", "--compaction", "context"]])
                elif target == "prune":
                    args = ["prune-recall-messages", str(inputs), "--json", "--force"]
                    args += rng.choice([["--confirm"], ["--confirm", "--backup-dir", str(out / "backups")]])
                    if full and disk.path is not None and rng.random() < 0.5:  # the sessions on the full disk
                        shutil.copytree(inputs, out / "in", dirs_exist_ok=True,
                                        ignore_dangling_symlinks=True, copy_function=_copy_what_fits)
                        files = sorted((out / "in").rglob("*.jsonl"))
                        args[1] = str(out / "in")
                else:
                    args = ["flush", str(inputs), "--json", *rng.choice([[], ["--dry-run"], ["--max-jobs", "3"]])]
                    if full and disk.path is not None:  # the queues themselves on the full disk
                        for path in files:
                            with contextlib.suppress(OSError):
                                (out / path.name).write_bytes(path.read_bytes())
                        args[1] = str(out)
                argv = [sys.executable, "-m", "hindsight_batch", *args]
                if full and disk.path is None:
                    argv = [sys.executable, "-c", FAKE_ENOSPC, str(rng.randrange(1 << 30)), *args]
                result = run_command(argv, env, timeout, rng, rng.sample(files, min(len(files), 2)) if special
                                     else None, rng.uniform(0.2, 1.5) if interrupt else None)
                counts["runs"] += 1
                counts["special"] += special
                counts["full disk"] += full
                counts["interrupted"] += interrupt
                codes[result["code"]] += 1
                peak = max(peak, result["rss_mb"])
                code, stderr, sent = result["code"], result["stderr"], result["signal"]
                expected = EXPECTED_EXITS[target] | ({130 if sent == signals.SIGINT else 143} if sent else set())
                if target == "import" and "--apply" in args:
                    expected |= {4}  # (the fake server's faults are not in play, but an unreachable one is 4)
                problem = None
                if result["hang"]:
                    counts["hangs"] += 1
                    problem = "hang"
                elif code == 70:
                    counts["exit 70"] += 1
                    problem = "exit 70"
                elif "Traceback" in stderr or "MemoryError" in stderr or code not in expected:
                    counts["crashes"] += 1
                    problem = f"exit {code}"
                if problem is not None:
                    tail = " | ".join(stderr.strip().splitlines()[-2:])[:300]
                    findings.append(f"{case.name} ({' '.join(args[:1] + args[2:])}; special {special}, full {full}, "
                                    f"signal {sent}): {problem}: {tail}")
                else:
                    subprocess.run(["rm", "-rf", str(case)], check=False)
                if full and disk.path is not None:
                    disk.fresh(rng)
    finally:
        disk.close()
    return {"target": target, "counts": counts, "codes": codes, "peak": peak, "findings": findings,
            "tmpfs": disk.path is not None}


def cli_campaign(targets: list[str], seconds: float, seed: int, timeout: float, keep: Path | None,
                 tmpfs: bool = True) -> int:
    folder = keep or Path(tempfile.mkdtemp(prefix="hb-fuzz-cli-"))
    sys.path.insert(0, str(REPO))
    failed = 0
    for target in targets:
        started = time.perf_counter()
        report = campaign(target, seconds, seed, folder, timeout, tmpfs)
        c = report["counts"]
        print(f"{target}: runs {c['runs']}, files {c['files']} (special files swapped in {c['special']} runs, "
              f"full disk {c['full disk']} ({'tmpfs' if report['tmpfs'] else 'injected ENOSPC'}), "
              f"signalled {c['interrupted']}) in {time.perf_counter() - started:.0f} s")
        exits = ", ".join(f"{k}: {v}" for k, v in sorted(report["codes"].items()))
        print(f"  crashes {c['crashes']}  exit 70s {c['exit 70']}  hangs {c['hangs']}  max RSS "
              f"{report['peak']:.0f} MB; exit codes {exits}")
        for line in report["findings"][:20]:
            print("    " + line)
        failed += len(report["findings"])
    if failed:
        print(f"failing runs kept in {folder}")
    else:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per file")
    parser.add_argument("--keep", type=Path, help="write the mutated files here and keep them")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cli", nargs="+", choices=["import", "prune", "flush"],
                        help="run the real commands instead (a campaign of --seconds each)")
    parser.add_argument("--seconds", type=float,
                        help="stop after this long (with --cli: how long each command is run; default 60)")
    parser.add_argument("--no-tmpfs", action="store_true", help="with --cli: inject ENOSPC rather than mount")
    args = parser.parse_args()
    if args.worker:
        worker()
        return
    if args.cli:
        sys.exit(cli_campaign(args.cli, args.seconds or 60.0, args.seed, args.timeout, args.keep, not args.no_tmpfs))
    sources = sorted(p for root in SOURCES for p in root.rglob("*.jsonl"))
    originals = {p: p.read_bytes() for p in sources}
    rng = random.Random(args.seed)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="hb-fuzz-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    findings: list[str] = []
    leaks_intact: list[str] = []
    leaks_damaged: list[str] = []
    peak = giant_peak = 0.0
    worker_proc = Worker()
    for n in range(args.files):
        if args.seconds is not None and time.perf_counter() - started > args.seconds:
            break
        source = rng.choice(sources)
        data, kinds, original_lines = mutate(rng, originals[source])
        by_kind.update(kinds)
        path = folder / f"{n:05d}.jsonl"
        path.write_bytes(data)
        giant = any(k in GIANT_KINDS for k in kinds)
        if giant:  # a fresh process, so the peak RSS measured is this file's
            worker_proc.stop()
            worker_proc = Worker()
        job = {"path": str(path), "settings": "retain-all" if n % 3 == 2 else "default"}
        result = worker_proc.run(job, args.timeout * (4 if giant else 1))
        counts["files"] += 1
        if result.get("rss_mb"):
            peak = max(peak, result["rss_mb"])
            if giant:
                giant_peak = max(giant_peak, result["rss_mb"])
        if not result["ok"]:
            counts["hangs" if result.get("hang") else "crashes"] += 1
            findings.append(f"{path.name} ({source.name}; {'+'.join(kinds)}): {result['error']}")
            if result.get("hang") or "died" in result["error"]:
                worker_proc = Worker()
        else:
            counts[result["status"]] += 1
            counts[f"prune {result['prune']}"] += 1
            counts["malformed lines"] += result.get("malformed", 0)
            for needle in result.get("leaks", []):
                holders = [line for line in data.split(b"\n") if needle.encode() in line]
                intact = any(line in original_lines for line in holders)
                (leaks_intact if intact else leaks_damaged).append(f"{path.name} ({'+'.join(kinds)}): {needle}")
        if not args.keep and result["ok"]:
            path.unlink()
    worker_proc.stop()
    seconds = time.perf_counter() - started
    print(f"files {counts['files']} (sessions planned {counts['planned']}, not a session {counts['not-a-session']}, "
          f"malformed lines reported {counts['malformed lines']}) in {seconds:.0f} s, seed {args.seed}")
    print(f"prune-recall-messages --confirm on each: pruned {counts['prune pruned']}, clean {counts['prune clean']}, "
          f"not a session {counts['prune not-a-session']}")
    print(f"crashes {counts['crashes']}  hangs {counts['hangs']}  peak RSS {peak:.0f} MB "
          f"(files with a 9 MB line: {giant_peak:.0f} MB)")
    print(f"leaks of recall, hindsight-tool text or a seeded secret: {len(leaks_intact)} from intact lines, "
          f"{len(leaks_damaged)} from lines whose own markers the damage destroyed")
    print(f"damage kinds ({len(by_kind)}): " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
    for line in findings[:30] + leaks_intact[:30]:
        print("  " + line)
    if findings or leaks_intact:
        print(f"failing files kept in {folder}")
    elif not args.keep:
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    sys.exit(1 if findings or leaks_intact else 0)


if __name__ == "__main__":
    main()
