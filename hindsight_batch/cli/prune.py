"""``prune-recall-messages``: preview, prune or restore session files (:mod:`hindsight_batch.prune`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hindsight_batch.cli.app import cli, common_options, echo, echo_err, handle_errors
from hindsight_batch.errors import EXIT_ITEMS_FAILED, UsageError

if TYPE_CHECKING:
    from hindsight_batch import prune


@cli.command("prune-recall-messages")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--confirm", is_flag=True, help="Rewrite the files (without it: a preview, nothing is written).")
@click.option("--custom-type", "custom_types", multiple=True,
              help="Also remove custom messages of this customType (repeatable).")
@click.option("--backup-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep backups here instead of beside each file.")
@click.option("--min-age", default="30m", show_default=True,
              help="Refuse files modified more recently than this (a live session): 90s, 30m, 2h, 0.")
@click.option("--force", is_flag=True,
              help="Rewrite even a recently modified file, and a file with other hard links (this name only).")
@click.option("--restore", "restore_backup", type=click.Path(dir_okay=False, path_type=Path),
              help="Put this backup back in place of the file it came from.")
@click.option("--to", "restore_to", type=click.Path(dir_okay=False, path_type=Path),
              help="With --restore: where to put it (default: the file the backup's name comes from).")
@common_options
@handle_errors
def prune_command(paths: tuple[Path, ...], confirm: bool, custom_types: tuple[str, ...], backup_dir: Path | None,
                  min_age: str, force: bool, restore_backup: Path | None, restore_to: Path | None,
                  config_file: Path | None, as_json: bool, quiet: bool) -> None:
    """Remove persisted hindsight-recall messages from Pi session files, before uninstalling the extension.

    A preview by default. With --confirm each file is rewritten atomically: children of a removed entry are
    re-linked to its parent, compaction, label and branch-summary references are fixed, every other line stays
    byte-for-byte, the original is kept as a backup (<file>.hindsight-prune-<time>.bak) and the result is checked.
    Without PATHS, the default session root.

    \b
    Examples:
      hindsight-batch prune-recall-messages
      hindsight-batch prune-recall-messages ~/.pi/agent/sessions --confirm
      hindsight-batch prune-recall-messages --restore s.jsonl.hindsight-prune-20260501T100000000000Z.bak
    """
    from hindsight_batch import prune

    seconds = prune.parse_duration(min_age)
    if restore_backup is not None:
        if paths or confirm:
            raise UsageError("--restore takes no PATHS and no --confirm")
        try:
            target = prune.restore(restore_backup, restore_to, force=force, min_age=seconds)
        except prune.PruneRefused as exc:
            raise UsageError(f"refused: {exc}") from None
        if as_json:
            echo(json.dumps({"restored": str(target), "from": str(restore_backup)}))
        elif not quiet:
            echo_err(f"restored {target} from {restore_backup}")
        return
    from hindsight_batch.api import prune_paths

    results = prune_paths(paths, confirm=confirm, custom_types=custom_types, backup_dir=backup_dir, min_age=seconds,
                          force=force)
    if as_json:
        echo(json.dumps({"confirm": confirm, "files": [r.to_dict() for r in results]}, indent=2))
    elif not quiet:
        _print_prune(results, confirm)
    if any(r.status in ("refused", "failed") for r in results):
        sys.exit(EXIT_ITEMS_FAILED)


def _print_prune(results: list[prune.PruneResult], confirm: bool) -> None:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status] = counts.get(result.status, 0) + 1
        if result.status in ("clean", "not-a-session"):
            continue
        plan = result.plan
        name = f"{result.file} -> {result.target}" if result.target else result.file
        line = (f"{result.status}: {name}: remove {len(plan.get('remove', []))}, "
                f"re-link {len(plan.get('relink', []))}, fix references {len(plan.get('fix_references', []))}")
        if plan.get("drop_labels"):
            line += f", drop {len(plan['drop_labels'])} label(s) on removed entries"
        if plan.get("neutralise"):
            line += f", neutralise {len(plan['neutralise'])} (active leaf)"
        echo_err(line)
        for note in plan.get("left_alone", [])[:5]:
            echo_err(f"  left alone: {note}")
        if result.backup:
            echo_err(f"  backup: {result.backup}")
        if result.reason:
            echo_err(f"  {result.reason}")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no files"
    echo_err(f"prune-recall-messages ({'confirm' if confirm else 'preview, nothing written'}): {summary}")
    if not confirm and counts.get("preview"):
        echo_err("run again with --confirm to rewrite these files (a backup of each is kept)")
