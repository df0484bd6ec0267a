#!/usr/bin/env python3
"""Print the routing confusion table for the evaluation fixtures (tests/fixtures/routing/cases.json).

Rows are the expected route, columns the route the default strategy chose (router mode, with both banks set).

    .venv/bin/python scripts/routing_confusion.py [--details]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from hindsight_batch.config import Settings
from hindsight_batch.routing import route_text

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "routing" / "cases.json"
ROUTES = ("project", "global", "both", "skip")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--details", action="store_true", help="one line per case")
    args = parser.parse_args()
    cases = json.loads(FIXTURES.read_text())["cases"]
    table: Counter[tuple[str, str]] = Counter()
    per_category: dict[str, list[bool]] = {}
    for case in cases:
        settings = Settings.model_validate({
            "userRetain": {"mode": "router"},
            "banks": {"project": {"bankId": "proj-bank"}, "user": {"bankId": "user-bank", "enabled": True}},
            "redaction": {"policy": case.get("policy", "redact")},
        })
        decision, _ = route_text(settings, case["content"], context=case.get("context"))
        table[(case["route"], decision.route)] += 1
        ok = decision.route == case["route"] and decision.confidence >= case["minConfidence"]
        per_category.setdefault(case["category"], []).append(ok)
        if args.details:
            mark = "ok " if ok else "BAD"
            print(f"{mark} {case['id']:10s} expected {case['route']:7s} got {decision.route:7s} "
                  f"{decision.confidence:.2f} {', '.join(decision.matched_signals)}")
    corner = "expected / got"
    print(f"\n{corner:16s}" + "".join(f"{r:>9s}" for r in ROUTES) + f"{'total':>9s}")
    for expected in ROUTES:
        row = [table[(expected, got)] for got in ROUTES]
        print(f"{expected:16s}" + "".join(f"{n:9d}" for n in row) + f"{sum(row):9d}")
    correct = sum(table[(r, r)] for r in ROUTES)
    print(f"\naccuracy {correct}/{len(cases)} = {correct / len(cases):.0%}")
    for category, results in sorted(per_category.items()):
        print(f"  {category:45s} {sum(results)}/{len(results)}")


if __name__ == "__main__":
    main()
