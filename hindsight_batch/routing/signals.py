"""Signals the default heuristic looks for, matched on the projected *text* of a chunk.

Text extraction reads the string values of the projected records (message text, thinking, tool arguments,
command output) and never their keys or structure: classifying pretty-printed JSON made every tool call look like
"identity" and "project" in an earlier router (``reference/pi-hindsight.md`` §6).

All patterns of a category are one alternation, scanned once per text; each alternative is anchored at a word
boundary and uses bounded or possessive repetition, so a scan is linear in the text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Structural string fields of a projected record: never classified.
_STRUCTURAL_KEYS = frozenset(
    {"type", "role", "id", "parentId", "timestamp", "mimeType", "note", "toolName", "customType", "api",
     "provider", "model", "stopReason", "responseId", "name"}
)

# (category, label, pattern). Categories: "global" (User Bank), "project", "skip".
_SIGNALS: tuple[tuple[str, str, str], ...] = (
    ("global", "preference",
     r"\b(?:i|we)\s++(?:always\s++|really\s++|generally\s++|usually\s++|strongly\s++)?(?:prefer|like|love|hate|dislike)\b"
     r"|\bmy\s++(?:preference|preferred|favou?rite)\b|\bi(?:'d|\s++would)\s++rather\b"
     r"|\bplease\s++(?:always|never)\b|\bi\s++(?:always|never)\s++(?:use|write|want|run|put|add|pick|choose)\b"),
    ("global", "identity",
     r"\bmy\s++(?:name|nickname)\s++is\s++(?-i:[A-Z])|\bcall\s++me\s++(?-i:[A-Z])"
     r"|\bmy\s++(?:pronouns|handle|username|timezone|time\s++zone|birthday|native\s++language"
     r"|first\s++language|job\s++title)\s++(?:is|are)\b|\bmy\s++pronouns\b"
     r"|\bi(?:'m|\s++am)\s++(?:a|an)\s++(?:senior|junior|staff|principal|lead|freelance|self-taught|professional"
     r"|backend|frontend|full[- ]stack|data|software|ml|devops|security|mobile)\b"
     r"|\bi\s++(?:live|am\s++based|work)\s++(?:in|at|for)\s++[A-Z]"),
    ("global", "cross-project workflow",
     r"\bacross\s++(?:all\s++)?(?:of\s++)?(?:my\s++|our\s++)?(?:projects|repos|repositories|codebases)\b"
     r"|\b(?:in|for|on)\s++(?:every|all(?:\s++(?:of\s++)?my)?|any\s++of\s++my)\s++(?:projects?|repos?|repositories|codebases?)\b"
     r"|\bregardless\s++of\s++(?:the\s++)?(?:project|repo)\b|\bglobally\b|\bcross-project\b"
     r"|\bmy\s++(?:usual\s++|general\s++|personal\s++)?(?:workflow|habit|dotfiles|editor\s++setup|shell\s++setup)\b"
     r"|\bwhenever\s++i\b"),
    ("global", "communication style",
     r"\b(?:terse|concise|brief|short|detailed)\s++(?:answers|replies|responses|explanations)\b"
     r"|\b(?:reply|respond|answer|talk)\s++(?:to\s++me\s++)?in\s++(?:english|german|french|spanish|japanese"
     r"|chinese|portuguese|italian|dutch|polish|russian|korean)\b|\bno\s++emojis?\b"
     r"|\b(?:communication|response|writing)\s++style\b"),
    ("project", "project reference",
     r"\bthis\s++(?:repo|repository|project|codebase|package|crate|library|service|app)\b"
     r"|\bour\s++(?:repo|codebase|project|service|api|backend|frontend|importer|cli)\b|\bin\s++the\s++(?:repo|codebase)\b"),
    ("project", "architecture",
     r"\barchitecture\b|\b(?:data|control|request)\s++flow\b"
     r"|\b(?:schema|migration|endpoint|middleware|pipeline|adapter|interface|module|component|layer|queue"
     r"|worker|database|ledger|manifest|parser|reader|router|uploader|handler)s?\b"),
    ("project", "implementation decision",
     r"\b(?:implement(?:ed|ation|s|ing)?|refactor(?:ed|ing|s)?|decided|decision|chose|switch(?:ed)?\s++to"
     r"|instead\s++of|fix(?:ed|es)?|bug|regression|function|class|method|config(?:uration)?|dependenc(?:y|ies)"
     r"|deterministic|idempoten(?:t|cy)|test(?:s|ed|ing)?)\b"),
    ("project", "delivery state",
     r"\b(?:PR|pull\s++request|issue|ticket)\s*+#?\d++\b|\b(?:merged|released|shipped|deployed|rollout|milestone"
     r"|changelog|roadmap|sprint|deadline|backlog)\b|\bv\d++\.\d++(?:\.\d++)?\b"
     r"|\b(?:CI|build|pipeline)\s++(?:is\s++)?(?:green|red|failing|passing|broken)\b|\bcommit\s++[0-9a-f]{7,40}+\b"
     r"|\bTODO\b|\bblocked\s++(?:on|by)\b|\bcoverage\b"),
    ("project", "code reference",
     r"(?<![\w.\-])[\w\-]{1,80}+\.(?:py|ts|tsx|js|jsx|mjs|rs|go|java|kt|rb|php|c|h|cpp|hpp|cs|swift|toml|yaml|yml"
     r"|sql|sh|css|html|vue|svelte)\b|```"),
    ("skip", "secret-like content",
     r"\b(?:password|passphrase|passwd|api[\s_-]?key|secret\s++key|access\s++token|private\s++key|bearer\s++token"
     r"|credentials?|session\s++cookie)\s++(?:is|was|=|:)\s++(?!\[REDACTED)\S"
     r"|\bhere(?:'s|\s++is)\s++(?:my|the)\s++(?:password|token|api\s++key|secret)\b"),
    ("skip", "transient artifact path",
     r"(?:/tmp/|/var/folders/|/private/var/folders/|/dev/shm/|\\AppData\\Local\\Temp\\|%TEMP%|\$TMPDIR)"),
    ("skip", "screenshot artifact", r"\bscreen\s?shots?\b|\bscreen[_ -]?capture\b|\bScreen\s++Shot\s++\d{4}+"),
    ("skip", "temporary detail",
     r"\b(?:temporary|temporarily|throwaway|scratch(?:pad)?|for\s++now|just\s++testing|ignore\s++this"
     r"|debug\s++(?:print|output|log)|one-off)\b"),
)

_PATTERN = re.compile(
    "|".join(f"(?P<s{i}>{pattern})" for i, (_c, _l, pattern) in enumerate(_SIGNALS)), re.IGNORECASE
)
_DELIVERY_CASE_SENSITIVE = re.compile(r"\b(?:PR|CI|TODO)\b")

# A line that looks like terminal or test-runner output rather than prose.
_OUTPUT_LINE = re.compile(
    r"^\s*+(?:\$ |> |PS> |npm (?:ERR|WARN)|Traceback \(most recent call last\)|at [\w.$<>]{1,200}+ \(|"
    r"File \"[^\"]{1,500}+\", line \d++|={3,}+|-{3,}+|(?:PASS|FAIL|FAILED|ERROR|ok)\s++\S|"
    r"\d++\s++(?:passed|failed|errors?|tests?)\b|"
    r"error(?:\[E\d++\])?:|warning:|Compiling |Finished |Running |real\s++\d|user\s++\d|sys\s++\d|\[\s*+\d++%\]|"
    r"\d++/\d++\s|exit (?:code|status) \d|[\w./\-]{1,200}+:\d++(?::\d++)?:|collected \d|platform |rootdir: |"
    r"[.FEsxX]{3,}+\s*+(?:\[\s*+\d++%\])?\s*+$|[A-Z]\w{0,60}+(?:Error|Exception)\b|raise\s|--> )"
)


@dataclass
class SignalMatches:
    labels: Counter[tuple[str, str]] = field(default_factory=Counter)  # (category, label) -> matches
    output_lines: int = 0
    text_lines: int = 0

    def score(self, category: str) -> float:
        """Distinct labels count 1 each; repeats add a little, capped, so one noisy label cannot dominate."""
        labels = [n for (cat, _label), n in self.labels.items() if cat == category]
        return len(labels) + min(sum(n - 1 for n in labels) * 0.25, 1.0)

    def has(self, category: str, label: str) -> bool:
        return self.labels.get((category, label), 0) > 0

    def label_set(self, category: str) -> set[str]:
        return {label for (cat, label), n in self.labels.items() if cat == category and n}

    @property
    def output_ratio(self) -> float:
        return self.output_lines / self.text_lines if self.text_lines else 0.0


def _strings(value: Any, out: list[str], key: str | None = None) -> None:
    if isinstance(value, str):
        if key not in _STRUCTURAL_KEYS:
            out.append(value)
    elif isinstance(value, dict):
        for k, item in value.items():
            _strings(item, out, k)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, key if key == "arguments" else None)


def extract_text(content: str) -> str:
    """The prose inside projected JSONL records; a line that is not a JSON object is taken as text."""
    pieces: list[str] = []
    for line in content.split("\n"):
        stripped = line.strip()
        if stripped.startswith("{"):
            try:
                value = json.loads(stripped)
            except ValueError:
                value = None
            if isinstance(value, dict):
                _strings(value, pieces)
                continue
        pieces.append(line)
    return "\n".join(pieces)


def find_signals(text: str) -> SignalMatches:
    matches = SignalMatches()
    for match in _PATTERN.finditer(text):
        name = match.lastgroup
        if name is None:
            continue
        category, label, _ = _SIGNALS[int(name[1:])]
        # Abbreviations count only in capitals ("pr" and "ci" are common inside words and paths).
        abbreviation = match.group(0).upper() in ("PR", "CI", "TODO")
        if label == "delivery state" and abbreviation and not _DELIVERY_CASE_SENSITIVE.fullmatch(match.group(0)):
            continue
        matches.labels[(category, label)] += 1
    for line in text.split("\n"):
        if line.strip():
            matches.text_lines += 1
            if _OUTPUT_LINE.match(line):
                matches.output_lines += 1
    return matches


_MISSION_STOPWORDS = frozenset({"built", "global", "memory", "mission", "project", "retain", "reflect", "about",
                                "their", "there", "these", "those", "which", "where", "while", "should", "would"})


def mission_terms(mission: str) -> list[str]:
    """Words of five letters or more from a bank mission (the earlier router's rule), deduplicated."""
    words = re.split(r"[^a-z0-9]+", mission.lower())
    return list(dict.fromkeys(w for w in words if len(w) >= 5 and w not in _MISSION_STOPWORDS))


def mission_hits(text_lower: str, terms: list[str]) -> list[str]:
    return [t for t in terms if re.search(rf"\b{re.escape(t)}\b", text_lower)]
