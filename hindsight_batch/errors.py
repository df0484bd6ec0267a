"""Exceptions that end a command, each carrying the exit code of SPEC §7."""

from __future__ import annotations

EXIT_OK = 0
EXIT_ITEMS_FAILED = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_SERVER = 4
EXIT_BUSY = 75


class HindsightBatchError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = EXIT_ITEMS_FAILED


class UsageError(HindsightBatchError):
    exit_code = EXIT_USAGE


class ConfigError(HindsightBatchError):
    """A configuration file, variable or flag is invalid. The message names the source and the key."""

    exit_code = EXIT_CONFIG

    def __init__(self, source: str, key: str, problem: str) -> None:
        self.source = source
        self.key = key
        self.problem = problem
        super().__init__(f"{source}: {key}: {problem}")


class BusyError(HindsightBatchError):
    """Another run holds the ledger or queue lock."""

    exit_code = EXIT_BUSY


class ServerError(HindsightBatchError):
    """The server is unreachable or refused our credentials."""

    exit_code = EXIT_SERVER
