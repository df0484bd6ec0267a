"""The build backend: setuptools', asking for what the compiled build needs only when it will be attempted.

A plain ``pip install .`` compiles the hot modules with mypyc (``setup.py``), and mypyc type-checks them, so the
isolated build environment needs mypy and the packages whose types the check follows (the run-time
dependencies, their stubs, the pydantic mypy plugin). An editable install (pure unless ``HINDSIGHT_BATCH_COMPILE=1``)
and ``HINDSIGHT_BATCH_COMPILE=0`` need none of them, so they are not fetched then. The pins are read from
``pyproject.toml`` (the run-time dependencies and the ``dev`` extra's mypy and stubs), so there is one list.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import (
    build_editable,
    build_sdist,
    build_wheel,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

# From the dev extra: what mypyc itself is, and the stubs the type check reads.
_FROM_DEV = {"mypy", "types-tqdm"}


def compile_requires() -> list[str]:
    """What the build environment needs for mypyc: the run-time dependencies and the dev extra's mypy and stubs."""
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    return [*project["dependencies"], *(req for req in dev if _name(req) in _FROM_DEV)]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()


def get_requires_for_build_wheel(config_settings: dict[str, object] | None = None) -> list[str]:
    extra = [] if os.environ.get("HINDSIGHT_BATCH_COMPILE") == "0" else compile_requires()
    return [*build_meta.get_requires_for_build_wheel(config_settings), *extra]


def get_requires_for_build_editable(config_settings: dict[str, object] | None = None) -> list[str]:
    extra = compile_requires() if os.environ.get("HINDSIGHT_BATCH_COMPILE") == "1" else []
    return [*build_meta.get_requires_for_build_editable(config_settings), *extra]
