"""Apply the secret rules to text and to projected records.

A secret is replaced in the content by ``[REDACTED:<rule>]``. What is reported (manifest, logs) is the rule id,
a count and a short fingerprint: an HMAC of the secret under a key that never leaves this machine, so the same
secret can be recognised across runs without its value, or a guessable hash of it, being written anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hindsight_batch.redaction.rules import RULES, SECRET_KEY_NAME, Rule, looks_secret, private_url_rule

_PEM_BEGIN = "-----BEGIN "
_PEM_END = "-----END "
_PEM_LABEL = re.compile(r"-----BEGIN ([A-Z0-9 ]{0,40}+)-----")
_MAX_FINGERPRINTS = 50


def marker(rule_id: str) -> str:
    return f"[REDACTED:{rule_id}]"


@dataclass
class Findings:
    """What a redaction pass found: counts per rule and distinct fingerprints (never values)."""

    counts: Counter[str] = field(default_factory=Counter)
    fingerprints: set[str] = field(default_factory=set)

    def add(self, other: Findings) -> None:
        self.counts.update(other.counts)
        if len(self.fingerprints) < _MAX_FINGERPRINTS:
            self.fingerprints.update(sorted(other.fingerprints)[: _MAX_FINGERPRINTS - len(self.fingerprints)])

    def __bool__(self) -> bool:
        return bool(self.counts)


class Redactor:
    def __init__(self, key: bytes | None = None, private_hosts: tuple[str, ...] = ()) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self._rules: tuple[Rule, ...] = (*RULES, private_url_rule(private_hosts))
        self._literals = tuple(sorted({lit for rule in self._rules for lit in rule.literals}))

    def fingerprint(self, rule_id: str, value: str) -> str:
        digest = hmac.new(self._key, value.encode("utf-8", "replace"), hashlib.sha256).hexdigest()
        return f"{rule_id}:{digest[:10]}"

    def redact_text(self, text: str, findings: Findings) -> str:
        if len(text) < 8:
            return text
        if _PEM_BEGIN in text:
            text = self._redact_pem(text, findings)
        lowered = text.lower()
        present = {lit for lit in self._literals if lit in lowered}  # memmem-speed, one search per literal
        if not present:
            return text  # the common case: no rule's literal anywhere in the text
        for rule in self._rules:
            if present.isdisjoint(rule.literals):
                continue
            pieces: list[str] = []
            last = 0
            for match in self._matches(rule, text, lowered):
                pieces.append(text[last : match.start()])
                pieces.append(self._replace(match, rule, findings))
                last = match.end()
            if pieces:
                pieces.append(text[last:])
                text = "".join(pieces)
                lowered = text.lower()
        return text

    @staticmethod
    def _matches(rule: Rule, text: str, lowered: str) -> Iterator[re.Match[str]]:
        if not rule.anchors:
            yield from rule.pattern.finditer(text)
            return
        starts: set[int] = set()
        for anchor in rule.anchors:
            pos = lowered.find(anchor)
            while pos != -1:
                starts.add(pos)
                pos = lowered.find(anchor, pos + 1)
        covered = 0
        for pos in sorted(starts):
            if pos < covered:
                continue
            match = rule.pattern.match(text, pos)
            if match is not None:
                covered = match.end()
                yield match

    def _replace(self, match: re.Match[str], rule: Rule, findings: Findings) -> str:
        value = match.group(rule.group)
        if rule.accept is not None and not rule.accept(value):
            return match.group(0)
        findings.counts[rule.id] += 1
        if len(findings.fingerprints) < _MAX_FINGERPRINTS:
            findings.fingerprints.add(self.fingerprint(rule.id, value))
        if rule.group == 0:
            return marker(rule.id)
        start, end = match.span(rule.group)
        whole_start = match.start(0)
        whole = match.group(0)
        return whole[: start - whole_start] + marker(rule.id) + whole[end - whole_start :]

    def _redact_pem(self, text: str, findings: Findings) -> str:
        """Private-key blocks, found with ``str.find``: linear however many BEGIN lines an input repeats."""
        out: list[str] = []
        pos = 0
        while True:
            begin = text.find(_PEM_BEGIN, pos)
            if begin == -1:
                break
            label = _PEM_LABEL.match(text, begin)
            if label is None or "PRIVATE KEY" not in label.group(1):
                out.append(text[pos : begin + len(_PEM_BEGIN)])
                pos = begin + len(_PEM_BEGIN)
                continue
            end = text.find(_PEM_END, label.end())
            if end == -1:
                stop = len(text)  # an unterminated key block: everything after it may be key material
            else:
                close = text.find("-----", end + len(_PEM_END))
                stop = len(text) if close == -1 else close + 5
            findings.counts["private-key"] += 1
            if len(findings.fingerprints) < _MAX_FINGERPRINTS:
                findings.fingerprints.add(self.fingerprint("private-key", text[label.end() : stop]))
            out.append(text[pos:begin])
            out.append(marker("private-key"))
            pos = stop
        out.append(text[pos:])
        return "".join(out)

    def redact_value(self, value: Any, findings: Findings) -> Any:
        """Redact every string inside ``value``. Dict keys stay, but a string under a secret-sounding key
        (``{"password": "hunter2"}`` in tool arguments) is itself treated as a secret."""
        if isinstance(value, str):
            return self.redact_text(value, findings)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                if isinstance(item, str) and SECRET_KEY_NAME.search(str(key)) and looks_secret(item):
                    findings.counts["secret-assignment"] += 1
                    if len(findings.fingerprints) < _MAX_FINGERPRINTS:
                        findings.fingerprints.add(self.fingerprint("secret-assignment", item))
                    out[key] = marker("secret-assignment")
                else:
                    out[key] = self.redact_value(item, findings)
            return out
        if isinstance(value, list):
            return [self.redact_value(item, findings) for item in value]
        return value
