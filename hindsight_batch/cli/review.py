"""``review``: one self-contained HTML page to look at a dry run before sending it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hindsight_batch.cli.app import cli, common_options, echo, handle_errors


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
    from hindsight_batch.api import write_review_page

    path = write_review_page(run_id, output, state_dir=state_dir)
    if as_json:
        echo(json.dumps({"review": str(path)}))
    elif not quiet:
        echo(str(path))
