"""The import's progress bar: a byte count that moves within a large file (tqdm's, or none with ``-q``)."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Protocol


class ProgressBar(Protocol):
    """What the importer asks of a progress bar (tqdm's, or none)."""

    def __enter__(self) -> ProgressBar:
        """The bar, shown."""

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> object:
        """The bar, closed."""

    def update(self, n: float = 1) -> object:
        """``n`` more bytes done."""

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Text after the bar (the upload counts)."""


class Moved:
    """The bytes of the file being read that the bar was told of: it moves within a large file."""

    def __init__(self, bar: ProgressBar) -> None:
        self.bar = bar
        self.done = 0

    def __call__(self, offset: int) -> None:
        self.bar.update(offset - self.done)
        self.done = offset


class _NoBar:
    """The progress bar of a run without one (``-q``, no terminal): tqdm is not even imported."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None, /) -> None:
        return None

    def update(self, n: float = 1) -> None:
        return None

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        return None


def progress_bar(total: int, unit: str, unit_scale: bool, disable: bool, desc: str, leave: bool) -> ProgressBar:
    if disable:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=unit_scale, desc=desc, leave=leave)


def file_size(path: Path) -> int:
    """For the progress bar: a file that cannot even be looked at counts 0 (it is reported where it is read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
