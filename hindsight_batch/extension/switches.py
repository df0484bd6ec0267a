"""What the user told the live extension about retention, read exactly as the extension reads it.

Three kinds of switch, each judged by the rule of the extension's own code (the file and function are named beside
each rule):

* **per project** (:func:`project_switch`): hindsight-pi's ``host.pi.enabled`` / ``host.pi.saveMessages`` in any
  ``.hindsight/config.json`` from ``/`` down to the cwd (and ``HINDSIGHT_ENABLED`` / ``HINDSIGHT_SAVE_MESSAGES``);
  pi-hindsight's ``enabled``, ``retain.enabled``, ``banks.project.enabled`` in ``.pi/hindsight.json[c]`` or the
  ``"pi-hindsight"`` section of pi's ``settings.json`` (and ``PI_HINDSIGHT_ENABLED``);
* **per session, pi-hindsight** (:func:`luxus_session`): ``<cwd>/.pi/hindsight/session-meta/<sha256(session
  file)[:16]>.json``, fail closed as ``getEffectiveSessionMemoryMode`` is, keyed by the session path as pi spells
  it (:func:`session_path_spellings`);
* **per session, hindsight-pi** (:func:`hpi_session`): ``hindsight-meta`` custom entries in the session file
  (``/hindsight:toggle-retain``, ``/hindsight:tag``); the last one before a message decides for that message.

Catch-up (automatic retain) honours every switch; an import lists the sessions they cover and honours them with
``--respect-switches`` (seed 001: import is allowed in every session mode), never pi-hindsight's one-turn
``nextRetainMode`` (seed 004: historical import ignores it). Session tags (both extensions) go on every item.
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import open_regular_file, read_regular
from hindsight_batch.session.discovery import default_session_root
from hindsight_batch.session.names import node_path

if TYPE_CHECKING:
    from hindsight_batch.config import ResolvedConfig

HPI_META_TYPE = "hindsight-meta"  # hindsight-pi extensions/meta.ts HINDSIGHT_META_TYPE
# A message entry as pi writes it ({"type":"message","id":…}), its id without escapes: read without parsing.
_MESSAGE_PREFIX = re.compile(rb'\{"type":"message","id":"([^"\\]*)"')


@dataclass(frozen=True)
class Switched:
    """A switch that keeps a whole session from being retained: which one, and why (for summary and manifest)."""

    switch: str  # short stable name: project, luxus-session, hpi-session (hindsight-pi's toggle)
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"switch": self.switch, "reason": self.reason}


# --- per project -----------------------------------------------------------------------------------------------


def _hpi_bool(value: Any) -> bool | None:
    """hindsight-pi extensions/config.ts ``boolOr``: a boolean as it is, a string is ``value === "true"``,
    anything else falls back to the default (None here: the switch says nothing)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value == "true"
    return None


def _luxus_bool(value: Any) -> bool | None:
    """pi-hindsight extensions/config/config-normalize.ts ``bool``: only a real boolean counts; anything else
    falls back to the default (None here)."""
    return value if isinstance(value, bool) else None


