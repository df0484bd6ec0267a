"""hindsight-batch: move Pi coding-agent transcripts into Hindsight memory, safely.

The package is a library first; :mod:`hindsight_batch.cli` is a thin click layer over it.
"""

__version__ = "0.1.0"
