"""The pinned pi, installed once per machine with npm into ``~/.cache/hindsight-batch/pi/<version>``
(``$HINDSIGHT_BATCH_PI_HOME`` overrides the folder) for tests/test_pi_conformance.py.

scripts/test.sh runs ``python -m tests.pi.install`` before pytest starts, so the download happens outside any test's
timeout; the tests' fixture calls :func:`install_pi` too (instant once installed). A lock keeps concurrent test runs
apart; a failed install leaves nothing behind that looks installed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_VERSION = "0.73.1"
PI_HOME = Path(os.environ.get("HINDSIGHT_BATCH_PI_HOME") or Path.home() / ".cache" / "hindsight-batch" / "pi")
REAL_HOME = Path.home()  # read at import, before the tests' private HOME (npm keeps its cache there)


class PiInstallError(RuntimeError):
    pass


def install_pi(say: bool = False) -> Path:
    """The folder holding the pinned pi package; npm installs it first if needed (``say``: tell stderr what it does)."""
    root = PI_HOME / PI_VERSION
    PI_HOME.mkdir(parents=True, exist_ok=True)
    with (PI_HOME / f"{PI_VERSION}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second test run waits here for the first one's install
        if (root / "installed.json").exists():
            return root
        if say:
            print(f"installing {PI_PACKAGE}@{PI_VERSION} with npm into {root}: downloads about 90 MB from the npm "
                  "registry (about 200 MB on disk; about half a minute, once)", file=sys.stderr, flush=True)
        started = time.monotonic()
        partial = PI_HOME / f"{PI_VERSION}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        done = subprocess.run(
            ["npm", "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--loglevel=error",
             f"{PI_PACKAGE}@{PI_VERSION}"],
            capture_output=True, text=True, timeout=900, env={**os.environ, "HOME": str(REAL_HOME)},
        )
        if done.returncode != 0:
            raise PiInstallError(f"npm could not install pi {PI_VERSION}: {done.stderr[-2000:]}")
        (partial / "installed.json").write_text(json.dumps({"package": PI_PACKAGE, "version": PI_VERSION}))
        shutil.rmtree(root, ignore_errors=True)
        partial.rename(root)
        if say:
            print(f"installed pi in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return root


if __name__ == "__main__":
    try:
        print(install_pi(say=True))
    except (PiInstallError, OSError, subprocess.TimeoutExpired) as error:
        sys.exit(f"tests/pi/install.py: {error}")
