"""Build hook for the compiled build. Everything else about the package is in ``pyproject.toml``.

A plain ``pip install .`` compiles the modules every imported entry passes through to C extensions with mypyc
(as black and mypy ship theirs): the same source, type-checked as it is, runs faster (README, "Performance").
When it cannot (no C compiler, no Python headers, mypyc failing), the install still succeeds, pure Python, and
records why in the package (``_build.json``), so the command says so when it runs (docs/build.md).

``HINDSIGHT_BATCH_COMPILE``: unset, compile when possible; ``0``, pure Python; ``1``, compile or fail the build.
An editable install (``pip install -e .``) is pure unless ``1``: there an edit should take effect at once. A build
in place (``scripts/compile.sh``, or ``1`` with ``-e``) records each compiled source's hash
(``_compiled_sources.json``) so that the CLI warns when one was edited since: its compiled module shadows it.

mypyc type-checks what it compiles, so the build environment needs mypy and the run-time dependencies; the
in-tree backend (``build_backend/``) asks for them only when a compiled build will be attempted.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
import sysconfig
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

# Reading, retention, redaction, chunking, planning and routing: the per-entry, per-chunk and per-word loops.
COMPILED = [
    "hindsight_batch/base/jsoncodec.py",
    "hindsight_batch/session/model.py",
    "hindsight_batch/session/jsonl.py",
    "hindsight_batch/session/reader.py",
    "hindsight_batch/session/tree.py",
    "hindsight_batch/retention/memory_filter.py",
    "hindsight_batch/retention/projection.py",
    "hindsight_batch/retention/records.py",
    "hindsight_batch/retention/stagetimes.py",
    "hindsight_batch/redaction/redactor.py",
    "hindsight_batch/redaction/rules.py",
    "hindsight_batch/redaction/values.py",
    "hindsight_batch/base/textscan.py",
    "hindsight_batch/plan/chunking.py",
    "hindsight_batch/plan/planning.py",
    "hindsight_batch/routing/signals.py",
    "hindsight_batch/routing/strategy.py",
    "hindsight_batch/routing/provenance.py",
    "hindsight_batch/routing/hazards.py",
]
PACKAGE = "hindsight_batch"
# In an installed package whose compiled build failed: why (hindsight_batch.build_fallback() reads it).
BUILD_RECORD = "_build.json"
# In a checkout compiled in place: each compiled source's SHA-256 (hindsight_batch.stale_compiled() reads it).
SOURCES_RECORD = "_compiled_sources.json"
MODE = os.environ.get("HINDSIGHT_BATCH_COMPILE", "")


def _extension_files(folder: Path) -> list[Path]:
    return [path for pattern in ("*.so", "*.pyd") for path in folder.rglob(pattern)] if folder.is_dir() else []


def _say(message: str) -> None:
    print(f"hindsight-batch build: {message}", file=sys.stderr)  # pip shows it with -v


class BuildPy(build_py):
    """Leaves nothing of an earlier build in ``build/lib`` (pip builds in the checkout's ``build/``) that this one
    would not make: a pure build must not ship a previous build's compiled modules, nor any build its record.
    (When it compiles, ``BuildExt`` sorts the compiled modules out: left in place, unchanged ones are not
    compiled again, which makes a reinstall shorter.)"""

    def run(self) -> None:
        package = Path(self.build_lib) / PACKAGE
        for stale in [*(_extension_files(package) if MODE == "0" else []), package / BUILD_RECORD]:
            stale.unlink(missing_ok=True)
        super().run()


class BuildExt(build_ext):
    """Compiles ``COMPILED`` with mypyc, or falls back to the pure package and records why (unless ``MODE`` is
    ``1``). The extensions are made when the step runs, not when it is configured: setuptools configures it
    for the requirements and the metadata too (each in its own process), and only this step needs mypyc."""

    fallback: str | None = None

    def run(self) -> None:
        in_place = self.inplace or self.editable_mode
        self.extensions = []
        if MODE != "0" and (MODE == "1" or not self.editable_mode):
            try:
                _check_compiler()
                self._use(_mypyc_extensions())
                super().run()
            except Exception as exc:  # mypyc, the C compiler or the linker failed
                self.extensions = []
                self._fall_back(exc)
        if in_place:
            if self.extensions:
                _record_sources(Path(PACKAGE))
            return
        package = Path(self.build_lib) / PACKAGE
        built = {Path(output).resolve() for output in self.get_outputs()} if self.extensions else set()
        for stale in _extension_files(package):  # partial, or an earlier build's
            if stale.resolve() not in built:
                stale.unlink()
        if self.fallback is not None:
            package.mkdir(parents=True, exist_ok=True)
            (package / BUILD_RECORD).write_text(json.dumps({"build": "pure", "fallback": self.fallback}) + "\n")

    def _use(self, extensions: list[Extension]) -> None:
        """What setuptools' finalize_options does for each extension (no shared libraries here), for the ones
        made after it ran."""
        self.distribution.ext_modules = self.extensions = extensions
        for ext in extensions:
            fullname = ext._full_name = self.get_ext_fullname(ext.name)
            self.ext_map[fullname] = self.ext_map[fullname.split(".")[-1]] = ext
            ext._links_to_dynamic = ext._needs_stub = False
            ext._file_name = self.get_ext_filename(fullname)

    def _fall_back(self, exc: Exception) -> None:
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        if MODE == "1":
            raise SystemExit(f"HINDSIGHT_BATCH_COMPILE=1: the compiled build failed: {reason}") from exc
        self.distribution.ext_modules = []
        self.fallback = reason
        _say(f"the compiled build failed, so the pure-Python package is built: {reason}")


def _check_compiler() -> None:
    """Fails fast, with a reason a user understands, where mypyc's minute of type-checking would end in a C
    compiler error: no Python headers, no working C compiler."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        raise RuntimeError(f"no Python headers (Python.h is not in {include}; a python3-dev package has them)")
    compiler = new_compiler()
    customize_compiler(compiler)
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text("#include <Python.h>\nint probe(void) { return 0; }\n")
        try:
            compiler.compile([str(probe)], output_dir=tmp, include_dirs=[include])
        except Exception as exc:
            command = getattr(compiler, "compiler_so", None) or ["cc"]
            raise RuntimeError(f"no working C compiler ({command[0]} could not compile a file that includes "
                               "Python.h)") from exc


def _mypyc_extensions() -> list[Extension]:
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        raise RuntimeError("mypy (which brings mypyc) is not in the build environment") from exc
    printed = io.StringIO()  # mypyc prints the type errors, then exits
    try:
        with contextlib.redirect_stdout(printed):
            # One shared library inside the package (not at the top of site-packages), named in build().
            return list(mypycify(COMPILED, group_name=f"{PACKAGE}._compiled"))
    except SystemExit as exc:
        errors = [line for line in printed.getvalue().splitlines() if ": error:" in line]
        raise RuntimeError(f"mypyc failed: {errors[0] if errors else exc}") from None


def _record_sources(package: Path) -> None:
    """Each compiled module's source as it was compiled: the CLI warns when one is edited since."""
    shadowed = {so.parent / (so.name.split(".", 1)[0] + ".py") for so in _extension_files(package)}
    record = {str(py.relative_to(package)): hashlib.sha256(py.read_bytes()).hexdigest()
              for py in sorted(shadowed) if py.is_file()}
    (package / SOURCES_RECORD).write_text(json.dumps(record, indent=1) + "\n")


# A stand-in, replaced by mypyc's extensions when build_ext runs: with none, setuptools would skip build_ext.
_PENDING = [] if MODE == "0" else [Extension(f"{PACKAGE}._compiled__mypyc", sources=[])]

if __name__ == "__main__":  # as pip's backend and `python setup.py` run it; scripts/compile.sh --from imports it
    setup(ext_modules=_PENDING, cmdclass={"build_py": BuildPy, "build_ext": BuildExt})
