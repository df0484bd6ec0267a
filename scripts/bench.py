#!/usr/bin/env python3
"""Import benchmark, measured as a user meets it: the whole ``hindsight-batch import`` process, as ``time`` does.

For each corpus shape of scripts/gen_corpus.py (default, small-files, long-lines, keywords, unicode) the dry-run
import and a bare ``json.loads`` loop over the same lines (each its own process, from start to exit) are run
--rounds times, alternated, so both meet the same load on a shared machine; then the catch-up re-run (the same
import again over the unchanged corpus) and an import of an empty folder. Reported: medians with the range over
rounds (wall time, MB/s, peak RSS from wait4's rusage of each child: its largest process, the parent or one of its
worker processes), the ratio import/bare per round, and the targets:

    per shape: median >= 0.30x bare json.loads and >= 60 MB/s; catch-up re-run <= 1 s; empty folder <= 0.25 s

    .venv/bin/python scripts/bench.py [--size 100] [--rounds 3] [--shapes default,small-files,...]
                                      [--builds installed,pure,compiled] [--corpora DIR] [--json-out F] [--before DIR]
                                      [--jobs N|auto]

One table per build. --builds installed (the default) measures what a user gets: this checkout installed as the
README installs it (``pip install .``, which compiles the hot modules with mypyc) into a new venv made by --python's
interpreter (about a minute; a build that fell back to pure Python stops the benchmark). pure and compiled run this
checkout's editable .venv in place: compiled runs scripts/compile.sh first, pure scripts/compile.sh --clean, and
scripts/compile.sh --clean runs at the end whatever happens.
The import runs with HOME pointed at an empty folder and no HINDSIGHT_* variables: the default configuration, no
server reachable (the live-retained check then reports that it could not check). Python writes
and reuses its bytecode caches (PYTHONDONTWRITEBYTECODE is dropped), as an installed tool does.
--before DIR: also run the package in DIR (another checkout, e.g. ``git worktree add DIR main``, on the same
interpreter and dependencies) right before each import of this one, so both meet the same load; one table each
(pure and compiled builds only: DIR is not installed).
The empty folder row also gives CPU seconds (user + system), which a loaded machine disturbs less than wall time.
Corpora are written once under --corpora (default: a temporary folder) and reused when present.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHAPES = ("default", "small-files", "long-lines", "keywords", "unicode")

BARE = """
import json, sys
from pathlib import Path
size = records = 0
for path in sorted(Path(sys.argv[1]).rglob('*.jsonl')):
    with path.open('rb') as handle:
        for line in handle:
            size += len(line)
            if line.strip():
                try:
                    json.loads(line)
                except ValueError:
                    pass
                records += 1
print(json.dumps({"bytes": size, "records": records}))
"""


CPU_SECONDS: dict[int, float] = {}  # pid -> user + system seconds of a finished child (from os.wait4)


def run_child(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB, the child's own, from ``os.wait4``) and standard output of one process (its
    CPU seconds in ``CPU_SECONDS[-1]``)."""
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        started = time.perf_counter()
        child = subprocess.Popen(args, stdout=out_file, stderr=err_file, env=env)
        _pid, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        child.returncode = code  # reaped here: Popen must not wait for it again
        CPU_SECONDS[-1] = usage.ru_utime + usage.ru_stime
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read().decode(), err_file.read().decode(errors="replace")
    if code not in (0, 1):  # 1: some file failed; still a finished import
        sys.stderr.write(err[-2000:])
        raise SystemExit(f"{' '.join(args[:4])} exited {code}")
    return seconds, usage.ru_maxrss / 1024, out


