"""Exceptions that end a command, each carrying the exit code of SPEC §7 (README, "Exit codes").

The tree, with the code the CLI exits with (tests/test_error_tree.py checks it against the classes)::

    * HindsightBatchError ............ 1
      - UsageError ................... 2
        - LedgerPathError ............ 2   hindsight_batch.ledger
          - DefaultStateFolderError .. 3   hindsight_batch.ledger
          - LedgerVersionError ....... 2   hindsight_batch.ledger
        - PruneRefused ............... 2   hindsight_batch.prune
      - ConfigError .................. 3
      - ServerError .................. 4
        - AuthError .................. 4   hindsight_batch.sinks.hindsight
        - BadAnswer .................. 4   hindsight_batch.sinks.hindsight
        - RequestRejected ............ 4   hindsight_batch.sinks.hindsight
        - UnreachableError ........... 4   hindsight_batch.sinks.hindsight
      - BusyError .................... 75
    * KeyboardInterrupt .............. 130
    * Terminated ..................... 143
    * BrokenPipeError ................ 141
    * any other Exception ............ 70  (a bug)

A command that ends normally exits 0, or 1 when some items or files failed (a result, not an exception).
"""

from __future__ import annotations

import errno
import os
import re
from typing import NoReturn

EXIT_OK = 0
EXIT_ITEMS_FAILED = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_SERVER = 4
EXIT_BUSY = 75
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in this tool; --debug shows the traceback
EXIT_SIGINT = 130  # 128 + SIGINT, as shells report a Ctrl-C
EXIT_SIGTERM = 143  # 128 + SIGTERM
EXIT_SIGPIPE = 141  # 128 + SIGPIPE: the reader of our output went away (`| head`)


class HindsightBatchError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = EXIT_ITEMS_FAILED


class UsageError(HindsightBatchError):
    exit_code = EXIT_USAGE


# A run of a token's alphabet this long, letters and digits both: no configuration key is one, a pasted credential
# is (an error names the key it stops at, and must not print a credential written where a key name belongs).
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_+/=-]{20,}")


def _shown_key(key: str) -> str:
    def cut(match: re.Match[str]) -> str:
        token = match.group(0)
        if not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
            return token
        return f"{token[:4]}…({len(token)} characters, not shown: a credential?)"

    return _TOKEN_LIKE.sub(cut, key)


class ConfigError(HindsightBatchError):
    """A configuration file, variable or flag is invalid. The message names the source and the key (a key that
    looks like a credential only by its first characters)."""

    exit_code = EXIT_CONFIG

    def __init__(self, source: str, key: str, problem: str) -> None:
        key = _shown_key(key)
        self.source = source
        self.key = key
        self.problem = problem
        super().__init__(f"{source}: {key}: {problem}")

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str, str, str]]:
        """Rebuilt from its three parts: a worker process (``import --jobs``) sends it to the parent pickled,
        and the default rebuilds it from the message alone (a TypeError that broke the worker pool)."""
        return ConfigError, (self.source, self.key, self.problem)


class BusyError(HindsightBatchError):
    """Another run holds the ledger or queue lock."""

    exit_code = EXIT_BUSY


class ServerError(HindsightBatchError):
    """The server is unreachable or refused our credentials."""

    exit_code = EXIT_SERVER


class Terminated(BaseException):
    """SIGTERM arrived. It unwinds like KeyboardInterrupt, so ``finally`` blocks record the run as interrupted,
    and it is a BaseException so that the ``except Exception`` guards isolating one file never swallow it."""


_LAST_SIGNAL: list[type[KeyboardInterrupt] | type[Terminated]] = [KeyboardInterrupt]  # (Python's own for SIGINT)


def raise_for_signal(kind: type[KeyboardInterrupt] | type[Terminated]) -> NoReturn:
    """What the SIGINT and SIGTERM handlers do: raise ``kind``, remembered for :func:`interrupt_behind`."""
    _LAST_SIGNAL[0] = kind
    raise kind()


def on_sigterm(signum: int, frame: object) -> None:
    """The SIGTERM handler: :class:`Terminated` unwinds the command (its ``finally`` blocks run)."""
    raise_for_signal(Terminated)


def on_sigint(signum: int, frame: object) -> None:
    """The SIGINT handler: KeyboardInterrupt, remembered for :func:`interrupt_behind`."""
    raise_for_signal(KeyboardInterrupt)


def interrupt_exit(exc: KeyboardInterrupt | Terminated) -> tuple[int, str]:
    """The exit code and the one line for a run an interrupt ended."""
    if isinstance(exc, Terminated):
        return EXIT_SIGTERM, "hindsight-batch: terminated (SIGTERM)"
    return EXIT_SIGINT, "hindsight-batch: interrupted (SIGINT)"


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | Terminated | None:
    """The interrupt ``exc`` is or stands for, or None. DuckDB's Python client answers a signal that lands while
    a query runs with ``RuntimeError("Query interrupted")``, dropping the KeyboardInterrupt or Terminated the
    signal's handler raised: that one is the interrupt (exit 130 or 143, the run ``interrupted``), not a bug."""
    if isinstance(exc, (KeyboardInterrupt, Terminated)):
        return exc
    if type(exc) is RuntimeError and str(exc) == "Query interrupted":
        return _LAST_SIGNAL[0]()
    return None


_NO_ROOM = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))  # "No space left on device", …


def out_of_room(exc: BaseException) -> str | None:
    """Why a write failed for want of room (a full disk, a quota), from an OSError or from a library's error that
    quotes the system's reason (DuckDB's, naming its file); None for any other error. Such a failure is the
    machine's, not a bug: the caller names the path, exit 2 (1 where other items were done)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return exc.strerror or _NO_ROOM[0]
    if not isinstance(exc, OSError) and isinstance(exc, Exception):
        text = " ".join(str(exc).split())
        if any(reason in text for reason in _NO_ROOM):
            return text[:300]
    return None


LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # an escape: mypyc takes no surrogate in a literal


def without_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate (which no UTF-8 file or request can hold) replaced by U+FFFD, and how
    many there were."""
    return LONE_SURROGATE.subn("\ufffd", text)
