"""Which live extension is installed, when neither one's configuration file names it.

hindsight-pi needs no configuration file: with only ``HINDSIGHT_BASE_URL`` (or a ``~/.hindsight/config.json``
holding only ``baseUrl``, which the hindsight CLI also writes) it runs on its defaults, ``bankStrategy per-repo``
(extensions/config.ts ``loadConfig``; recordings ``env-only`` and ``complete``). Without any configuration and any
``HINDSIGHT_*`` variable it is disabled (its ``enabled`` defaults to whether a base URL or key is set: recording
``no-config``), yet still installed: once given a server it writes to that same default bank. So the extension is
found by what is on the disk, each sign named in the evidence:

* pi's packages (pi docs/packages.md): ``packages`` in ``$PI_CODING_AGENT_DIR/settings.json`` (default
  ``~/.pi/agent/settings.json``) and ``<cwd>/.pi/settings.json``, each a source string or ``{source}``, and their
  ``extensions`` paths; an extension folder or file in ``<agent dir>/extensions/`` or ``<cwd>/.pi/extensions/``
  (pi docs/extensions.md), by its name or its ``package.json`` name;
* the extensions' own files: hindsight-pi's queue folder ``~/.hindsight/pi-queues`` (extensions/queue.ts);
  pi-hindsight's ``<cwd>/.pi/hindsight/`` (session meta, retain cursors, its retain queue);
* entries only one of them writes into a session: hindsight-pi's ``hindsight-meta`` (/hindsight:toggle-retain,
  /hindsight:tag), ``hindsight-recall-status`` and ``hindsight-retain-status`` (0.3.x indicators); pi-hindsight's
  persisted recall, a user message starting ``<hindsight-memory>``.

``hindsight-recall`` is not a sign: both extensions (and others) write it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import open_regular_file, read_regular
from hindsight_batch.config.families import HINDSIGHT_PI, PI_HINDSIGHT, home_of

# The package and repository names (npm @walodayeet/hindsight-pi, github walodayeet/hindsight-pi; npm
# @luxusai/pi-hindsight, github luxus/pi-hindsight). Neither name holds the other.
_NAMES = ((HINDSIGHT_PI, "hindsight-pi"), (PI_HINDSIGHT, "pi-hindsight"))
_SESSION_SIGNS = (
    (HINDSIGHT_PI, b'"customType":"hindsight-meta"'),
    (HINDSIGHT_PI, b'"customType":"hindsight-recall-status"'),
    (HINDSIGHT_PI, b'"customType":"hindsight-retain-status"'),
    (PI_HINDSIGHT, b'"text":"<hindsight-memory>'),
    (PI_HINDSIGHT, b'"content":"<hindsight-memory>'),
)
NAMES = {"hpi": HINDSIGHT_PI, HINDSIGHT_PI: HINDSIGHT_PI, PI_HINDSIGHT: PI_HINDSIGHT, "none": "none"}


def _named(text: str) -> str | None:
    lowered = text.lower()
    for family, name in _NAMES:
        if name in lowered:
            return family
    return None


def _read_json(path: Path) -> Any:
    try:
        return jsoncodec.loads(read_regular(path))  # pi's settings: a FIFO there must not block the run
    except (OSError, ValueError):
        return None


def _packages(settings: Path, found: dict[str, list[str]]) -> None:
    data = _read_json(settings)
    if not isinstance(data, dict):
        return
    for key in ("packages", "extensions"):
        entries = data.get(key)
        for entry in entries if isinstance(entries, list) else []:
            source = entry.get("source") if isinstance(entry, dict) else entry
            family = _named(source) if isinstance(source, str) else None
            if family is not None:
                found.setdefault(family, []).append(f"{settings} {key}: {source}")


def _extension_folder(folder: Path, found: dict[str, list[str]]) -> None:
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return
    for child in children:
        family = _named(child.name)
        if family is None:
            package = _read_json(child / "package.json")
            name = package.get("name") if isinstance(package, dict) else None
            family = _named(name) if isinstance(name, str) else None
        if family is not None:
            found.setdefault(family, []).append(f"extension {child}")


def _on_disk(agent_dir: str, hindsight_home: str, cwd: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    found: dict[str, list[str]] = {}
    _packages(Path(agent_dir) / "settings.json", found)
    _extension_folder(Path(agent_dir) / "extensions", found)
    if cwd:
        _packages(Path(cwd) / ".pi" / "settings.json", found)
        _extension_folder(Path(cwd) / ".pi" / "extensions", found)
    if os.path.isdir(os.path.join(hindsight_home, "pi-queues")):
        found.setdefault(HINDSIGHT_PI, []).append(f"its queue folder {os.path.join(hindsight_home, 'pi-queues')}")
    luxus = os.path.join(cwd, ".pi", "hindsight") if cwd else ""
    for name in ("session-meta", "retain-cursors.json", "retain-queue.jsonl"):
        if luxus and os.path.exists(os.path.join(luxus, name)):
            found.setdefault(PI_HINDSIGHT, []).append(f"its file {os.path.join(luxus, name)}")
            break
    return tuple((family, tuple(signs)) for family, signs in sorted(found.items()))


def _in_session(session_file: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    try:
        with open_regular_file(session_file) as handle:
            for line in handle:
                if b"hindsight" not in line:
                    continue
                compact = line.replace(b'": "', b'":"')
                for family, sign in _SESSION_SIGNS:
                    if sign in compact and family not in found:
                        found[family] = [f"a {sign.decode().split(':', 1)[1].strip(chr(34))} entry in the session"]
                if len(found) == len(_NAMES):
                    break
    except OSError:
        pass
    return found


class Installed:
    """The live extensions found installed for a session (family → the signs found), from pi's settings and
    extension folders, the extensions' own files (read once per cwd) and the entries they write in the session."""

    def __init__(self, env: Mapping[str, str]) -> None:
        home = home_of(env)
        self._agent_dir = os.path.expanduser(env.get("PI_CODING_AGENT_DIR") or os.path.join(home, ".pi", "agent"))
        self._hindsight_home = os.path.join(home, ".hindsight")
        self._by_cwd: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {}

    def __call__(self, cwd: str | None, session_file: Path | None = None) -> dict[str, list[str]]:
        key = cwd or ""
        if key not in self._by_cwd:
            self._by_cwd[key] = _on_disk(self._agent_dir, self._hindsight_home, key)
        found = {family: list(signs) for family, signs in self._by_cwd[key]}
        if session_file is not None:
            for family, signs in _in_session(session_file).items():
                found.setdefault(family, []).extend(signs)
        return found
