"""The ``hindsight-batch`` command line: a thin click layer that wires the library's pieces together."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from hindsight_batch import __version__, build, stale_compiled
from hindsight_batch.errors import (
    EXIT_BUSY,
    EXIT_CONFIG,
    EXIT_INTERNAL,
    EXIT_ITEMS_FAILED,
    EXIT_SIGINT,
    EXIT_SIGPIPE,
    EXIT_SIGTERM,
    HindsightBatchError,
    Terminated,
    UsageError,
    failure_reason,
)
from hindsight_batch.masking import mask
from hindsight_batch.session.discovery import find_session_files

# The commands import what they use when they run: `--help` and `prune-recall-messages` then start without
# loading pydantic, duckdb and httpx.
if TYPE_CHECKING:
    from hindsight_batch import prune
    from hindsight_batch.config.model import Settings
    from hindsight_batch.routing.models import MemoryRouteDecision
    from hindsight_batch.sinks.hindsight import HindsightClient
    from hindsight_batch.sinks.ledger import Ledger

F = TypeVar("F", bound=Callable[..., Any])


def _echo_err(message: str) -> None:
    click.echo(mask(message), err=True)


def _echo(message: str) -> None:
    """Standard output; like everything this tool prints, with credentials masked."""
    click.echo(mask(message))


def _terminated(signum: int, frame: object) -> None:
    raise Terminated()


def _debug() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("debug"))


def handle_errors(func: F) -> F:
    """Turn every way a command can end badly into one clear line on stderr and the documented exit code: our
    errors, an interrupt (SIGINT 130, SIGTERM 143; ``finally`` blocks record the run first), and an unexpected
    exception (70; its traceback only with ``--debug``). No traceback reaches the user otherwise."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # every one becomes a line and an exit code
            _exit_for(exc, _debug(), bool(kwargs.get("as_json")))
        except (KeyboardInterrupt, Terminated) as exc:
            _exit_for(exc, False, bool(kwargs.get("as_json")))

    return wrapper  # type: ignore[return-value]


def _exit_for(exc: BaseException, debug: bool, as_json: bool = False) -> NoReturn:
    """The one line and the exit code for how a command ended; with ``--json`` also one JSON object on stdout,
    ``{"error": {"code", "kind", "message"}}``, so every exit path of a --json run prints exactly one."""
    if isinstance(exc, BrokenPipeError):  # `hindsight-batch report | head`: no one reads on, nothing to say
        _quiet_stdout()
        sys.exit(EXIT_SIGPIPE)
    if isinstance(exc, HindsightBatchError):
        code, line = exc.exit_code, f"hindsight-batch: error: {exc}"
    elif isinstance(exc, KeyboardInterrupt):
        code, line = EXIT_SIGINT, "hindsight-batch: interrupted (SIGINT)"
    elif isinstance(exc, Terminated):
        code, line = EXIT_SIGTERM, "hindsight-batch: terminated (SIGTERM)"
    else:
        if debug:
            traceback.print_exception(exc)
        code = EXIT_INTERNAL
        line = (f"hindsight-batch: internal error: {failure_reason(exc)} (a bug in hindsight-batch; "
                f"{'the traceback is above' if debug else 'run again with --debug to see where'})")
    if as_json:
        message = str(exc) if isinstance(exc, HindsightBatchError) else line.removeprefix("hindsight-batch: ")
        _echo(json.dumps({"error": {"code": code, "kind": type(exc).__name__, "message": message}}))
    _echo_err(line)
    sys.exit(code)


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises no second broken pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def open_ledger(state_dir: Path | None) -> Ledger:
    """The ledger in ``--state`` or the default folder. A folder that cannot be made or written is a usage error
    (2) when named by ``--state``, a configuration error (3) when it came from $XDG_STATE_HOME or $HOME."""
    from hindsight_batch.sinks.ledger import Ledger, LedgerPathError, default_state_dir

    try:
        return Ledger(state_dir or default_state_dir())
    except LedgerPathError as exc:
        if state_dir is None:
            exc.exit_code = EXIT_CONFIG
        raise


def common_options(func: F) -> F:
    func = click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
                        help="An extra config file, read after the discovered ones.")(func)
    func = click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")(func)
    func = click.option("--quiet", "-q", is_flag=True, help="No progress bar, no human summary.")(func)
    return func


def _progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="hindsight-batch",
                      message=f"%(prog)s, version %(version)s ({build()} build)")