def project_switch(resolved: ResolvedConfig, env: Mapping[str, str], cwd: str | None = None) -> Switched | None:
    """The per-project switch that turns the extension's automatic retain off for sessions in this cwd, or None.

    hindsight-pi extensions/index.ts: ``initialize`` returns when ``!config.enabled``; ``message_end`` returns
    when ``!handles.config.saveMessages``. Both are read in extensions/config.ts ``resolveConfig`` as
    ``boolOr(process.env.HINDSIGHT_ENABLED ?? host.enabled, …)`` and ``boolOr(process.env.HINDSIGHT_SAVE_MESSAGES ??
    host.saveMessages, true)``: the environment wins over the files. Only an explicit value is a switch (with no
    value at all, ``enabled`` defaults to whether a server is configured: not a user's choice about a project).

    pi-hindsight extensions/lifecycle/memory-lifecycle-retain.ts ``retain``: nothing when ``!config.enabled ||
    !config.retain.enabled`` or when no target bank is left (``retainTargets`` is only the project bank, so
    ``banks.project.enabled: false`` retains nothing automatically); ``PI_HINDSIGHT_ENABLED`` is read with
    ``envBool`` (``1``, ``true``, ``yes``, ``on``). Its newest versions read the same keys from the
    ``"pi-hindsight"`` section of pi's ``~/.pi/agent/settings.json`` and ``<cwd>/.pi/settings.json``
    (extensions/config/config.ts ``readGlobalSettingsConfig``, ``readProjectSettingsConfig``): read too."""
    switches = dict(resolved.switches)
    for path, section in _pi_settings_sections(cwd, env):
        for name, written, value in _luxus_switches(section):
            switches[name] = (str(path), f"pi-hindsight.{written}", value)
    for name, variable in (("host.pi.enabled", "HINDSIGHT_ENABLED"),
                           ("host.pi.saveMessages", "HINDSIGHT_SAVE_MESSAGES")):
        raw = env.get(variable)
        if raw is not None:
            if _hpi_bool(raw) is False:
                return Switched("project", f"hindsight-pi: {variable}={raw!r} (automatic retain off)")
            continue  # the environment wins over every file (``process.env.X ?? host.x``)
        found = switches.get(name)
        if found is not None and _hpi_bool(found[2]) is False:
            return Switched("project", f"hindsight-pi: {found[1]} is {jsoncodec.dumps(found[2]).decode()} in "
                                       f"{found[0]} (automatic retain off for this project)")
    raw = env.get("PI_HINDSIGHT_ENABLED")
    if raw is not None and raw.lower() not in ("1", "true", "yes", "on"):
        return Switched("project", f"pi-hindsight: PI_HINDSIGHT_ENABLED={raw!r} (automatic retain off)")
    for name in ("enabled", "retain.enabled", "banks.project.enabled"):
        if name == "enabled" and raw is not None:
            continue  # the variable decides
        found = switches.get(name)
        if found is not None and _luxus_bool(found[2]) is False:
            return Switched("project", f"pi-hindsight: {found[1]} is false in {found[0]} (automatic retain off "
                                       "for this project)")
    return None


def _pi_settings_sections(cwd: str | None, env: Mapping[str, str]) -> list[tuple[Path, dict[str, Any]]]:
    """The ``"pi-hindsight"`` objects of pi's own settings files, home first (a file that cannot be read or is
    not an object holds none: pi itself reports it)."""
    home = env.get("HOME") or os.path.expanduser("~")
    paths = [Path(home) / ".pi" / "agent" / "settings.json"]
    if cwd:
        paths.append(Path(cwd) / ".pi" / "settings.json")
    found = []
    for path in paths:
        try:
            data = jsoncodec.loads(read_regular(path))
        except (OSError, ValueError):
            continue
        section = data.get("pi-hindsight") if isinstance(data, dict) else None
        if isinstance(section, dict):
            found.append((path, section))
    return found


