"""The live extensions' own configuration files, read as they write them and translated to this tool's keys.

Two extensions write configuration this tool reads (facts from their source, ``reference/extension-config.md``):

* **hindsight-pi** (``walodayeet/hindsight-pi``): ``~/.hindsight/config.toml`` (flat ``key = value`` lines:
  ``api_url``, ``api_key``, ``bank_id``, ``global_bank``, ``recall_types``), ``~/.hindsight/config.json``, then
  ``.hindsight/config.toml|json`` in every folder from ``/`` down to the cwd. Per-host settings sit under
  ``host.pi``; the bank keys (``bankId``, ``bankStrategy``, ``mappings``, ``globalBankId``) at the top level, with
  snake_case aliases. The same files hold this tool's own keys, so one file serves both.
* **pi-hindsight** (``luxus/pi-hindsight``): ``~/.pi/agent/hindsight.json`` (``.jsonc`` when there is no
  ``.json``) and ``<cwd>/.pi/hindsight.json|.jsonc``, JSONC (comments, trailing commas), its own shape
  (``hindsight.baseUrl``, ``banks.project.derive``, ``retain.content``, …).

A translated layer keeps, per key it sets, the key as written in the file, so ``status`` can say where a value in
effect came from. Keys an extension uses that this tool does not are accepted and listed, never an error; any other
key stays an error (S8).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.errors import ConfigError

HINDSIGHT_PI = "hindsight-pi"
PI_HINDSIGHT = "pi-hindsight"

# hindsight-pi's top-level aliases (snake_case as the hindsight CLI's TOML writes them) → this tool's key.
_HP_TOP_ALIASES = {
    "api_url": "baseUrl",
    "api_key": "apiKey",
    "bank_id": "bankId",
    "global_bank": "globalBankId",
}
# Top-level keys only hindsight-pi writes: seeing one means its configuration is in use.
# (``api_url``/``api_key`` are not: the hindsight CLI's shared TOML holds them for every integration.)
HP_MARKERS = frozenset({"host", "hosts", "bankStrategy", "bankId", "bank_id", "mappings", "globalBankId",
                        "global_bank"})
# hindsight-pi top-level keys this tool does not use.
_HP_UNUSED_TOP = frozenset({"hosts", "recall_types", "recallTypes"})
# ``host.pi`` keys that shape retention, moved to the top level where this tool reads them.
_HP_HOST_USED = ("retainContent", "strip", "toolFilter", "constantTags", "autoRecallTags", "projectName",
                 "observationScopes")
# ``host.pi`` keys that switch the extension's automatic retain off (hindsight_batch/extension/switches.py).
HP_SWITCHES = frozenset({"enabled", "saveMessages"})
# ``host.pi`` keys the extension reads (``HostConfig`` in its config.ts) and this tool does not use.
_HP_HOST_UNUSED = frozenset({
    "workspace", "peerName", "aiPeer", "linkedHosts", "recallMode", "recallTypes", "recallPerType",
    "recallDisplayMode", "autoCreateBank", "contextTokens", "contextRefreshTtlSeconds",
    "contextRefreshMessageThreshold", "contextCadence", "injectionFrequency", "writeFrequency",
    "retainMode", "stepRetainThreshold", "searchBudget", "reflectBudget", "dialecticDynamic", "reasoningLevel",
    "reasoningLevelCap", "toolPreviewLength", "maxMessageLength", "logging", "showRecallIndicator",
    "showRetainIndicator", "indicatorsInContext", "renameSessionToBank", "recallMaxQueryChars",
    "recallLongQueryBehavior", "autoRecallPersist", "autoRecallDisplay", "autoRecallTagsMatch",
})

# pi-hindsight: sections this tool does not use (their contents are the extension's business), and the keys it
# reads inside the ones it does.
_PH_UNUSED_TOP = frozenset({"setupComplete", "agentUse", "mentalModels", "recall", "observations", "import",
                            "status", "notifications", "scope", "profile", "$schema"})
_PH_BANK_ALIASES = {"coding": "project", "global": "user", "life": "user"}
_PH_BANK_UNUSED = frozenset({"retainMission", "reflectMission", "observationsMission", "retainStructuredChunkSize",
                             "mission", "name"})


@dataclass
class Translated:
    """One file's content in this tool's key shape, with the key as written for every value moved."""

    data: dict[str, Any]
    written_as: dict[str, str] = field(default_factory=dict)  # dotted key here → key in the file
    unused: list[str] = field(default_factory=list)  # keys an extension reads that this tool does not
    families: set[str] = field(default_factory=set)
    whole: set[str] = field(default_factory=set)  # dotted keys that replace, not merge (the extension's merge)
    # The extension's own on/off switches for automatic retain (hindsight_batch/extension/switches.py reads them):
    # switch name → (key as written in the file, value as written).
    switches: dict[str, tuple[str, Any]] = field(default_factory=dict)


def strip_jsonc(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments and trailing commas (what pi-hindsight's jsonc-parser accepts) as
    plain JSON. Strings are copied as they are; positions of everything else are kept for error messages."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif ch == ",":
            j = i + 1
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    k = text.find("\n", j)
                    j = n if k < 0 else k
                elif text.startswith("/*", j):
                    k = text.find("*/", j + 2)
                    j = n if k < 0 else k + 2
                else:
                    break
            out.append(" " if j < n and text[j] in "}]" else ",")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_FLAT_TOML_KEYS = frozenset({"api_url", "api_key", "bank_id", "global_bank", "recall_types"})


def flat_toml(text: str) -> dict[str, str] | None:
    """hindsight-pi's own reading of a TOML file: ``key = value`` lines, quotes stripped, ``#`` comments. Used
    only when the file is not valid TOML (an unquoted value, say) and every line is such a line with a key the
    extension reads: then the file means what it means to the extension; otherwise None."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in _FLAT_TOML_KEYS or not value:
            return None
        for quote in ('"', "'"):
            value = value.removeprefix(quote).removesuffix(quote)
        out[key] = value
    return out or None


