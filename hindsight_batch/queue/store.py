"""Retain queues the live extension leaves behind: both layouts, their lock, and safe rewriting.

Layouts (SPEC §3.2, ``reference/pi-hindsight.md`` §3):

* ``~/.hindsight/pi-queues/<sessionId>.<auto|tool>.jsonl``: one record per line, ``{sessionId, bankId, content,
  context, tags, metadata, timestamp, document_id, update_mode, observation_scopes}``;
* ``<project>/.pi/hindsight/retain-queue.jsonl``: one job per line, ``{id, bankId, createdAt, documentId,
  updateMode, item:{content, context, timestamp, tags, metadata, observationScopes, …}, retries, lastError?}``.

Beside each queue: ``<queue>.lock`` (a directory, created atomically, holding an ``owner`` file with pid, token
and times), ``<queue>.dead.jsonl`` (jobs that kept failing or must never be sent, with the reason) and
``<queue>.malformed.jsonl`` (lines that are not a job, quarantined as ``{quarantinedAt, sourceQueue, line}``).
A lock whose owner process is gone, or whose heartbeat is older than 30 s, is stale and may be taken over; a
live one means someone else (pi, or another flush) is working on the queue: like the extension, we wait up to 5 s
for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import read_regular, replace_file, write_all
from hindsight_batch.errors import BusyError, without_surrogates
from hindsight_batch.redaction.messages import failure_reason
from hindsight_batch.session.jsonl import replace_lone_surrogates

STALE_SECONDS = 30.0
WAIT_SECONDS = 5.0  # the extension's own wait for a live lock, retried every 25 ms
RETRY_SECONDS = 0.025
MAX_RETRIES = 5
MAX_DEPTH = 64  # a job is a few flat fields; anything nested deeper is not one (and would strain every encoder)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Job:
    """One queued retain, in either layout, normalised; ``raw`` is the line's object as found."""

    key: str  # the job's id, or a hash of its line when the layout has none; unique in its queue (read_queue)
    bank_id: str
    item: dict[str, Any]  # a MemoryItem for the server: content, context, timestamp, document_id, …
    raw: dict[str, Any]
    line: bytes
    retries: int = 0
    surrogates: int = 0  # lone surrogates replaced by U+FFFD in ``item`` (a JS string cut mid-pair holds one)
    repeat: int = 0  # how many earlier lines of its queue had the same id (or, without one, the same bytes)

    @property
    def document_id(self) -> str | None:
        value = self.item.get("document_id")
        return value if isinstance(value, str) else None


class InvalidJob(ValueError):
    """A line that parses but is not a job of either layout."""


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidJob(f"{name} must be a list of strings")
    return list(value)


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidJob("metadata must map strings to strings")
    return dict(value)


def _scopes(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(g, list) and all(isinstance(t, str) for t in g) for g in value):
        return value
    raise InvalidJob("observation scopes must be a keyword or a list of lists of strings")


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether containers nest deeper than ``limit`` (iterative: a recursive walk would fail on the input it
    is meant to refuse)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict | list):
            if depth >= limit:
                return True
            children = current.values() if isinstance(current, dict) else current
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def clean_text(value: Any) -> tuple[Any, int]:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD (containers in place), and
    how many: such text can be neither sent nor written as UTF-8."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, dict | list):
        return value, replace_lone_surrogates(value)
    return value, 0


