#!/usr/bin/env python3
"""Peak memory of a dry-run import of one huge session file (target: < 250 MB RSS for 1 GB).

Builds a session of ``--size-mb`` (default 1000) whose tool results are ``--line-mb`` (default 50) MB lines between
ordinary turns, then runs ``hindsight-batch import`` on it in a child process, twice: with the default settings
(tool results not retained) and with tool-result text retained (every big line goes through projection and
redaction), and prints the child's peak RSS and throughput.

``--shapes`` measures instead one session holding a single pathological line of ``--shape-mb`` (default 64) MB
between ordinary turns, per shape: nested ``[`` arrays, tiny strings, one huge number literal, and tiny values in a
line just under the 8 MB big-line size (the dense-line path). Target: every shape ≤ 250 MB, no crash.

    .venv/bin/python scripts/bench_memory.py [--size-mb 1000] [--line-mb 50] [--keep]
    .venv/bin/python scripts/bench_memory.py --shapes [--shape-mb 64]
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


SHAPES = ("nested-arrays", "tiny-strings", "huge-number", "tiny-values-under-8mb", "tiny-strings-retained")


def build_shape(path: Path, shape: str, line_mb: int) -> int:
    """A short session with one pathological line of ``line_mb`` MB (a tool result's content) in the middle.
    Written in pieces: this process forks the measured one, and a child's peak RSS starts at its parent's."""
    size = line_mb * 1_000_000 if shape != "tiny-values-under-8mb" else 8_000_000 - 200
    unit, opening, closing = {
        "nested-arrays": (b"[", b"", b""),
        "huge-number": (b"9", b"", b""),
        "tiny-values-under-8mb": (b"[],", b"[", b"[]]"),
    }.get(shape, (b'{"type":"text","text":"a"},', b"[", b'{"type":"text","text":"a"}]'))
    head = {"type": "session", "version": 3, "id": "bench-shape", "timestamp": "2026-05-01T10:00:00.000Z",
            "cwd": "/bench/project"}
    parent = None
    with path.open("wb") as out:
        out.write(json.dumps(head).encode() + b"\n")
        for n, role in enumerate(("user", "assistant", "toolResult", "assistant")):
            entry_id = f"{n:08x}"
            prefix = (f'{{"type":"message","id":"{entry_id}","parentId":{json.dumps(parent)},'
                      f'"timestamp":"2026-05-01T10:00:00.000Z","message":{{"role":"{role}",')
            if role == "toolResult":
                out.write(prefix.encode() + b'"toolCallId":"c1","toolName":"bash","content":' + opening)
                count = (size - len(opening) - len(closing)) // len(unit)
                while count > 0:  # about 1 MB at a time
                    step = min(count, 1_000_000 // len(unit))
                    out.write(unit * step)
                    count -= step
                out.write(closing + b"}}\n")
            else:
                text = json.dumps([{"type": "text", "text": f"{role} text {n}"}])
                out.write(f'{prefix}"content":{text}}}}}\n'.encode())
            parent = entry_id
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
    parser.add_argument("--shapes", action="store_true", help="measure the pathological one-line shapes")
    parser.add_argument("--shape", choices=SHAPES, help="measure one shape (each needs its own process)")
    parser.add_argument("--shape-mb", type=int, default=64)
    args = parser.parse_args()
    if args.shapes:
        for shape in SHAPES:  # each in a fresh process: RUSAGE_CHILDREN keeps the maximum over all children
            subprocess.run([sys.executable, __file__, "--shape", shape, "--shape-mb", str(args.shape_mb)], check=True)
        return
    if args.shape:
        work = Path(tempfile.mkdtemp(prefix="hb-mem-"))
        path = work / "shape.jsonl"
        size = build_shape(path, args.shape, args.shape_mb)
        config = {"retainContent": {"toolResult": ["text"]}} if args.shape.endswith("-retained") else None
        result = run(path, work, config)
        verdict = "OK" if result["peak_rss_mb"] <= 250 else "OVER 250 MB"
        print(f"{args.shape:22s} line {size / 1e6:5.1f} MB  peak RSS {result['peak_rss_mb']:6.1f} MB  "
              f"{result['seconds']:6.1f} s  kept {result['messages_kept']}  {verdict}")
        path.unlink()
        return
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