def base_url(value: Any) -> Any:
    """hindsight-pi's ``normalizeBaseUrl``: a URL without a scheme gets ``http://``."""
    if isinstance(value, str) and value.strip() and not value.strip().lower().startswith(("http://", "https://")):
        return "http://" + value.strip()
    return value


def translate_hindsight_dir_file(data: dict[str, Any], label: str) -> Translated:
    """A ``.hindsight/config.json|toml``: this tool's own keys plus hindsight-pi's, as hindsight-pi reads them."""
    out = Translated({})
    for key, value in data.items():
        if key in HP_MARKERS:
            out.families.add(HINDSIGHT_PI)
        if key in _HP_TOP_ALIASES:
            target = _HP_TOP_ALIASES[key]
            if target in data:
                continue  # the camelCase key wins, as in the extension (``file.bankId ?? file.bank_id``)
            out.data[target] = base_url(value) if target == "baseUrl" else value
            out.written_as[target] = key
        elif key in _HP_UNUSED_TOP:
            out.unused.append(key)
        elif key == "host":
            _host(value, label, out)
        else:
            out.data[key] = value
    return out


def _host(value: Any, label: str, out: Translated) -> None:
    if not isinstance(value, dict):
        raise ConfigError(label, "host", "must be an object (hindsight-pi's per-host settings)")
    for host, settings in value.items():
        if host != "pi":
            out.unused.append(f"host.{host}")  # another harness's settings on a shared file
            continue
        if not isinstance(settings, dict):
            raise ConfigError(label, "host.pi", "must be an object")
        for key, item in settings.items():
            if key in HP_SWITCHES:
                out.switches[f"host.pi.{key}"] = (f"host.pi.{key}", item)
            elif key in _HP_HOST_USED:
                if item is None and key in ("observationScopes", "autoRecallTags"):
                    continue
                out.data[key] = _hp_value(key, item, label)
                out.written_as[key] = f"host.pi.{key}"
                out.whole.add(key)  # host.pi is merged one level deep: a later file replaces the whole value
            elif key in _HP_HOST_UNUSED:
                out.unused.append(f"host.pi.{key}")
            else:
                raise ConfigError(label, f"host.pi.{key}",
                                  "unknown key (not one hindsight-pi reads; unknown keys are never ignored)")


def _hp_value(key: str, value: Any, label: str) -> Any:
    """As hindsight-pi's ``csvOr``/``jsonOr``: a tag list may be a comma string, an object or list a JSON string."""
    if isinstance(value, str) and key in ("constantTags", "autoRecallTags"):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, str) and value.strip().startswith(("{", "[")):
        try:
            return jsoncodec.loads(value)
        except ValueError:
            raise ConfigError(label, f"host.pi.{key}", "a JSON string that does not parse") from None
    return value


