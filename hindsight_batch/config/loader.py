"""Resolve the configuration for one session cwd, remembering where every value came from.

Order, later wins: built-in defaults; the home layer (``~/.hindsight/config.toml``, ``~/.hindsight/config.json``,
``~/.pi/agent/hindsight.json|jsonc``); per-project files (``.hindsight/config.toml|json`` in each folder from the
filesystem root down to the session's cwd, then ``<cwd>/.pi/hindsight.json|jsonc``); ``--config FILE``; the
environment; command-line flags. Objects merge key by key; lists and scalars replace; a ``host.pi`` value replaces
the whole key, as hindsight-pi merges it.

Layers have powers: a per-project file, which any cloned repository can carry, shapes its project's
retention and names its project bank, but a key that would change the server or credentials, the User Bank,
``userRetain.mode``, the routing strategy, redaction or the upload parameters (per run, not per project) is ignored
there with a warning naming the file and the key.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hindsight_batch.base import jsoncodec
from hindsight_batch.config import families
from hindsight_batch.config.model import EXTENSION_ONLY_KEYS, Settings
from hindsight_batch.errors import LONE_SURROGATE, ConfigError, without_surrogates

DEFAULT_SOURCE = "default"
HOME, PROJECT, GLOBAL = "home", "project", "global"

# What a per-project file may not set (dotted prefixes of this tool's keys), and why, for the warning.
PROJECT_FORBIDDEN: dict[str, str] = {
    "baseUrl": "the server", "apiKey": "credentials", "banks.user": "the User Bank",
    "userRetain": "userRetain.mode", "routing": "the routing strategy", "redaction": "redaction",
    "extension": "whose bank rule applies", "pathMap": "where moved repositories are now (pathMap)",
    "upload": "upload parameters (they belong to the run, which may cover many projects)",
}
# Legacy spellings of this tool's own keys, renamed before merging so that a value's origin is still reported.
_LEGACY = {("globalRetain",): ("userRetain",), ("banks", "global"): ("banks", "user")}


@dataclass(frozen=True)
class Layer:
    source: str
    data: dict[str, Any]
    kind: str = GLOBAL
    written_as: Mapping[str, str] = field(default_factory=dict)
    whole: frozenset[str] = frozenset()
    families: frozenset[str] = frozenset()
    unused: tuple[str, ...] = ()
    switches: Mapping[str, tuple[str, Any]] = field(default_factory=dict)  # families.Translated.switches


@dataclass
class ResolvedConfig:
    settings: Settings
    origins: dict[str, str]
    files: list[Path] = field(default_factory=list)
    ignored_keys: list[str] = field(default_factory=list)  # extension keys this tool accepts and does not use
    family: str = "none"  # whose configuration was found: hindsight-pi, pi-hindsight or none
    family_files: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # per-project keys ignored (layer powers)
    # The extensions' retain switches in effect: name → (file, key as written, value); the last file wins, as in
    # both extensions' merges (hindsight_batch/extension/switches.py judges them).
    switches: dict[str, tuple[str, str, Any]] = field(default_factory=dict)

    def origin(self, dotted: str) -> str:
        """Where ``dotted`` (or its nearest set parent) came from."""
        return _origin(self.origins, dotted)


def _origin(origins: Mapping[str, str], dotted: str) -> str:
    """Where ``dotted`` (or its nearest set parent) came from, by the merge's record of each key's source."""
    key = dotted
    while key:
        if key in origins:
            return origins[key]
        key = key.rpartition(".")[0]
    return DEFAULT_SOURCE


def _key_parts(data: Any, loc: tuple[int | str, ...]) -> list[int | str]:
    """A validation error's location as the user wrote it: the parts of ``loc`` that are keys (or list positions)
    of ``data``, without the names pydantic gives a union's members (``list[str]``). Kept as parts, not joined,
    because a key may itself hold a dot."""
    parts: list[int | str] = []
    node = data
    for part in loc:
        is_key = isinstance(node, dict) and part in node
        if not is_key and not (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)):
            continue
        node = node[part]
        parts.append(part)
    return parts


_MISSING = object()


def _writer(layers: list[Layer], origins: Mapping[str, str], parts: list[int | str]) -> str:
    """The source of the value at ``parts`` that failed validation. The merge records where each scalar came
    from; an object where a scalar belongs (``"baseUrl": {}``) has no record of its own, so the last layer that
    wrote that key is found in the layers themselves."""
    dotted = ".".join(map(str, parts))
    found = _origin(origins, dotted)
    if found != DEFAULT_SOURCE or not parts:
        return found
    for layer in reversed(layers):
        node: Any = layer.data
        for part in parts:
            if isinstance(node, dict):
                node = node.get(part, _MISSING)
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                node = node[part]
            else:
                node = _MISSING
        if node is not _MISSING:
            return _label(layer, dotted)
    return found


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def _parse(path: Path, jsonc: bool = False) -> dict[str, Any]:
    """JSON, TOML, or (pi-hindsight's files) JSON with comments and trailing commas."""
    label = str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(label, "(file)", f"cannot read: {exc.strerror}") from exc
    kind = "TOML" if path.suffix == ".toml" else "JSONC" if jsonc else "JSON"
    try:
        text = raw.decode("utf-8")
        if kind == "TOML":
            import tomllib  # only when there is a TOML file: most runs read none

            try:
                data: Any = tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                data = families.flat_toml(text)
                if data is None:
                    raise
        elif kind == "JSONC":
            data = jsoncodec.loads(families.strip_jsonc(text))
        else:
            data = jsoncodec.loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError is one too
        raise ConfigError(label, "(file)", f"not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(label, "(file)", "the top level must be an object")
    return data


def read_config_file(path: Path) -> dict[str, Any]:
    """A file of this tool's own shape (``--config``, ``.hindsight/config.*``), legacy keys renamed."""
    data = _parse(path)
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


def _merge(into: dict[str, Any], layer: Layer, data: Mapping[str, Any], origins: dict[str, str], prefix: str) -> None:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if dotted in layer.whole:
            for old in [k for k in origins if k.startswith(dotted + ".")]:
                del origins[old]
            into[key] = value
            origins[dotted] = _label(layer, dotted)
        elif isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], layer, value, origins, dotted + ".")
        elif isinstance(value, dict):
            into[key] = {}
            _merge(into[key], layer, value, origins, dotted + ".")
        else:
            into[key] = value
            origins[dotted] = _label(layer, dotted)


