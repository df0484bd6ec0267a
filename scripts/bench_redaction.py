#!/usr/bin/env python3
"""Secret redaction speed: 10 MB adversarial lines (each must stay linear) and ordinary transcript text, then the dense
families of tests/adversarial.py through the import path (record gates, then the rules) and through the rules alone.

    .venv/bin/python scripts/bench_redaction.py [--mb 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hindsight_batch.redaction.redactor import Findings, Redactor
from tests.adversarial import DENSE_FAMILIES, adversarial_inputs, dense_family, through_import

ORDINARY = (
    "I changed src/queue.ts so the lock records its owner pid; tests pass. The config uses token budgets and "
    "the password field is validated. See https://github.com/org/repo/pull/12 and http://localhost:3000/.\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=10)
    args = parser.parse_args()
    redactor = Redactor(b"bench")
    cases = {**adversarial_inputs(args.mb), "ordinary-prose": ORDINARY * (args.mb * 1_000_000 // len(ORDINARY))}
    worst = 0.0
    print(f"{'input':18s} {'MB':>6s} {'seconds':>8s} {'MB/s':>8s} findings")
    for name, text in cases.items():
        findings = Findings()
        started = time.perf_counter()
        redactor.redact_text(text, findings)
        seconds = time.perf_counter() - started
        worst = max(worst, seconds)
        mb = len(text) / 1e6
        print(f"{name:18s} {mb:6.1f} {seconds:8.2f} {mb / seconds:8.1f} {sum(findings.counts.values())}")
    print(f"slowest: {worst:.2f} s for {args.mb} MB")
    print(f"{'dense family':18s} {'path':>6s} {'s/MB':>8s}")
    for name in DENSE_FAMILIES:
        text = dense_family(name, args.mb * 1_000_000)
        for path in ("import", "text"):
            started = time.perf_counter()
            if path == "import":
                through_import(redactor, text)
            else:
                redactor.redact_text(text, Findings())
            print(f"{name:18s} {path:>6s} {(time.perf_counter() - started) / (len(text) / 1e6):8.2f}")


if __name__ == "__main__":
    main()
