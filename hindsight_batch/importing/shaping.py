"""A session's settings as this run shapes them: its configuration, its bank, and the hash the ledger keeps for
the source (a source whose hash changed is read again).

In: a session header and its file. Out: the resolved configuration, the bank choice and, when the session has a
bank, its settings with this run's tags and their hash with this run's suffixes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from hindsight_batch import __version__
from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.plan.banks import BankResolver, moved, project_name, with_project_bank

if TYPE_CHECKING:
    from hindsight_batch.config import ResolvedConfig
    from hindsight_batch.importing.options import PipelineOptions
    from hindsight_batch.plan.banks import BankChoice
    from hindsight_batch.session.model import SessionHeader

__all__ = ["SettingsShaper", "settings_hash"]


def settings_hash(settings: Settings) -> str:
    """Everything that shapes an import's output, plus the tool version: if it changes, a source is redone."""
    shaping = settings.model_dump(mode="json", by_alias=True, exclude={"api_key", "base_url", "upload",
                                                                          "path_map"})
    blob = json.dumps({"settings": shaping, "version": __version__}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class SettingsShaper:
    """Each session's configuration and bank; settings and their hash made once per (configuration, bank, tags)."""

    def __init__(self, resolver: ConfigResolver, options: PipelineOptions) -> None:
        self.resolver = resolver
        self.options = options
        self.banks = BankResolver(resolver.env)
        self._path_map = resolver.for_cwd(None).settings.path_map
        self._shaped: dict[tuple[int, str, tuple[str, ...]], tuple[object, Settings, str]] = {}

    def for_session(self, header: SessionHeader, path: Path, session_tags: tuple[str, ...] = ()
                    ) -> tuple[ResolvedConfig, BankChoice, tuple[Settings, str] | None]:
        """The session's configuration, bank choice and (when it has a bank) its settings and their hash with this
        run's suffixes, as the ledger keeps it for the source. ``session_tags`` (pi-hindsight's session meta) are
        added to the items' tags, as its retain adds ``extraTags: sessionMemory.tags``."""
        cwd = header.cwd
        now = moved(cwd, self._path_map) if cwd and self._path_map else None
        if now is not None:  # --map OLD=NEW: the bank and the project's configuration where the repository is now
            cwd = now
        resolved = self.resolver.for_cwd(cwd)
        project = project_name(resolved.settings, header.cwd)
        choice = self.banks.choose(resolved, cwd, project, header.id, path)
        if now is not None:
            choice = choice._replace(why=f"{choice.why} (cwd {header.cwd} read as {now}: --map)")
        if choice.bank_id is None:
            return resolved, choice, None
        settings, digest = self._with_bank(resolved, choice.bank_id, self.banks.family_tags(resolved, cwd,
                                                                                            choice.found))
        if session_tags:
            settings = settings.model_copy(update={"constant_tags": [*settings.constant_tags, *session_tags]})
            digest = settings_hash(settings)
        shape = digest + (":catch-up" if self.options.catch_up else "")
        shape += f":live-{self.options.live.mode}" if self.options.live is not None else ""
        shape += ":switches" if self.options.switches_respected else ""
        return resolved, choice, (settings, shape)

    def _with_bank(self, resolved: ResolvedConfig, bank_id: str, tags: list[str]) -> tuple[Settings, str]:
        """The settings with the project bank and family tags, and their hash: once per (configuration, bank,
        tags), not per file, as many sessions share them."""
        key = (id(resolved), bank_id, tuple(tags))
        shaped = self._shaped.get(key)
        if shaped is None or shaped[0] is not resolved:
            settings = with_project_bank(resolved.settings, bank_id, tags)
            shaped = self._shaped[key] = (resolved, settings, settings_hash(settings))
        return shaped[1], shaped[2]
