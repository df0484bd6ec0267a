"""Two files with one session id (a copied file) would fight over the same document ids: one of them imports it."""

from __future__ import annotations

import os
from collections.abc import Callable


class SessionOwners:
    """The one file that imports a session id: the first path, in sort order, of those that hold it (the files of
    this run and the sources the ledger knows, ``known()``: path -> session id, asked once)."""

    def __init__(self, known: Callable[[], dict[str, str]]) -> None:
        self._known = known
        self._session_files: dict[str, set[str]] | None = None

    def owner(self, session_id: str, path: str) -> str:
        """The path that imports ``session_id``, ``path`` being one that holds it."""
        if self._session_files is None:
            self._session_files = {}
            for known_path, session in self._known().items():
                if os.path.isfile(known_path):  # os.path, not Path: once per source the ledger knows
                    self._session_files.setdefault(session, set()).add(os.path.realpath(known_path))
        paths = self._session_files.setdefault(session_id, set())
        paths.add(path)
        return min(p for p in paths if p == path or os.path.isfile(p))
