"""``status``: the resolved configuration, the ledger's totals, the server and the queues
(:func:`hindsight_batch.commands.status.build_status`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hindsight_batch.cli.app import cli, common_options, echo, handle_errors


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
    from hindsight_batch.commands.status import build_status

    data = build_status(cwd, config_file, state_dir, server)
    if as_json:
        echo(json.dumps(data, indent=2))
        return
    if quiet:
        return
    family = {"hindsight-pi": "hindsight-pi (walodayeet/hindsight-pi)", "pi-hindsight": "pi-hindsight "
              "(luxus/pi-hindsight)"}.get(data["extension_config"], "none found: this tool's own rules apply")
    echo(f"configuration for sessions in {data['cwd']}")
    echo("files: " + (", ".join(data["config_files"]) or "none (defaults and environment only)"))
    echo(f"extension configuration: {family}")
    for name, found in sorted(data["extension_config_files"].items()):
        echo(f"  {name} settings in: {', '.join(dict.fromkeys(found))}")
    for warning in data["ignored_project_keys"]:
        echo(f"IGNORED: {warning}")
    if data["router_mode_on"]:
        echo("ROUTER MODE IS ON: confident User Bank content is written to the User Bank")
    else:
        echo("User Bank: explicit-only (nothing is ever written to the User Bank automatically)")
    echo(f"project bank: {data['project_bank_id'] or '(none)'}")
    echo(f"  because: {data['project_bank_why']}")
    rows = data["settings"]
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        echo(f"  {row['key']:<{width}}  {json.dumps(row['value'])}  [{row['from']}]")
    if data["retain_switch"]:
        echo(f"SWITCHED OFF: {data['retain_switch']}; catch-up leaves these sessions out (an import with "
             "--respect-switches too)")
    if data["ignored_extension_keys"]:
        echo("accepted, not used by this tool: " + ", ".join(data["ignored_extension_keys"]))
    echo(f"ledger: {json.dumps(data['ledger'])}")
    echo(f"server: {data['server']}")
    for queue in data["queues"]:
        if queue.get("error"):
            echo(f"queue: {queue['queue']}: cannot be read: {queue['error']}")
        else:
            echo(f"queue: {queue['queue']}: {queue['jobs']} job(s), {queue['dead']} dead-lettered")
