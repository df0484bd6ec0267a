"""``import --jobs auto``: how many worker processes an import uses when the user does not say.

Workers pay off only when there is enough to read: starting one (a fork) and sending it files costs tens of
milliseconds, which is most of a small import. And never more workers than CPUs the process may really use:
a container's CPU quota (cgroups) is often lower than the CPUs it can see.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

AUTO_MIN_BYTES = 16_000_000  # below this, one process finishes sooner (measured: docs/performance.md)
AUTO_MAX_JOBS = 4  # the parent writes the manifest and ledger for all of them: more workers wait on it
CGROUP_ROOT = Path("/sys/fs/cgroup")


def usable_cpus(cgroup: Path = CGROUP_ROOT) -> int:
    """CPUs this process may run on (its affinity), lowered to its cgroup's CPU quota where one is set."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota(cgroup)
    if quota is not None:
        cpus = min(cpus, max(1, int(quota + 0.5)))
    return max(1, cpus)


def _cgroup_quota(root: Path) -> float | None:
    """The CPU quota in CPUs (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``), or None
    where there is none or it cannot be read."""
    with contextlib.suppress(OSError, ValueError):
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else _ratio(int(quota), int(period))
    with contextlib.suppress(OSError, ValueError):
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        return _ratio(quota_us, int((root / "cpu" / "cpu.cfs_period_us").read_text()))
    return None


def _ratio(quota: int, period: int) -> float | None:
    """A quota of ``quota`` per ``period`` microseconds in CPUs; None for no quota (v1 writes -1) or nonsense."""
    return quota / period if quota > 0 and period > 0 else None


def auto_jobs(total_bytes: int, files: int, cpus: int | None = None) -> int:
    """Worker processes for ``files`` session files of ``total_bytes`` in all: 1 (this process, no workers) for
    a small import or a single file, else as many as there are usable CPUs, at most ``AUTO_MAX_JOBS``."""
    if total_bytes < AUTO_MIN_BYTES or files < 2:
        return 1
    return max(1, min(AUTO_MAX_JOBS, files, usable_cpus() if cpus is None else cpus))
