"""Configuration: the pydantic model and the layered loader."""

from hindsight_batch.config.loader import ConfigResolver, ResolvedConfig
from hindsight_batch.config.model import Settings

__all__ = ["ConfigResolver", "ResolvedConfig", "Settings"]
