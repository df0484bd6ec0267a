"""``report``, ``verify`` and ``forget``: what the ledger holds, how the server compares, undoing a run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from hindsight_batch.cli.app import cli, common_options, counts, echo, handle_errors
from hindsight_batch.errors import EXIT_ITEMS_FAILED


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
    from hindsight_batch.api import ledger_report

    data = ledger_report(run_id, state_dir=state_dir)
    if as_json:
        echo(json.dumps(data, indent=2))
        return
    if quiet:
        return
    for run in data["runs"]:
        echo(f"run {run['run_id']}: {run['command']} ({run['mode']}) {run['status']}, "
             f"started {run['started_at']}")
    echo(f"run {data['run_id']}: {data['chunks']} chunk(s)")
    for title, key in (("routes", "by_route"), ("banks", "by_bank"), ("skipped", "skipped_by_reason"),
                       ("redactions", "redactions_by_rule"), ("documents", "documents_by_status"),
                       ("forgotten", "forgotten")):
        echo(f"  {title}: {counts(data[key])}")
    for failed in data["failed_files"][:50]:
        where = f":{failed['line']}" if failed["line"] is not None else ""
        echo(f"  failed file: {failed['file']}{where}: {failed['reason']}")


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
    from hindsight_batch.api import verify_documents

    report = verify_documents(bank, state_dir=state_dir, config_file=config_file)
    data = report.to_dict()
    if as_json:
        echo(json.dumps(data, indent=2))
    elif not quiet:
        echo(f"verify: {'OK' if report.ok else 'DIFFERENCES'}; banks {', '.join(report.banks) or 'none'}; "
             f"checked {report.checked}, matching {report.matching}, missing {len(report.missing)}, "
             f"mismatched {len(report.mismatched)}, stale {len(report.stale)}, extra {len(report.extra)}, "
             f"still processing {len(report.pending)}")
        for kind in ("missing", "mismatched", "stale", "extra", "pending"):
            for entry in data[kind][:50]:
                fields = f" ({', '.join(entry['fields'])})" if "fields" in entry else ""
                echo(f"  {kind}: {entry['bank_id']} {entry['document_id']}{fields}")
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
    from hindsight_batch.api import forget_applied_run

    report = forget_applied_run(run_id, confirm=confirm, force=force, state_dir=state_dir, config_file=config_file)
    data = report.to_dict()
    if as_json:
        echo(json.dumps(data, indent=2))
    elif not quiet:
        for doc in data["documents"][:200]:
            shared = " (also written by another run)" if doc["also_written_by_another_run"] else ""
            echo(f"  {doc['action']}: {doc['bank_id']} {doc['document_id']}{shared}")
        echo(f"forget {run_id} ({'confirm' if confirm else 'preview, nothing deleted'}): "
             f"{counts(data['counts'])}")
        if not confirm and data["counts"].get("would-delete"):
            echo("run again with --confirm to delete them")
