"""Configuration: the pydantic model and the layered loader.

In: defaults, the config files (ours and the extensions'), the environment, the command's options. Out: the
``Settings`` every stage reads, and where each value came from.
"""

from hindsight_batch.config.loader import ConfigResolver, ResolvedConfig
from hindsight_batch.config.model import Settings

__all__ = ["ConfigResolver", "ResolvedConfig", "Settings"]