def corpus_for(shape: str, size: int, corpora: Path) -> Path:
    folder = corpora / f"{shape}-{size}mb"
    if not (folder / ".done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([sys.executable, str(HERE / "gen_corpus.py"), str(folder), "--total-mb", str(size),
                        "--big-mb", str(max(size * 2 // 5, 1)), "--shape", shape], check=True)
        (folder / ".done").write_text("")
    return folder


def spread(values: list[float], digits: int = 1) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ok(good: bool) -> str:
    return "OK" if good else "MISSED"


Variant = tuple[str, list[str], dict[str, str]]  # label, command, environment


def bench_shape(variants: list[Variant], python: str, corpus: Path, rounds: int, work: Path,
                env: dict[str, str], flags: list[str]) -> list[dict[str, object]]:
    """Each round: the bare parse, then each variant's import (with ``flags``) and its catch-up re-run. One result
    per variant."""
    imports: dict[str, list[tuple[float, float, dict[str, object]]]] = {label: [] for label, _c, _e in variants}
    reruns: dict[str, list[float]] = {label: [] for label, _c, _e in variants}
    bares: list[float] = []
    size = 0
    for index in range(rounds):
        bare_seconds, _rss, out = run_child([python, "-c", BARE, str(corpus)], env)
        size = int(json.loads(out)["bytes"])
        bares.append(bare_seconds)
        for label, command, variant_env in variants:
            state = work / f"state-{label}-{corpus.name}-{index}"
            args = [*command, "import", str(corpus), "--state", str(state), "--json", "-q", *flags]
            seconds, rss, out = run_child(args, variant_env)
            imports[label].append((seconds, rss, json.loads(out)))
            reruns[label].append(run_child(args, variant_env)[0])
            shutil.rmtree(state, ignore_errors=True)
    return [_shape_result(corpus, size, imports[label], bares, reruns[label]) for label, _c, _e in variants]


def _shape_result(corpus: Path, size: int, imports: list[tuple[float, float, dict[str, object]]],
                  bares: list[float], reruns: list[float]) -> dict[str, object]:
    mb = size / 1e6
    rates = [mb / s for s, _r, _o in imports]
    bare_rates = [mb / s for s in bares]
    ratios = [rate / bare for rate, bare in zip(rates, bare_rates, strict=True)]
    summary = imports[-1][2]
    return {
        "shape": corpus.name, "mb": mb, "files": summary["files"], "entries": summary["entries"],
        "jobs": summary.get("jobs", 1),  # processes that planned (older versions: one)
        "import_mb_s": rates, "bare_mb_s": bare_rates, "ratio": ratios,
        "import_seconds": [s for s, _r, _o in imports], "peak_rss_mb": [r for _s, r, _o in imports],
        "rerun_seconds": reruns, "stage_seconds": summary["stage_seconds"],
    }


def table(build: str, results: list[dict[str, object]], empty: list[float], empty_cpu: list[float]) -> str:
    lines = [f"build: {build}", "",
             "| corpus | MB, files | jobs | import MB/s | bare json.loads MB/s | ratio | peak RSS MB, largest process "
             "| catch-up re-run s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        rates, ratios, reruns = r["import_mb_s"], r["ratio"], r["rerun_seconds"]
        assert isinstance(rates, list) and isinstance(ratios, list) and isinstance(reruns, list)
        peak = r["peak_rss_mb"]
        bare = r["bare_mb_s"]
        assert isinstance(peak, list) and isinstance(bare, list)
        good = statistics.median(rates) >= 60 and statistics.median(ratios) >= 0.30
        lines.append(
            f"| {r['shape']} | {r['mb']:.0f}, {r['files']} | {r['jobs']} | {spread(rates)} | {spread(bare, 0)} | "
            f"{spread(ratios, 2)} {ok(good)} | {spread(peak, 0)} | {spread(reruns, 2)} "
            f"{ok(statistics.median(reruns) <= 1.0)} |")
    lines.append(f"| empty folder | 0 | | wall {spread(empty, 3)} s {ok(statistics.median(empty) <= 0.25)}; "
                 f"CPU {spread(empty_cpu, 3)} s | | | | |")
    lines.append("")
    lines.append("stage seconds (last round): " + "; ".join(
        f"{r['shape']}: " + ", ".join(f"{k} {v}" for k, v in dict(r["stage_seconds"]).items())  # type: ignore[call-overload]
        for r in results))
    return "\n".join(lines)


def warm_bytecode(python: str, env: dict[str, str]) -> None:
    """Write the package's bytecode caches, as installing it does: no timed run pays for compiling it."""
    probe = "import os, hindsight_batch; print(os.path.dirname(hindsight_batch.__file__))"
    package = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    subprocess.run([python, "-m", "compileall", "-q", package.strip()], env=env, check=True,
                   stdout=subprocess.DEVNULL)


def install_default(python: str, venv: Path, env: dict[str, str]) -> str:
    """This checkout installed as the README installs it (``pip install .``: a wheel with the compiled modules) into
    a new venv made by the same interpreter; its python. A build that fell back to pure Python is an error here."""
    base = subprocess.run([python, "-c", "import sys; print(sys._base_executable)"], capture_output=True, text=True,
                          check=True).stdout.strip()
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    installed = str(venv / "bin" / "python")
    build_env = {k: v for k, v in env.items() if k != "HINDSIGHT_BATCH_COMPILE"}
    print(f"installing {ROOT} into {venv} (pip install ., about a minute)", flush=True)
    subprocess.run([installed, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(ROOT)],
                   check=True, env=build_env)
    if "mypyc" not in describe(installed, env):
        raise SystemExit(f"the default install fell back to pure Python: {describe(installed, env)}")
    return installed


def describe(python: str, env: dict[str, str]) -> str:
    probe = "import platform, hindsight_batch; print(platform.python_version(), hindsight_batch.build())"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100, help="MB per corpus shape")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--builds", default="installed",
                        help="installed (the default install: pip install . into a new venv, compiled), pure, "
                             "compiled (in place, scripts/compile.sh), or several: installed,pure")
    parser.add_argument("--corpora", type=Path, help="where the corpora are written (kept, reused)")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--json-out", type=Path, default=Path("bench-result.json"))
    parser.add_argument("--jobs", help="import --jobs for every import (default: the import's own default, auto)")
    parser.add_argument("--before", type=Path, help="another checkout to run alternately (its package folder's "
                                                    "parent), e.g. a worktree of main")
    args = parser.parse_args()
    python = os.path.abspath(args.python)  # not resolve(): a venv's python is a symlink out of the venv
    command = [str(Path(python).parent / "hindsight-batch")]
    work = Path(tempfile.mkdtemp(prefix="hb-bench-"))
    corpora = (args.corpora or work / "corpora").resolve()
    json_out = args.json_out.resolve()
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HINDSIGHT", "PI_")) and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["HOME"] = str(home)
    variants: list[Variant] = [("this", command, env)]
    if args.before is not None:  # first in each round: the same interpreter, the other checkout's package
        before_env = {**env, "PYTHONPATH": str(args.before.resolve())}
        variants.insert(0, ("before", command, before_env))  # PYTHONPATH comes before the editable install
    empty_dir = work / "empty"
    empty_dir.mkdir()
    shapes = [s for s in args.shapes.split(",") if s]
    paths = [corpus_for(shape, args.size, corpora) for shape in shapes]
    os.chdir(work)  # the interpreter's install, not a source tree in the current folder
    report: dict[str, object] = {}
    try:
        for build in args.builds.split(","):
            if build in ("compiled", "pure"):  # in place, or removed: a pure run after a compiled one is pure
                subprocess.run([str(ROOT / "scripts" / "compile.sh"), *([] if build == "compiled" else ["--clean"])],
                               check=True, env={**os.environ, "PY": python}, stdout=subprocess.DEVNULL)
            build_python, build_variants = python, variants
            if build == "installed":  # --before's checkout is not installed: it runs in the other builds only
                build_python = install_default(python, work / "venv-installed", env)
                build_variants = [("this", [str(Path(build_python).parent / "hindsight-batch")], env)]
            elif build not in ("pure", "compiled"):
                raise SystemExit(f"--builds: unknown build {build!r} (installed, pure or compiled)")
            for _label, _command, variant_env in build_variants:  # bytecode caches written before timing
                warm_bytecode(build_python, variant_env)
            flags = ["--jobs", args.jobs] if args.jobs else []
            per_shape = [bench_shape(build_variants, build_python, path, args.rounds, work, env, flags)
                         for path in paths]
            empty: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label, _c, _e in build_variants}
            for _ in range(max(args.rounds, 5)):
                for label, variant_command, variant_env in build_variants:
                    state = work / f"state-empty-{label}"
                    seconds = run_child([*variant_command, "import", str(empty_dir), "--state", str(state), "-q"],
                                        variant_env)[0]
                    empty[label][0].append(seconds)
                    empty[label][1].append(CPU_SECONDS[-1])
            for index, (label, _c, variant_env) in enumerate(build_variants):
                results = [shape[index] for shape in per_shape]
                title = f"{build}, {label}: {describe(build_python, variant_env)}"
                print(table(title, results, *empty[label]), "\n", flush=True)
                report[f"{build}-{label}"] = {"shapes": results, "empty_folder_seconds": empty[label][0],
                                              "empty_folder_cpu_seconds": empty[label][1]}
    finally:
        if "compiled" in args.builds:
            subprocess.run([str(ROOT / "scripts" / "compile.sh"), "--clean"], check=False,
                           env={**os.environ, "PY": python}, stdout=subprocess.DEVNULL)
        shutil.rmtree(work / "home", ignore_errors=True)
        shutil.rmtree(work / "venv-installed", ignore_errors=True)
    json_out.write_text(json.dumps(report, indent=2))
    print(f"(details in {json_out})")


if __name__ == "__main__":
    main()
