"""``import``: parse its options, run :func:`hindsight_batch.api.run_import`, print the summary."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import click

from hindsight_batch.cli.app import cli, common_options, counts, echo, echo_err, handle_errors, progress, startup_done
from hindsight_batch.errors import EXIT_ITEMS_FAILED, UsageError

if TYPE_CHECKING:
    from hindsight_batch.importing.accounting import FromRunCounts, ImportSummary


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since: not an ISO date or time: {value!r} (e.g. 2026-01-31)") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _jobs(ctx: click.Context, param: click.Parameter, value: str) -> int | Literal["auto"]:
    """``--jobs``: a number of processes from 1 to 64, or ``auto``."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if not 1 <= jobs <= 64:
        raise click.BadParameter(f"{value!r} is not a number from 1 to 64, nor 'auto'.", ctx, param)
    return jobs


def _path_map(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    """``--map OLD=NEW``, repeatable: absolute folders (a session's cwd is absolute), the last one for an OLD
    wins."""
    mapped: dict[str, str] = {}
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old.startswith("/") or not new.startswith("/"):
            raise click.BadParameter(f"{value!r} is not OLD=NEW with two absolute folders.", ctx, param)
        mapped[old.rstrip("/") or "/"] = new.rstrip("/") or "/"
    return mapped


@cli.command("import")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), help="Write the manifest (JSONL) here.")
@click.option("--include-content", is_flag=True,
              help="Put each item's exact content in the manifest's 'content' field (off by default).")
@click.option("--branches", type=click.Choice(["current", "all"]), help="Import the active branch or every branch.")
@click.option("--compaction", type=click.Choice(["full", "context"]),
              help="full: every message on the branch; context: pi's view after the last compaction.")
@click.option("--since", help="Only sessions modified at or after this ISO date/time.")
@click.option("--cwd", "cwd_filter", help="Only sessions whose cwd is this folder or below it.")
@click.option("--project", "project_filter", help="Only sessions of this project name.")
@click.option("--mode", type=click.Choice(["explicit-only", "router"]), help="Override userRetain.mode.")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Ledger folder (default: $XDG_STATE_HOME/hindsight-batch).")
@click.option("--apply", is_flag=True, help="Upload to the Hindsight server (retainBatch). Without it: a dry run.")
@click.option("--from-run", "from_run", metavar="RUN",
              help="With --apply: send exactly what the dry run RUN planned (the reviewed plan), after checking each "
                   "session file's size, mtime and SHA-256 and the settings; a session that changed is refused by "
                   "name. Default PATHS: RUN's sessions; others are ignored.")
@click.option("--wait", is_flag=True, help="With --apply: wait until the server has processed every request.")
@click.option("--wait-timeout", type=float, default=600.0, show_default=True, help="Seconds --wait waits at most.")
@click.option("--delete-stale", is_flag=True,
              help="Delete the server's pi-import: documents of the sessions this ledger planned that the current "
                   "plan no longer has (with --apply; without it, list them).")
@click.option("--live-retained", type=click.Choice(["after", "skip", "include"]), default="after", show_default=True,
              help="Sessions the live extension already retained (the server is asked, also in a dry run): import "
                   "only what came after its retains, skip them, or include everything.")
@click.option("--catch-up", is_flag=True,
              help="Scheduled run: respect session modes and the live extension's retain cursor; one summary line.")
@click.option("--respect-switches/--no-respect-switches", "respect_switches", default=None,
              help="Leave out the sessions (and hindsight-pi's switched-off messages) the live extension was told "
                   "not to retain: per project, per session. Default: on with --catch-up; off for an import, which "
                   "lists them.")
@click.option("--extension", type=click.Choice(["hpi", "hindsight-pi", "pi-hindsight", "none"]),
              help="Whose bank rule applies (the \"extension\" key): hindsight-pi (hpi), pi-hindsight, or none (this "
                   "tool's own). Needed with --apply when no extension's configuration, package or files are found.")
@click.option("--map", "path_map", metavar="OLD=NEW", multiple=True, callback=_path_map,
              help="A moved repository: a session whose cwd is OLD (or below it) gets the bank the extension's rule "
                   "gives where the repository is now, NEW (repeatable; the \"pathMap\" key).")
