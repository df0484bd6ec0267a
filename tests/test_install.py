"""The default install, as a user runs it: a real ``pip install .`` (build isolation, the package registry through
pip) into a new virtual environment. Where a C compiler works it gives the compiled build; where it does not, the
install still succeeds, pure, and the command says why on stderr (pip hides the build's output); both import
samples/ the same way. ``HINDSIGHT_BATCH_COMPILE=0`` installs pure without a note.

Each install is a minute or less (mypyc's type check and the C compiler take most of it), so these run once: in
the pure pass of scripts/test.sh, not again in the compiled one (they build their own environments; what this
process runs does not matter to them). The compiled install is ``pip install .`` in its two steps: the wheel
scripts/test.sh builds once with ``pip wheel`` (tests/built_wheel.py; the compiled pass runs the same build),
then its install; run alone, this file builds that wheel itself. The new environments borrow this one's run-time
dependencies (a ``.pth`` file, ``--no-deps``) to spare installing them; the build itself gets nothing from here:
pip's isolated build environment drops every site folder of the interpreter, ``.pth`` paths included.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from tests import built_wheel
from tests.built_wheel import INSTALL_TIMEOUT, Built, project_copy, user_env
from tests.conftest import SAMPLES

pytestmark = [
    pytest.mark.skipif(os.environ.get("HINDSIGHT_BATCH_EXPECT_BUILD") == "mypyc",
                       reason="install tests build their own environments: run once, in the pure pass"),
    pytest.mark.timeout(1800),  # one install per module fixture; bounded again by each subprocess's timeout
]

NOTE = "hindsight-batch: note: the pure-Python build runs"
# Set by scripts/test.sh: the folder its one wheel build (tests/built_wheel.py) writes to, read before any test runs.
SHARED_WHEEL = os.environ.get("HINDSIGHT_BATCH_TEST_WHEEL")


class Installed:
    """A virtual environment with ``pip install .`` done, and how its install went."""

    def __init__(self, root: Path, install: subprocess.CompletedProcess[str]) -> None:
        self.root = root
        self.install = install
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.root / "venv" / "bin" / "hindsight-batch"), *args], capture_output=True,
                              text=True, timeout=300, env=user_env(self.home), cwd=self.root)


def _venv(root: Path) -> Path:
    """A new virtual environment in ``root``, borrowing this one's run-time dependencies."""
    root.mkdir(exist_ok=True)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    probe = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", probe],
                               capture_output=True, text=True, check=True, timeout=60).stdout.strip())
    (site / "borrowed-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


def _pip_install(root: Path, venv: Path, target: Path, **env: str) -> subprocess.CompletedProcess[str]:
    home = root / "home"
    home.mkdir()
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
         "--disable-pip-version-check", "-v", str(target)],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=user_env(home, **env), cwd=root)


def _install(root: Path, stale_build: bool = False, **env: str) -> Installed:
    venv = _venv(root)
    source = project_copy(root / "src")
    if stale_build:  # what an earlier compiled install leaves in the checkout's build/ (pip builds in the tree)
        for lib in ("lib", f"lib.{sysconfig.get_platform()}-{sys.implementation.cache_tag}"):
            package = source / "build" / lib / "hindsight_batch"
            package.mkdir(parents=True)
            (package / f"_compiled__mypyc{sysconfig.get_config_var('EXT_SUFFIX')}").write_bytes(b"stale")
    return Installed(root, _pip_install(root, venv, source, **env))


def _install_built(root: Path, built: Built) -> Installed:
    """``pip install .`` in two steps: the wheel ``built`` (the build's output is the install's), then its install."""
    venv = _venv(root)
    if built.wheel is None:
        return Installed(root, subprocess.CompletedProcess([], built.returncode or 1, built.log, ""))
    done = _pip_install(root, venv, built.wheel)
    return Installed(root, subprocess.CompletedProcess(done.args, done.returncode, built.log + done.stdout,
                                                       done.stderr))