@click.option("--debug", is_flag=True, help="On an internal error, show the traceback (for a bug report).")
def cli(debug: bool) -> None:
    """Move Pi coding-agent transcripts into Hindsight memory, safely.

    \b
    Commands that only read: import (dry run), route, status, report, verify.
    Writing to the server: import --apply, flush, forget --confirm. Writing session files:
    only prune-recall-messages --confirm; every other command opens them read-only.
    Exit codes: 0 ok, 1 some items or files failed, 2 usage, 3 configuration, 4 server,
    70 internal error, 75 busy, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
    """


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since: not an ISO date or time: {value!r} (e.g. 2026-01-31)") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


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
@click.option("--max-seconds", type=float, help="Stop starting new sessions after this many seconds.")
@click.option("--jobs", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Plan this many session files at once, in worker processes. Same output; memory per worker.")
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
    wait: bool,
    wait_timeout: float,
    delete_stale: bool,
    live_retained: str,
    catch_up: bool,
    max_seconds: float | None,
    jobs: int,
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
      hindsight-batch import --apply --catch-up --max-seconds 600      (what cron runs)
      hindsight-batch import ~/.pi/agent/sessions --delete-stale   (lists stale documents; --apply deletes them)
    """
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.importer import Importer, ImportOptions
    from hindsight_batch.live import LiveCheck, unreachable
    from hindsight_batch.sinks.manifest import ManifestWriter

    if wait and not apply:
        raise UsageError("--wait goes with --apply")
    flags = {"import.branches": branches, "import.compaction": compaction, "userRetain.mode": mode}
    resolver = ConfigResolver(config_file=config_file, flags=flags)
    global_settings = resolver.for_cwd(None).settings  # a broken global config fails here, before any work
    files = find_session_files(list(paths), resolve=True)  # a source is a file, not a spelling (S4)
    # The live-retained check asks the server read-only questions, also in a dry run (3 s, one attempt there).
    live = LiveCheck(live_retained, lambda: client_for(global_settings) if apply
                     else client_for(global_settings, timeout=3, max_attempts=1), dry_run=not apply,
                     probe=None if apply else lambda: unreachable(global_settings.base_url, timeout=3))
    options = ImportOptions(
        manifest=manifest,
        include_content=include_content,
        since=_parse_since(since),
        cwd_filter=cwd_filter,
        project_filter=project_filter,
        progress=_progress(quiet),
        apply=apply,
        wait=wait,
        wait_timeout=wait_timeout,
        catch_up=catch_up,
        max_seconds=max_seconds,
        jobs=jobs,
        live=live,
    )
    writer = ManifestWriter(manifest)  # a bad --manifest path fails here, before the ledger folder is made
    stale: dict[str, Any] | None = None
    reconciled = None
    try:
        with open_ledger(state_dir) as ledger, contextlib.closing(live):
            if apply or delete_stale:
                from hindsight_batch.sinks.upload import Uploader, reconcile

                with client_for(global_settings) as client:
                    client.preflight()  # unreachable or unauthorized: exit 4 before any work, even with nothing to send
                    reconciled = reconcile(ledger, client) if apply else None

                    def uploader(run_id: str) -> Uploader:
                        return Uploader(client, ledger, run_id, global_settings.upload)

                    summary = Importer(resolver, ledger, options, files, uploader if apply else None, writer).run()
                    if delete_stale:
                        stale = _delete_stale(ledger, client, apply)
            else:
                summary = Importer(resolver, ledger, options, files, manifest=writer).run()
    finally:
        writer.close(complete=False)  # a no-op after the run renamed it into place
    data = summary.to_dict()
    data["ignored_project_keys"] = resolver.warnings  # also printed on stderr as they were met
    if data["upload"] is not None and reconciled:
        data["upload"]["earlier_runs_settled"] = dict(reconciled)
    if stale is not None:
        data["stale"] = stale
    if as_json:
        _echo(json.dumps(data, indent=2))
    elif catch_up and not quiet:
        _echo(_catch_up_line(data))
    elif not quiet:
        _print_import_summary(data)
        if stale is not None:
            verb = "deleted" if apply else "would delete (add --apply)"
            _echo_err(f"  stale documents: {len(stale['documents'])} found, {verb} {stale['deleted']}")
            for doc in stale["documents"][:20]:
                _echo_err(f"  stale: {doc['bank_id']} {doc['document_id']}")
    if (data["upload"] and data["upload"]["failed"]) or data["failed_files_total"]:
        sys.exit(EXIT_ITEMS_FAILED)


def _delete_stale(ledger: Ledger, client: HindsightClient, apply: bool) -> dict[str, Any]:
    """The server's documents of planned sessions that the plan no longer has; deleted with --apply."""
    from hindsight_batch.verify import stale_documents

    found = stale_documents(ledger, client)
    deleted = 0
    if apply:
        for doc in found:
            if client.delete_document(doc["bank_id"], doc["document_id"]):
                deleted += 1
            ledger.set_status(doc["bank_id"], [doc["document_id"]], "stale-deleted", "import --delete-stale")
    return {"documents": found, "deleted": deleted if apply else len(found), "applied": apply}


def _catch_up_line(data: dict[str, Any]) -> str:
    upload = data["upload"] or {}
    documents = upload.get("documents", {})
    sent = sum(v for k, v in documents.items() if k in ("sent", "confirmed"))
    return (f"catch-up {data['run_id']}: sessions {data['sessions']} (unchanged {data['unchanged_files']}, "
            f"skipped {data['catch_up_skipped_total'] + data['sessions_skipped_total']}), chunks {data['chunks']}, "
            f"{'sent' if data['mode'] == 'apply' else 'would send'} "
            f"{sent if data['mode'] == 'apply' else data['statuses'].get('planned', 0)}, "
            f"unchanged {data['statuses'].get('unchanged', 0)}, failed {upload.get('failed', 0)}, "
            f"failed files {data['failed_files_total']}, "
            f"{data['seconds']:.1f} s{', stopped at --max-seconds' if data['stopped_early'] else ''}")


def client_for(settings: Settings, timeout: float | None = None, max_attempts: int | None = None) -> HindsightClient:
    from hindsight_batch.sinks.hindsight import HindsightClient

    key = settings.api_key.get_secret_value() if settings.api_key else None
    return HindsightClient(settings.base_url, key, timeout=timeout or settings.upload.timeout_seconds,
                           max_attempts=max_attempts or settings.upload.max_attempts)


def _counts(mapping: Mapping[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in mapping.items()) or "none"


def _print_import_summary(data: dict[str, Any]) -> None:
    from hindsight_batch.routing.models import bank_label

    out = _echo_err
    rate = f" ({data['mb_per_second']} MB/s)" if data["mb_per_second"] else ""
    out(f"hindsight-batch import ({data['mode']}) run {data['run_id']}")
    out(f"  files {data['files']}: sessions {data['sessions']}, unchanged since last run {data['unchanged_files']}, "
        f"filtered out {data['filtered_out']}, not sessions {len(data['not_sessions'])}; "
        f"read {data['bytes_read'] / 1e6:.1f} MB in {data['seconds']:.2f} s{rate}")
    for problem in data["not_sessions"][:10]:
        out(f"  not a session: {problem['file']}: {problem['reason']}")
    if data["failed_files_total"]:
        out(f"  FAILED FILES {data['failed_files_total']} (not imported; tried again next run):")
    for failed in data["failed_files"][:10]:
        where = f":{failed['line']}" if failed["line"] is not None else ""
        out(f"  failed: {failed['file']}{where}: {failed['reason']}")
    for duplicate in data["duplicate_sessions"][:10]:
        out(f"  skipped: {duplicate['file']} holds the same session id as {duplicate['same_session_as']}")
    out(f"  entries {data['entries']}; malformed lines {data['malformed_lines']}; glued lines recovered "
        f"{data['glued_lines']}; truncated last lines {data['truncated_tails']}")
    if data["invalid_utf8_lines"] or data["surrogates_replaced"]:
        out(f"  replaced by U+FFFD: invalid UTF-8 on {data['invalid_utf8_lines']} lines; "
            f"{data['surrogates_replaced']} lone surrogates")
    for problem in data["malformed"][:10]:
        out(f"  malformed: {problem['file']}:{problem['line']}: {problem['reason']}")
    out(f"  messages kept {data['messages_kept']}; dropped: {_counts(data['messages_dropped'])}")
    out(f"  chunks {data['chunks']}; routes: {_counts(data['routes'])}; items: "
        f"{_counts({bank_label(k): v for k, v in data['items_by_bank_role'].items()})}")
    out(f"  statuses: {_counts(data['statuses'])}; redactions: {_counts(data['redactions'])}")
    if data["skip_reasons"]:
        out(f"  skipped chunks by reason: {_counts(data['skip_reasons'])}")
    for bank, seen in list(data["project_banks"].items())[:10]:
        out(f"  project bank {bank}: {seen['sessions']} session(s); {seen['why']}")
    if data["live_retained"]:
        out(f"  live retains: {_counts(data['live_retained'])}"
            + (f" (COULD NOT CHECK: {data['live_retained_unchecked']})" if data["live_retained_unchecked"] else ""))
    for skipped in data["sessions_skipped"][:10]:
        out(f"  skipped session: {skipped['file']}: {skipped['reason']}")
    if data["router_mode_on"]:
        out("  ROUTER MODE IS ON: confident User Bank content is written to the User Bank (userRetain.mode=router)")
    else:
        out("  User Bank: explicit-only mode; suggestions are recorded, nothing is written to the User Bank")
    upload = data["upload"]
    if upload:
        still_open = upload["operations_still_open"]
        out(f"  upload: {upload['requests']} request(s); documents: {_counts(upload['documents'])}"
            + (f"; operations still open: {still_open}" if still_open else ""))
        for error in upload["errors"][:10]:
            out(f"  upload error: {error}")
    if data["manifest"]:
        out(f"  manifest: {data['manifest']}")
    out(f"  ledger: {data['ledger']}")


@cli.command("route")
@click.argument("text", required=False)
@click.option("--context", help="The context string that would accompany the content.")
@click.option("--mode", type=click.Choice(["explicit-only", "router"]), help="Override userRetain.mode.")
@click.option("--cwd", "cwd", type=click.Path(file_okay=False, path_type=Path),
              help="Resolve configuration (banks, missions) as for a session in this folder (default: here).")
@click.option("--strategy", help="Routing strategy by name (default: routing.strategy from config).")
@common_options
@handle_errors
def route_command(
    text: str | None,
    context: str | None,
    mode: str | None,
    cwd: Path | None,
    strategy: str | None,
    config_file: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Show how the shared routing strategy would route TEXT (or standard input with '-').

    The dry-run presenter: it calls the same operation as 'import' and never writes.

    \b
    Examples:
      hindsight-batch route "I prefer terse answers in every project"
      git log -1 --format=%B | hindsight-batch route - --mode router --json
    """
    from hindsight_batch.banks import BankResolver, Unreproducible, with_project_bank
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.items import base_tags, project_bank_id, session_scope
    from hindsight_batch.routing import route_text
    from hindsight_batch.session.model import SessionHeader

    if text is None or text == "-":
        if text is None and sys.stdin.isatty():
            raise UsageError("give TEXT, or '-' to read standard input")
        text = sys.stdin.read()
    folder = str((cwd or Path.cwd()).resolve())
    resolver = ConfigResolver(config_file=config_file, flags={"userRetain.mode": mode, "routing.strategy": strategy})
    resolved = resolver.for_cwd(folder)
    settings = resolved.settings
    scope = session_scope(SessionHeader("route-preview", 3, None, folder, None), "", settings)
    with contextlib.suppress(Unreproducible):  # the preview then shows this tool's own rule
        settings = with_project_bank(settings, BankResolver(resolver.env).derive(resolved, folder, scope.project)[0])
    decision, _ = route_text(
        settings, text, context=context, cwd=folder, project_bank_id=project_bank_id(scope, settings),
        base_tags=base_tags(scope, settings),
    )
    if as_json:
        _echo(json.dumps(decision.model_dump(mode="json", by_alias=True), indent=2))
    if not quiet and not as_json:
        _echo(_format_decision(decision))


def _format_decision(decision: MemoryRouteDecision) -> str:
    from hindsight_batch.routing.models import bank_label

    lines = [
        f"route: {bank_label(decision.route)} ({decision.route}), confidence {decision.confidence:.2f}",
        f"mode: {decision.mode}{' (ROUTER MODE ON)' if decision.mode == 'router' else ''}; "
        f"strategy: {decision.strategy}",
        f"reason: {decision.reason}",
        f"signals: {', '.join(decision.signals) or 'none'}; matched: {', '.join(decision.matched_signals) or 'none'}",
    ]
    for target in decision.targets:
        action = "would write" if target.will_write else "preview only, not written"
        lines.append(f"target: {bank_label(target.bank_role)} {target.bank_id or '(no bank id)'}: {action}")
        lines.append(f"  tags: {', '.join(target.tags) or 'none'}")
    if not decision.targets:
        lines.append("target: none (nothing would be retained)")
    lines.append("writes: " + (", ".join(bank_label(w) for w in decision.writes) or "nothing"))
    for note in decision.safety_notes:
        lines.append(f"safety: {note}")
    return "\n".join(lines)


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
            _echo(json.dumps({"restored": str(target), "from": str(restore_backup)}))
        elif not quiet:
            _echo_err(f"restored {target} from {restore_backup}")
        return
    files = find_session_files(list(paths))
    types = (*prune.DEFAULT_TYPES, *custom_types)
    results = list(prune.iter_results(files, confirm=confirm, types=types, backup_dir=backup_dir,
                                      min_age=seconds, force=force))
    if as_json:
        _echo(json.dumps({"confirm": confirm, "files": [r.to_dict() for r in results]}, indent=2))
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
        _echo_err(line)
        for note in plan.get("left_alone", [])[:5]:
            _echo_err(f"  left alone: {note}")
        if result.backup:
            _echo_err(f"  backup: {result.backup}")
        if result.reason:
            _echo_err(f"  {result.reason}")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no files"
    _echo_err(f"prune-recall-messages ({'confirm' if confirm else 'preview, nothing written'}): {summary}")
    if not confirm and counts.get("preview"):
        _echo_err("run again with --confirm to rewrite these files (a backup of each is kept)")


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
    import time

    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.queue.flush import QueueFlusher
    from hindsight_batch.queue.store import queue_files
    from hindsight_batch.redaction.redactor import Redactor

    settings = ConfigResolver(config_file=config_file).for_cwd(None).settings
    files = list(queue_files(list(paths) or _default_queue_roots()))
    redactor = Redactor(private_hosts=tuple(settings.redaction.private_hosts))
    deadline = time.monotonic() + max_seconds if max_seconds is not None else None
    if dry_run:
        flusher = QueueFlusher(None, redactor, settings.upload, dry_run=True, max_jobs=max_jobs)
        reports = [flusher.flush(path) for path in files]
    else:
        with client_for(settings) as client:
            if files:
                client.version()  # unreachable or unauthorized: exit 4 before touching a queue
            flusher = QueueFlusher(client, redactor, settings.upload, max_jobs=max_jobs, deadline=deadline)
            reports = [flusher.flush(path) for path in files]
    data = {"dry_run": dry_run, "queues": [r.to_dict() for r in reports]}
    if as_json:
        _echo(json.dumps(data, indent=2))
    elif not quiet:
        for r in reports:
            verb = "would send" if dry_run else "sent"
            state = ("BUSY, " if r.busy else "") + ("FAILED, " if r.failed else "")
            _echo(f"{r.queue}: {state}{verb} {r.would_send if dry_run else r.sent}, "
                       f"retry later {r.retry_later}, dead-lettered {r.dead_lettered}, quarantined {r.quarantined}, "
                       f"left {r.left}{', stopped early' if r.stopped_early else ''}")
            for error in r.errors[:5]:
                _echo_err(f"  {error}")
        if not reports:
            _echo("no retain queues found")
    if any(r.busy for r in reports):
        sys.exit(EXIT_BUSY)
    if any(r.retry_later or r.dead_lettered or r.failed for r in reports):
        sys.exit(EXIT_ITEMS_FAILED)


def _default_queue_roots() -> list[Path]:
    from hindsight_batch.session.discovery import default_session_root
    from hindsight_batch.session.reader import peek_header

    roots = [Path("~/.hindsight/pi-queues").expanduser()]
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
    roots += [Path(cwd) for cwd in sorted(cwds) if (Path(cwd) / ".pi" / "hindsight" / "retain-queue.jsonl").is_file()]
    return [r for r in roots if r.exists()]


@cli.command("report")
@click.option("--run", "run_id", help="The run to summarise (default: the latest).")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path), help="Ledger folder.")
@common_options
@handle_errors
def report_command(run_id: str | None, state_dir: Path | None, config_file: Path | None, as_json: bool,
                   quiet: bool) -> None:
    """Summaries from the ledger: recent runs; for one run its routes, banks, skip reasons and redactions
    (rule and count only); documents by upload status. The ledger is a DuckDB file: plain SQL works too.

    \b
    Examples:
      hindsight-batch report
      duckdb ~/.local/state/hindsight-batch/ledger.duckdb "select route, count(*) from manifest group by 1"
    """
    from hindsight_batch.report import build_report

    with open_ledger(state_dir) as ledger:
        data = build_report(ledger, run_id)
    if as_json:
        _echo(json.dumps(data, indent=2))
        return
    if quiet:
        return
    for run in data["runs"]:
        _echo(f"run {run['run_id']}: {run['command']} ({run['mode']}) {run['status']}, "
                   f"started {run['started_at']}")
    _echo(f"run {data['run_id']}: {data['chunks']} chunk(s)")
    for title, key in (("routes", "by_route"), ("banks", "by_bank"), ("skipped", "skipped_by_reason"),
                       ("redactions", "redactions_by_rule"), ("documents", "documents_by_status"),
                       ("forgotten", "forgotten")):
        _echo(f"  {title}: {_counts(data[key])}")
    for failed in data["failed_files"][:50]:
        where = f":{failed['line']}" if failed["line"] is not None else ""
        _echo(f"  failed file: {failed['file']}{where}: {failed['reason']}")


@cli.command("verify")
@click.option("--bank", help="Only this bank.")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path), help="Ledger folder.")
@common_options
@handle_errors
def verify_command(bank: str | None, state_dir: Path | None, config_file: Path | None, as_json: bool,
                   quiet: bool) -> None:
    """Compare the server's documents with every document the ledger planned: missing, mismatched (content hash,
    tags, metadata), stale (a known session's windows the plan no longer has) and extra. Exit 1 when any differ;
    missing and mismatched ones are marked so that a plain re-run of 'import --apply' sends them again.

    \b
    Example:
      hindsight-batch verify --json
    """
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.verify import verify

    settings = ConfigResolver(config_file=config_file).for_cwd(None).settings
    with open_ledger(state_dir) as ledger, client_for(settings) as client:
        client.preflight()
        report = verify(ledger, client, bank)
    data = report.to_dict()
    if as_json:
        _echo(json.dumps(data, indent=2))
    elif not quiet:
        _echo(f"verify: {'OK' if report.ok else 'DIFFERENCES'}; banks {', '.join(report.banks) or 'none'}; "
                   f"checked {report.checked}, matching {report.matching}, missing {len(report.missing)}, "
                   f"mismatched {len(report.mismatched)}, stale {len(report.stale)}, extra {len(report.extra)}, "
                   f"still processing {len(report.pending)}")
        for kind in ("missing", "mismatched", "stale", "extra", "pending"):
            for entry in data[kind][:50]:
                fields = f" ({', '.join(entry['fields'])})" if "fields" in entry else ""
                _echo(f"  {kind}: {entry['bank_id']} {entry['document_id']}{fields}")
    if not report.ok:
        sys.exit(EXIT_ITEMS_FAILED)


@cli.command("forget")
@click.option("--run", "run_id", required=True, help="The applied run whose documents to delete (see 'report').")
@click.option("--confirm", is_flag=True, help="Delete them. Without it: list what would be deleted.")
@click.option("--force", is_flag=True, help="Also delete documents another run wrote too.")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path), help="Ledger folder.")
@common_options
@handle_errors
def forget_command(run_id: str, confirm: bool, force: bool, state_dir: Path | None, config_file: Path | None,
                   as_json: bool, quiet: bool) -> None:
    """Undo an applied run: list the documents RUN created on the server and, with --confirm, delete them
    (after importing into the wrong bank, say). Documents another run also wrote are listed and kept unless
    --force. The ledger records what was deleted; 'report --run RUN' shows it.

    \b
    Examples:
      hindsight-batch forget --run 20260501T100000Z-1a2b3c4d
      hindsight-batch forget --run 20260501T100000Z-1a2b3c4d --confirm
    """
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.forget import forget_run
    from hindsight_batch.importer import new_run_id

    settings = ConfigResolver(config_file=config_file).for_cwd(None).settings
    with open_ledger(state_dir) as ledger, client_for(settings) as client:
        client.preflight()
        by_run = new_run_id()
        ledger.start_run(by_run, "forget", "confirm" if confirm else "preview")
        report = forget_run(ledger, client, run_id, confirm=confirm, force=force, by_run=by_run)
        data = report.to_dict()
        ledger.finish_run(by_run, "ok", {"forget": run_id, "counts": data["counts"]})
    if as_json:
        _echo(json.dumps(data, indent=2))
    elif not quiet:
        for doc in data["documents"][:200]:
            shared = " (also written by another run)" if doc["also_written_by_another_run"] else ""
            _echo(f"  {doc['action']}: {doc['bank_id']} {doc['document_id']}{shared}")
        _echo(f"forget {run_id} ({'confirm' if confirm else 'preview, nothing deleted'}): "
                   f"{_counts(data['counts'])}")
        if not confirm and data["counts"].get("would-delete"):
            _echo("run again with --confirm to delete them")


@cli.command("status")
@click.option("--cwd", "cwd", type=click.Path(file_okay=False, path_type=Path),
              help="Show the configuration a session in this folder gets (default: here).")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path), help="Ledger folder.")
@click.option("--server", is_flag=True,
              help="Also check the server and the credentials (3 s); exit 4 when refused or unreachable.")
@common_options
@handle_errors
def status_command(cwd: Path | None, state_dir: Path | None, server: bool, config_file: Path | None, as_json: bool,
                   quiet: bool) -> None:
    """Show every resolved configuration value and where it came from (secrets masked), and ledger totals.

    \b
    Example:
      hindsight-batch status --cwd ~/src/my-project
    """
    from hindsight_batch.banks import BankResolver, Unreproducible, user_bank_clash
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.sinks.ledger import default_state_dir

    folder = str((cwd or Path.cwd()).resolve())
    resolver = ConfigResolver(config_file=config_file)
    resolved = resolver.for_cwd(folder)
    settings = resolved.settings
    values = _flatten(settings.model_dump(mode="json", by_alias=True))
    if settings.api_key is not None:
        values["apiKey"] = "******** (set)"
    project = (settings.project_name or "").strip() or Path(folder).name
    try:
        bank, why = BankResolver(resolver.env).derive(resolved, folder, project)
    except Unreproducible as exc:
        bank, why = None, f"cannot be derived here: {exc}; an import uses the bank the extension recorded"
    clash = user_bank_clash(resolved, bank)
    if clash:
        bank, why = None, f"refused, an import skips these sessions: {clash}"
    rows = [{"key": k, "value": mask(v) if isinstance(v, str) else v, "from": resolved.origin(k)}
            for k, v in values.items()]
    ledger_totals = _ledger_totals(state_dir or default_state_dir())
    family = {"hindsight-pi": "hindsight-pi (walodayeet/hindsight-pi)", "pi-hindsight": "pi-hindsight "
              "(luxus/pi-hindsight)"}.get(resolved.family, "none found: this tool's own rules apply")
    data: dict[str, Any] = {
        "cwd": folder,
        "config_files": [str(p) for p in resolved.files],
        "extension_config": resolved.family,
        "extension_config_files": resolved.family_files,
        "ignored_extension_keys": resolved.ignored_keys,
        "ignored_project_keys": resolved.warnings,
        "user_retain_mode": settings.user_retain.mode,
        "router_mode_on": settings.user_retain.mode == "router",
        "project_bank_id": bank,
        "project_bank_why": why,
        "settings": rows,
        "ledger": ledger_totals,
        "server": _server_status(settings) if server else "not asked (use --server)",
        "queues": _queue_depths(),
    }
    if as_json:
        _echo(json.dumps(data, indent=2))
        return
    if quiet:
        return
    _echo(f"configuration for sessions in {folder}")
    _echo("files: " + (", ".join(str(p) for p in resolved.files) or "none (defaults and environment only)"))
    _echo(f"extension configuration: {family}")
    for name, found in sorted(resolved.family_files.items()):
        _echo(f"  {name} settings in: {', '.join(dict.fromkeys(found))}")
    for warning in resolved.warnings:
        _echo(f"IGNORED: {warning}")
    if settings.user_retain.mode == "router":
        _echo("ROUTER MODE IS ON: confident User Bank content is written to the User Bank")
    else:
        _echo("User Bank: explicit-only (nothing is ever written to the User Bank automatically)")
    _echo(f"project bank: {bank or '(none)'}")
    _echo(f"  because: {why}")
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        _echo(f"  {row['key']:<{width}}  {json.dumps(row['value'])}  [{row['from']}]")
    if resolved.ignored_keys:
        _echo("accepted, not used by this tool: " + ", ".join(resolved.ignored_keys))
    _echo(f"ledger: {json.dumps(ledger_totals)}")
    _echo(f"server: {data['server']}")
    for queue in data["queues"]:
        _echo(f"queue: {queue['queue']}: {queue['jobs']} job(s), {queue['dead']} dead-lettered")


def _server_status(settings: Settings) -> str:
    """The server's version once it accepted our credentials; unreachable or refused ends the command (exit 4)."""
    with client_for(settings, timeout=3, max_attempts=1) as client:
        return mask(f"{settings.base_url}: version {client.preflight()}, credentials accepted")


def _queue_depths() -> list[dict[str, Any]]:
    from hindsight_batch.queue.store import queue_files, read_queue, side_file

    depths = []
    for path in queue_files(_default_queue_roots()):
        dead = side_file(path, "dead")
        dead_count = sum(1 for line in dead.read_bytes().split(b"\n") if line.strip()) if dead.exists() else 0
        depths.append({"queue": str(path), "jobs": len(read_queue(path).jobs), "dead": dead_count})
    return depths


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _ledger_totals(state_dir: Path) -> dict[str, Any]:
    from hindsight_batch.sinks.ledger import Ledger

    path = state_dir / "ledger.duckdb"
    if not path.exists():
        return {"path": str(path), "exists": False}
    try:
        with Ledger(state_dir) as ledger:
            runs = ledger.db.execute("SELECT count(*) FROM runs").fetchone()
            sources = ledger.db.execute("SELECT count(*) FROM sources").fetchone()
            docs = ledger.db.execute("SELECT status, count(*) FROM documents GROUP BY status").fetchall()
    except HindsightBatchError as exc:
        return {"path": str(path), "exists": True, "error": str(exc)}
    return {
        "path": str(path),
        "exists": True,
        "runs": runs[0] if runs else 0,
        "sources": sources[0] if sources else 0,
        "documents": {status: count for status, count in docs},
    }


def _warn_if_stale_build() -> None:
    """A checkout compiled in place (scripts/compile.sh) runs its compiled modules, not the sources edited since:
    say so rather than run old code silently."""
    stale = stale_compiled() if build() == "mypyc" else []
    if stale:
        _echo_err(f"hindsight-batch: warning: {', '.join(stale)} changed since scripts/compile.sh compiled them; "
                  "the compiled modules run, not the edits (scripts/compile.sh again, or --clean)")


def main() -> None:
    """The console entry point. SIGTERM unwinds like Ctrl-C from here on. Each command guards itself
    (:func:`handle_errors`); this catches what happens around them (an interrupt while starting up or parsing
    flags), with the same codes."""
    signal.signal(signal.SIGTERM, _terminated)
    _warn_if_stale_build()
    try:
        cli.main(prog_name="hindsight-batch", standalone_mode=False)
    except click.ClickException as exc:  # a usage error: click's own message, and with --json one JSON object too
        exc.show()
        if "--json" in sys.argv[1:]:
            _echo(json.dumps({"error": {"code": exc.exit_code, "kind": "UsageError", "message": exc.format_message()}}))
        sys.exit(exc.exit_code)
    except click.Abort as exc:  # click turns a Ctrl-C (or the end of input at a prompt) into Abort
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _exit_for(exc.__cause__, False)
        _echo_err("Aborted!")
        sys.exit(EXIT_ITEMS_FAILED)
    except (Exception, KeyboardInterrupt, Terminated) as exc:
        _exit_for(exc, "--debug" in sys.argv[1:])


@cli.command("review")
@click.option("--run", "run_id", help="The run to review (default: the latest run that planned chunks).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the page here (default: review-<run>.html in the current folder).")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path), help="Ledger folder.")
@common_options
@handle_errors
def review_command(run_id: str | None, output: Path | None, state_dir: Path | None, config_file: Path | None,
                   as_json: bool, quiet: bool) -> None:
    """Write one self-contained HTML page (mode 0600; it makes no request when opened) to look at a run before sending
    it: where each project's chunks go, what was left out and redacted (counts only), User Bank suggestions, and
    every session with its chunks (their text where the import kept it with --include-content).

    \b
    Example:
      hindsight-batch import ~/.pi/agent/sessions --include-content && hindsight-batch review -o review.html
    """
    from hindsight_batch.review import write_review

    with open_ledger(state_dir) as ledger:
        path = write_review(ledger.db, output, run_id)
    if as_json:
        _echo(json.dumps({"review": str(path)}))
    elif not quiet:
        _echo(str(path))