def _luxus_switches(section: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(switch name, key as written, value) of a pi-hindsight configuration object (as families.py reads its
    hindsight.json: ``banks.coding`` stands for ``banks.project`` where that says nothing)."""
    out: list[tuple[str, str, Any]] = []
    if "enabled" in section:
        out.append(("enabled", "enabled", section["enabled"]))
    retain = section.get("retain")
    if isinstance(retain, dict) and "enabled" in retain:
        out.append(("retain.enabled", "retain.enabled", retain["enabled"]))
    banks = section.get("banks")
    if isinstance(banks, dict):
        for name in ("project", "coding"):
            bank = banks.get(name)
            if isinstance(bank, dict) and "enabled" in bank:
                out.append(("banks.project.enabled", f"banks.{name}.enabled", bank["enabled"]))
                break
    return out


# --- the session path as pi spells it ---------------------------------------------------------------------------


def session_path_spellings(session_file: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """The spellings of a session file's path the live extension may have hashed, pi's own first.

    pi-hindsight keys its session meta and retain cursor by ``sha256(runtime.sessionFile)`` (extensions/utils/
    session.ts ``stableSessionId``), and pi builds that path by joining its agent folder under the home folder: it
    does not resolve links. This tool finds files by their resolved path; when ``~/.pi`` (or the sessions folder)
    is a link, the extension's spelling is the one under the agent folder as joined."""
    env = os.environ if env is None else env
    given = os.path.abspath(session_file)
    spellings: list[str] = []
    sessions = default_session_root(env)  # pi's own: joined from $HOME (or its variables), never resolved
    real = os.path.realpath(given)
    try:
        inside = Path(real).relative_to(_real_root(str(sessions)))
        spellings.append(node_path(sessions / inside))
    except ValueError:
        pass
    spellings += [node_path(given), node_path(real)]
    return list(dict.fromkeys(spellings))


@functools.lru_cache(maxsize=8)
def _real_root(root: str) -> Path:
    """The sessions folder resolved, once per run (a catch-up re-run asks for every file)."""
    return Path(os.path.realpath(root))


def path_hashes(session_file: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """``stableSessionId`` of each spelling: ``sha256(path) hex, first 16`` (pi's spelling first)."""
    return [hashlib.sha256(s.encode("utf-8")).hexdigest()[:16] for s in session_path_spellings(session_file, env)]


# --- per session: pi-hindsight's session meta ---------------------------------------------------------------------


@dataclass(frozen=True)
class LuxusSession:
    retain: bool
    reason: str | None = None  # why not
    next_off: bool = False  # a pending /hindsight:next-opt-out (nextRetainMode "off")
    tags: tuple[str, ...] = ()


_MODES = ("normal", "read-only", "ignored")
_SWITCH = ("normal", "off")


def _is_record(value: Any) -> bool:
    """pi-hindsight extensions/utils/session-memory-meta.ts ``isSessionMemoryMetaRecord``."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("retained"), bool)
        and value.get("recallMode") in _SWITCH
        and value.get("retainMode") in _SWITCH
        and ("nextRetainMode" not in value or value["nextRetainMode"] in _SWITCH)
        and value.get("mode") in _MODES
        and isinstance(value.get("tags"), list)
        and isinstance(value.get("createdAt"), str)
        and isinstance(value.get("updatedAt"), str)
    )


def _session_tags(tags: list[Any]) -> tuple[str, ...]:
    """session-memory-meta.ts ``normalizeSessionTags``: strings without control characters, trimmed, 1 to 80
    characters, each once."""
    kept = [t.strip() for t in tags
            if isinstance(t, str) and not any(ord(c) < 32 or ord(c) == 127 for c in t)]
    return tuple(dict.fromkeys(t for t in kept if 0 < len(t) <= 80))


def _one_meta(path: Path) -> LuxusSession | None:
    """One meta file as ``readSessionMemoryMeta`` then ``getEffectiveSessionMemoryMode`` see it; None: no file."""
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        return None  # ENOENT: defaultSessionMemoryMeta (normal, retained)
    except OSError as exc:  # any other error: failClosedSessionMemoryMeta (mode ignored)
        return LuxusSession(False, f"pi-hindsight session meta {path} cannot be read ({exc.strerror}): counts "
                                   "as ignored (fail closed)")
    try:
        meta = jsoncodec.loads(raw)
    except ValueError:
        return LuxusSession(False, f"pi-hindsight session meta {path} is not JSON: counts as ignored (fail closed)")
    if not _is_record(meta):  # normalizeSessionMemoryMeta: failClosedSessionMemoryMeta()
        return LuxusSession(False, f"pi-hindsight session meta {path} is not a valid record: counts as ignored "
                                   "(fail closed)")
    tags = _session_tags(meta["tags"])
    next_off = meta.get("nextRetainMode") == "off"
    # getEffectiveSessionMemoryMode: ignored and read-only never retain; normal retains when retainMode is not
    # "off" and retained is true.
    if meta["mode"] in ("ignored", "read-only"):
        return LuxusSession(False, f"pi-hindsight session mode {meta['mode']}", next_off, tags)
    if meta["retainMode"] == "off" or not meta["retained"]:
        why = "retainMode off" if meta["retainMode"] == "off" else "retained false"
        return LuxusSession(False, f"pi-hindsight session retain off ({why})", next_off, tags)
    return LuxusSession(True, None, next_off, tags)


def luxus_session(cwd: str | None, session_file: Path, env: Mapping[str, str] | None = None) -> LuxusSession:
    """pi-hindsight's session meta for this session (``<cwd>/.pi/hindsight/session-meta/<hash>.json``, cwd being
    pi's, the session header's), under every spelling of its path: a meta that says no retain under any of them
    wins (fail closed); tags from pi's own spelling's meta first."""
    if not cwd:
        return LuxusSession(True)
    folder = Path(cwd) / ".pi" / "hindsight" / "session-meta"
    found = [m for m in (_one_meta(folder / f"{h}.json") for h in path_hashes(session_file, env)) if m is not None]
    if not found:
        return LuxusSession(True)
    refused = next((m for m in found if not m.retain), None)
    tags = found[0].tags
    next_off = any(m.next_off for m in found)
    if refused is not None:
        return LuxusSession(False, refused.reason, next_off, tags)
    return LuxusSession(True, None, next_off, tags)


# --- per session: hindsight-pi's hindsight-meta entries -------------------------------------------------------------


@dataclass(frozen=True)
class HpiSession:
    messages: int  # message entries in the file
    off: frozenset[str]  # ids of the message entries written while retention was off
    tags: tuple[str, ...]  # the session tags in effect when any of its messages was written

    @property
    def all_off(self) -> bool:
        return self.messages > 0 and len(self.off) == self.messages


def hpi_session(session_file: Path) -> HpiSession | None:
    """hindsight-pi's ``hindsight-meta`` entries of a session file, or None when it has none.

    hindsight-pi extensions/meta.ts ``getHindsightMeta``: the last entry ``{"type":"custom","customType":
    "hindsight-meta","data":{…}}`` (``data`` an object) wins; ``retained`` counts only as a boolean, else
    ``sessionRetained`` gives the default, true; ``tags`` are the strings that are not blank. extensions/index.ts
    ``message_end`` checks ``sessionRetained(entries, true)`` over the entries written so far (``getEntries()``,
    file order) when each message ends, so a message written after a ``retained:false`` entry (and before the
    next ``retained:true``) was never retained, and its tags are those in effect then: the session document's tags
    are their union over its messages (recorded: tests/fixtures/extensions/hpi/tags), and so are the items' here."""
    marker = HPI_META_TYPE.encode()
    try:
        with open_regular_file(session_file) as stream:
            try:
                with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as view:
                    if view.find(marker) == -1:
                        return None  # the common case: one C-speed search, nothing read into memory
            except ValueError:  # an empty file cannot be mapped
                return None
            stream.seek(0)
            retained = True
            tags: tuple[str, ...] = ()
            used: dict[str, None] = {}  # tags in effect at some message, in the order met
            messages = 0
            off: set[str] = set()
            for line in stream:  # one line at a time: a session may be hundreds of MB
                if marker not in line:
                    fast = _MESSAGE_PREFIX.match(line)
                    if fast is not None:  # pi's own key order: the id without parsing the line
                        messages += 1
                        used.update(dict.fromkeys(tags))
                        if not retained:
                            off.add(fast.group(1).decode())
                        continue
                    if b'"message"' not in line:
                        continue
                try:
                    entry = jsoncodec.loads(line)
                except ValueError:
                    continue  # pi drops a line it cannot parse; so does the extension's view of the entries
                if not isinstance(entry, dict):
                    continue
                kind = entry.get("type")
                if kind == "custom" and entry.get("customType") == HPI_META_TYPE and isinstance(entry.get("data"),
                                                                                                dict):
                    meta = entry["data"]
                    retained = meta["retained"] if isinstance(meta.get("retained"), bool) else True
                    raw_tags = meta.get("tags")
                    tags = (tuple(t for t in raw_tags if isinstance(t, str) and t.strip())
                            if isinstance(raw_tags, list) else ())
                elif kind == "message":
                    messages += 1
                    used.update(dict.fromkeys(tags))
                    if not retained and isinstance(entry.get("id"), str):
                        off.add(entry["id"])
    except OSError:
        return None  # planning reads the file and reports the failure
    return HpiSession(messages, frozenset(off), tuple(used))

