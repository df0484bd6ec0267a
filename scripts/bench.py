#!/usr/bin/env python3
"""Import benchmark, measured as a user meets it: the whole ``hindsight-batch import`` process, as ``time`` does.

For each corpus shape of scripts/gen_corpus.py (default, small-files, long-lines, keywords) the dry-run import and a
bare ``json.loads`` loop over the same lines (each its own process, from start to exit) are run --rounds times,
alternated, so both meet the same load on a shared machine; then the catch-up re-run (the same import again over
the unchanged corpus) and an import of an empty folder. Reported: medians with the range over rounds (wall time,
MB/s, peak RSS from wait4's rusage of each child), the ratio import/bare per round, and the targets:

    per shape: median >= 0.30x bare json.loads and >= 60 MB/s; catch-up re-run <= 1 s; empty folder <= 0.25 s

    .venv/bin/python scripts/bench.py [--size 100] [--rounds 3] [--shapes default,small-files,...]
                                      [--builds pure,compiled] [--corpora DIR] [--json-out F]

--builds compiled runs scripts/compile.sh first (one table per build) and scripts/compile.sh --clean at the end,
whatever happens. The import runs with HOME pointed at an empty folder and no HINDSIGHT_* variables: the default
configuration, no server reachable (the live-retained check then reports that it could not check).
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
SHAPES = ("default", "small-files", "long-lines", "keywords")

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


def run_child(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB, the child's own, from ``os.wait4``) and standard output of one process."""
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        started = time.perf_counter()
        child = subprocess.Popen(args, stdout=out_file, stderr=err_file, env=env)
        _pid, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        child.returncode = code  # reaped here: Popen must not wait for it again
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


def bench_shape(command: list[str], python: str, corpus: Path, rounds: int, work: Path,
                env: dict[str, str]) -> dict[str, object]:
    imports: list[tuple[float, float, dict[str, object]]] = []
    bares: list[float] = []
    reruns: list[float] = []
    size = 0
    for index in range(rounds):
        bare_seconds, _rss, out = run_child([python, "-c", BARE, str(corpus)], env)
        size = int(json.loads(out)["bytes"])
        bares.append(bare_seconds)
        state = work / f"state-{corpus.name}-{index}"
        seconds, rss, out = run_child([*command, "import", str(corpus), "--state", str(state), "--json", "-q"], env)
        imports.append((seconds, rss, json.loads(out)))
        again, _rss, _out = run_child([*command, "import", str(corpus), "--state", str(state), "--json", "-q"], env)
        reruns.append(again)
        shutil.rmtree(state, ignore_errors=True)
    mb = size / 1e6
    rates = [mb / s for s, _r, _o in imports]
    bare_rates = [mb / s for s in bares]
    ratios = [rate / bare for rate, bare in zip(rates, bare_rates, strict=True)]
    summary = imports[-1][2]
    return {
        "shape": corpus.name, "mb": mb, "files": summary["files"], "entries": summary["entries"],
        "import_mb_s": rates, "bare_mb_s": bare_rates, "ratio": ratios,
        "import_seconds": [s for s, _r, _o in imports], "peak_rss_mb": [r for _s, r, _o in imports],
        "rerun_seconds": reruns, "stage_seconds": summary["stage_seconds"],
    }


def table(build: str, results: list[dict[str, object]], empty: list[float]) -> str:
    lines = [f"build: {build}", "",
             "| corpus | MB, files | import MB/s | bare json.loads MB/s | ratio | peak RSS MB | catch-up re-run s |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        rates, ratios, reruns = r["import_mb_s"], r["ratio"], r["rerun_seconds"]
        assert isinstance(rates, list) and isinstance(ratios, list) and isinstance(reruns, list)
        peak = r["peak_rss_mb"]
        bare = r["bare_mb_s"]
        assert isinstance(peak, list) and isinstance(bare, list)
        good = statistics.median(rates) >= 60 and statistics.median(ratios) >= 0.30
        lines.append(
            f"| {r['shape']} | {float(r['mb']):.0f}, {r['files']} | {spread(rates)} | {spread(bare, 0)} | "
            f"{spread(ratios, 2)} {ok(good)} | {spread(peak, 0)} | {spread(reruns, 2)} "
            f"{ok(statistics.median(reruns) <= 1.0)} |")
    lines.append(f"| empty folder | 0 | wall {spread(empty, 3)} s {ok(statistics.median(empty) <= 0.25)} | | | | |")
    lines.append("")
    lines.append("stage seconds (last round): " + "; ".join(
        f"{r['shape']}: " + ", ".join(f"{k} {v}" for k, v in dict(r["stage_seconds"]).items())  # type: ignore[call-overload]
        for r in results))
    return "\n".join(lines)


def describe(python: str, env: dict[str, str]) -> str:
    probe = "import platform, hindsight_batch; print(platform.python_version(), hindsight_batch.build())"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100, help="MB per corpus shape")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--builds", default="pure", help="pure, compiled, or both: pure,compiled")
    parser.add_argument("--corpora", type=Path, help="where the corpora are written (kept, reused)")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--json-out", type=Path, default=Path("bench-result.json"))
    args = parser.parse_args()
    python = os.path.abspath(args.python)  # not resolve(): a venv's python is a symlink out of the venv
    command = [str(Path(python).parent / "hindsight-batch")]
    work = Path(tempfile.mkdtemp(prefix="hb-bench-"))
    corpora = (args.corpora or work / "corpora").resolve()
    json_out = args.json_out.resolve()
    home = work / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT", "PI_"))}
    env["HOME"] = str(home)
    empty_dir = work / "empty"
    empty_dir.mkdir()
    shapes = [s for s in args.shapes.split(",") if s]
    paths = [corpus_for(shape, args.size, corpora) for shape in shapes]
    os.chdir(work)  # the interpreter's install, not a source tree in the current folder
    report: dict[str, object] = {}
    try:
        for build in args.builds.split(","):
            if build == "compiled":
                subprocess.run([str(ROOT / "scripts" / "compile.sh")], check=True, env={**os.environ, "PY": python})
            results = [bench_shape(command, python, path, args.rounds, work, env) for path in paths]
            empty = [run_child([*command, "import", str(empty_dir), "--state", str(work / "state-empty"), "-q"],
                               env)[0] for _ in range(max(args.rounds, 3))]
            print(table(f"{build}: {describe(python, env)}", results, empty), "\n", flush=True)
            report[build] = {"shapes": results, "empty_folder_seconds": empty}
    finally:
        if "compiled" in args.builds:
            subprocess.run([str(ROOT / "scripts" / "compile.sh"), "--clean"], check=False,
                           env={**os.environ, "PY": python}, stdout=subprocess.DEVNULL)
        shutil.rmtree(work / "home", ignore_errors=True)
    json_out.write_text(json.dumps(report, indent=2))
    print(f"(details in {json_out})")


if __name__ == "__main__":
    main()
