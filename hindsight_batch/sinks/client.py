"""The Hindsight client a command uses, made from the settings (base URL, API key, upload timeouts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight_batch.base.masking import mask

if TYPE_CHECKING:
    from hindsight_batch.config.model import Settings
    from hindsight_batch.sinks.hindsight import HindsightClient


def client_for(settings: Settings, timeout: float | None = None, max_attempts: int | None = None) -> HindsightClient:
    """A client for ``settings.base_url`` with the configured key; ``timeout``/``max_attempts`` override the
    upload settings (a read-only probe asks once, briefly). Loads httpx: call it only to talk to the server."""
    from hindsight_batch.sinks.hindsight import HindsightClient

    key = settings.api_key.get_secret_value() if settings.api_key else None
    return HindsightClient(settings.base_url, key, timeout=timeout or settings.upload.timeout_seconds,
                           max_attempts=max_attempts or settings.upload.max_attempts)


def server_status(settings: Settings) -> str:
    """The server's version once it accepted our credentials (masked); unreachable or refused raises the
    server error (exit 4)."""
    with client_for(settings, timeout=3, max_attempts=1) as client:
        return mask(f"{settings.base_url}: version {client.preflight()}, credentials accepted")
