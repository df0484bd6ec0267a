#!/usr/bin/env python3
"""Issue 37's timing campaign: every family of tests/adversarial.py's ``campaign_families`` (and the rules' own
positive examples, mutated), at 1x and 8x a size, as plain text and as a session record's string (through the
record gates, as an import sends it). CPU seconds, best of three, so other processes' load counts in neither.
Prints s/MB at both sizes and the ratio; a line is flagged when it is over 1 s/MB or the ratio over 12.

    .venv/bin/python scripts/redaction_campaign.py [--size 1000000] [--match REGEX] [--paths text,import]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hindsight_batch.redaction.redactor import Findings, Redactor
from tests.adversarial import campaign_families, mutated_samples, through_import
from tests.fixtures.secrets.generate import samples


def cpu_seconds(run: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run(text)
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000, help="characters of the 1x text")
    parser.add_argument("--match", default="", help="only the families whose name this regex finds")
    parser.add_argument("--paths", default="text,import")
    parser.add_argument("--factor", type=int, default=8)
    args = parser.parse_args()
    redactor = Redactor(b"campaign")
    literals = {lit for rule in redactor._rules for lit in rule.literals}  # (what the rules look for)
    families = campaign_families(literals)
    positives = [sample.text for sample in samples()]
    families["mutated-positives"] = lambda size: mutated_samples(positives, size)
    runs: dict[str, Callable[[str], object]] = {
        "text": lambda text: redactor.redact_text(text, Findings()),
        "import": lambda text: through_import(redactor, text),
    }
    pattern = re.compile(args.match)
    print(f"{'family':44s} {'path':>6s} {'s/MB 1x':>8s} {'s/MB 8x':>8s} {'ratio':>6s}", flush=True)
    for name, make in families.items():
        if not pattern.search(name):
            continue
        small, large = make(args.size), make(args.size * args.factor)
        for path in args.paths.split(","):
            run = runs[path]
            run(small)  # caches warm
            one = max(cpu_seconds(run, small, 3), 1e-4)
            many = cpu_seconds(run, large, 1)
            if many / one > 12 or many / (len(large) / 1e6) > 1:
                many = min(many, cpu_seconds(run, large, 2))  # an outlier: measured again
            per_one, per_many = one / (len(small) / 1e6), many / (len(large) / 1e6)
            flag = " <<" if max(per_one, per_many) > 1 or many / one > 12 else ""
            print(f"{name:44s} {path:>6s} {per_one:8.3f} {per_many:8.3f} {many / one:6.1f}{flag}", flush=True)


if __name__ == "__main__":
    main()
