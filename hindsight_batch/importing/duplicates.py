"""Two files with one session id (a copied file) would fight over the same document ids: one of them imports it."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection

from hindsight_batch.session.names import source_name, source_path


class SessionOwners:
    """The one file that imports a session id: the first path, in sort order, of those that hold it (the files of
    this run and the sources the ledger knows, ``known()``: path -> session id, asked once). ``listed``: the run's
    files, as listed (resolved): a known source among them is not looked at again (two calls per source). Paths
    are :func:`~hindsight_batch.session.names.source_name` names, as the ledger keeps them."""

    def __init__(self, known: Callable[[], dict[str, str]], listed: Collection[str] = ()) -> None:
        self._known = known
        self._listed = listed
        self._session_files: dict[str, set[str]] | None = None

    def owner(self, session_id: str, path: str) -> str:
        """The path that imports ``session_id``, ``path`` being one that holds it."""
        if self._session_files is None:
            self._session_files = {}
            folders: dict[str, str] = {}  # each folder resolved once (thousands of sources share a few)
            listed = self._listed
            for known_path, session in self._known().items():
                if known_path in listed:
                    self._session_files.setdefault(session, set()).add(known_path)
                elif os.path.isfile(source_path(known_path)):  # os.path, not Path: once per known source
                    self._session_files.setdefault(session, set()).add(_realpath(known_path, folders))
        paths = self._session_files.setdefault(session_id, set())
        paths.add(path)
        return min(p for p in paths if p == path or os.path.isfile(source_path(p)))


def _realpath(named: str, folders: dict[str, str]) -> str:
    """``os.path.realpath`` of the file ``named`` names, its folder's from ``folders`` (filled here): a path that
    is not a symlink is its resolved folder plus its name."""
    path = source_path(named)
    folder, name = os.path.split(path)
    if not name or name in (".", "..") or not folder or os.path.islink(path):
        return source_name(os.path.realpath(path))
    resolved = folders.get(folder)
    if resolved is None:
        resolved = folders[folder] = os.path.realpath(folder)
    return source_name(os.path.join(resolved, name))
