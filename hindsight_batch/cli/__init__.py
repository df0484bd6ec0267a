"""The ``hindsight-batch`` command line: a thin click layer over :mod:`hindsight_batch.api`. Each module holds
one command group; it parses options, calls the library and prints (masked, through :func:`app.echo`).

In: the command's arguments and options. Out: what the command prints (text, or ``--json``) and its exit code
(a :class:`~hindsight_batch.errors.HindsightBatchError`'s ``exit_code``; :func:`handle_errors`).
"""

from hindsight_batch.cli.app import cli, echo, echo_err, handle_errors, main

# Importing the command modules registers their commands on the group.
from hindsight_batch.cli import flush, importing, prune, report, review, route, status  # noqa: F401  # isort: skip

__all__ = ["cli", "echo", "echo_err", "handle_errors", "main"]