def _label(layer: Layer, dotted: str) -> str:
    written = layer.written_as.get(dotted)
    return f"{layer.source} ({written})" if written and written != dotted else layer.source


def _restrict(layer: Layer) -> tuple[Layer, list[str]]:
    """A per-project layer without the keys it has no power over, and one warning per key dropped."""
    data = copy.deepcopy(layer.data)
    warnings = []
    for prefix, what in PROJECT_FORBIDDEN.items():
        *parents, last = prefix.split(".")
        node: Any = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and last in node:
            del node[last]
            shown = layer.written_as.get(prefix) or next(
                (w for k, w in layer.written_as.items() if k.startswith(prefix + ".")), prefix)
            warnings.append(f"{layer.source}: {shown} ignored: a per-project file cannot set {what} "
                            "(only your own files, --config, the environment and flags can)")
    return Layer(layer.source, data, layer.kind, layer.written_as, layer.whole, layer.families, layer.unused,
                 layer.switches), warnings


def _pick(base: Path) -> Path | None:
    """pi-hindsight's ``<base>.json``, else ``<base>.jsonc``."""
    for suffix in (".json", ".jsonc"):
        path = base.with_name(base.name + suffix)
        if path.is_file():
            return path
    return None


class ConfigResolver:
    """Builds :class:`ResolvedConfig` per session cwd, with every file read once."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        config_file: Path | None = None,
        flags: Mapping[str, Any] | None = None,
        home: Path | None = None,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        self._home = home if home is not None else Path(families.home_of(self._env))
        self._flags = dict(flags or {})
        self._config_file = config_file
        self._cache: dict[str, ResolvedConfig] = {}
        self._file_cache: dict[Path, Layer] = {}
        self._warned: set[str] = set()

    @property
    def env(self) -> dict[str, str]:
        return self._env

    @property
    def warnings(self) -> list[str]:
        """Every per-project key ignored so far (layer powers), once each."""
        return sorted(self._warned)

    def _dir_layer(self, path: Path, kind: str) -> Layer:
        if path not in self._file_cache:
            data = read_config_file(path)
            translated = families.translate_hindsight_dir_file(data, str(path))
            self._file_cache[path] = self._layer(path, kind, translated)
        return self._file_cache[path]

    def _pi_layer(self, path: Path, kind: str) -> Layer:
        if path not in self._file_cache:
            translated = families.translate_pi_hindsight_file(_parse(path, jsonc=True), str(path))
            self._file_cache[path] = self._layer(path, kind, translated)
        return self._file_cache[path]

    def _layer(self, path: Path, kind: str, translated: families.Translated) -> Layer:
        if "apiKey" in translated.data:
            translated.data["apiKey"] = families.api_key_reference(translated.data["apiKey"], str(path), self._env)
        return Layer(str(path), translated.data, kind, translated.written_as, frozenset(translated.whole),
                     frozenset(translated.families), tuple(translated.unused), dict(translated.switches))

    def file_layers(self, cwd: str | None) -> list[Layer]:
        home_dir = self._home / ".hindsight"
        layers = [self._dir_layer(p, HOME) for p in _dir_files(home_dir)]
        home_pi = _pick(self._home / ".pi" / "agent" / "hindsight")
        if home_pi is not None:
            layers.append(self._pi_layer(home_pi, HOME))
        if cwd:
            here = Path(cwd)
            for folder in [*reversed(here.parents), here]:
                if folder / ".hindsight" == home_dir:
                    continue
                layers.extend(self._dir_layer(p, PROJECT) for p in _dir_files(folder / ".hindsight"))
            project_pi = _pick(here / ".pi" / "hindsight")
            if project_pi is not None:
                layers.append(self._pi_layer(project_pi, PROJECT))
        if self._config_file is not None:
            if not self._config_file.is_file():
                raise ConfigError(str(self._config_file), "(file)", "no such file")
            layers.append(self._dir_layer(self._config_file, GLOBAL))
        return layers

    def layers(self, cwd: str | None) -> list[Layer]:
        layers = self.file_layers(cwd)
        for name, data in families.env_layer(self._env):
            marker = families.ENV_FAMILY_MARKERS.get(name)
            layers.append(Layer(f"env {name}", data, families=frozenset([marker] if marker else [])))
        for dotted, value in self._flags.items():
            if value is not None:
                flag: dict[str, Any] = {}
                _set_dotted(flag, dotted, value)
                layers.append(Layer(f"flag ({dotted})", flag))
        return layers

    def for_cwd(self, cwd: str | None) -> ResolvedConfig:
        key = cwd or ""
        if key not in self._cache:
            resolved = resolve(self.layers(cwd))
            for warning in resolved.warnings:
                if warning not in self._warned:
                    self._warned.add(warning)
                    print(f"hindsight-batch: warning: {warning}", file=sys.stderr)
            self._cache[key] = resolved
        return self._cache[key]


def _dir_files(folder: Path) -> list[Path]:
    # hindsight-pi reads the TOML file first, then the JSON file (which wins).
    return [p for p in (folder / "config.toml", folder / "config.json") if p.is_file()]


def resolve(layers: list[Layer]) -> ResolvedConfig:
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    warnings: list[str] = []
    unused: list[str] = []
    found: dict[str, list[str]] = {}
    found_in_projects: dict[str, list[str]] = {}
    merged_layers: list[Layer] = []
    switches: dict[str, tuple[str, str, Any]] = {}
    for layer in layers:
        for name, (written, value) in layer.switches.items():
            switches[name] = (layer.source, written, value)
        if layer.kind == PROJECT:
            layer, dropped = _restrict(layer)
            warnings += dropped
        _merge(merged, layer, layer.data, origins, "")
        merged_layers.append(layer)
        unused += [f"{layer.source}: {key}" for key in layer.unused]
        for family in layer.families:
            (found_in_projects if layer.kind == PROJECT else found).setdefault(family, []).append(layer.source)
    ignored = sorted(k for k in merged if k in EXTENSION_ONLY_KEYS)
    for key in ignored:
        del merged[key]
    odd = _lone_surrogate(merged)
    if odd is not None:  # JSON allows "\\ud800"; no UTF-8 manifest, ledger row or request can hold it
        raise ConfigError(_origin(origins, odd), without_surrogates(odd)[0],
                          "holds a lone surrogate escape (\\ud800-\\udfff): write the character itself")
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        parts = _key_parts(merged, error["loc"])
        dotted = ".".join(map(str, parts))
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; unknown keys are never ignored)"
        raise ConfigError(_writer(merged_layers, origins, parts), dotted or "(top level)", message) from None
    files = [Path(layer.source) for layer in layers if not layer.source.startswith(("env ", "flag "))]
    # Your own files decide whose configuration is in use; a project's files only where yours say nothing, so a
    # cloned repository carrying the other extension's file does not change the rule (or stop the run).
    family = _family(settings, found or found_in_projects)
    for name, sources in found_in_projects.items():
        found.setdefault(name, []).extend(sources)
    return ResolvedConfig(settings, origins, files, ignored + unused, family, found, warnings, switches)


def _lone_surrogate(value: Any, key: str = "") -> str | None:
    """The dotted key of the first key or string value in ``value`` that holds a lone surrogate, or None."""
    if isinstance(value, str):
        return key if LONE_SURROGATE.search(value) else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for name, item in items:
        dotted = f"{key}.{name}" if key else str(name)
        if isinstance(name, str) and LONE_SURROGATE.search(name):
            return dotted
        found = _lone_surrogate(item, dotted)
        if found is not None:
            return found
    return None


def _family(settings: Settings, found: dict[str, list[str]]) -> str:
    """Whose bank rule applies: the ``extension`` key, else the one extension whose configuration was found."""
    if settings.extension != "auto":
        return settings.extension
    if len(found) > 1:
        where = "; ".join(f"{name}: {', '.join(dict.fromkeys(files))}" for name, files in sorted(found.items()))
        raise ConfigError(where, "extension",
                          "both extensions' configuration was found; set \"extension\" to hindsight-pi or "
                          "pi-hindsight in ~/.hindsight/config.json or --config")
    return next(iter(found), "none")