def _has_c_compiler() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return shutil.which(cc) is not None and include.is_file()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    if not _has_c_compiler():
        pytest.skip("no C compiler or no Python headers on this machine: the default install is pure here "
                    "(the fallback test covers it)")
    root = tmp_path_factory.mktemp("compiled")
    # The wheel scripts/test.sh builds once, which its compiled pass also runs; else one built here.
    built = built_wheel.wait_for(Path(SHARED_WHEEL)) if SHARED_WHEEL else built_wheel.build(root / "wheel")
    return _install_built(root, built)


@pytest.fixture(scope="module")
def fallback(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("fallback")
    # A C compiler that fails, as a missing or unusable one does; and an earlier build's compiled modules in the
    # checkout's build/, which a pure build must not ship.
    broken = root / "broken-cc"
    broken.write_text("#!/bin/sh\necho 'broken-cc: this compiler always fails' >&2\nexit 1\n")
    broken.chmod(0o755)
    return _install(root, stale_build=True, CC=str(broken))


def _import_samples(installed: Installed, state: Path) -> tuple[list[dict[str, Any]], str]:
    """A dry-run import of the shipped samples (no server asked): each row without its run id, and stderr. The
    secrets' fingerprints are keyed by the ledger in ``state``: runs compared share it."""
    manifest = state.parent / f"{installed.root.name}.jsonl"
    done = installed.run("import", str(SAMPLES), "--manifest", str(manifest), "--include-content",
                         "--state", str(state), "--live-retained", "include", "-q")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    rows = [json.loads(line) for line in manifest.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row.pop("run_id")
    return rows, done.stderr


def _install_log(installed: Installed) -> str:
    return installed.install.stdout[-3000:] + installed.install.stderr[-3000:]


def test_a_plain_install_gives_the_compiled_build(compiled: Installed) -> None:
    assert compiled.install.returncode == 0, _install_log(compiled)
    assert "the compiled build failed" not in compiled.install.stderr + compiled.install.stdout, _install_log(compiled)
    version = compiled.run("--version")
    assert (version.returncode, version.stdout.strip()) == (0, "hindsight-batch, version 0.1.0 (mypyc build)")
    assert version.stderr == ""  # no note: nothing fell back
    rows, _ = _import_samples(compiled, compiled.root / "state")
    assert len(rows) == 9


def test_without_a_working_compiler_the_install_is_pure_and_says_why(fallback: Installed) -> None:
    assert fallback.install.returncode == 0, _install_log(fallback)
    assert "Traceback" not in fallback.install.stderr + fallback.install.stdout
    version = fallback.run("--version")
    assert (version.returncode, version.stdout.strip()) == (0, "hindsight-batch, version 0.1.0 (pure build)")
    # Once, one line, the reason and where to read more.
    notes = [line for line in version.stderr.splitlines() if line.startswith(NOTE)]
    assert len(notes) == 1 and version.stderr.count(NOTE) == 1, version.stderr
    assert "no working C compiler" in notes[0] and "broken-cc" in notes[0] and "docs/build.md" in notes[0]
    assert "Traceback" not in version.stderr


def test_both_builds_import_the_samples_the_same(compiled: Installed, fallback: Installed, tmp_path: Path) -> None:
    rows, stderr = _import_samples(fallback, tmp_path / "state")
    assert len(rows) == 9
    assert stderr.count(NOTE) == 1, stderr  # an import run says it too, once
    compiled_rows, compiled_stderr = _import_samples(compiled, tmp_path / "state")
    assert NOTE not in compiled_stderr
    assert compiled_rows == rows


def test_compile_0_installs_pure_without_a_note(tmp_path: Path) -> None:
    installed = _install(tmp_path / "pure", stale_build=True, HINDSIGHT_BATCH_COMPILE="0")
    assert installed.install.returncode == 0, _install_log(installed)
    assert "install backend dependencies" not in installed.install.stdout  # mypy and the rest are not fetched
    version = installed.run("--version")
    assert (version.stdout.strip(), version.stderr) == ("hindsight-batch, version 0.1.0 (pure build)", "")
