"""``python -m hindsight_batch`` and the ``hindsight-batch`` console script."""

import gc


def main() -> None:
    """Run the command line with the cyclic garbage collector off until the command starts: start-up (click,
    pydantic, the commands) makes only long-lived objects, so collecting then frees nothing
    (:func:`hindsight_batch.cli.app.startup_done` turns it back on). Every way out turns it back on too."""
    gc.disable()
    try:
        from hindsight_batch.cli import main as cli_main

        cli_main()
    finally:
        gc.enable()


if __name__ == "__main__":  # not when a spawned worker process (import --jobs) imports the main module
    main()
