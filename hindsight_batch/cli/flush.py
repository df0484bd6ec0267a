"""``flush``: drain the live extension's retain queues (:func:`hindsight_batch.api.flush_queues`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hindsight_batch.cli.app import cli, common_options, echo, echo_err, handle_errors
from hindsight_batch.errors import EXIT_BUSY, EXIT_ITEMS_FAILED


@cli.command("flush")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Check the queues and say what would be sent; no network, no writes.")
@click.option("--max-jobs", type=click.IntRange(min=1), help="Send at most this many jobs.")
@click.option("--max-seconds", type=float, help="Start no new request after this many seconds.")
@common_options
@handle_errors
def flush_command(paths: tuple[Path, ...], dry_run: bool, max_jobs: int | None, max_seconds: float | None,
                  config_file: Path | None, as_json: bool, quiet: bool) -> None:
    """Drain the retain queues the live extension left behind to the server.

    PATHS are queue files, queue folders or project folders. Without them: ~/.hindsight/pi-queues/ and the
    .pi/hindsight/retain-queue.jsonl of every project that has sessions under the default session root, and of
    the current folder. Exit 75 when a queue is locked by a live owner (pi, or another flush).

    \b
    Examples:
      hindsight-batch flush --dry-run
      hindsight-batch flush --max-seconds 300
    """
    from hindsight_batch.api import flush_queues

    reports = flush_queues(paths, dry_run=dry_run, max_jobs=max_jobs, max_seconds=max_seconds,
                           config_file=config_file)
    data = {"dry_run": dry_run, "queues": [r.to_dict() for r in reports]}
    if as_json:
        echo(json.dumps(data, indent=2))
    elif not quiet:
        for r in reports:
            verb = "would send" if dry_run else "sent"
            state = ("BUSY, " if r.busy else "") + ("FAILED, " if r.failed else "")
            echo(f"{r.queue}: {state}{verb} {r.would_send if dry_run else r.sent}, "
                 f"retry later {r.retry_later}, dead-lettered {r.dead_lettered}, quarantined {r.quarantined}, "
                 f"left {r.left}{', stopped early' if r.stopped_early else ''}")
            for error in r.errors[:5]:
                echo_err(f"  {error}")
        if not reports:
            echo("no retain queues found")
    if any(r.busy for r in reports):
        sys.exit(EXIT_BUSY)
    if any(r.retry_later or r.dead_lettered or r.failed for r in reports):
        sys.exit(EXIT_ITEMS_FAILED)