@click.option("--max-seconds", type=float, help="Stop starting new sessions after this many seconds.")
@click.option("--jobs", metavar="N|auto", default="auto", show_default=True, callback=_jobs,
              help="Plan this many session files at once, in worker processes (1 to 64). Same output; memory per "
                   "worker. auto: one process below 16 MB of sessions, else one per usable CPU, at most 4.")
@common_options
@handle_errors
def import_command(
    paths: tuple[Path, ...],
    manifest: Path | None,
    include_content: bool,
    branches: str | None,
    compaction: str | None,
    since: str | None,
    cwd_filter: str | None,
    project_filter: str | None,
    mode: str | None,
    state_dir: Path | None,
    apply: bool,
    from_run: str | None,
    wait: bool,
    wait_timeout: float,
    delete_stale: bool,
    live_retained: str,
    catch_up: bool,
    respect_switches: bool | None,
    extension: str | None,
    path_map: dict[str, str],
    max_seconds: float | None,
    jobs: int | Literal["auto"],
    config_file: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Plan retain items from Pi session files, and with --apply upload them.

    A dry run by default: it writes nothing to the server, but asks it read-only (3 s, with the configured API key)
    what the live extension already retained, unless --live-retained include; without a reachable server it says
    it could not check and plans every session whole. --delete-stale also asks the server, to list documents.

    PATHS are session files or folders (a folder's *.jsonl and those one folder down, pi's per-cwd layout).
    Without PATHS, the default session root: $PI_CODING_AGENT_SESSION_DIR, $PI_CODING_AGENT_DIR/sessions, or
    ~/.pi/agent/sessions.

    \b
    Examples:
      hindsight-batch import samples/ --manifest plan.jsonl
      hindsight-batch import ~/.pi/agent/sessions --since 2026-01-01 --json
      hindsight-batch import session.jsonl --manifest plan.jsonl --include-content --branches all
      hindsight-batch import ~/.pi/agent/sessions --apply --wait
      hindsight-batch import --apply --from-run 20260131T120000Z-1a2b3c4d   (send what that dry run planned)
      hindsight-batch import --apply --catch-up --max-seconds 600      (what cron runs)
      hindsight-batch import ~/.pi/agent/sessions --delete-stale   (lists stale documents; --apply deletes them)
    """
    from hindsight_batch.api import ImportOptions, run_import

    # What run_import loads first thing (a list for speed only: a module missing here is simply loaded later).
    startup_done("hindsight_batch.config", "hindsight_batch.importing.importer", "hindsight_batch.importing.live",
                 "hindsight_batch.ledger.state", "hindsight_batch.sinks.client", "hindsight_batch.sinks.manifest")
    result = run_import(ImportOptions(
        paths=paths, manifest=manifest, include_content=include_content,
        branches=cast("Literal['current', 'all'] | None", branches),
        compaction=cast("Literal['full', 'context'] | None", compaction),
        mode=cast("Literal['explicit-only', 'router'] | None", mode), since=_parse_since(since),
        cwd_filter=cwd_filter, project_filter=project_filter, state_dir=state_dir, config_file=config_file,
        apply=apply, wait=wait, wait_timeout=wait_timeout, delete_stale=delete_stale,
        live_retained=cast("Literal['after', 'skip', 'include']", live_retained), catch_up=catch_up,
        respect_switches=respect_switches, extension=extension, path_map=path_map, max_seconds=max_seconds,
        jobs=jobs, progress=progress(quiet),
        from_run=from_run,
    ))
    summary = result.summary
    if not summary.files and summary.from_run is None and not quiet:
        from hindsight_batch.session.discovery import no_sessions_note

        echo_err(f"hindsight-batch: {no_sessions_note(paths)}")
    if summary.from_run is not None:
        _print_from_run(summary.from_run, quiet or as_json)
    if as_json:
        echo(json.dumps(result.to_dict(), indent=2))
    elif catch_up and not quiet:
        echo(_catch_up_line(summary))
    elif not quiet:
        _print_import_summary(summary)
        if result.stale is not None:
            verb = "deleted" if apply else "would delete (add --apply)"
            echo_err(f"  stale documents: {len(result.stale.documents)} found, {verb} {result.stale.deleted}")
            for doc in result.stale.documents[:20]:
                echo_err(f"  stale: {doc['bank_id']} {doc['document_id']}")
    if not result.ok:
        sys.exit(EXIT_ITEMS_FAILED)


def _print_from_run(reviewed: FromRunCounts, brief: bool) -> None:
    """What was sent as reviewed and which sessions were refused (on stderr, also with --json or -q: they are
    why the exit code is 1)."""
    if not brief:
        ignored = reviewed["ignored_paths"]
        echo_err(f"  as reviewed in run {reviewed['run']}: {reviewed['sessions_sent']} session(s), "
                 f"{reviewed['items_as_reviewed']} item(s): {reviewed['items_sent']} sent now, "
                 f"{reviewed['items_already_on_server']} already on the server; refused {reviewed['refused_total']} "
                 "session(s)"
                 + (f"; ignored {ignored} path(s) not in that run" if ignored else ""))
    if reviewed["refused_total"]:
        echo_err(f"REFUSED {reviewed['refused_total']} session(s) of the review of run {reviewed['run']} (nothing of "
                 "them was sent; re-run the dry run to review them again):")
    for refused in reviewed["refused"]:
        echo_err(f"  refused: {refused['file']}: {refused['reason']}")


def _catch_up_line(summary: ImportSummary) -> str:
    upload = summary.upload
    documents = upload["documents"] if upload else {}
    sent = sum(v for k, v in documents.items() if k in ("sent", "confirmed"))
    applied = summary.mode == "apply"
    return (f"catch-up {summary.run_id}: sessions {summary.sessions} (unchanged {summary.unchanged_files}, "
            f"skipped {len(summary.catch_up_skipped) + len(summary.sessions_skipped)}, "
            f"switched off {summary.switched_off_skipped}), chunks {summary.chunks}, "
            f"{'sent' if applied else 'would send'} {sent if applied else summary.statuses.get('planned', 0)}, "
            f"unchanged {summary.statuses.get('unchanged', 0)}, failed {upload['failed'] if upload else 0}, "
            f"failed files {len(summary.failed_files)}, "
            + (f"cursors not used {len(summary.cursor_fallbacks)}, " if summary.cursor_fallbacks else "")
            + f"{summary.shown_seconds:.1f} s{', stopped at --max-seconds' if summary.stopped_early else ''}")


def _bank_labels(items: dict[Any, int]) -> dict[str, int]:  # keys: the summary's bank roles
    if not items:  # nothing planned: routing (its models, the redactor) is not loaded just to name no bank
        return items
    from hindsight_batch.routing.models import bank_label

    return {bank_label(k): v for k, v in items.items()}


def _print_import_summary(summary: ImportSummary) -> None:
    from hindsight_batch.importing.accounting import by_name

    out = echo_err
    rate = f" ({summary.mb_per_second} MB/s)" if summary.mb_per_second else ""
    out(f"hindsight-batch import ({summary.mode}) run {summary.run_id}")
    out(f"  files {summary.files}: sessions {summary.sessions}, unchanged since last run {summary.unchanged_files}, "
        f"filtered out {summary.filtered_out}, not sessions {len(summary.not_sessions)}; "
        f"read {summary.bytes_read / 1e6:.1f} MB in {summary.shown_seconds:.2f} s{rate}"
        + (f", {summary.jobs} worker processes" if summary.jobs > 1 else ""))
    for problem in summary.not_sessions[:10]:
        out(f"  not a session: {problem['file']}: {problem['reason']}")
    if summary.failed_files:
        out(f"  FAILED FILES {len(summary.failed_files)} (not imported; tried again next run):")
    for failed in summary.failed_files[:10]:
        where = f":{failed['line']}" if failed["line"] is not None else ""
        out(f"  failed: {failed['file']}{where}: {failed['reason']}")
    for duplicate in summary.duplicates[:10]:
        out(f"  skipped: {duplicate['file']} holds the same session id as {duplicate['same_session_as']}")
    out(f"  entries {summary.entries}; malformed lines {summary.malformed_total}; glued lines recovered "
        f"{summary.glued_lines}; truncated last lines {summary.truncated_tails}")
    if summary.invalid_utf8_lines or summary.surrogates_replaced:
        out(f"  replaced by U+FFFD: invalid UTF-8 on {summary.invalid_utf8_lines} lines; "
            f"{summary.surrogates_replaced} lone surrogates")
    for malformed in summary.malformed_lines[:10]:
        out(f"  malformed: {malformed['file']}:{malformed['line']}: {malformed['reason']}")
    out(f"  messages kept {summary.messages_kept}; dropped: {counts(by_name(summary.messages_dropped))}")
    out(f"  chunks {summary.chunks}; routes: {counts(by_name(summary.routes))}; items: "
        f"{counts(_bank_labels(by_name(summary.items)))}")
    out(f"  statuses: {counts(by_name(summary.statuses))}; redactions: {counts(by_name(summary.redactions))}")
    if summary.skip_reasons:
        out(f"  skipped chunks by reason: {counts(by_name(summary.skip_reasons))}")
    if summary.prompt_injection:
        out(f"  prompt injection flagged in {summary.prompt_injection} chunk(s): text addressed to an AI or a "
            "memory system; never written to the User Bank")
    for bank, seen in list(summary.banks.items())[:10]:
        out(f"  project bank {bank}: {seen['sessions']} session(s); {seen['why']}")
    if summary.live_retained:
        out(f"  live retains: {counts(by_name(summary.live_retained))}"
            + (f" (COULD NOT CHECK: {summary.live_unchecked})" if summary.live_unchecked else ""))
    for skipped in summary.sessions_skipped[:10]:
        out(f"  skipped session: {skipped['file']}: {skipped['reason']}")
    if summary.without_bank:
        out(f"  {len(summary.without_bank)} session(s) skipped for want of a bank (exit 1); to bring them in:")
        for fix in summary.without_bank_fix[:10]:
            out(f"    {fix}")
    if summary.bank_unnamed and summary.mode != "apply":
        out(f"  {len(summary.bank_unnamed)} session(s) planned into this tool's own bank, which no live extension "
            "reads (--apply will not send them until then):")
        # Counted over the listed ones, as the --json document lists them; sessions differ in what is found.
        reasons = Counter(unnamed["reason"] for unnamed in summary.bank_unnamed[:summary.MAX_LISTED])
        for reason, count in reasons.most_common(5):
            out(f"    {count} session(s): {reason}")
    if summary.switched_off:
        left_out = summary.switched_off_skipped
        out(f"  switched off by the live extension: {len(summary.switched_off)} session(s), {left_out} left out"
            + ("" if left_out == len(summary.switched_off) else
               " (the others imported: add --respect-switches to leave them out)"))
    for switched in summary.switched_off[:10]:
        verb = "left out" if switched["respected"] and switched["whole_session"] else (
            "its switched-off messages left out" if switched["respected"] else "imported anyway")
        out(f"  switched off ({verb}): {switched['file']}: {switched['reason']}")
    for queued in summary.queued_by_extension[:10]:
        out(f"  still queued by hindsight-pi ({queued['queue']}): {queued['file']}: {queued['left_out']} message(s) "
            "left out for flush" + (f", {queued['unplaced']} record(s) match no entry" if queued["unplaced"] else ""))
    for fallback in summary.cursor_fallbacks[:10]:
        out(f"  retain cursor not used: {fallback['file']}: {fallback['note']}")
    if summary.router_mode_on:
        out("  ROUTER MODE IS ON: confident User Bank content is written to the User Bank (userRetain.mode=router)")
    else:
        out("  User Bank: explicit-only mode; suggestions are recorded, nothing is written to the User Bank")
    upload = summary.upload
    if upload:
        still_open = upload["operations_still_open"]
        out(f"  upload: {upload['requests']} request(s); documents: {counts(upload['documents'])}"
            + (f"; operations still open: {still_open}" if still_open else ""))
        for error in upload["errors"][:10]:
            out(f"  upload error: {error}")
    if summary.manifest:
        out(f"  manifest: {summary.manifest}")
    out(f"  ledger: {summary.ledger}")
