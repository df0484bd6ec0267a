"""What ``status`` reports: the configuration a session in a folder gets (each value with where it came from,
secrets masked), the project bank it would use and why, the ledger's totals, the server check and the retain
queues' depths."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hindsight_batch.base.masking import mask


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (``upload.timeoutSeconds``); an empty mapping stays one value."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def build_status(cwd: Path | None = None, config_file: Path | None = None, state_dir: Path | None = None,
                 server: bool = False) -> dict[str, Any]:
    """The ``status --json`` document for a session in ``cwd`` (default: here). With ``server`` the server is
    asked (3 s) and a refusal or no answer raises (exit 4)."""
    from hindsight_batch.config import ConfigResolver
    from hindsight_batch.extension.switches import project_switch
    from hindsight_batch.ledger.state import ledger_totals
    from hindsight_batch.plan.banks import BankResolver, Unreproducible, project_name, user_bank_clash
    from hindsight_batch.queue.discovery import queue_depths
    from hindsight_batch.sinks.client import server_status

    folder = str((cwd or Path.cwd()).resolve())
    resolver = ConfigResolver(config_file=config_file)
    resolved = resolver.for_cwd(folder)
    settings = resolved.settings
    values = flatten(settings.model_dump(mode="json", by_alias=True))
    if settings.api_key is not None:
        values["apiKey"] = "******** (set)"
    project = project_name(settings, folder)
    bank: str | None
    try:
        bank, why = BankResolver(resolver.env).derive_here(resolved, folder, project)
    except Unreproducible as exc:
        bank, why = None, f"cannot be derived here: {exc}; an import uses the bank the extension recorded"
    clash = user_bank_clash(resolved, bank)
    if clash:
        bank, why = None, f"refused, an import skips these sessions: {clash}"
    rows = [{"key": k, "value": mask(v) if isinstance(v, str) else v, "from": resolved.origin(k)}
            for k, v in values.items()]
    return {
        "cwd": folder,
        "config_files": [str(p) for p in resolved.files],
        "extension_config": resolved.family,
        "extension_config_files": resolved.family_files,
        "ignored_extension_keys": resolved.ignored_keys,
        # A live extension's switch that keeps this folder's sessions out of automatic retain (extension/switches.py).
        "retain_switch": switch.reason if (switch := project_switch(resolved, resolver.env, folder)) else None,
        "ignored_project_keys": resolved.warnings,
        "user_retain_mode": settings.user_retain.mode,
        "router_mode_on": settings.user_retain.mode == "router",
        "project_bank_id": bank,
        "project_bank_why": why,
        "settings": rows,
        "ledger": ledger_totals(state_dir),
        "server": server_status(settings) if server else "not asked (use --server)",
        "queues": queue_depths(),
    }