def translate_pi_hindsight_file(data: dict[str, Any], label: str) -> Translated:
    """A pi-hindsight ``hindsight.json|jsonc``: its shape, translated to this tool's keys."""
    out = Translated({}, families={PI_HINDSIGHT})
    for key, value in data.items():
        if key in _PH_UNUSED_TOP:
            out.unused.append(key)
        elif key == "enabled":
            out.switches["enabled"] = ("enabled", value)
        elif key == "retain":
            _ph_retain(value, out)
        elif key == "hindsight":
            _ph_server(value, label, out)
        elif key == "banks":
            _ph_banks(value, label, out)
        elif key in ("userRetain", "globalRetain"):
            if not isinstance(value, dict):
                raise ConfigError(label, key, "must be an object")
            if key == "globalRetain" and "userRetain" in data:
                continue  # the extension's migration keeps userRetain
            for sub, item in value.items():
                if sub != "mode":
                    raise ConfigError(label, f"{key}.{sub}", "unknown key (unknown keys are never ignored)")
                out.data.setdefault("userRetain", {})["mode"] = item
                out.written_as["userRetain.mode"] = f"{key}.mode"
        else:
            raise ConfigError(label, key, "unknown key (not one pi-hindsight reads; unknown keys are never ignored)")
    return out


def _ph_retain(value: Any, out: Translated) -> None:
    """pi-hindsight's ``retain`` section: ``retain.enabled`` is a switch; the rest is the extension's business."""
    if not isinstance(value, dict):
        out.unused.append("retain")  # the extension's normalizeConfig falls back to its defaults
        return
    for key, item in value.items():
        if key == "enabled":
            out.switches["retain.enabled"] = ("retain.enabled", item)
        else:
            out.unused.append(f"retain.{key}")


def _ph_server(value: Any, label: str, out: Translated) -> None:
    if not isinstance(value, dict):
        raise ConfigError(label, "hindsight", "must be an object")
    for key, item in value.items():
        if key == "baseUrl":
            out.data["baseUrl"] = item
            out.written_as["baseUrl"] = "hindsight.baseUrl"
        elif key == "apiKey":
            out.data["apiKey"] = item  # a {source: env, name} reference is resolved by the loader
            out.written_as["apiKey"] = "hindsight.apiKey"
        elif key == "apiKeyRef":  # "env:NAME"; a key written out beside it wins, as in the extension
            if "apiKey" in value:
                continue
            if not isinstance(item, str) or not item.startswith("env:") or not item[4:]:
                raise ConfigError(label, "hindsight.apiKeyRef", 'must be "env:VARIABLE"')
            out.data["apiKey"] = {"source": "env", "name": item[4:]}
            out.written_as["apiKey"] = "hindsight.apiKeyRef"
        elif key == "timeoutMs":
            out.unused.append("hindsight.timeoutMs")
        else:
            raise ConfigError(label, f"hindsight.{key}", "unknown key (unknown keys are never ignored)")


def _ph_banks(value: Any, label: str, out: Translated) -> None:
    if not isinstance(value, dict):
        raise ConfigError(label, "banks", "must be an object")
    banks: dict[str, dict[str, Any]] = {}
    for name in sorted(value, key=lambda n: n in _PH_BANK_ALIASES):  # the real name wins over an alias
        role = _PH_BANK_ALIASES.get(name, name)
        bank = value[name]
        if role not in ("project", "user"):
            raise ConfigError(label, f"banks.{name}", "unknown bank (project, user; legacy global, coding, life)")
        if not isinstance(bank, dict):
            raise ConfigError(label, f"banks.{name}", "must be an object")
        for key, item in bank.items():
            if key in _PH_BANK_UNUSED or (key == "derive" and role == "user"):  # pi-hindsight derives no user bank
                out.unused.append(f"banks.{name}.{key}")
            elif key in ("bankId", "enabled", "derive"):
                if key in banks.get(role, {}):
                    continue
                if key == "enabled" and role == "project":  # also a switch: no project bank, no automatic retain
                    out.switches["banks.project.enabled"] = (f"banks.{name}.enabled", item)
                banks.setdefault(role, {})[key] = item
                out.written_as[f"banks.{role}.{key}"] = f"banks.{name}.{key}"
            else:
                raise ConfigError(label, f"banks.{name}.{key}", "unknown key (unknown keys are never ignored)")
    if banks:
        out.data["banks"] = banks


def api_key_reference(value: Any, label: str, env: Mapping[str, str]) -> Any:
    """pi-hindsight's ``{"source": "env", "name": VAR}``: the key is read from that variable."""
    if not isinstance(value, dict):
        return value
    name = value.get("name")
    if value.get("source") != "env" or not isinstance(name, str) or not name:
        raise ConfigError(label, "apiKey", 'a reference must be {"source": "env", "name": "VARIABLE"}')
    return env.get(name) or None


