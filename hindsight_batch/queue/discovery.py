"""Where the live extension's retain queues are, and how deep they are.

The extension keeps a global queue folder (``~/.hindsight/pi-queues``) and one queue per project
(``<cwd>/.pi/hindsight/retain-queue.jsonl``); the projects are the cwds named by the sessions under the default
session root, plus the current folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hindsight_batch.base.fsutil import read_regular
from hindsight_batch.session.discovery import default_session_root, find_session_files

GLOBAL_QUEUES = Path("~/.hindsight/pi-queues")
PROJECT_QUEUE = Path(".pi") / "hindsight" / "retain-queue.jsonl"


def default_queue_roots() -> list[Path]:
    """The queue folders and project queue files that exist: the global folder, then each project's queue."""
    from hindsight_batch.session.reader import peek_header

    roots = [GLOBAL_QUEUES.expanduser()]
    cwds = {str(Path.cwd())}
    root = default_session_root()
    if root.is_dir():
        for path in find_session_files([root]):
            try:
                header = peek_header(path)
            except Exception:  # an unreadable session names no project; import reports it
                continue
            if not isinstance(header, str) and header.cwd:
                cwds.add(header.cwd)
    roots += [Path(cwd) for cwd in sorted(cwds) if (Path(cwd) / PROJECT_QUEUE).is_file()]
    return [r for r in roots if r.exists()]


def queue_depths(roots: list[Path] | None = None) -> list[dict[str, Any]]:
    """Each queue file under ``roots`` (default: :func:`default_queue_roots`) with its job count and the number of
    its dead-lettered jobs: ``{"queue", "jobs", "dead"}``."""
    from hindsight_batch.queue.store import queue_files, read_queue, side_file

    depths: list[dict[str, Any]] = []
    for path in queue_files(default_queue_roots() if roots is None else roots):
        dead = side_file(path, "dead")
        try:
            data = read_regular(dead) if dead.exists() else b""
            depths.append({"queue": str(path), "jobs": len(read_queue(path).jobs),
                           "dead": sum(1 for line in data.split(b"\n") if line.strip())})
        except OSError as exc:  # (a FIFO or a folder in its place: said, never waited on)
            depths.append({"queue": str(path), "jobs": None, "dead": None,
                           "error": f"{exc.filename or path}: {exc.strerror or type(exc).__name__}"})
    return depths
