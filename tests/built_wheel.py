"""The project's wheel, built as a user's ``pip install .`` builds it (build isolation, the package registry through
pip, a copy of the project as a fresh checkout has it): ``pip install .`` is this build, then the wheel's install.

mypyc runs once per test run: scripts/test.sh builds this wheel (``python -m tests.built_wheel DIR``, in the
background while the pure pass runs), tests/test_install.py installs it for its compiled-install tests (reading
``HINDSIGHT_BATCH_TEST_WHEEL``; without it, as when that file is run alone, it builds one itself), and the compiled
pass runs its compiled modules, put in place by ``scripts/compile.sh --from``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INSTALL_TIMEOUT = 900  # seconds: a compiled build is about a minute on an idle 2-core machine
# What a source install needs: the build files, the package, and the README (the package's long description).
PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md", "build_backend", "hindsight_batch")
RESULT = "result.json"  # written last: the build is over (its exit code; the wheel's name)
LOG = "build.log"  # pip's -v output: the build's own lines included


def project_copy(dest: Path) -> Path:
    """The project as a fresh checkout has it: no build folder, no compiled modules from scripts/compile.sh."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "_compiled_sources.json", "_build.json")
    dest.mkdir()
    for name in PROJECT_FILES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        else:
            shutil.copy2(source, dest / name)
    return dest


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment: none of this project's or pi's settings, a HOME of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT", "PI_CODING_AGENT"))}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), **extra)
    return env


@dataclass(frozen=True)
class Built:
    """How the build went (``returncode``, pip's output in ``log``) and the wheel, when there is one."""

    returncode: int
    log: str
    wheel: Path | None


def build(out: Path) -> Built:
    """Builds the wheel into ``out`` (which must not exist), as ``pip install .`` would; records how it went there
    (``build.log``, then ``result.json``) for another process to read with :func:`wait_for`."""
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="hb-wheel-") as tmp:
        root = Path(tmp)
        source = project_copy(root / "src")
        (root / "home").mkdir()
        with (out / LOG).open("w") as log:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-v",
                 "--wheel-dir", str(out), str(source)],
                stdout=log, stderr=subprocess.STDOUT, text=True, timeout=INSTALL_TIMEOUT, env=user_env(root / "home"),
                cwd=root)
    wheels = sorted(out.glob("*.whl"))
    wheel = wheels[0] if done.returncode == 0 and len(wheels) == 1 else None
    result = {"returncode": done.returncode, "wheel": wheel.name if wheel else None}
    (out / f"{RESULT}.partial").write_text(json.dumps(result))
    (out / f"{RESULT}.partial").rename(out / RESULT)
    return Built(done.returncode, (out / LOG).read_text(errors="replace"), wheel)


def wait_for(out: Path, timeout: float = INSTALL_TIMEOUT) -> Built:
    """The build another process runs into ``out``, once it is over."""
    deadline = time.monotonic() + timeout
    while not (out / RESULT).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no wheel build finished in {out} within {timeout:.0f} s")
        time.sleep(1)
    result = json.loads((out / RESULT).read_text())
    return Built(result["returncode"], (out / LOG).read_text(errors="replace"),
                 out / result["wheel"] if result["wheel"] else None)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.built_wheel OUT_DIR")
    started = time.monotonic()
    built = build(Path(sys.argv[1]))
    if built.wheel is None:
        sys.exit(f"tests/built_wheel.py: pip wheel failed ({built.returncode}):\n{built.log[-4000:]}")
    print(f"built {built.wheel.name} in {time.monotonic() - started:.0f} s")
