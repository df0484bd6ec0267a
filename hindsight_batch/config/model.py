"""The resolved configuration, validated with pydantic.

Keys are the extension's own (``seeds/002_…``), so memory is configured once for the live extension and for this
tool. Every section this tool interprets forbids unknown keys: a typo must never silently widen what is retained
or where it goes (S8).
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.alias_generators import to_camel

BlockType = Literal["text", "thinking", "toolCall", "image"]
UserRetainMode = Literal["explicit-only", "router"]
BankStrategy = Literal["per-repo", "per-directory", "git-branch", "pi-session", "global", "manual"]


class _Section(BaseModel):
    # Defaults are made with model_construct (tests/test_config.py checks that validating them changes nothing):
    # a section class called on its own builds its own validator, a dozen more at start-up. Every default_factory
    # is a lambda: pydantic inspects a factory's signature (does it take the data?), slow for a class or builtin.
    # defer_build: a section's validator is built when it is first used on its own, not at import; the settings
    # build theirs (sections included) once, when the first configuration is read (docs/design-notes.md).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True,
                              defer_build=True)


class RetainContent(_Section):
    """Which block types of each role are retained. Roles not listed retain nothing."""

    user: list[BlockType] = Field(default_factory=lambda: list[BlockType](["text"]))
    assistant: list[BlockType] = Field(default_factory=lambda: list[BlockType](["text"]))
    tool_result: list[BlockType] = Field(default_factory=lambda: [])


class Strip(_Section):
    """Keys removed from each projected record (``topLevel``) and from its ``message`` object (``message``)."""

    top_level: list[str] = Field(default_factory=lambda: ["type", "id", "parentId"])
    message: list[str] = Field(
        default_factory=lambda: [
            "api", "provider", "model", "usage", "cost", "stopReason", "timestamp", "responseId",
        ]
    )


class ToolRule(_Section):
    """Glob lists over tool names. When ``include`` is given it replaces ``exclude``."""

    include: list[str] | None = None
    exclude: list[str] | None = None


class ToolFilter(_Section):
    tool_call: ToolRule = Field(
        default_factory=lambda: ToolRule.model_construct(exclude=["read", "grep", "find", "ls"])
    )
    tool_result: ToolRule = Field(
        default_factory=lambda: ToolRule.model_construct(exclude=["read", "grep", "find", "ls", "write", "edit"])
    )


class UserBank(_Section):
    """The User Bank: named, never derived (pi-hindsight's user bank has no ``derive``)."""

    bank_id: str | None = None
    enabled: bool = False
    mission: str = ""

    @field_validator("bank_id")
    @classmethod
    def _bank_id_shape(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "/" in value):
            raise ValueError("a bank id must be non-empty and contain no '/'")
        return value


class Bank(UserBank):
    """The project bank: on by default, and derived by pi-hindsight's rule when it has no id."""

    enabled: bool = True
    derive: Literal["repo", "cwd", "manual", "basename"] | None = None


class Banks(_Section):
    project: Bank = Field(default_factory=lambda: Bank.model_construct())
    user: UserBank = Field(default_factory=lambda: UserBank.model_construct())


class UserRetain(_Section):
    mode: UserRetainMode = "explicit-only"


class Redaction(_Section):
    policy: Literal["redact", "skip"] = "redact"
    private_hosts: list[str] = Field(default_factory=lambda: [])  # extra host globs treated as private URLs


class Import(_Section):
    turns_per_chunk: int = Field(12, ge=1, le=1000)
    max_chunk_bytes: int = Field(80_000, ge=1_000, le=10_000_000)
    max_block_chars: int = Field(32_768, ge=256, le=10_000_000)
    branches: Literal["current", "all"] = "current"
    compaction: Literal["full", "context"] = "full"
    retain_custom_types: list[str] = Field(default_factory=lambda: [])


class Routing(_Section):
    strategy: str = "project-global-default"


class Upload(_Section):
    batch_items: int = Field(16, ge=1, le=1000)
    batch_bytes: int = Field(2_000_000, ge=10_000, le=100_000_000)
    in_flight: int = Field(2, ge=1, le=16)
    timeout_seconds: float = Field(60.0, gt=0, le=3600)
    max_attempts: int = Field(6, ge=1, le=20)


# Keys of the live extension's config that this tool does not use. They are accepted so the same files serve
# both; anything else is an error.
EXTENSION_ONLY_KEYS = frozenset(
    {
        "enabled", "autoRecall", "autoRetain", "recallBudget", "recallMaxTokens", "recallTypes",
        "recallMaxQueryChars", "recallLongQueryBehavior", "recallContextTurns", "autoRecallTagsMatch",
        "autoRecallDisplay", "autoRecallPersist", "retainMode", "retainEveryNTurns", "timeoutMs",
        "debug", "recall", "retain", "hindsight", "observations", "scope", "profile", "storeLastRecall",
        "lastRecallPath",
    }
)


class Settings(_Section):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True,
                              defer_build=True)

    base_url: str = "http://localhost:8888"
    api_key: SecretStr | None = None
    project_name: str | None = None
    constant_tags: list[str] = Field(default_factory=lambda: [])
    auto_recall_tags: list[str] | None = None
    # A list of tag lists, or one of the server's named modes (hindsight-pi passes them through).
    observation_scopes: list[list[str]] | Literal["combined", "per_tag", "all_combinations"] | None = None
    retain_content: RetainContent = Field(default_factory=lambda: RetainContent.model_construct())
    strip: Strip = Field(default_factory=lambda: Strip.model_construct())
    tool_filter: ToolFilter = Field(default_factory=lambda: ToolFilter.model_construct())
    banks: Banks = Field(default_factory=lambda: Banks.model_construct())
    user_retain: UserRetain = Field(default_factory=lambda: UserRetain.model_construct())
    redaction: Redaction = Field(default_factory=lambda: Redaction.model_construct())
    import_: Import = Field(default_factory=lambda: Import.model_construct(), alias="import")
    routing: Routing = Field(default_factory=lambda: Routing.model_construct())
    upload: Upload = Field(default_factory=lambda: Upload.model_construct())
    # hindsight-pi's bank keys (top level in its files; see ``hindsight_batch/plan/banks.py``).
    bank_id: str | None = None
    bank_strategy: BankStrategy | None = None
    global_bank_id: str | None = None
    mappings: dict[str, str] = Field(default_factory=lambda: {})
    # Whose bank rule applies when both extensions' files are found ("auto": the one whose files are found).
    extension: Literal["auto", "hindsight-pi", "pi-hindsight", "none"] = "auto"
    # Moved repositories: a session's cwd under a key is read as under its value (where the repository is now), to
    # derive its bank and find its project configuration (``--map OLD=NEW``; hindsight_batch/plan/banks.py).
    path_map: dict[str, str] = Field(default_factory=lambda: {})

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.lower().startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        # hindsight-pi puts http:// before a URL without one, so another scheme arrives as "http://ftp://host"
        inner = re.match(r"https?://([a-z][a-z0-9+.-]*)://", value, re.IGNORECASE)
        if inner:
            raise ValueError(f"must be an http:// or https:// URL, not {inner.group(1)}://")
        try:
            parts = urlsplit(value)
            host, _ = parts.hostname, parts.port  # .port raises on a port that is not a number
        except ValueError:  # its message quotes the port, which may be anything pasted there
            raise ValueError("not a usable URL (its port is not a number from 0 to 65535, or its IPv6 address "
                             "is malformed)") from None
        if not host or any(c.isspace() for c in value):
            raise ValueError("must be an http:// or https:// URL with a host, e.g. http://localhost:8888")
        return value.rstrip("/")

    @field_validator("path_map")
    @classmethod
    def _absolute(cls, value: dict[str, str]) -> dict[str, str]:
        for old, new in value.items():
            if not old.startswith("/") or not new.startswith("/"):
                raise ValueError("each key and value must be an absolute folder (a session's cwd is absolute)")
        return {old.rstrip("/") or "/": new.rstrip("/") or "/" for old, new in value.items()}

    @model_validator(mode="after")
    def _tags_are_strings(self) -> Settings:
        for tag in self.constant_tags:
            if not tag.strip():
                raise ValueError("constantTags: empty tag")
        return self
