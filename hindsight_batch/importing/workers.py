"""``import --jobs N``: planning sessions in worker processes (:func:`run_in_workers`). The parent sends a
:class:`PlanTask` per session and gets the plan back; the entry index stays in the worker. Workers end with their
parent. While they read, workers tell the parent how far (the progress bar moves by bytes, as with one process).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import pickle
import signal
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

from hindsight_batch.config import Settings
from hindsight_batch.errors import HindsightBatchError
from hindsight_batch.extension.catchup import CatchUpVerdict
from hindsight_batch.importing.from_run import file_sha256
from hindsight_batch.plan.planning import SessionPlan, plan_session
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.model import SessionHeader

if TYPE_CHECKING:
    from multiprocessing.connection import Connection


@dataclass(frozen=True)
class PlanTask:
    """What a worker process needs to plan one session (sent to it pickled)."""

    path: Path
    header: SessionHeader
    settings: Settings
    fingerprint_key: bytes
    run_id: str
    include_content: bool
    handled: CatchUpVerdict | None
    hash_file: bool = False  # hash the file's bytes here, before planning reads it (not in the parent, one by one)
    keep_items: bool = True  # False: nothing is sent (a dry run); the plan comes back without its items' text

    def __reduce__(self) -> tuple[Callable[..., PlanTask], tuple[object, ...]]:
        """Pickled with its settings as bytes pickled once per settings object: many sessions share one, and a
        pydantic model is most of what a task costs to pickle."""
        return _task, (self.path, self.header, _settings_pickled(self.settings), self.fingerprint_key, self.run_id,
                       self.include_content, self.handled, self.hash_file, self.keep_items)


# The parent's settings, pickled (id -> (settings, bytes): the object is kept, so its id stays its own), and a
# worker's, unpickled (bytes -> settings). Settings are never changed once made (one object serves every session
# that shares them in a single process too).
_SETTINGS_PICKLED: dict[int, tuple[Settings, bytes]] = {}
_SETTINGS_UNPICKLED: dict[bytes, Settings] = {}


def _settings_pickled(settings: Settings) -> bytes:
    found = _SETTINGS_PICKLED.get(id(settings))
    if found is None or found[0] is not settings:
        found = _SETTINGS_PICKLED[id(settings)] = (settings, pickle.dumps(settings, pickle.HIGHEST_PROTOCOL))
    return found[1]


def _task(path: Path, header: SessionHeader, settings: bytes, fingerprint_key: bytes, run_id: str,
          include_content: bool, handled: CatchUpVerdict | None, hash_file: bool, keep_items: bool) -> PlanTask:
    """A :class:`PlanTask` unpickled in a worker, its settings unpickled once per worker."""
    unpickled = _SETTINGS_UNPICKLED.get(settings)
    if unpickled is None:
        unpickled = _SETTINGS_UNPICKLED[settings] = pickle.loads(settings)  # our own parent's bytes
    return PlanTask(path, header, unpickled, fingerprint_key, run_id, include_content, handled, hash_file,
                    keep_items)


_WORKER_REDACTORS: dict[tuple[bytes, tuple[str, ...]], Redactor] = {}
_PROGRESS: Connection | None = None  # in a worker: where it says how far it has read (None: nobody watches)
_REPORT = struct.Struct("=qq")  # (ticket of the file, bytes read): one small write, atomic on a pipe
PROGRESS_POLL = 0.2  # seconds the parent waits for a plan before it moves the bar again


def _context() -> multiprocessing.context.BaseContext:
    # Forked on Linux (no second import of the package in each worker). macOS offers fork too, but its system
    # libraries are not fork-safe (Python's own default there is spawn): with workers on by default, spawn.
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def worker_pool(jobs: int, progress: Connection | None = None) -> ProcessPoolExecutor:
    """``jobs`` worker processes: forked on Linux (no second import of the package), and each
    ended with the process that started it. ``progress``: the writing end of the pipe they report reading on."""
    return ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=_worker_started,
                               initargs=(os.getpid(), progress))


def _worker_started(parent: int, progress: Connection | None = None) -> None:
    """A worker must not outlive its import (a cron timeout or a kill ends the parent): on Linux the kernel ends
    it with its parent. Elsewhere it ends when the parent's queue closes."""
    global _PROGRESS
    _PROGRESS = progress
    # Ctrl-C reaches the whole process group: the parent handles it (records the run, ends the workers); a
    # worker would only print a traceback. SIGTERM (from the parent's end_workers) simply ends a worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent was gone before the request took effect
        os._exit(1)


