"""hindsight-batch: move Pi coding-agent transcripts into Hindsight memory, safely.

The package is a library first; :mod:`hindsight_batch.cli` is a thin click layer over it.
"""

import importlib.util

__version__ = "0.1.0"


def build() -> str:
    """``"mypyc"`` when the hot modules are compiled (``HINDSIGHT_BATCH_COMPILE=1``, see ``setup.py``), else
    ``"pure"``: the compiled modules share one library, so its presence tells."""
    return "mypyc" if importlib.util.find_spec("hindsight_batch._compiled__mypyc") is not None else "pure"
