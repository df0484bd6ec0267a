"""Apply the secret rules to text and to projected records.

A secret is replaced in the content by ``[REDACTED:<rule>]``. What is reported (manifest, logs) is the rule id,
a count and a short fingerprint: an HMAC of the secret under a key that never leaves this machine, so the same
secret can be recognised across runs without its value, or a guessable hash of it, being written anywhere.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import hmac
import itertools
import re
import secrets
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, AnyStr

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.textscan import anchored_matches, lower
from hindsight_batch.redaction.rules import (
    _KEYWORDS,
    _SUFFIX_NAMES,
    _WHOLE_PART_NAMES,
    NAME_VALUE_FIELDS,
    RULES,
    SECRET_KEY_NAME,
    Rule,
    looks_secret,
    named_value_secret,
    private_url_rule,
    secret_name,
)
from hindsight_batch.redaction.values import base64_text, is_placeholder, shannon_entropy

_PEM_BEGIN = "-----BEGIN "
_PEM_END = "-----END "
_PEM_LABEL = re.compile(r"-----BEGIN ([A-Z0-9 ]{0,40}+)-----")
_MAX_FINGERPRINTS = 50
# Base64 values under a name, as a Kubernetes Secret keeps them (data:, .dockerconfigjson), are decoded and the
# decoded text is searched with every rule: a password in the DATABASE_URL that "cG9zdGdyZXM6Ly9…" encodes. Tried in
# texts that hold a Secret's marks (its type, its kind, a registry config); a value decodes once (and what it
# decodes to once more, for a registry config's auth): linear.
# (A Kubernetes Secret's data, and a variable that says it holds base64: GCP_SA_KEY_B64=…, CERT_BASE64: …)
_BASE64_LITERALS = ("kind: secret", "opaque", "kubernetes.io/", "dockerconfigjson", "_b64", "_base64")
_BASE64_FIELD = re.compile(r"(?:(?<![\w.\-])|(?<=\\[nrt]))([\w.\-]{1,128}+)(?:\\{0,8}+[\"'])?[ \t]*+[:=][ \t]*+"
                           r"(?:\\{0,8}+[\"'])?"
                           # (not a JWT's first part: a dotted token is its own rule's, whole)
                           r"([A-Za-z0-9+/]{8,65536}+={0,2}+)(?![A-Za-z0-9+/=\w]|\.[A-Za-z0-9_\-])")
_MAX_DEPTH = 2
# A text that decodes base64 (a CI step's echo '…' | base64 -d, Python's b64decode, JavaScript's atob, .NET's
# FromBase64String): each base64 run of it is decoded and searched the same way (a service account's JSON).
_DECODE_LITERALS = ("base64 -d", "base64 --decode", "b64decode", "atob(", "frombase64string", "decodestring(",
                    "getdecoder()", "getmimedecoder()", "'base64'",
                    "\"base64\"", "base64\\\"")
_BASE64_RUN = re.compile(r"(?<![\w+/=])([A-Za-z0-9+/]{24,65536}+={0,2}+)(?![\w+/=])")
# A secret split over adjacent string literals (Redactor._redact_continued): after the marker of its first part, its
# closing quote; then a "+" or "\\" maybe, a newline (or JSON text's \n), a diff's sign, indentation, a "+" maybe, and
# the next literal in the same quotes.
_CONTINUED_MARK = "[REDACTED:secret-assignment]"
_SHELL_QUOTED_PART = re.compile(r"'\\{1,8}+''([^'\r\n\\]{1,256}+)(?=')")
_CONTINUED_QUOTE = re.compile(r"\\{0,8}+[\"']")
_CONTINUED_PART = re.compile(r"[ \t]{0,8}+(?:[+\\][ \t]{0,8}+)?(?:\r?\n|(?:\\{1,8}+r)?\\{1,8}+n)[+\- ]?[ \t]{0,64}+"
                             r"(?:\+[ \t]{0,8}+)?(\\{0,8}+[\"'])([^\"'\\\r\n]{4,1024}+)(?=\1)")
# An AWS secret access key has no prefix: in prose it is found as a 40-character base64 run near a key id.
_AWS_KEY_IDS = ("akia", "asia", "abia", "acca")
_AWS_KEY_ID = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_PAIR_DISTANCE = 300


# The shape gate (Redactor.needs_redaction). A common word such as "token" or "password" puts most records of
# some sessions through the slow pass, which finds nothing there: "the token budget", "password reset". Before
# it, the serialized record (lowercased ASCII JSON) is checked at each such word for what the keyword rule needs
# to find a secret there: a value after at most 32 name characters, a quote, blanks, an operator or a few prose
# words, that holds a digit or runs 20 characters (secret_value refuses anything else after a keyword that
# does not name a password; after one that does, 6 characters). Each part is a superset of what the rule
# accepts in the text the JSON encodes (a tab is ``\t`` there, a quote ``\"``; an escape only lengthens a run):
# where this finds nothing, the slow pass finds nothing. A keyword inside an object key goes to the slow pass
# whatever follows (a string under a secret-sounding key is judged whole).
_SHAPE_NAME = rb"(?:" + _KEYWORDS.encode() + rb"|api key|access key|private key)"
_SHAPE_VERB = (rb"(?:is|was|are|es|est|ist|jest|este|(?:re)?set(?:[ ]|\\t)+to|(?:changed|updated|rotated)(?:[ ]|\\t)+to"
               rb"|(?:should|will|must|would|can)(?:[ ]|\\t)+be|is(?:[ ]|\\t)+now)")  # (rules._PROSE_VERB's ASCII)
_SHAPE_VERB_START = (rb"(?:i(?:st?)|w(?:as|ill|ould)|are|e(?:st?e?|s)|jest|s(?:et|hould)|reset|c(?:hanged|an)|updated"
                     rb"|rotated|must)")
_SHAPE_GAP = (
    rb"[a-z0-9_.\-]{0,32}(?:\\{0,24}[\"'`])?"
    # a name and its value as two fields (rules._VALUE_FIELD)
    rb"(?:(?:[ ,+\-]|\\{1,24}[nrt]){0,48}(?:\\{0,24}[\"'])?(?:parameter)?value(?:\\{0,24}[\"'])?)?"
    rb"\]?(?:[ ]|\\t)*(?:(?::=|=>|->|\|\||\?\?|[:=|,])(?:[ ]|\\t)*)?"
    rb"(?:(?:is|was|are|of|for (?:the )?[a-z0-9.\-]{1,64} is|changed to|is now|del [a-z\-]{1,20} \xc3\xa8"
    rb"|for [a-z\-]{1,20}:"
    # (rules._PROSE_GIVEN and _PROSE_WORDS_GIVEN: to, a few words and a copula or a colon)
    rb"|to|as|(?:(?!" + _SHAPE_VERB_START + rb"(?:[ ]|\\t))[a-z0-9_'\-(),]{1,25}+(?:[ ]|\\t)+){0,5}+"
    rb"(?:" + _SHAPE_VERB + rb"|[a-z0-9_'\-(),]{1,25}+:))"
    rb"(?:[ ]|\\t)+)?"
    rb"\(?(?:\\{0,24}[\"'`])?(?:[br]\\?\")?"
)
# What a value may hold, quoted or not (rules._VALUE): a superset of both. In the serialized record every quote
# of the text is escaped (a quoted value may hold quotes of another kind), a blank of it is one or \n, \r, \t.
_SHAPE_RUN = rb"(?:[^\s\"\\]|\\[^nrt])"
# (Twenty characters first: the same language as "a digit somewhere, or twenty characters", tried in at most twenty
# steps, where a lazy run up to a digit first would scan to the end of a long run from every keyword in it.)
_SHAPE_VALUE = re.compile(_SHAPE_NAME + _SHAPE_GAP + rb"(?:" + _SHAPE_RUN + rb"{20}|" + _SHAPE_RUN + rb"{0,19}?[0-9]"
                          # (or a value of symbols, values.is_chosen: rx%bUt&m(b#r#Cp)
                          rb"|" + _SHAPE_RUN + rb"{0,19}?[!#%^&*@~$]"
                          rb"|(?:[a-z]{4}[ \-]){3}[a-z]{4})")  # (or an app password: values.secret_value)
_SHAPE_PASSWORD = re.compile(rb"(?:pass|pw)" + _SHAPE_GAP + _SHAPE_RUN + rb"{6}")  # every name with a password's bar
_SHAPE_SECRET = re.compile(rb"secret" + _SHAPE_GAP + _SHAPE_RUN + rb"{12}")  # an API secret of letters (values.py)
_SHAPE = re.compile(b"|".join((_SHAPE_VALUE.pattern, _SHAPE_PASSWORD.pattern, _SHAPE_SECRET.pattern)))  # one match
# A secret-sounding name inside an object key: the name here, and the JSON string holding it ends with `":`
# (_string_end, which finds each string's end once: no scan to the end of the string from every keyword in it).
_SHAPE_KEY_NAME = re.compile(rb"(?:" + SECRET_KEY_NAME.pattern.encode() + rb"|" + _WHOLE_PART_NAMES.encode()
                             + rb"|" + _SUFFIX_NAMES.encode() + rb")")  # (the whole-part names anywhere: a superset)


def marker(rule_id: str) -> str:
    return f"[REDACTED:{rule_id}]"


_MARKER = re.compile(r"\[REDACTED:([\w.-]{1,80})\]")


def markers(text: str) -> dict[str, int]:
    """The :func:`marker` s already in ``text``, by rule: what an earlier pass redacted (a manifest row's content)."""
    counts: dict[str, int] = {}
    if "[REDACTED:" in text:
        for match in _MARKER.finditer(text):
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


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


# Characters searched for instead of the literals holding them: a one-character search runs at memchr speed,
# and these are rare in prose and absent from a record's JSON structure.
_RARE_CHARACTERS = "=_"


def _gates(literals: set[str]) -> dict[str, tuple[str, ...]]:
    """What to search text for, each with the literals it stands for: a rare character, or a literal that holds
    no other literal. Text without any gate holds no literal: fewer passes over the text than one per literal."""
    gates: dict[str, set[str]] = {}
    for lit in literals:
        rare = [c for c in _RARE_CHARACTERS if c in lit]
        covers = [rare[0]] if rare else [o for o in literals if o in lit and not any(c in o for c in _RARE_CHARACTERS)]
        gate = min(covers, key=len)
        gates.setdefault(gate, set()).add(lit)
    return {gate: tuple(sorted(lits)) for gate, lits in sorted(gates.items())}


_Probe = str | re.Pattern[str]
_ByteProbe = bytes | re.Pattern[bytes]


def _probes(gates: dict[str, tuple[str, ...]]) -> dict[_Probe, tuple[str, ...]]:
    """Gates that begin with the same character searched as one pattern, standing for all their literals: the
    regex engine skips ahead to that character as fast as ``find`` does, so one pass replaces several (ten gates
    begin with "a"). A gate alone on its character stays a plain string search."""
    by_first: dict[str, list[str]] = {}
    dashed: list[str] = []
    for gate in gates:
        if gate.endswith("-") and len(gate) > 1 and not gate.startswith("-"):
            dashed.append(gate)  # "sk-", "glpat-", "hrku-", "key-": one search for "-", looking behind it
            continue
        # Gates are grouped by their first letter: the pattern stops at every occurrence of it. One that begins
        # with punctuation (":aa", "-----begin ") joins the group of its first letter, looking behind it for the
        # rest: ":" (JSON's key separator) or "-" would stop a pattern everywhere.
        letter = next((c for c in gate if c.isalpha()), gate)
        by_first.setdefault(letter, []).append(gate)
    # A gate in a group of one or two costs (most of) a pass of its own: it joins the largest group of a later
    # letter of its own instead ("dapi" as "api" looking behind for "d", in the group of "a"), when there is one.
    for letter, group in sorted(by_first.items(), key=lambda item: len(item[1])):
        if len(group) > 2 or not letter.isalpha():
            continue
        for gate in list(group):
            hosts = [c for c in gate[gate.find(letter) + 1 :] if c != letter and len(by_first.get(c, ())) >= 2]
            if hosts:
                by_first[max(hosts, key=lambda c: len(by_first[c]))].append(gate)
                group.remove(gate)
        if not group:
            del by_first[letter]
    probes: dict[_Probe, tuple[str, ...]] = {}
    if dashed:
        # One look-behind per length (an alternation of equal widths is fixed-width): a few checks per "-".
        by_width: dict[int, list[str]] = {}
        for gate in sorted(dashed):
            by_width.setdefault(len(gate), []).append(re.escape(gate))
        behind = "|".join(f"(?<={'|'.join(same)})" for _width, same in sorted(by_width.items()))
        probes[re.compile(f"-(?:{behind})")] = tuple(sorted({lit for gate in dashed for lit in gates[gate]}))
    for letter, group in by_first.items():
        if len(group) == 1:
            probes[group[0]] = gates[group[0]]
        else:
            pattern = re.compile("|".join(_from_letter(gate, letter) for gate in sorted(group, key=len, reverse=True)))
            probes[pattern] = tuple(sorted({lit for gate in group for lit in gates[gate]}))
    return probes


def _from_letter(gate: str, letter: str) -> str:
    """A pattern for ``gate`` that starts at ``letter`` in it and looks behind for what comes before."""
    at = gate.find(letter)
    if at <= 0:
        return re.escape(gate)
    return f"{re.escape(gate[at:])}(?<={re.escape(gate)})"


def _byte_probe(probe: _Probe) -> _ByteProbe:
    return probe.encode() if isinstance(probe, str) else re.compile(probe.pattern.encode())  # gates are ASCII


# The one non-ASCII character whose lowercase holds a letter of a literal (str.lower("\u212a") == "k"); "İ" also
# lowercases to an ASCII letter, but always followed by a combining dot, which no literal holds.
_KELVIN_SIGN = "\u212a".encode()


class Redactor:
    def __init__(self, key: bytes | None = None, private_hosts: tuple[str, ...] = ()) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self._rules: tuple[Rule, ...] = (*RULES, private_url_rule(private_hosts))
        # For each literal, the rules (by position) that it lets in: a text is tried only against those.
        self._rules_of: dict[str, tuple[int, ...]] = {}
        for index, rule in enumerate(self._rules):
            for lit in rule.literals:
                self._rules_of[lit] = (*self._rules_of.get(lit, ()), index)
        # The keyword rule's words ("token", "secret", "pass") are in most records of some sessions: their gates are
        # grouped apart, so that such a record is not also searched for every other literal of a group.
        gates = _gates({lit for rule in self._rules for lit in rule.literals}
                       | {_PEM_BEGIN.lower(), *_BASE64_LITERALS, *_DECODE_LITERALS})
        keyword_rule = next(i for i, rule in enumerate(self._rules) if rule.id == "secret-assignment")
        keyword_only = {lit for lit, rules in self._rules_of.items() if rules == (keyword_rule,)}
        apart = {gate: lits for gate, lits in gates.items() if not keyword_only.isdisjoint(lits)}
        self._gates = {**_probes(apart), **_probes({g: lits for g, lits in gates.items() if g not in apart})}
        self._byte_gates = {
            _byte_probe(gate): tuple(lit.encode() for lit in lits) for gate, lits in self._gates.items()
        }
        # Per byte gate: each literal, as bytes and as text, and whether the gate's hit is that very literal (a plain
        # search for it: no second search needed).
        self._byte_literals = {
            gate: tuple((lit, lit.decode(), lit == gate) for lit in lits) for gate, lits in self._byte_gates.items()
        }
        # Literals only the keyword rule looks for: a record holding no others may pass the shape gate.
        self._keyword_only = frozenset(keyword_only)

    def needs_redaction(self, data: bytes, hints: frozenset[str]) -> bool:
        """Whether a serialized record (UTF-8 JSON) with these :meth:`hints_each_utf8` hints may hold a secret:
        False only when every hint is a keyword the keyword rule alone looks for, and no occurrence of one has
        the shape of a secret after it (see _SHAPE_NAME). Anything else (non-ASCII, other rules' literals, a
        secret-sounding object key) goes to the slow pass."""
        if not hints:
            return False
        if not hints <= self._keyword_only or not data.isascii():
            return True
        lowered = data.lower()
        if b"cookie" in lowered:  # a secret-sounding key name that is no literal (SECRET_KEY_NAME)
            return True
        # Each position's shape once: a position that two literals find (password and pass, pwd and pw) is not looked
        # at again when it has no secret's shape; the short names last, where the longer ones were looked at.
        # (A password's name first, whose bar is the lowest: where names are dense, one of them has a value's shape
        # soonest. The answer is the same in any order; the order only was the set's, which changes with each run.)
        unshaped: set[int] = set()
        for lit in sorted(hints, key=lambda lit: (lit in _WHOLE_PART_LITERALS, not lit.startswith(("pass", "pw")),
                                                  lit)):
            needle = lit.encode()
            whole_part = lit in _WHOLE_PART_LITERALS
            string_end = _StringEnd(lowered)
            pos = lowered.find(needle)
            while pos != -1:
                if pos in unshaped or (whole_part and not _whole_part_at(data, pos, lit)):
                    pass  # passed, bypass, author, credit: the rule refuses these names (a word, not a name part)
                elif (_SHAPE.match(lowered, pos)
                        or (_SHAPE_KEY_NAME.match(lowered, pos) and lowered.startswith(b":", string_end(pos) + 1))):
                    return True
                else:
                    unshaped.add(pos)
                pos = lowered.find(needle, pos + 1)
        return False

    def hints(self, lowered: str) -> frozenset[str]:
        """The rule literals (and the PEM marker) that occur in ``lowered`` text: empty means nothing to redact.

        Given the serialized form of a whole record, it tests all the record's strings at once: no literal holds
        a character JSON escapes, so a literal inside any string is also in the serialized text."""
        return self.hints_each([lowered])[0]

    def hints_each(self, texts: list[str]) -> list[frozenset[str]]:
        """:meth:`hints` for many lowercased texts at once: one search per gate over all of them, which costs
        far less than searching each short text for every gate."""
        joined = "\n".join(texts)  # no gate holds a newline, so no match spans two texts
        found = _gates_found(joined, [len(text) for text in texts], self._gates)
        return [
            frozenset(lit for gate in gates for lit in self._gates[gate] if lit in texts[index]) if gates else _NONE
            for index, gates in enumerate(found)
        ]

    def hints_each_utf8(self, records: list[bytes]) -> list[frozenset[str]]:
        """:meth:`hints_each` for UTF-8 texts (serialized records), searched as bytes: no decoding, and one byte
        per character however much non-ASCII text a batch holds. Every literal is ASCII, so lowercasing the ASCII
        letters is enough, except for the Kelvin sign; a batch that holds one is searched as text."""
        joined = b"\n".join(records).lower()  # a serialized record holds no raw newline, so no match spans two
        if _KELVIN_SIGN in joined:
            return self.hints_each([record.decode("utf-8", "replace").lower() for record in records])
        found = _gates_found(joined, [len(record) for record in records], self._byte_gates)
        result: list[frozenset[str]] = []
        start = 0
        literals = self._byte_literals
        find = joined.find
        for record, gates in zip(records, found, strict=True):
            end = start + len(record)
            if gates:
                present: list[str] = []
                for gate in gates:
                    for lit, text, sure in literals[gate]:
                        if sure or find(lit, start, end) != -1:
                            present.append(text)
                result.append(frozenset(present))
            else:
                result.append(_NONE)
            start = end + 1
        return result

    def fingerprint(self, rule_id: str, value: str) -> str:
        digest = hmac.new(self._key, value.encode("utf-8", "replace"), hashlib.sha256).hexdigest()
        return f"{rule_id}:{digest[:10]}"

    def redact_text(self, text: str, findings: Findings, hints: frozenset[str] | None = None, depth: int = 0) -> str:
        """``text`` with every secret replaced. ``hints`` (from :meth:`hints` over a larger text holding this one)
        limits which literals are looked for; ``depth`` counts the base64 decodings that led to ``text``."""
        if len(text) < 8:
            return text
        lowered = lower(text)
        present = set(self.hints(lowered)) if hints is None else {lit for lit in hints if lit in lowered}
        if not present:
            return text  # the common case: no rule's literal anywhere in the text
        if _PEM_BEGIN in text:
            text = self._redact_pem(text, findings)
            lowered = lower(text)
        if depth < _MAX_DEPTH and not present.isdisjoint(_BASE64_LITERALS):
            text = self._redact_base64_fields(text, findings, depth)
            lowered = lower(text)
        if depth < _MAX_DEPTH and not present.isdisjoint(_DECODE_LITERALS):
            text = self._redact_base64_runs(text, findings, depth)
            lowered = lower(text)
        for index in sorted({index for lit in present for index in self._rules_of.get(lit, ())}):
            rule = self._rules[index]
            pieces: list[str] = []
            last = 0
            for match in self._matches(rule, text, lowered, present):
                pieces.append(text[last : match.start()])
                pieces.append(self._replace(match, rule, findings))
                last = _past_cut_value(text, match, rule)
            if pieces:
                pieces.append(text[last:])
                text = "".join(pieces)
                if rule.id == "secret-assignment" and _CONTINUED_MARK in text:
                    text = self._redact_continued(text, findings)
                lowered = lower(text)
        if not present.isdisjoint(_AWS_KEY_IDS):  # last: a provider's key (sk-proj-…) is claimed by its own rule
            text = self._redact_aws_pairs(text, findings)
        return text

    @staticmethod
    def _matches(rule: Rule, text: str, lowered: str, present: set[str]) -> Iterator[re.Match[str]]:
        if not rule.anchors:
            if rule.accept is None:
                return rule.pattern.finditer(text)
            return (match for match in rule.pattern.finditer(text) if rule.accept(match))
        anchors = rule.anchors if rule.prefilter else [a for a in rule.anchors if a in present]
        lean = (rule.lean, rule.needs_pattern(text)) if rule.lean and rule.needs_pattern else None
        return anchored_matches(rule.pattern, text, lowered, anchors, rule.accept,
                                rule.possible(text) if rule.possible else None, lean)

    def _replace(self, match: re.Match[str], rule: Rule, findings: Findings) -> str:
        group = rule.group if rule.group >= 0 else match.lastindex or 0  # -1: the one group of the branch that matched
        value = match.group(group)  # accepted already (:meth:`_matches`)
        self._found(findings, rule.id, value)
        if group == 0:
            return marker(rule.id)
        start, end = match.span(group)
        whole_start = match.start(0)
        whole = match.group(0)
        replacement = _cookie_values(value) if rule.id == "cookie" else marker(rule.id)
        return whole[: start - whole_start] + replacement + whole[end - whole_start :]

    def _found(self, findings: Findings, rule_id: str, value: str) -> None:
        findings.counts[rule_id] += 1
        # Past a few hundred finds of one rule in one text, more HMACs (one per find) would only cost time.
        if len(findings.fingerprints) < _MAX_FINGERPRINTS and findings.counts[rule_id] <= 256:
            findings.fingerprints.add(self.fingerprint(rule_id, value))

    def _redact_aws_pairs(self, text: str, findings: Findings) -> str:
        """A 40-character base64 run with upper, lower case and digits within a few lines of an AWS access key id
        ("my creds are AKIA… and secret …"): the secret access key written in prose, not under its config name."""
        # The key id itself is redacted by now (aws-access-key): its marker stands where it was.
        key_id_marker = marker("aws-access-key")
        ids = sorted([match.start() for match in _AWS_KEY_ID.finditer(text)]
                     + [match.start() for match in re.finditer(re.escape(key_id_marker), text)])
        if not ids:
            return text
        out: list[str] = []
        last = 0
        for match in _AWS_SECRET.finditer(text):
            value = match.group(0)
            near = bisect.bisect_left(ids, match.start() - _AWS_PAIR_DISTANCE)
            if near == len(ids) or ids[near] > match.end() + _AWS_PAIR_DISTANCE:
                continue
            if not (any(c.isupper() for c in value) and any(c.islower() for c in value)
                    and any(c.isdigit() for c in value) and shannon_entropy(value) >= 4.0):
                continue
            self._found(findings, "aws-secret-key", value)
            out.append(text[last : match.start()])
            out.append(marker("aws-secret-key"))
            last = match.end()
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _redact_continued(self, text: str, findings: Findings) -> str:
        """The rest of a secret split over adjacent string literals, after its first part was redacted: Python's
        ("abc…"\n "def…"), a concatenation ("abc…" +\n "def…"), a line continued with a backslash; also on a
        diff's + lines and in text that is JSON. At most eight parts after each marker: linear."""
        out: list[str] = []
        last = 0
        pos = text.find(_CONTINUED_MARK)
        while pos != -1:
            quote = _CONTINUED_QUOTE.match(text, pos + len(_CONTINUED_MARK))
            end = pos + len(_CONTINUED_MARK)
            shell = _SHELL_QUOTED_PART.match(text, end)
            if shell is not None:  # 'abc'\''def': a single quote inside a shell's single-quoted value
                self._found(findings, "secret-assignment", shell.group(1))
                out.append(text[last : shell.start(1)])
                out.append(marker("secret-assignment"))
                last = end = shell.end(1)
            elif quote is not None:
                end = quote.end()
                for _ in range(8):
                    part = _CONTINUED_PART.match(text, end)
                    if part is None or part.group(1) != quote.group(0) or is_placeholder(part.group(2)):
                        break
                    self._found(findings, "secret-assignment", part.group(2))
                    out.append(text[last : part.start(2)])
                    out.append(marker("secret-assignment"))
                    last = end = part.end(2)
            pos = text.find(_CONTINUED_MARK, end)
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _redact_base64_runs(self, text: str, findings: Findings, depth: int) -> str:
        """Base64 runs of a text that decodes base64: each is decoded once, and replaced when the decoded text holds
        a secret (searched with every rule)."""
        out: list[str] = []
        last = 0
        for match in _BASE64_RUN.finditer(text):
            value = match.group(1)
            decoded = base64_text(value)
            if decoded is None or self.redact_text(decoded, Findings(), depth=depth + 1) == decoded:
                continue
            self._found(findings, "base64-secret", value)
            out.append(text[last : match.start(1)])
            out.append(marker("base64-secret"))
            last = match.end(1)
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _redact_base64_fields(self, text: str, findings: Findings, depth: int) -> str:
        """Base64 values under a name (a Kubernetes Secret's data): each is decoded, and replaced when the decoded
        text holds a secret (searched with every rule) or is one under its name (``GH_PAT: Z2hwX…``)."""
        out: list[str] = []
        last = 0
        for match in _BASE64_FIELD.finditer(text):
            name, value = match.group(1), match.group(2)
            decoded = base64_text(value)
            if decoded is None:
                continue  # not base64, or binary
            inner = Findings()
            if self.redact_text(decoded, inner, depth=depth + 1) == decoded and not (
                    secret_name(name) and looks_secret(decoded.strip(), name)):
                continue
            self._found(findings, "base64-secret", value)
            out.append(text[last : match.start(2)])
            out.append(marker("base64-secret"))
            last = match.end(2)
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

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

    def redact_value(self, value: Any, findings: Findings, hints: frozenset[str] | None = None) -> Any:
        """Redact every string inside ``value``. Dict keys stay, but a string under a secret-sounding key
        (``{"password": "hunter2"}`` in tool arguments) is itself treated as a secret. ``hints`` as for
        :meth:`redact_text`; every secret-sounding key name holds one of the literals."""
        if isinstance(value, str):
            return self.redact_text(value, findings, hints)
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            named = _named_value(value)
            for key, item in value.items():
                if key == named or (
                        isinstance(item, str) and _secret_key(key) and looks_secret(item, str(key))):
                    self._found(findings, "secret-assignment", item)
                    out[key] = marker("secret-assignment")
                else:
                    out[key] = self.redact_value(item, findings, hints)
            return out
        if isinstance(value, list):
            return [self.redact_value(item, findings, hints) for item in value]
        return value

    def redact_records(self, batch: list[tuple[dict[str, Any], bytes]]) -> list[tuple[bytes, Findings | None]]:
        """S3 for a batch of projected records, each with its serialized line: each line redacted (its
        ``message``; the line re-serialized only when that changed) and what was found in it (None: nothing).

        The batch is searched for the rules' literals at once, in serialized form: most records hold none, and
        redaction is skipped for them. Retention calls this before a record is stored (a store may spill to disk:
        no secret reaches it)."""
        hints_each = self.hints_each_utf8([data for _record, data in batch])
        out: list[tuple[bytes, Findings | None]] = []
        for (record, data), hints in zip(batch, hints_each, strict=True):
            findings = None
            if hints and self.needs_redaction(data, hints):
                findings = Findings()
                redacted = self.redact_value(record["message"], findings, hints)
                if redacted != record["message"]:
                    data = jsoncodec.dumps({**record, "message": redacted})
            out.append((data, findings or None))
        return out


_NONE: frozenset[str] = frozenset()
# rules._WHOLE_PART_NAMES' short names (their literals), with what the rule's name may go on with: passcode, creds.
_WHOLE_PART_LITERALS = {"pass": (b"code", b""), "pw": (b"",), "auth": (b"",), "cred": (b"s", b"")}


def _whole_part_at(data: bytes, pos: int, lit: str) -> bool:
    """Whether the short name ``lit`` at ``pos`` of the (ASCII) serialized record may be one the keyword rule
    takes: it starts a part of a name (rules._starts_a_part) and, after the rule's longer form of it (passcode,
    creds) and a plural "s", no lowercase letter goes on (the rule refuses a keyword that starts a longer word;
    password and the like are literals of their own). Lowercase and uppercase are told apart in ``data``."""
    if pos > 0:
        before = data[pos - 1 : pos]
        if before.isalnum() and not (data[pos : pos + 1].isupper() and not before.isupper()):
            return False
    lowered = data[pos : pos + len(lit) + 6].lower()
    for longer in _WHOLE_PART_LITERALS[lit]:
        end = pos + len(lit) + len(longer)
        if not lowered.startswith(lit.encode() + longer):
            continue
        if data[end : end + 1] in (b"s", b"S"):
            end += 1  # a plural (the rule's rest may be one "s")
        if not data[end : end + 1].islower():
            return True
    return False


class _StringEnd:
    """Where the JSON string holding a position ends (its closing quote), for positions asked in increasing order:
    each quote of the text is looked at once however many positions one string holds, so the work is linear."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._end = -1  # the closing quote found last: the answer for every position up to it

    def __call__(self, pos: int) -> int:
        if pos <= self._end:
            return self._end
        data = self._data
        quote = data.find(b'"', pos)
        while quote != -1 and _escaped(data, quote):
            quote = data.find(b'"', quote + 1)
        self._end = len(data) if quote == -1 else quote
        return self._end


def _past_cut_value(text: str, match: re.Match[str], rule: Rule) -> int:
    """Where a redaction ends: the match's end, or past the rest of a value its rule's bound cut (a rule reads at
    most 128 or 256 characters of a value; an AWS session token, a SAML assertion runs to a thousand). Only a value
    that reached the bound and ends the match, and only while the same token characters go on: bounded, linear."""
    group = rule.group if rule.group >= 0 else match.lastindex or 0
    start, end = match.span(group)
    if end != match.end() or end - start < _CUT_VALUE or not _TOKEN_CHAR.match(text, end - 1):
        return match.end()
    tail = _TOKEN_CHAR.match(text, end)
    return tail.end() if tail else end


def _escaped(data: bytes, quote: int) -> bool:
    """Whether the quote at ``quote`` is escaped: an odd run of backslashes before it (each run stands before one
    character, so it is counted once)."""
    start = quote
    while start > 0 and data[start - 1] == 0x5C:
        start -= 1
    return (quote - start) % 2 == 1


def _gates_found(joined: AnyStr, lengths: list[int], gates: Iterable[Any]) -> list[set[Any]]:
    """Which gates (strings or patterns of ``joined``'s type) occur in each of the texts joined (by one separator)
    in ``joined``: one search per gate."""
    ends = list(itertools.accumulate(length + 1 for length in lengths))
    found: list[set[Any]] = [set() for _ in lengths]
    for gate in gates:
        pos = _first(joined, gate, 0)
        while pos != -1:
            index = bisect.bisect_right(ends, pos)
            found[index].add(gate)
            pos = _first(joined, gate, ends[index])  # one hit per text is enough
    return found


def _first(text: AnyStr, gate: Any, start: int) -> int:
    if isinstance(gate, re.Pattern):
        match = gate.search(text, start)
        return -1 if match is None else match.start()
    return text.find(gate, start)


# A cookie header's pairs: each value goes, unless it is a word or a number (theme=dark, lang=en, consent=1) or a
# Set-Cookie attribute (Path=/, SameSite=Lax, Expires=…): those say nothing secret and the memory keeps them.
_CUT_VALUE = 128  # the shortest bound a rule puts on a value's length
_TOKEN_CHAR = re.compile(r"[A-Za-z0-9+/_\-]{1,4096}+={0,2}+")
_COOKIE_PAIR = re.compile(r"([^=;\s]{1,256}+)=([^;]{0,4096}+)")
_PLAIN_COOKIE = re.compile(r"[A-Za-z]{1,16}+|[0-9]{1,12}+|[a-z]{2}(?:[-_][A-Za-z]{2})?")
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority", "version"})


def _cookie_values(header: str) -> str:
    def pair(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if name.lower() in _COOKIE_ATTRIBUTES or _PLAIN_COOKIE.fullmatch(value.strip()):
            return match.group(0)
        return f"{name}={marker('cookie')}"

    replaced = _COOKIE_PAIR.sub(pair, header)
    if replaced != header:
        return replaced
    # The rule judged the header a secret though each value reads as a word (sessionid=kjhqwezxmnbvcp): every
    # cookie's value goes, its attributes stay (Path=/, SameSite=Lax; HttpOnly has no "=").
    values = _COOKIE_PAIR.sub(lambda match: match.group(0) if match.group(1).lower() in _COOKIE_ATTRIBUTES
                              else f"{match.group(1)}={marker('cookie')}", header)
    return values if values != header else marker("cookie")


def _named_value(value: dict[str, Any]) -> str | None:
    """The field holding a secret given under a name in another field of one object: {"name": "DD_APP_KEY",
    "value": "…"} (a tool call setting a variable, a container's env), a browser's cookie {"name": "PHPSESSID",
    "value": "…"}, a Postman variable {"key": "apiKey", "value": "…"} (rules.NAME_VALUE_FIELDS)."""
    for name_field, value_field in NAME_VALUE_FIELDS:
        name, item = value.get(name_field), value.get(value_field)
        if isinstance(name, str) and isinstance(item, str):
            return value_field if named_value_secret(name, item) else None
    return None


@functools.lru_cache(maxsize=4096)
def _secret_key(key: object) -> bool:
    return secret_name(str(key))
