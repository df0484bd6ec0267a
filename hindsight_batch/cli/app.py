"""The ``hindsight-batch`` group and what every command shares: the masked output helpers, the common options,
and the one place that turns how a command ended into a line on stderr and the documented exit code."""

from __future__ import annotations

import functools
import gc
import importlib
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from hindsight_batch import __version__, build, build_notice, stale_compiled
from hindsight_batch.base.masking import mask
from hindsight_batch.errors import (
    EXIT_INTERNAL,
    EXIT_ITEMS_FAILED,
    EXIT_SIGPIPE,
    HindsightBatchError,
    Terminated,
    interrupt_behind,
    interrupt_exit,
    on_sigint,
    on_sigterm,
)

# The commands import the library when they run: `--help` and `prune-recall-messages` then start without
# loading pydantic, duckdb and httpx.

F = TypeVar("F", bound=Callable[..., Any])


def echo_err(message: str) -> None:
    click.echo(mask(message), err=True)


def echo(message: str) -> None:
    """Standard output; like everything this tool prints, with credentials masked."""
    click.echo(mask(message))


def _debug() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context and context.find_root().params.get("debug"))


def handle_errors(func: F) -> F:
    """Turn every way a command can end badly into one clear line on stderr and the documented exit code: our
    errors, an interrupt (SIGINT 130, SIGTERM 143; ``finally`` blocks record the run first), and an unexpected
    exception (70; its traceback only with ``--debug``). No traceback reaches the user otherwise."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        startup_done()
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # every one becomes a line and an exit code
            _exit_for(exc, _debug(), bool(kwargs.get("as_json")))
        except (KeyboardInterrupt, Terminated) as exc:
            _exit_for(exc, False, bool(kwargs.get("as_json")))

    return wrapper  # type: ignore[return-value]


# Whether this process is the console script's (hindsight_batch.__main__ turned the garbage collector off).
_console_start_up = False


def startup_done(*modules: str) -> None:
    """Start-up is over: import ``modules`` (what the command needs first anyway), then turn the cyclic garbage
    collector back on, minus the objects start-up made. Only in the console script's process, which turned it off
    (:func:`hindsight_batch.__main__.main`); in any other (a program, a test's CliRunner) this does nothing.
    Every command calls it first (:func:`handle_errors`); a command may call it again to add what it loads next.

    Start-up makes only long-lived objects (modules, classes, click's commands): collecting while it runs walks
    them again and again and frees nothing, and so would every full collection later and the one at exit.
    ``gc.freeze()`` moves them out of the collector's sight; everything made after it is collected as usual."""
    global _console_start_up
    if gc.isenabled() and not _console_start_up:
        return
    _console_start_up = True
    for name in modules:
        importlib.import_module(name)
    gc.freeze()
    gc.enable()


def _exit_for(exc: BaseException, debug: bool, as_json: bool = False) -> NoReturn:
    """The one line and the exit code for how a command ended; with ``--json`` also one JSON object on stdout,
    ``{"error": {"code", "kind", "message"}}``, so every exit path of a --json run prints exactly one."""
    exc = interrupt_behind(exc) or exc
    if isinstance(exc, BrokenPipeError):  # `hindsight-batch report | head`: no one reads on, nothing to say
        _quiet_stdout()
        sys.exit(EXIT_SIGPIPE)
    if isinstance(exc, HindsightBatchError):
        code, line = exc.exit_code, f"hindsight-batch: error: {exc}"
    elif isinstance(exc, (KeyboardInterrupt, Terminated)):
        code, line = interrupt_exit(exc)
    else:
        if debug:
            import traceback  # (loaded only here: a few ms of every start-up otherwise)

            traceback.print_exception(exc)
        code = EXIT_INTERNAL
        from hindsight_batch.redaction.messages import failure_reason  # the redactor loads only for an error

        line = (f"hindsight-batch: internal error: {failure_reason(exc)} (a bug in hindsight-batch; "
                f"{'the traceback is above' if debug else 'run again with --debug to see where'})")
    if as_json:
        message = str(exc) if isinstance(exc, HindsightBatchError) else line.removeprefix("hindsight-batch: ")
        echo(json.dumps({"error": {"code": code, "kind": type(exc).__name__, "message": message}}))
    echo_err(line)
    sys.exit(code)


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises no second broken pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def common_options(func: F) -> F:
    func = click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path),
                        help="An extra config file, read after the discovered ones.")(func)
    func = click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")(func)
    func = click.option("--quiet", "-q", is_flag=True, help="No progress bar, no human summary.")(func)
    return func


def progress(quiet: bool) -> bool:
    """A progress bar only for a person watching: not with --quiet, not when stderr is not a terminal."""
    return not quiet and sys.stderr.isatty()


def counts(mapping: Mapping[str, int]) -> str:
    return ", ".join(f"{key} {value}" for key, value in mapping.items()) or "none"


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


def _warn_if_stale_build() -> None:
    """A checkout compiled in place (scripts/compile.sh) runs its compiled modules, not the sources edited since:
    say so rather than run old code silently."""
    stale = stale_compiled() if build() == "mypyc" else []
    if stale:
        echo_err(f"hindsight-batch: warning: {', '.join(stale)} changed since scripts/compile.sh compiled them; "
                 "the compiled modules run, not the edits (scripts/compile.sh again, or --clean)")
    notice = build_notice()  # an install that fell back to pure Python: pip hid the build's reason
    if notice:
        echo_err(notice)


def main() -> None:
    """The console entry point. SIGTERM unwinds like Ctrl-C from here on. Each command guards itself
    (:func:`handle_errors`); this catches what happens around them (an interrupt while starting up or parsing
    flags), with the same codes."""
    signal.signal(signal.SIGTERM, on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not where SIGINT is ignored)
        signal.signal(signal.SIGINT, on_sigint)
    # pydantic looks for plugins by scanning every installed distribution's metadata, at each start, for this
    # command's one validation of its configuration; the documented switch skips that. A value the user set wins;
    # the library (hindsight_batch.api) leaves it alone.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _warn_if_stale_build()
    try:
        cli.main(prog_name="hindsight-batch", standalone_mode=False)
    except click.ClickException as exc:  # a usage error: click's own message, and with --json one JSON object too
        exc.show()
        if "--json" in sys.argv[1:]:
            echo(json.dumps({"error": {"code": exc.exit_code, "kind": "UsageError", "message": exc.format_message()}}))
        sys.exit(exc.exit_code)
    except click.Abort as exc:  # click turns a Ctrl-C (or the end of input at a prompt) into Abort
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _exit_for(exc.__cause__, False)
        echo_err("Aborted!")
        sys.exit(EXIT_ITEMS_FAILED)
    except (Exception, KeyboardInterrupt, Terminated) as exc:
        _exit_for(exc, "--debug" in sys.argv[1:])
