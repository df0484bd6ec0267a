"""The live extensions' switches that cover a session: the project's, pi-hindsight's session meta (kept outside the
session file) and hindsight-pi's ``hindsight-meta`` entries (in it).

In: a session's header and file. Out: the :class:`Switched` that covers the whole session, or the messages a switch
left out; the session's tags from its meta.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hindsight_batch.config import ConfigResolver
from hindsight_batch.extension.switches import LuxusSession, Switched, luxus_session, project_switch

if TYPE_CHECKING:
    from hindsight_batch.importing.options import PipelineOptions
    from hindsight_batch.session.model import SessionHeader

__all__ = ["SwitchChecks"]


class SwitchChecks:
    """The switches outside a session file, each project's looked up once per run (a re-run must stay cheap)."""

    def __init__(self, resolver: ConfigResolver, options: PipelineOptions) -> None:
        self.resolver = resolver
        self.options = options
        self._project_switches: dict[str, Switched | None] = {}  # per cwd (hindsight_batch/extension/switches.py)
        self._meta_folders: dict[str, bool] = {}  # per cwd: whether pi-hindsight keeps session meta there

    def luxus_session(self, header: SessionHeader, path: Path) -> LuxusSession:
        """pi-hindsight's session meta, looked for only in a project that has its folder."""
        cwd = header.cwd or ""
        if cwd not in self._meta_folders:
            self._meta_folders[cwd] = bool(cwd) and (Path(cwd) / ".pi" / "hindsight" / "session-meta").is_dir()
        return luxus_session(header.cwd, path, self.resolver.env) if self._meta_folders[cwd] else LuxusSession(True)

    def outside(self, header: SessionHeader, luxus: LuxusSession) -> Switched | None:
        """The per-project switch, else pi-hindsight's session meta (its one-turn opt-out for catch-up alone: seed
        004 keeps it out of a historical import), that covers this whole session; or None."""
        key = header.cwd or ""
        if key not in self._project_switches:  # once per project and run, as its configuration is read
            resolved = self.resolver.for_cwd(header.cwd)
            self._project_switches[key] = project_switch(resolved, self.resolver.env, header.cwd)
        found = self._project_switches[key]
        if found is not None:
            return found
        if not luxus.retain:
            return Switched("luxus-session", luxus.reason or "pi-hindsight session meta")
        if not header.cwd and self.options.catch_up:  # its session meta and cursor live under the cwd (S8)
            return Switched("luxus-session", "no cwd in the session header: its session meta cannot be found "
                                             "(fail closed)")
        if luxus.next_off and self.options.catch_up:
            # memory-lifecycle-retain.ts: a pending nextRetainMode "off" skips the next completed agent run, which
            # is the one after the cursor: not retained automatically (fail closed).
            return Switched("luxus-session", "pi-hindsight: a pending /hindsight:next-opt-out (nextRetainMode off)")
        return None
