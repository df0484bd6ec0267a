#!/usr/bin/env python3
"""How well the secret redactor (S3) does, against detect-secrets run in the same process as the baseline.

    .venv/bin/python scripts/eval_redaction.py [--seed 15] [--per-context 5] [--mb 1] [--skip-speed]
    .venv/bin/python scripts/eval_redaction.py --write-negatives     # re-harvest tests/fixtures/secrets/negatives.txt

Prints, per category of the labelled set (tests/fixtures/secrets/generate.py: fake, format-valid values made from
a seed, in every context they are pasted in):

* recall: the share of samples whose every secret is gone (no 12 characters of it in a row survive) for this
  tool; for detect-secrets, the share whose every secret it reported (default plugins and filters, each sample
  given a file name that fits its context: ``.env``, ``config.json``, ``deploy.sh``, ``app.py``…);
* precision: detections on the samples over detections plus findings in the same samples with their secrets
  blanked out (what a tool flags in the surrounding text);

then the negatives (real session lines and code that hold no secret), false redactions per MB over the real
sessions (``samples/real`` and ``../shared/samples-real/pi``, every string of every entry, whatever the role),
and the worst time per MB on adversarial near-misses of every rule.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hindsight_batch.base import jsoncodec  # noqa: E402
from hindsight_batch.redaction.redactor import Findings, Redactor  # noqa: E402
from hindsight_batch.redaction.rules import RULES  # noqa: E402
from tests.adversarial import adversarial_inputs, near_misses  # noqa: E402
from tests.fixtures.secrets.generate import NEGATIVES, Sample, negatives, samples, survives  # noqa: E402

REAL = [ROOT / "samples" / "real", ROOT.parent / "shared" / "samples-real" / "pi"]
FILENAMES = {"env": ".env", "json": "config.json", "yaml": "config.yaml", "shell": "deploy.sh", "code": "app.py",
             "header": "request.sh", "url": "notes.txt", "sentence": "notes.txt", "csv": "credentials.csv",
             "ini": "credentials", "slash": "notes.txt", "sentence2": "notes.txt"}


class DetectSecrets:
    """detect-secrets 1.x in process: default plugins and filters, as ``detect-secrets scan`` runs them."""

    def __init__(self) -> None:
        from detect_secrets.core import scan
        from detect_secrets.settings import default_settings

        self._scan = scan
        self._settings = default_settings()
        self._settings.__enter__()
        scan.get_settings().disable_filters("detect_secrets.filters.common.is_invalid_file")
        scan.get_filters.cache_clear()

    def findings(self, text: str, filename: str) -> list[tuple[str, str]]:
        lines = list(enumerate(text.splitlines(), start=1))
        return [(s.type, s.secret_value or "") for s in self._scan._process_line_based_plugins(lines, filename)]


KEY_BLOCKS = ("pem-private-key", "gcp-service-account")


def _ds_found(sample: Sample, secret: str, found: list[tuple[str, str]]) -> bool:
    if sample.category in KEY_BLOCKS:  # it reports the BEGIN line of a key block: credit for the whole block
        return any(t == "Private Key" for t, _ in found)
    return any(secret in value or (len(value) >= 8 and value in secret) for _t, value in found)


def _blank(sample: Sample) -> str:
    """The sample with its secrets taken out (a key block's lines, and its label): what is left is the text around
    them, where any finding is a false one."""
    text = sample.text
    for secret in sample.secrets:
        text = text.replace(secret, "")
    return text.replace("PRIVATE KEY", "PUBLIC KEY") if sample.category in KEY_BLOCKS else text


def through_records(redactor: Redactor, text: str) -> list[tuple[str, str]]:
    """``text`` as an import meets it: as a user message, and as a tool call's arguments when it is a JSON
    object. For each, (what is kept past the record gates an import runs first -- Redactor.hints_each_utf8,
    then Redactor.needs_redaction -- and redact_value where they let it through; what redact_value alone keeps)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    try:
        arguments = json.loads(text)
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        messages.append({"role": "assistant", "content": [{"type": "toolCall", "name": "bash",
                                                             "arguments": arguments}]})
    out = []
    for message in messages:
        data = jsoncodec.dumps({"type": "message", "message": message})
        hints = redactor.hints_each_utf8([data])[0]
        alone = redactor.redact_value(message, Findings(), hints) if hints else message
        gated = alone if redactor.needs_redaction(data, hints) else message
        out.append((jsoncodec.dumps(gated).decode(), jsoncodec.dumps(alone).decode()))
    return out


def _survives_any(sample: Sample, text: str) -> bool:
    return any(survives(secret, text) or survives(json.dumps(secret)[1:-1], text) for secret in sample.secrets)


def gate_report(redactor: Redactor, items: list[Sample]) -> None:
    """Secrets the record gates would lose (must be 0), and those redact_value itself misses in a tool call's
    arguments (a structure: a value is judged without the text around it)."""
    lost: list[str] = []
    structure: dict[str, int] = defaultdict(int)
    forms = 0
    for sample in items:
        for gated, alone in through_records(redactor, sample.text):
            forms += 1
            if _survives_any(sample, gated) and not _survives_any(sample, alone):
                lost.append(f"{sample.category}/{sample.context}")
            elif _survives_any(sample, alone):
                structure[sample.category] += 1
    print(f"record gates (import path): {forms} records, secrets lost by the gates: {len(lost)} {lost[:5]}")
    if structure:
        print("   missed by redact_value in tool-call arguments (with or without the gates): "
              + ", ".join(f"{k} {v}" for k, v in sorted(structure.items())))


def evaluate_samples(redactor: Redactor, ds: DetectSecrets | None, items: list[Sample]) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    for sample in items:
        row = table[sample.category]
        row["n"] += 1
        out = redactor.redact_text(sample.text, Findings())
        if not any(survives(secret, out) for secret in sample.secrets):
            row["ours_tp"] += 1
        else:
            row.setdefault("missed", []).append(sample.context)
        blank = Findings()
        redactor.redact_text(_blank(sample), blank)
        row["ours_fp"] += sum(blank.counts.values())
        if ds is not None:
            name = FILENAMES.get(sample.context, "notes.txt")
            found = ds.findings(sample.text, name)
            if all(_ds_found(sample, secret, found) for secret in sample.secrets):
                row["ds_tp"] += 1
            row["ds_fp"] += len(ds.findings(_blank(sample), name))
    return table


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def print_table(table: dict[str, dict[str, Any]], with_ds: bool) -> tuple[float, float]:
    print(f"{'category':24s} {'n':>4s} {'recall':>7s} {'prec':>6s}" + (f" {'ds rec':>7s} {'ds prec':>7s}" if with_ds
                                                                         else ""))
    tp = ds_tp = n = 0
    for category in sorted(table, key=lambda c: (_ratio(table[c]["ours_tp"], table[c]["n"]), c)):
        row = table[category]
        n += row["n"]
        tp += row["ours_tp"]
        ds_tp += row["ds_tp"]
        line = (f"{category:24s} {row['n']:4d} {_ratio(row['ours_tp'], row['n']):7.3f} "
                f"{_ratio(row['ours_tp'], row['ours_tp'] + row['ours_fp']):6.3f}")
        if with_ds:
            line += (f" {_ratio(row['ds_tp'], row['n']):7.3f} "
                     f"{_ratio(row['ds_tp'], row['ds_tp'] + row['ds_fp']):7.3f}")
        if row.get("missed"):
            line += f"   missed in: {', '.join(sorted(set(row['missed'])))}"
        print(line)
    print(f"{'OVERALL':24s} {n:4d} {tp / n:7.3f}" + (f" {'':6s} {ds_tp / n:7.3f}" if with_ds else ""))
    return tp / n, ds_tp / n


def real_strings() -> Iterator[tuple[Path, list[Any]]]:
    """Every distinct real session file, with its parsed entries."""
    seen: set[str] = set()
    for root in REAL:
        for path in sorted(root.glob("*.jsonl")):
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            entries = []
            for line in data.split(b"\n"):
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    continue
            yield path, entries


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def false_per_mb(redactor: Redactor, ds: DetectSecrets | None) -> None:
    total = 0
    ours = theirs = 0
    for path, entries in real_strings():
        total += path.stat().st_size
        for entry in entries:
            findings = Findings()
            redactor.redact_value(entry, findings)
            ours += sum(findings.counts.values())
            if ds is not None:
                for text in _strings(entry):
                    if len(text) < 200_000:  # its per-line plugins are slow on megabyte tool outputs
                        theirs += len(ds.findings(text, "session.txt"))
    mb = total / 1e6
    line = f"real sessions: {mb:.1f} MB (distinct files), false redactions: {ours} = {ours / mb:.2f} per MB"
    if ds is not None:
        line += f"; detect-secrets findings: {theirs} = {theirs / mb:.2f} per MB"
    print(line)


def negative_report(redactor: Redactor, ds: DetectSecrets | None) -> None:
    texts = negatives()
    ours = [t for t in texts if redactor.redact_text(t, Findings()) != t]
    line = f"negatives: {len(texts)}, flagged by this tool: {len(ours)}"
    if ds is not None:
        line += f", by detect-secrets: {sum(1 for t in texts if ds.findings(t, 'notes.txt'))}"
    print(line)
    for text in ours[:10]:
        print("   flagged:", text[:160].replace("\n", "\\n"))


def speed(redactor: Redactor, megabytes: int) -> None:
    literals = {rule.id: rule.literals or ("akia",) for rule in RULES}
    cases = {**adversarial_inputs(megabytes), **near_misses(megabytes * 1_000_000, literals)}
    worst: dict[str, float] = {}
    for name, text in cases.items():
        started = time.perf_counter()
        redactor.redact_text(text, Findings())
        per_mb = (time.perf_counter() - started) / (len(text) / 1e6)
        rule = name.split("/", 1)[0]
        worst[rule] = max(worst.get(rule, 0.0), per_mb)
    ranked = sorted(worst.items(), key=lambda kv: -kv[1])
    print("worst s/MB per rule (adversarial near-misses): "
          + ", ".join(f"{rule} {seconds:.2f}" for rule, seconds in ranked[:8]) + ", …")
    print(f"worst overall: {ranked[0][1]:.2f} s/MB ({ranked[0][0]}) over {len(cases)} inputs of {megabytes} MB")


_HARD = re.compile(
    r"token|secret|passw|pwd|api.?key|auth|bearer|credential|private|[0-9a-f]{40}|sha256|[0-9a-f]{8}-[0-9a-f]{4}-"
    r"|base64|[A-Za-z0-9_]{28}",
    re.I,
)


def write_negatives() -> None:
    """Harvest the negatives: lines of the real sessions and of installed library code that look like what a
    rule or the keyword detector looks at (keywords, hashes, UUIDs, image data, long words)."""
    picked: dict[str, None] = {}
    for _path, entries in real_strings():
        for entry in entries:
            for text in _strings(entry):
                if text.startswith(("iVBOR", "/9j/")) and len(text) > 200:
                    picked.setdefault("data:image/png;base64," + text[:600], None)  # image data, cut
                    continue
                for line in text.splitlines():
                    if 12 <= len(line) <= 400 and _HARD.search(line):
                        picked.setdefault(line.strip(), None)
    session_lines = list(picked)[:700]
    code: dict[str, None] = {}
    site = Path(json.__file__).parent.parent
    for package in ("http", "urllib", "email", "ssl.py", "hmac.py", "secrets.py", "getpass.py", "netrc.py",
                    "smtplib.py", "imaplib.py", "ftplib.py", "xmlrpc", "hashlib.py", "uuid.py", "base64.py"):
        for path in sorted((site / package).rglob("*.py") if (site / package).is_dir() else [site / package]):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if 12 <= len(line.strip()) <= 200 and _HARD.search(line):
                    code.setdefault(line.strip(), None)
    rows = session_lines + list(code)[:400]
    NEGATIVES.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} negatives ({len(session_lines)} from sessions, {len(rows) - len(session_lines)} code)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--per-context", type=int, default=5, help="values per category and context")
    parser.add_argument("--mb", type=int, default=1, help="size of each adversarial input")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--no-baseline", action="store_true", help="without detect-secrets")
    parser.add_argument("--write-negatives", action="store_true")
    args = parser.parse_args()
    if args.write_negatives:
        write_negatives()
        return
    redactor = Redactor(b"eval")
    ds = None if args.no_baseline else DetectSecrets()
    items = samples(args.seed, args.per_context)
    table = evaluate_samples(redactor, ds, items)
    print(f"labelled set: {len(table)} categories, {len(items)} samples, "
          f"{len({(s.category, s.context) for s in items})} category x context pairs (seed {args.seed})")
    print_table(table, ds is not None)
    gate_report(redactor, items)
    negative_report(redactor, ds)
    false_per_mb(redactor, ds)
    if not args.skip_speed:
        speed(redactor, args.mb)


if __name__ == "__main__":
    main()