def end_workers(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: queued plans are cancelled and running ones killed (a worker only reads session files and
    holds nothing that must be saved). Waiting for them instead could take as long as the largest session."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.kill()
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            process.join(timeout=5)


def plan_in_worker(task: PlanTask, ticket: int = -1) -> PlanOutcome:
    """Plan one session in a worker process. The entry index stays here: the parent needs counts and rows.
    How far the file has been read goes to the parent's pipe, under ``ticket``, every few MB. With
    ``task.hash_file``, the SHA-256 of the file's bytes, read before planning reads the file (as the parent would)."""
    sha256 = file_sha256(task.path) if task.hash_file else None
    hosts = tuple(task.settings.redaction.private_hosts)
    redactor = _WORKER_REDACTORS.get((task.fingerprint_key, hosts))
    if redactor is None:
        redactor = _WORKER_REDACTORS[(task.fingerprint_key, hosts)] = Redactor(task.fingerprint_key, hosts)
    times = StageTimes()
    pipe = _PROGRESS

    def report(offset: int) -> None:
        # Written before the plan is returned, so the parent has every report of a file once its plan arrives.
        # No lock: a write this small is atomic on a pipe (PIPE_BUF), and a worker killed mid-report holds none.
        assert pipe is not None
        pipe.send_bytes(_REPORT.pack(ticket, offset))

    plan = plan_session(task.path, task.header, task.settings, redactor, task.run_id, task.include_content, times,
                        task.handled, report if pipe is not None and ticket >= 0 else None)
    if not task.keep_items:
        _drop_items(plan)
    gc.collect(0)  # the parent's paused collector is inherited: collect between files, as the parent does
    return plan, times, sha256


def _drop_items(plan: SessionPlan) -> None:
    """A plan whose items will not be sent, without them (most of what comes back to the parent is their text;
    the rows say what they are). Kept when a content cannot be encoded: the parent fails the file as it always
    has (it encodes every item before it writes anything of the file)."""
    try:
        for planned in plan.items:
            planned.item.content.encode("utf-8")
    except UnicodeEncodeError:
        return
    plan.items = []


PlanOutcome = tuple[SessionPlan, StageTimes, str | None]  # the plan, its stage times, the file's SHA-256
WORKER_BACKLOG_BYTES = 512 << 20
WORKER_BACKLOG_FILES = 4096  # and files: tiny sessions, thousands to a MB, must not all queue when workers lag
# Small files go to a worker in batches, as each task costs both processes pickling, pipes and the pool's threads
# (docs/performance.md). A batch is handed out when it holds this many files or bytes, or when its first file has
# waited this long (so workers never idle while the parent prepares slowly); a file of BATCH_BYTES or more goes alone.
BATCH_FILES = 16
BATCH_BYTES = 1 << 20
BATCH_SECONDS = 0.05


def plan_batch(tasks: list[tuple[PlanTask, int]]) -> list[PlanOutcome | BaseException]:
    """Plan a batch of sessions (each with its progress ticket) in this worker: an outcome per file, in order, or
    the exception that failed that file only. A :class:`HindsightBatchError` ends the batch: it ends the run when
    the parent reaches it."""
    outcomes: list[PlanOutcome | BaseException] = []
    for task, ticket in tasks:
        try:
            outcomes.append(plan_in_worker(task, ticket))
        except HindsightBatchError as exc:
            outcomes.append(_picklable(exc))
            break
        except Exception as exc:  # this file only
            outcomes.append(_picklable(exc))
    return outcomes


def _picklable(exc: Exception) -> Exception:
    """``exc``, or its one-line reason where pickle cannot carry it to the parent (an exception that does not
    rebuild from its ``args`` breaks the whole pool when the parent unpickles it)."""
    try:
        pickle.loads(pickle.dumps(exc, pickle.HIGHEST_PROTOCOL))
    except Exception:
        from hindsight_batch.redaction.messages import FailureReason, failure_reason

        if isinstance(exc, HindsightBatchError):  # still ends the run, with its exit code
            stop = HindsightBatchError(failure_reason(exc))
            stop.exit_code = exc.exit_code
            return stop
        return FailureReason(failure_reason(exc))
    return exc


class PooledJob(Protocol):
    """A session file to plan in a worker process, as the importer prepared it."""

    @property
    def path(self) -> Path:
        """The session file."""

    @property
    def size(self) -> int:
        """Its size in bytes: plans waiting for an earlier, larger one are bounded by bytes."""


Job = TypeVar("Job", bound=PooledJob)
Batch = Future[list[PlanOutcome | BaseException]]


class _Waiting(NamedTuple, Generic[Job]):
    """A file handed to a worker and not yet done: its batch's future, its place in that batch, its ticket."""

    job: Job
    future: Batch
    place: int
    ticket: int


def run_in_workers(
    jobs: int,
    prepared: Iterable[Job],
    task_for: Callable[[Job], PlanTask],
    done: Callable[[Job, PlanOutcome | BaseException], None],
    read: Callable[[Job, int], None] | None = None,
) -> None:
    """Plan ``prepared`` in ``jobs`` worker processes and hand each outcome to ``done`` in file order, so the
    manifest, the ledger and the uploads are the same as with one process. ``done`` hears a plan, or the exception
    that failed this file only (a :class:`HindsightBatchError` stops the run instead). ``read(job, offset)`` hears
    how far a worker has read a file not yet done (every few MB), always before ``done`` hears that file.

    Small files go in batches (``BATCH_FILES``, ``BATCH_BYTES``, ``BATCH_SECONDS``). While a large session is
    planned, the other workers go on with the files after it; their plans wait for it, up to
    ``WORKER_BACKLOG_BYTES`` of session files (a plan keeps only a few percent of that) or
    ``WORKER_BACKLOG_FILES`` files."""
    line = _WorkerLine(jobs, task_for, done, read)
    try:
        for job in prepared:
            line.add(job)
        line.hand_out()
        while line.waiting:
            line.finish_first()
        line.pool.shutdown(wait=True)
    except BaseException:
        end_workers(line.pool)  # an interrupt or a failed run: no worker goes on planning a file nobody waits for
        raise
    finally:
        line.close()


class _WorkerLine(Generic[Job]):
    """The files handed to workers and not yet done, in file order, and the batch being gathered."""

    def __init__(self, jobs: int, task_for: Callable[[Job], PlanTask],
                 done: Callable[[Job, PlanOutcome | BaseException], None],
                 read: Callable[[Job, int], None] | None) -> None:
        self.jobs = jobs
        self.task_for = task_for
        self.done = done
        self.read = read
        self.waiting: deque[_Waiting[Job]] = deque()
        self.pending: list[tuple[Job, int]] = []  # (job, ticket) of the batch being gathered, not yet handed out
        self.pending_bytes = 0
        self.pending_since = 0.0
        self.reading: dict[int, Job] = {}  # ticket -> a file submitted and not yet done: its reports are passed on
        self.tickets = iter(range(1 << 62))
        self.backlog = 0
        self.reports: Connection | None = None  # the parent's end of the workers' progress pipe
        self.progress: Connection | None = None  # the workers' end
        if read is not None:
            self.reports, self.progress = _context().Pipe(duplex=False)
        self.pool = worker_pool(jobs, self.progress)

    def add(self, job: Job) -> None:
        """A file to plan: alone when large (the files before it stay before it), else into the batch; then every
        file whose plan is in (or, when too much waits, the first) is finished."""
        ticket = next(self.tickets)
        if job.size >= BATCH_BYTES:
            self.hand_out()
            self.submit([(job, ticket)])
        else:
            if not self.pending:
                self.pending_since = time.monotonic()
            self.pending.append((job, ticket))
            self.pending_bytes += job.size
            if (len(self.pending) >= BATCH_FILES or self.pending_bytes >= BATCH_BYTES
                    or time.monotonic() - self.pending_since >= BATCH_SECONDS):
                self.hand_out()
        self.backlog += job.size
        self.pass_reports()
        while self.backlogged() or (self.waiting and self.waiting[0].future.done()):
            self.finish_first()

    def submit(self, batch: list[tuple[Job, int]]) -> None:
        """Hand ``batch`` to a worker; its files wait in line for their plans."""
        try:
            future: Batch = self.pool.submit(plan_batch, [(self.task_for(job), ticket) for job, ticket in batch])
        except BrokenProcessPool as exc:
            # A worker died before its own future said so: these jobs wait in line like the others in flight,
            # and reaching the head of the line finds the broken pool (finish_first starts a fresh one).
            future = Future()
            future.set_exception(exc)
        for place, (job, ticket) in enumerate(batch):
            self.reading[ticket] = job
            self.waiting.append(_Waiting(job, future, place, ticket))

    def hand_out(self) -> None:
        """The batch being gathered, to a worker."""
        if self.pending:
            batch, self.pending, self.pending_bytes = self.pending, [], 0
            self.submit(batch)

    def pass_reports(self) -> None:
        """Every report already in the pipe, to ``read`` (a file done or given up is ignored)."""
        while self.reports is not None and self.read is not None and self.reports.poll():
            ticket, offset = _REPORT.unpack(self.reports.recv_bytes())
            job = self.reading.get(ticket)
            if job is not None:
                self.read(job, offset)

    def result(self, future: Batch, place: int) -> PlanOutcome | BaseException:
        """The file's outcome, the bar moving while a worker reads (a bounded wait at a time, never a busy loop)."""
        while self.reports is not None and not future.done():
            self.pass_reports()
            wait([future], timeout=PROGRESS_POLL)
        outcomes = future.result()
        self.pass_reports()  # the worker wrote its last reports before its plans: all are in the pipe now
        return outcomes[place]

    def backlogged(self) -> bool:
        """So much handed out and not done that the parent waits for the first file before preparing more."""
        return len(self.waiting) > self.jobs and (self.backlog > WORKER_BACKLOG_BYTES
                                                  or len(self.waiting) > WORKER_BACKLOG_FILES)

    def finish_first(self) -> None:
        """The first file in line: its outcome to ``done`` (a :class:`HindsightBatchError` ends the run)."""
        job, future, place, ticket = self.waiting.popleft()
        self.backlog -= job.size
        outcome: PlanOutcome | BaseException
        try:
            outcome = self.result(future, place)
        except BrokenProcessPool:
            outcome = self.after_a_worker_died(job)
        except Exception as exc:  # the batch could not be sent or returned (pickling): its files fail, the run goes on
            outcome = exc
        finally:
            del self.reading[ticket]
        if isinstance(outcome, HindsightBatchError):
            raise outcome
        self.done(job, outcome)

    def after_a_worker_died(self, job: Job) -> PlanOutcome | BaseException:
        """A worker died (a crash in C code, the kernel's OOM killer): every plan in flight is lost with it. The
        others go to a fresh pool, one file a batch; ``job`` is planned again on its own, so a file that kills its
        worker twice is the one that failed."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool = worker_pool(self.jobs, self.progress)
        again = [(w.job, w.ticket) for w in self.waiting]
        self.waiting.clear()
        for one in again:
            self.submit([one])
        return _plan_alone(self.task_for(job))

    def close(self) -> None:
        """The progress pipe's ends."""
        for end in (self.reports, self.progress):
            if end is not None:
                end.close()


def _plan_alone(task: PlanTask) -> PlanOutcome | BaseException:
    """Plan one session in a worker process of its own: its plan, or what went wrong."""
    alone = worker_pool(1)
    try:
        return alone.submit(plan_batch, [(task, -1)]).result()[0]
    except BrokenProcessPool:
        return RuntimeError("the worker process planning this file died (it crashed or ran out of memory)")
    except Exception as exc:
        return exc
    finally:
        end_workers(alone)
