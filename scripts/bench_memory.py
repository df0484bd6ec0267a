#!/usr/bin/env python3
"""Peak memory of a dry-run import of one huge session file (target: < 250 MB RSS for 1 GB).

Builds a session of ``--size-mb`` (default 1000) whose tool results are ``--line-mb`` (default 50) MB lines between
ordinary turns, then runs ``hindsight-batch import`` on it in a child process, twice: with the default settings
(tool results not retained) and with tool-result text retained (every big line goes through projection and
redaction), and prints the child's peak RSS and throughput.

    .venv/bin/python scripts/bench_memory.py [--size-mb 1000] [--line-mb 50] [--keep]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(path: Path, size_mb: int, line_mb: int) -> int:
    target = size_mb * 1_000_000
    big_text = ("line of build output with some words 0123456789 " * 40 + "\n") * (line_mb * 1_000_000 // 2000)
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"type": "session", "version": 3, "id": "bench-memory", "timestamp":
                              "2026-05-01T10:00:00.000Z", "cwd": "/bench/project"}) + "\n")
        n = 0
        parent = None
        while out.tell() < target:
            for role, content in (
                ("user", [{"type": "text", "text": f"Run the build, step {n}."}]),
                ("assistant", [{"type": "text", "text": "Running it."},
                               {"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": {"command": "make"}}]),
                ("toolResult", [{"type": "text", "text": big_text}]),
                ("assistant", [{"type": "text", "text": f"Build {n} finished; the module compiles."}]),
            ):
                n += 1
                message = {"role": role, "content": content, "timestamp": 1777629600000 + n}
                if role == "toolResult":
                    message.update({"toolCallId": f"c{n - 2}", "toolName": "bash", "isError": False})
                entry = {"type": "message", "id": f"{n:08x}", "parentId": parent,
                         "timestamp": "2026-05-01T10:00:00.000Z", "message": message}
                out.write(json.dumps(entry) + "\n")
                parent = f"{n:08x}"
        return out.tell()


def run(path: Path, work: Path, config: dict[str, object] | None) -> dict[str, float]:
    args = [sys.executable, "-m", "hindsight_batch", "import", str(path), "--manifest", str(work / "m.jsonl"),
            "--state", str(work / f"state-{time.monotonic_ns()}"), "--json", "-q"]
    if config is not None:
        config_path = work / "config.json"
        config_path.write_text(json.dumps(config))
        args += ["--config", str(config_path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak_kb <= before:
        print("warning: peak RSS not above an earlier child's; run each case in a fresh process", file=sys.stderr)
    summary = json.loads(done.stdout)
    return {"peak_rss_mb": peak_kb / 1024, "seconds": seconds, "mb_per_s": path.stat().st_size / 1e6 / seconds,
            "messages_kept": summary["messages_kept"], "chunks": summary["chunks"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1000)
    parser.add_argument("--line-mb", type=int, default=50)
    parser.add_argument("--case", choices=["default", "tool-text"], default=None,
                        help="run one case only (each case needs its own process for a clean peak)")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hb-mem-"))
    path = work / "huge.jsonl"
    size = build(path, args.size_mb, args.line_mb)
    print(f"built {path} ({size / 1e6:.0f} MB, tool-output lines of {args.line_mb} MB)")
    cases = {"default": None, "tool-text": {"retainContent": {"toolResult": ["text"]}}}
    for name, config in cases.items():
        if args.case not in (None, name):
            continue
        result = run(path, work, config)
        verdict = "OK" if result["peak_rss_mb"] < 250 else "OVER 250 MB"
        print(f"{name:10s} peak RSS {result['peak_rss_mb']:7.1f} MB  {result['seconds']:6.1f} s  "
              f"{result['mb_per_s']:6.1f} MB/s  kept {result['messages_kept']}  chunks {result['chunks']}  {verdict}")
        if args.case is None and name == "default":
            # RUSAGE_CHILDREN keeps the maximum over all children: measure the next case in a fresh process.
            subprocess.run([sys.executable, __file__, "--size-mb", str(args.size_mb), "--line-mb",
                            str(args.line_mb), "--case", "tool-text"], check=True)
            break
    if not args.keep:
        path.unlink()


if __name__ == "__main__":
    main()
