"""``import --jobs N``: planning sessions in worker processes. The parent sends a :class:`PlanTask` per session
and gets the plan back; the entry index stays in the worker. Workers end with their parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hindsight_batch.catchup import CatchUpVerdict
from hindsight_batch.config import Settings
from hindsight_batch.planning import SessionPlan, plan_or_skip
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.model import SessionHeader


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


_WORKER_REDACTORS: dict[tuple[bytes, tuple[str, ...]], Redactor] = {}


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """``jobs`` worker processes: forked where the system can (no second import of the package), and each
    ended with the process that started it."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_started,
                               initargs=(os.getpid(),))


def _worker_started(parent: int) -> None:
    """A worker must not outlive its import (a cron timeout or a kill ends the parent): on Linux the kernel ends
    it with its parent. Elsewhere it ends when the parent's queue closes."""
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


def plan_in_worker(task: PlanTask) -> tuple[SessionPlan | str, StageTimes]:
    """Plan one session in a worker process. The entry index stays here: the parent needs counts and rows."""
    hosts = tuple(task.settings.redaction.private_hosts)
    redactor = _WORKER_REDACTORS.get((task.fingerprint_key, hosts))
    if redactor is None:
        redactor = _WORKER_REDACTORS[(task.fingerprint_key, hosts)] = Redactor(task.fingerprint_key, hosts)
    times = StageTimes()
    plan = plan_or_skip(task.path, task.header, task.settings, redactor, task.run_id, task.include_content, times,
                        task.handled)
    if isinstance(plan, str):
        return plan, times
    plan.session.entries = []
    gc.collect(0)  # the parent's paused collector is inherited: collect between files, as the parent does
    return plan, times