def parse_job(obj: Any, line: bytes) -> Job:
    if not isinstance(obj, dict):
        raise InvalidJob("not a JSON object")
    if _too_deep(obj):
        raise InvalidJob(f"nested deeper than {MAX_DEPTH} levels")
    nested = isinstance(obj.get("item"), dict)
    source = obj["item"] if nested else obj
    bank = obj.get("bankId")
    if not isinstance(bank, str) or not bank.strip():
        raise InvalidJob("bankId missing")
    content = source.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidJob("content missing or not a string")
    document_id = obj.get("documentId") if nested else obj.get("document_id")
    update_mode = (obj.get("updateMode") if nested else obj.get("update_mode")) or "replace"
    if update_mode not in ("append", "replace"):
        raise InvalidJob(f"unknown update mode {update_mode!r}")
    if document_id is not None and not isinstance(document_id, str):
        raise InvalidJob("document id must be a string")
    if update_mode == "append" and not document_id:
        raise InvalidJob("append needs a document id")
    item: dict[str, Any] = {"content": content, "update_mode": update_mode}
    if document_id:
        item["document_id"] = document_id
    context = source.get("context")
    if isinstance(context, str):
        item["context"] = context
    timestamp = source.get("timestamp")
    if isinstance(timestamp, str):
        item["timestamp"] = timestamp
    item["tags"] = _strings(source.get("tags"), "tags")
    metadata = _metadata(source.get("metadata"))
    if metadata is not None:
        item["metadata"] = metadata
    scopes = _scopes(source.get("observationScopes") if nested else source.get("observation_scopes"))
    if scopes is not None:
        item["observation_scopes"] = scopes
    if nested and isinstance(source.get("strategy"), str):
        item["strategy"] = source["strategy"]
    job_id = obj.get("id")
    key = job_id if isinstance(job_id, str) and job_id else hashlib.sha256(line).hexdigest()[:32]
    retries = obj.get("retries")
    item, surrogates = clean_text(item)
    bank, in_bank = without_surrogates(bank)
    return Job(key, bank, item, obj, line, retries if isinstance(retries, int) and retries >= 0 else 0,
               surrogates + in_bank)


@dataclass
class QueueContents:
    jobs: list[Job] = field(default_factory=list)
    malformed: list[tuple[bytes, str]] = field(default_factory=list)


def read_queue(path: Path) -> QueueContents:
    """The jobs and the malformed lines of a queue file. Each line is a job, as the extension sends each: one that
    repeats an earlier one's id (or, without ids, its bytes) is keyed ``<key>#2``, ``#3``…, so that sending one
    never takes the other out of the queue unsent."""
    contents = QueueContents()
    data = read_regular(path) if path.exists() else b""
    keys: set[str] = set()
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            job = parse_job(obj, line)
            key = job.key
            while key in keys:
                job.repeat += 1
                key = f"{job.key}#{job.repeat + 1}"
            keys.add(key)
            job.key = key
            contents.jobs.append(job)
        except RecursionError:
            contents.malformed.append((line, "nested too deeply to be a job"))
        except Exception as exc:  # whatever a line holds, it is this line's problem, never the queue's
            contents.malformed.append((line, failure_reason(exc)))
    return contents


