"""Everything that turns a chunk into a Hindsight retain item: ids, tags, scopes, metadata, context, timestamp."""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from hindsight_batch import __version__
from hindsight_batch.config.model import Settings
from hindsight_batch.session.model import SessionHeader

ID_SCHEME = "pi-import/1"
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")


@dataclass(frozen=True, slots=True)
class SessionScope:
    """Who a session is: the values behind tags and placeholders."""

    session_id: str
    parent_id: str
    cwd: str
    basedir: str
    project: str
    session_file: str
    started: str | None

    def placeholders(self) -> dict[str, str]:
        return {
            "session": self.session_id,
            "parent": self.parent_id,
            "cwd": self.cwd,
            "basedir": self.basedir,
            "project": self.project,
        }


def parent_tag_value(header: SessionHeader) -> str:
    """The ``parent:`` value as hindsight-pi writes it (extensions/session-document.ts ``getParentSessionId``): the
    header's ``parentSession`` path, ``\\`` as ``/``, its last segment with ``.jsonl`` (any case) removed, so
    ``<timestamp>_<uuid>``; without a parent (or an empty name), the session's own id (retain/tags.ts
    ``ctx.parentId || session``)."""
    if not header.parent_session:
        return header.id
    name = header.parent_session.replace("\\", "/").split("/")[-1]
    return re.sub(r"\.jsonl$", "", name, flags=re.IGNORECASE) or header.id


def session_scope(header: SessionHeader, session_file: str, settings: Settings) -> SessionScope:
    # ``cwd:`` and ``basedir:`` as hindsight-pi makes them: the resolved path, ``\\`` as ``/``.
    cwd = posixpath.normpath(header.cwd.replace("\\", "/")) if header.cwd else ""
    basedir = PurePath(cwd).name if cwd else "unknown"
    return SessionScope(
        session_id=header.id,
        parent_id=parent_tag_value(header),
        cwd=cwd,
        basedir=basedir,
        project=(settings.project_name or "").strip() or basedir,
        session_file=session_file,
        started=header.timestamp,
    )


def slug(text: str, limit: int = 40) -> str:
    value = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return value[:limit].strip("-") or "project"


def own_project_bank_id(project: str, cwd: str) -> str:
    """This tool's own project bank when no extension's configuration names one (stable per folder)."""
    digest = hashlib.sha256(cwd.encode("utf-8", "replace")).hexdigest()[:8]
    return f"pi-{slug(project)}-{digest}"


def project_bank_id(scope: SessionScope, settings: Settings) -> str:
    """The project bank in the settings (the import puts the one :mod:`hindsight_batch.plan.banks` chose there), else
    this tool's own."""
    if settings.banks.project.bank_id:
        return settings.banks.project.bank_id
    return own_project_bank_id(scope.project, scope.cwd)


def expand(template: str, scope: SessionScope) -> str:
    """As hindsight-pi's ``retain/tags.ts``: a tag that is exactly ``{session}``, ``{parent}``, ``{cwd}``,
    ``{basedir}`` or ``{project}`` becomes the full tag (``project:acme``); any other string, a placeholder inside
    a longer one included, stays as written."""
    whole = _PLACEHOLDER.fullmatch(template)
    if whole:
        name = whole.group(1)
        value = scope.placeholders().get(name)
        if value is not None:
            return f"{name}:{value}"
    return template


def base_tags(scope: SessionScope, settings: Settings) -> list[str]:
    """hindsight-pi's automatic tags (``constantTags`` as written, not expanded, as there), with
    ``store_method:import`` where a live retain has ``auto`` or ``tool``; ``harness:pi`` always."""
    tags = [
        "harness:pi",
        *settings.constant_tags,
        f"session:{scope.session_id}",
        f"parent:{scope.parent_id}",
        f"cwd:{scope.cwd}",
        f"basedir:{scope.basedir}",
        f"project:{scope.project}",
        "store_method:import",
    ]
    return list(dict.fromkeys(tags))


def observation_scopes(scope: SessionScope, settings: Settings) -> list[list[str]] | str | None:
    value = settings.observation_scopes
    if value is None or isinstance(value, str):
        return value
    return [[expand(tag, scope) for tag in group] for group in value]


def document_id(session_id: str, bank_role: str, segment: str, window: int) -> str:
    """Stable as the session grows: a window's id depends on its branch segment and position only."""
    return f"pi-import:{session_id}:{bank_role}:{segment}:w{window:04d}"


def content_sha256(content: bytes) -> str:
    """Of the content as sent, in UTF-8."""
    return hashlib.sha256(content).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class RetainItem:
    """One item of a ``retainBatch`` request (``MemoryItem`` in the server's OpenAPI spec). Planning makes every
    value, so nothing is validated (a dataclass, not a pydantic model: see routing/models.py)."""

    content: str
    context: str
    timestamp: str | None
    document_id: str
    update_mode: str = "replace"
    tags: list[str]
    observation_scopes: list[list[str]] | str | None
    metadata: dict[str, str]

    def payload(self) -> dict[str, Any]:
        """The item as the request's JSON holds it: ``timestamp`` and ``observation_scopes`` only when set."""
        data: dict[str, Any] = {
            "content": self.content, "context": self.context, "timestamp": self.timestamp,
            "document_id": self.document_id, "update_mode": self.update_mode, "tags": list(self.tags),
            "observation_scopes": _copy_scopes(self.observation_scopes), "metadata": dict(self.metadata),
        }
        if data["timestamp"] is None:
            del data["timestamp"]
        if data["observation_scopes"] is None:
            del data["observation_scopes"]
        return data


def _copy_scopes(scopes: list[list[str]] | str | None) -> list[list[str]] | str | None:
    return [list(group) for group in scopes] if isinstance(scopes, list) else scopes


def session_context(scope: SessionScope) -> str:
    return f"Pi coding session {scope.session_id} in {scope.basedir} (historical import)"


def item_metadata(
    scope: SessionScope,
    *,
    bank_role: str,
    segment: str,
    window: int,
    first_entry: str,
    last_entry: str,
    content_hash: str,
    settings: Settings,
    route: str,
    other_document_id: str | None,
) -> dict[str, str]:
    metadata = {
        "source": "hindsight-batch",
        "source_file": scope.session_file,
        "session_id": scope.session_id,
        "cwd": scope.cwd,
        "bank_role": bank_role,
        "segment": segment,
        "window": str(window),
        "first_entry_id": first_entry,
        "last_entry_id": last_entry,
        "content_hash": content_hash,
        "id_scheme": ID_SCHEME,
        "chunk_turns": str(settings.import_.turns_per_chunk),
        "chunk_bytes": str(settings.import_.max_chunk_bytes),
        "route": route,
        "tool_version": __version__,
    }
    if other_document_id:
        metadata["other_document_id"] = other_document_id
    return metadata
