"""``route``: show how the routing strategy would route a text (:func:`hindsight_batch.api.preview_route`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from hindsight_batch.cli.app import cli, common_options, echo, handle_errors
from hindsight_batch.errors import UsageError

if TYPE_CHECKING:
    from hindsight_batch.routing.models import MemoryRouteDecision


@cli.command("route")
@click.argument("text", required=False)
@click.option("--context", help="The context string that would accompany the content.")
@click.option("--mode", type=click.Choice(["explicit-only", "router"]), help="Override userRetain.mode.")
@click.option("--cwd", "cwd", type=click.Path(file_okay=False, path_type=Path),
              help="Resolve configuration (banks, missions) as for a session in this folder (default: here).")
@click.option("--strategy", help="Routing strategy by name (default: routing.strategy from config).")
@click.option("--role", type=click.Choice(["user", "assistant", "toolResult"]), default="user", show_default=True,
              help="Who wrote TEXT, when it is not a chunk's JSON records: only the user's words can make a User "
                   "Bank candidate.")
@common_options
@handle_errors
def route_command(
    text: str | None,
    context: str | None,
    mode: str | None,
    cwd: Path | None,
    strategy: str | None,
    role: str,
    config_file: Path | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Show how the shared routing strategy would route TEXT (or standard input with '-').

    The dry-run presenter: it calls the same operation as 'import' and never writes. TEXT is one message (the
    user's, or --role's), with the S1 and redaction steps import applies to it, or a chunk's projected JSON records
    (a manifest row's content), routed as they are.

    \b
    Examples:
      hindsight-batch route "I prefer terse answers in every project"
      git log -1 --format=%B | hindsight-batch route - --mode router --json
    """
    from hindsight_batch.api import preview_route

    if text is None or text == "-":
        if text is None and sys.stdin.isatty():
            raise UsageError("give TEXT, or '-' to read standard input")
        text = sys.stdin.read()
    decision = preview_route(text, context=context, cwd=cwd, mode=mode, strategy=strategy, config_file=config_file,
                             role=role)
    if as_json:
        echo(json.dumps(decision.as_json(), indent=2))
    if not quiet and not as_json:
        echo(_format_decision(decision))


def _format_decision(decision: MemoryRouteDecision) -> str:
    from hindsight_batch.routing.models import bank_label

    lines = [
        f"route: {bank_label(decision.route)} ({decision.route}), confidence {decision.confidence:.2f}",
        f"mode: {decision.mode}{' (ROUTER MODE ON)' if decision.mode == 'router' else ''}; "
        f"strategy: {decision.strategy}",
        f"reason: {decision.reason}" + (f" (skip reason: {decision.skip_reason})" if decision.skip_reason else ""),
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