def queue_files(roots: list[Path]) -> Iterator[Path]:
    """Queue files named by ``roots`` (queue files, ``pi-queues`` folders, or project folders)."""
    for root in roots:
        if root.is_file():
            yield root
        elif (root / ".pi" / "hindsight" / "retain-queue.jsonl").is_file():
            yield root / ".pi" / "hindsight" / "retain-queue.jsonl"
        elif root.is_dir():
            for path in sorted(root.glob("*.jsonl")):
                if not path.name.endswith((".dead.jsonl", ".malformed.jsonl")):
                    yield path


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_owner(lock: Path) -> dict[str, Any]:
    try:
        data = jsoncodec.loads((lock / "owner").read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class QueueLock:
    """The extension's lock protocol: a ``<queue>.lock`` directory with an ``owner`` file inside."""

    def __init__(self, queue: Path) -> None:
        self.path = queue.with_name(queue.name + ".lock")
        self.token = secrets.token_hex(8)
        self.held = False

    def _owner(self) -> dict[str, Any]:
        return _read_owner(self.path)

    def _age(self) -> float | None:
        """Seconds since the owner last wrote (the directory's age while no owner file exists yet); None if gone."""
        times = []
        for path in (self.path / "owner", self.path):
            try:
                times.append(path.stat().st_mtime)
            except OSError:
                continue
        return time.time() - max(times) if times else None

    def _stale(self, owner: dict[str, Any]) -> bool:
        age = self._age()
        if age is None:
            return False  # released meanwhile: simply try again
        if not owner:
            return age > STALE_SECONDS  # a lock being created right now has no owner file yet
        return not _pid_alive(owner.get("pid")) or age > STALE_SECONDS

    def _take_over(self, stale_owner: dict[str, Any], inode: int) -> None:
        """Remove a stale lock without removing a live one that replaced it meanwhile.

        The directory is renamed aside first (atomic), then compared with the one judged stale; if another
        process took the lock over in between, it is put back.
        """
        aside = self.path.with_name(f"{self.path.name}.stale.{self.token}")
        try:
            os.rename(self.path, aside)
        except OSError:
            return  # someone else removed it first
        if _read_owner(aside).get("token") != stale_owner.get("token") or aside.stat().st_ino != inode:
            with contextlib.suppress(OSError):
                os.rename(aside, self.path)
                return
        shutil.rmtree(aside, ignore_errors=True)

    def acquire(self, wait: float = WAIT_SECONDS) -> None:
        """Take the lock, waiting up to ``wait`` seconds for a live owner (pi holds it for milliseconds)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                self.path.mkdir()
            except FileExistsError:
                try:
                    inode = self.path.stat().st_ino
                except OSError:
                    continue  # released meanwhile
                owner = self._owner()
                if self._stale(owner):
                    self._take_over(owner, inode)
                    continue
                if time.monotonic() >= deadline:
                    raise BusyError(f"{self.path} is held by process {owner.get('pid', '?')}: "
                                    "a live pi session or another flush is using this queue") from None
                time.sleep(RETRY_SECONDS)
                continue
            self.held = True
            self.heartbeat()
            return

    def heartbeat(self) -> None:
        owner = {"pid": os.getpid(), "acquiredAt": now_iso(), "token": self.token, "heartbeatAt": now_iso()}
        data = json.dumps(owner).encode()
        replace_file(self.path / "owner", lambda fd: write_all(fd, data), temp=self.path / f".owner.{self.token}")

    def release(self) -> None:
        if self.held and self._owner().get("token") == self.token:
            shutil.rmtree(self.path, ignore_errors=True)
        self.held = False

    def __enter__(self) -> QueueLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def side_file(queue: Path, kind: str) -> Path:
    """``<queue>.dead.jsonl`` or ``<queue>.malformed.jsonl`` beside a queue file."""
    return queue.with_name(f"{queue.name.removesuffix('.jsonl')}.{kind}.jsonl")


def _atomic_write(path: Path, lines: list[bytes], *, private: bool) -> None:
    """Replace ``path`` with ``lines``, atomically (:func:`~hindsight_batch.base.fsutil.replace_file`). ``private``:
    mode 0600 whatever the umask (dead letters and quarantined lines hold transcript text); otherwise the file
    keeps the mode and owner it had (the extension's queue)."""
    data = b"".join(line + b"\n" for line in lines)
    replace_file(path, lambda fd: write_all(fd, data), private=private)


def rewrite_queue(path: Path, keep: list[bytes]) -> None:
    """Replace the queue with ``keep`` (its remaining lines), atomically, under the caller's lock; the queue keeps
    its mode and owner."""
    _atomic_write(path, keep, private=False)


def _record_key(record: dict[str, Any]) -> tuple[str, str] | None:
    """What makes two side-file records the same one: a job's id, or a quarantined line's (redacted) text."""
    if isinstance(record.get("id"), str):
        return ("id", record["id"])
    if isinstance(record.get("line"), str):
        return ("line", f"{record.get('sourceQueue')}\n{record['line']}")
    return None


def append_lines(path: Path, records: list[dict[str, Any]]) -> None:
    """Add records to a side file (dead letters, malformed lines); written before the queue drops them, so a kill
    in between leaves them in both: each record is added only if the file does not hold it yet (same job id, or
    the same redacted line from the same queue), and a run after a kill adds nothing twice."""
    if not records:
        return
    existing = read_regular(path) if path.exists() else b""
    lines = [line for line in existing.split(b"\n") if line.strip()]
    seen = set()
    for line in lines:
        with contextlib.suppress(ValueError, AttributeError, RecursionError):
            seen.add(_record_key(json.loads(line)))
    added = False
    for record in records:
        key = _record_key(record)
        if key is not None and key in seen:
            continue
        seen.add(key)
        lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode())
        added = True
    if added:
        _atomic_write(path, lines, private=True)
