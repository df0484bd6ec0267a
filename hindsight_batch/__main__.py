"""``python -m hindsight_batch`` and the ``hindsight-batch`` console script."""

import gc
import json
import signal
import sys


def main() -> None:
    """Run the command line with the cyclic garbage collector off until the command starts: start-up (click,
    pydantic, the commands) makes only long-lived objects, so collecting then frees nothing
    (:func:`hindsight_batch.cli.app.startup_done` turns it back on). Every way out turns it back on too."""
    gc.disable()
    try:
        from hindsight_batch.errors import Terminated, interrupt_exit, on_sigint, on_sigterm

        # A signal while the commands load (before any command runs) ends the process as one during a command
        # does: its exit code and one line (with --json, one JSON object too), never a traceback.
        signal.signal(signal.SIGTERM, on_sigterm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # (not where SIGINT is ignored)
            signal.signal(signal.SIGINT, on_sigint)
        try:
            from hindsight_batch.cli import main as cli_main
        except (KeyboardInterrupt, Terminated) as exc:
            code, line = interrupt_exit(exc)
            if "--json" in sys.argv[1:]:
                kind = type(exc).__name__
                print(json.dumps({"error": {"code": code, "kind": kind, "message": line.split(": ", 1)[1]}}))
            print(line, file=sys.stderr)
            sys.exit(code)
        cli_main()
    finally:
        gc.enable()


if __name__ == "__main__":  # not when a spawned worker process (import --jobs) imports the main module
    main()
