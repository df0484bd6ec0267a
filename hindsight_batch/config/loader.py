"""Resolve the configuration for one session cwd, remembering where every value came from.

Order, later wins (SPEC §3.4): built-in defaults; ``~/.hindsight/config.json|toml``; ``.hindsight/config.json|toml``
in each folder from the filesystem root down to the session's cwd; ``--config FILE``; ``HINDSIGHT_*`` variables;
command-line flags. Objects merge key by key; lists and scalars replace.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hindsight_batch.config.model import EXTENSION_ONLY_KEYS, Settings
from hindsight_batch.errors import ConfigError

DEFAULT_SOURCE = "default"

# Variables this tool reads, and the config key each one sets. Other HINDSIGHT_* variables (the server's own
# HINDSIGHT_API_* settings, for instance) are none of our business and are left alone.
ENV_KEYS: dict[str, str] = {
    "HINDSIGHT_BASE_URL": "baseUrl",
    "HINDSIGHT_API_URL": "baseUrl",
    "HINDSIGHT_API_KEY": "apiKey",
    "HINDSIGHT_PROJECT_NAME": "projectName",
    "HINDSIGHT_BANK_ID": "banks.project.bankId",
    "HINDSIGHT_USER_BANK_ID": "banks.user.bankId",
    "HINDSIGHT_USER_RETAIN_MODE": "userRetain.mode",
    "HINDSIGHT_REDACTION_POLICY": "redaction.policy",
}
# Legacy spellings, renamed before merging so that a value's origin is still reported.
_LEGACY = {("globalRetain",): ("userRetain",), ("banks", "global"): ("banks", "user")}


@dataclass(frozen=True)
class Layer:
    source: str
    data: dict[str, Any]


@dataclass
class ResolvedConfig:
    settings: Settings
    origins: dict[str, str]
    files: list[Path] = field(default_factory=list)
    ignored_keys: list[str] = field(default_factory=list)

    def origin(self, dotted: str) -> str:
        """Where ``dotted`` (or its nearest set parent) came from."""
        key = dotted
        while key:
            if key in self.origins:
                return self.origins[key]
            key = key.rpartition(".")[0]
        return DEFAULT_SOURCE


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def read_config_file(path: Path) -> dict[str, Any]:
    label = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(label, "(file)", f"cannot read: {exc.strerror}") from exc
    try:
        if path.suffix == ".toml":
            data: Any = tomllib.loads(raw.decode("utf-8"))
        else:
            data = json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(label, "(file)", f"not valid {path.suffix[1:].upper()}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(label, "(file)", "the top level must be an object")
    for old, new in _LEGACY.items():
        node: dict[str, Any] = data
        for part in old[:-1]:
            child = node.get(part)
            node = child if isinstance(child, dict) else {}
        if old[-1] in node:
            value = node.pop(old[-1])
            target = data
            for part in new[:-1]:
                target = target.setdefault(part, {})
            target.setdefault(new[-1], value)
    return data


def _merge(into: dict[str, Any], layer: Mapping[str, Any], source: str, origins: dict[str, str], prefix: str) -> None:
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value, source, origins, dotted + ".")
        elif isinstance(value, dict):
            into[key] = {}
            _merge(into[key], value, source, origins, dotted + ".")
        else:
            into[key] = value
            origins[dotted] = source


def _files_in(folder: Path) -> list[Path]:
    return [p for p in (folder / "config.json", folder / "config.toml") if p.is_file()]


class ConfigResolver:
    """Builds :class:`ResolvedConfig` per session cwd, with the global layers read once."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        config_file: Path | None = None,
        flags: Mapping[str, Any] | None = None,
        home: Path | None = None,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        self._home = home if home is not None else Path(self._env.get("HOME") or Path.home())
        self._flags = dict(flags or {})
        self._config_file = config_file
        self._cache: dict[str, ResolvedConfig] = {}
        self._file_cache: dict[Path, dict[str, Any]] = {}

    def _file(self, path: Path) -> dict[str, Any]:
        if path not in self._file_cache:
            self._file_cache[path] = read_config_file(path)
        return self._file_cache[path]

    def config_files(self, cwd: str | None) -> list[Path]:
        files = _files_in(self._home / ".hindsight")
        if cwd:
            here = Path(cwd)
            for folder in [*reversed(here.parents), here]:
                files.extend(p for p in _files_in(folder / ".hindsight") if p not in files)
        if self._config_file is not None:
            if not self._config_file.is_file():
                raise ConfigError(str(self._config_file), "(file)", "no such file")
            files.append(self._config_file)
        return files

    def layers(self, cwd: str | None) -> list[Layer]:
        layers = [Layer(str(path), self._file(path)) for path in self.config_files(cwd)]
        for name, dotted in ENV_KEYS.items():
            value = self._env.get(name)
            if value:
                data: dict[str, Any] = {}
                _set_dotted(data, dotted, value)
                layers.append(Layer(f"env {name}", data))
        for dotted, value in self._flags.items():
            if value is not None:
                data = {}
                _set_dotted(data, dotted, value)
                layers.append(Layer(f"flag ({dotted})", data))
        return layers

    def for_cwd(self, cwd: str | None) -> ResolvedConfig:
        key = cwd or ""
        if key not in self._cache:
            self._cache[key] = resolve(self.layers(cwd))
        return self._cache[key]


def resolve(layers: list[Layer]) -> ResolvedConfig:
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for layer in layers:
        _merge(merged, layer.data, layer.source, origins, "")
    ignored = sorted(k for k in merged if k in EXTENSION_ONLY_KEYS)
    for key in ignored:
        del merged[key]
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        dotted = ".".join(str(part) for part in error["loc"])
        resolved = ResolvedConfig(Settings(), origins)
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; unknown keys are never ignored)"
        raise ConfigError(resolved.origin(dotted), dotted or "(top level)", message) from None
    files = [Path(layer.source) for layer in layers if not layer.source.startswith(("env ", "flag "))]
    return ResolvedConfig(settings, origins, files, ignored)