def env_layer(env: Mapping[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """The variables either extension (or this tool) reads, each as ``(variable, data in this tool's keys)``.
    Values that are JSON in the extension (``HINDSIGHT_RETAIN_CONTENT``, …) must parse; a comma list is split."""
    layers: list[tuple[str, dict[str, Any]]] = []

    def put(name: str, dotted: str, value: Any) -> None:
        data: dict[str, Any] = {}
        *parents, last = dotted.split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
        layers.append((name, data))

    for name, dotted in _ENV_PLAIN.items():
        value = env.get(name)
        if value:
            put(name, dotted, base_url(value) if dotted == "baseUrl" else value)
    for name, dotted in _ENV_CSV.items():
        value = env.get(name)
        if value:
            put(name, dotted, [part.strip() for part in value.split(",") if part.strip()])
    for name, dotted in _ENV_JSON.items():
        value = env.get(name)
        if value:
            try:
                put(name, dotted, jsoncodec.loads(value))
            except ValueError as exc:
                raise ConfigError(f"env {name}", dotted, f"not valid JSON: {exc}") from None
    ref = env.get("HINDSIGHT_API_KEY_REF")
    if ref and not env.get("HINDSIGHT_API_KEY") and env.get(ref):
        put("HINDSIGHT_API_KEY_REF", "apiKey", env[ref])
    project_bank = env.get("PI_HINDSIGHT_PROJECT_BANK_ID")
    if project_bank:
        put("PI_HINDSIGHT_PROJECT_BANK_ID", "banks.project.bankId", project_bank)
    user_bank = env.get("PI_HINDSIGHT_USER_BANK_ID") or env.get("PI_HINDSIGHT_GLOBAL_BANK_ID")
    if user_bank:
        source = "PI_HINDSIGHT_USER_BANK_ID" if env.get("PI_HINDSIGHT_USER_BANK_ID") else "PI_HINDSIGHT_GLOBAL_BANK_ID"
        put(source, "banks.user", {"bankId": user_bank, "enabled": True})
    return layers


ENV_FAMILY_MARKERS = {"HINDSIGHT_BANK_STRATEGY": HINDSIGHT_PI, "HINDSIGHT_GLOBAL_BANK_ID": HINDSIGHT_PI,
                      "PI_HINDSIGHT_PROJECT_BANK_ID": PI_HINDSIGHT}

_ENV_PLAIN: dict[str, str] = {
    "HINDSIGHT_API_URL": "baseUrl",  # this tool's older spelling; HINDSIGHT_BASE_URL (both extensions) wins
    "HINDSIGHT_BASE_URL": "baseUrl",
    "HINDSIGHT_API_KEY": "apiKey",
    "HINDSIGHT_PROJECT_NAME": "projectName",
    "HINDSIGHT_BANK_ID": "bankId",
    "HINDSIGHT_GLOBAL_BANK_ID": "globalBankId",
    "HINDSIGHT_BANK_STRATEGY": "bankStrategy",
    "HINDSIGHT_USER_BANK_ID": "banks.user.bankId",
    "HINDSIGHT_USER_RETAIN_MODE": "userRetain.mode",
    "HINDSIGHT_REDACTION_POLICY": "redaction.policy",
}
_ENV_CSV = {"HINDSIGHT_CONSTANT_TAGS": "constantTags", "HINDSIGHT_AUTO_RECALL_TAGS": "autoRecallTags"}
_ENV_JSON = {"HINDSIGHT_RETAIN_CONTENT": "retainContent", "HINDSIGHT_STRIP": "strip",
             "HINDSIGHT_TOOL_FILTER": "toolFilter", "HINDSIGHT_OBSERVATION_SCOPES": "observationScopes"}

# The variables that switch an extension's automatic retain off (read by hindsight_batch/extension/switches.py).
ENV_SWITCHES = ("HINDSIGHT_ENABLED", "HINDSIGHT_SAVE_MESSAGES", "PI_HINDSIGHT_ENABLED")
ENV_NAMES = frozenset([*_ENV_PLAIN, *_ENV_CSV, *_ENV_JSON, "HINDSIGHT_API_KEY_REF", "PI_HINDSIGHT_PROJECT_BANK_ID",
                       "PI_HINDSIGHT_USER_BANK_ID", "PI_HINDSIGHT_GLOBAL_BANK_ID", *ENV_SWITCHES])


def home_of(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")
