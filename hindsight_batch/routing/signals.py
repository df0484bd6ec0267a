"""Signals the default heuristic looks for, matched on the projected *text* of a chunk.

Text extraction reads the string values of the projected records (message text, thinking, tool arguments,
command output) and never their keys or structure: classifying pretty-printed JSON made every tool call look like
"identity" and "project" in an earlier router (``reference/pi-hindsight.md`` §6).

Matching is by words, not by one big regular expression: the text is lowercased and split into word tokens
once, and each signal is a set of phrases indexed by their first one or two words, so a chunk looks up only the
phrases whose start it holds. A handful of signals that need their exact characters (paths, capitals, ``PR #12``)
use small patterns, tried only where their anchor word occurs (:mod:`hindsight_batch.textscan`). A chunk's text
is read up to ``ROUTING_SAMPLE_CHARS`` from its start and ``ROUTING_TAIL_CHARS`` from its end: enough to classify
it, and redaction still covers every byte (secrets are found there, not here).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hindsight_batch import jsoncodec, textscan
from hindsight_batch.textscan import anchored_matches

ROUTING_SAMPLE_CHARS = 24_000
ROUTING_TAIL_CHARS = 8_000

# Structural string fields of a projected record: never classified.
_STRUCTURAL_KEYS = frozenset(
    {"type", "role", "id", "parentId", "timestamp", "mimeType", "note", "toolName", "customType", "api",
     "provider", "model", "stopReason", "responseId", "name"}
)


def _expand(spec: str) -> list[tuple[str, ...]]:
    """``"i (always|) prefer"`` -> [("i", "always", "prefer"), ("i", "prefer")]."""
    parts = re.findall(r"\(([^)]*)\)|(\S+)", spec)
    options = [group.split("|") if group or not word else [word] for group, word in parts]
    phrases = []
    for combo in itertools.product(*options):
        words = tuple(w for piece in combo for w in piece.split())
        if words:
            phrases.append(words)
    return phrases


# (category, label, phrase specs). Categories: "global" (User Bank), "project", "skip".
_PHRASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("global", "preference", (
        "(i|we) (always|really|generally|usually|strongly|) (prefer|like|love|hate|dislike)",
        "my (preference|preferred|favorite|favourite)", "(i'd|i would) rather", "please (always|never)",
        "i (always|never) (use|write|want|run|put|add|pick|choose)",
    )),
    ("global", "identity", (
        "my (pronouns|handle|username|timezone|birthday) (is|are)", "my time zone is",
        "my (native|first) language is", "my job title is", "my pronouns",
        "(i'm|i am) (a|an) (senior|junior|staff|principal|lead|freelance|self-taught|professional|backend|frontend"
        "|full-stack|fullstack|data|software|ml|devops|security|mobile)",
    )),
    ("global", "cross-project workflow", (
        "across (all|) (of|) (my|our|) (projects|repos|repositories|codebases)",
        "(in|for|on) (every|any) (project|repo|repository|codebase)",
        "(in|for|on) all (of|) (my|) (projects|repos|repositories|codebases)",
        "regardless of (the|) (project|repo)", "globally", "cross-project",
        "my (usual|general|personal|) (workflow|habit|dotfiles)", "my (editor|shell) setup", "whenever i",
    )),
    ("global", "communication style", (
        "(terse|concise|brief|short|detailed) (answers|replies|responses|explanations)",
        "(reply|respond|answer|talk) (to me|) in (english|german|french|spanish|japanese|chinese|portuguese"
        "|italian|dutch|polish|russian|korean)",
        "no (emoji|emojis)", "(communication|response|writing) style",
    )),
    ("project", "project reference", (
        "this (repo|repository|project|codebase|package|crate|library|service|app)",
        "our (repo|codebase|project|service|api|backend|frontend|importer|cli)", "in the (repo|codebase)",
    )),
    ("project", "architecture", (
        "architecture", "(data|control|request) flow",
        "(schema|migration|endpoint|middleware|pipeline|adapter|interface|module|component|layer|queue|worker"
        "|database|ledger|manifest|parser|reader|router|uploader|handler|schemas|migrations|endpoints|modules"
        "|components|layers|queues|workers|databases|parsers|readers|routers|handlers|adapters|interfaces)",
    )),
    ("project", "implementation decision", (
        "(implement|implemented|implementation|implements|implementing|refactor|refactored|refactoring|refactors"
        "|decided|decision|chose|fix|fixed|fixes|bug|regression|function|class|method|config|configuration"
        "|dependency|dependencies|deterministic|idempotent|idempotency|test|tests|tested|testing)",
        "switch to", "switched to", "instead of",
    )),
    ("project", "delivery state", (
        "pull (request|requests)",
        "(merged|released|shipped|deployed|rollout|milestone|changelog|roadmap|sprint|deadline"
        "|backlog|coverage)", "blocked (on|by)", "(ci|build|pipeline) (is|) (green|red|failing|passing|broken)",
    )),
    ("skip", "secret-like content", (
        "(password|passphrase|passwd|credential|credentials) (is|was)",
        "(api key|secret key|access token|private key|bearer token|session cookie) (is|was)",
        "here's (my|the) (password|token|secret)", "here is (my|the) (password|token|secret)",
        "here's (my|the) api key", "here is (my|the) api key",
    )),
    ("skip", "screenshot artifact", (
        "screenshot", "screenshots", "screen shot", "screen capture", "screen-capture", "screencapture",
    )),
    ("skip", "temporary detail", (
        "temporary", "temporarily", "throwaway", "scratch", "scratchpad", "for now", "just testing",
        "ignore this", "debug (print|output|log)", "one-off",
    )),
)
# ASCII punctuation, spaces and controls split words; letters, digits, "'", "-", "_" and every other character do not.
_SEPARATORS = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) in "'-_"))
# On the text's UTF-8 bytes: a character outside ASCII is bytes of 0x80 and up, which the table leaves alone.
_SEPARATOR_TABLE = bytes.maketrans(_SEPARATORS, b" " * len(_SEPARATORS))
_CONTRACTIONS = ("here", "it", "that", "what", "there", "let", "he", "she")
# The "'s" ending a word, unless the word is a contraction ("it's"): replaced by nothing, so a possessive counts
# as its word ("repo's" is "repo"). Matched on text that starts with a space (so a word's start is " word").
_POSSESSIVE = re.compile("'s" + "".join(f"(?<! {word}'s)" for word in _CONTRACTIONS) + r"(?=\s)")
_Key = tuple[str, str]  # (category, label)
_LABEL_ORDER: tuple[_Key, ...] = tuple(dict.fromkeys((category, label) for category, label, _specs in _PHRASES))


_Pair = tuple[str, str]
_Longer = dict[str, list[tuple[str, _Key]]]  # third word -> (`` a b c … ``, key)


def _phrase_index() -> tuple[dict[str, list[_Key]], dict[_Pair, list[_Key]], dict[_Pair, _Longer]]:
    """Phrases indexed the way a chunk finds them: one-word phrases by their word, two-word phrases by their
    pair, longer phrases by their first two words and then their third."""
    words: dict[str, list[_Key]] = {}
    pairs: dict[_Pair, list[_Key]] = {}
    longer: dict[_Pair, _Longer] = {}
    for category, label, specs in _PHRASES:
        for spec in specs:
            for phrase in _expand(spec):
                if len(phrase) == 1:
                    words.setdefault(phrase[0], []).append((category, label))
                elif len(phrase) == 2:
                    pairs.setdefault((phrase[0], phrase[1]), []).append((category, label))
                else:
                    by_third = longer.setdefault((phrase[0], phrase[1]), {})
                    by_third.setdefault(phrase[2], []).append((f" {' '.join(phrase)} ", (category, label)))
    return words, pairs, longer


_WORD_PHRASES, _PAIR_KEYS, _LONGER_PHRASES = _phrase_index()
_PAIR_SECONDS: dict[str, frozenset[str]] = {
    first: frozenset(b for a, b in [*_PAIR_KEYS, *_LONGER_PHRASES] if a == first)
    for first, _second in [*_PAIR_KEYS, *_LONGER_PHRASES]
}
_PAIR_FIRSTS = frozenset(_PAIR_SECONDS)


@dataclass(frozen=True)
class _Pattern:
    """A signal that needs exact characters (paths, capitals, ``PR #12``). It is tried only where one of its
    anchors occurs (every match starts with one), and an anchor only when the text has its gate phrase."""

    category: str
    label: str
    pattern: re.Pattern[str]
    starts: tuple[tuple[tuple[str, ...], str], ...]  # (gate phrase, lowercase anchor)


_CASED = "(?-i:[A-Z])"
_VERSION = ("<version>",)  # the gate of a ``v1.2`` anchor: a word like ``v1``
_VERSION_WORD = re.compile(r" v\d")
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern("global", "identity", re.compile(
        rf"\bmy\s++(?:name|nickname)\s++is\s++{_CASED}|\bcall\s++me\s++{_CASED}"
        rf"|\bi\s++(?:live|am\s++based|work)\s++(?:in|at|for)\s++{_CASED}", re.I),
        ((("my", "name", "is"), "my"), (("my", "nickname", "is"), "my"), (("call", "me"), "call"),
         (("i", "live"), "i"), (("i", "am", "based"), "i"), (("i", "work"), "i"))),
    _Pattern("project", "delivery state", re.compile(
        r"\b(?:PR|[Pp]ull request|[Ii]ssue|[Tt]icket)\s*+#?\d++\b|\bTODO\b|\bCI\b|\bv\d++\.\d++(?:\.\d++)?\b"
        r"|\bcommit\s++[0-9a-f]{7,40}+\b"),
        ((("pr",), "pr"), (("pull", "request"), "pull"), (("issue",), "issue"), (("ticket",), "ticket"),
         (("todo",), "todo"), (("ci",), "ci"), (("commit",), "commit"), (_VERSION, "v"))),
)
# File names by their extension (a literal-prefix regex: one quick pass).
_EXTENSIONS = ("py", "ts", "tsx", "js", "jsx", "mjs", "rs", "go", "java", "kt", "rb", "php", "cpp", "hpp", "cs",
               "swift", "toml", "yaml", "yml", "sql", "sh", "css", "html", "vue", "svelte")
_FILE_NAME = re.compile(r"\.(?:" + "|".join(sorted(_EXTENSIONS, key=len, reverse=True)) + r")(?=[ \n:,)`'\"])")
_TRANSIENT_PATHS = ("/tmp/", "/var/folders/", "/private/var/folders/", "/dev/shm/", "\\appdata\\local\\temp\\",
                    "%temp%", "$tmpdir")

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


def _dict_strings(value: dict[str, Any], out: list[str]) -> None:
    for key, item in value.items():
        if isinstance(item, str):
            if key not in _STRUCTURAL_KEYS:
                out.append(item)
        elif isinstance(item, dict):
            _dict_strings(item, out)
        elif isinstance(item, list):
            _list_strings(item, out)


def _list_strings(value: list[Any], out: list[str]) -> None:
    """Every string in a list is read (``arguments: ["--name", "x"]``): only a dict key marks one structural."""
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            _dict_strings(item, out)
        elif isinstance(item, list):
            _list_strings(item, out)


def extract_text(content: str) -> str:
    """The prose inside projected JSONL records; a line that is not a JSON object is taken as text."""
    pieces: list[str] = []
    for line in content.split("\n"):
        stripped = line.strip()
        if stripped.startswith("{"):
            try:
                value = jsoncodec.loads(stripped)
            except ValueError:
                value = None
            if isinstance(value, dict):
                _dict_strings(value, pieces)
                continue
        pieces.append(line)
    return "\n".join(pieces)


def sample(text: str) -> str:
    """What the router reads of a long text: its start and its end."""
    if len(text) <= ROUTING_SAMPLE_CHARS + ROUTING_TAIL_CHARS:
        return text
    return text[:ROUTING_SAMPLE_CHARS] + "\n" + text[-ROUTING_TAIL_CHARS:]


def separated(text: str) -> str:
    """``text`` with each separator (:data:`_SEPARATORS`) replaced by a space, by ``bytes.translate`` on its UTF-8.
    ``str.translate`` with a mapping looks every character up in it unless the whole text is ASCII (one em dash or
    CJK character is enough): a fifth of the instructions of an import of CJK prose, and a chunk of such text took
    about ten times as long as this. ``surrogatepass``: a lone surrogate goes through as itself."""
    return text.encode("utf-8", "surrogatepass").translate(_SEPARATOR_TABLE).decode("utf-8", "surrogatepass")


def find_signals(text: str) -> SignalMatches:
    text = sample(text)
    matches = SignalMatches()
    lower = textscan.lower(text)
    spaced = " " + separated(lower) + " "
    if "'s" in spaced:
        spaced = _POSSESSIVE.sub("", spaced)
    words = spaced.split()
    present = Counter(words)  # one count of every word costs less than picking out the few that matter first
    found: Counter[_Key] = Counter()
    for word in present.keys() & _WORD_PHRASES.keys():
        for key in _WORD_PHRASES[word]:  # a phrase of one word counts each occurrence
            found[key] += present[word]
    joined = " " + " ".join(words) + " "
    versions = _VERSION_WORD.search(joined) is not None

    def has(phrase: tuple[str, ...]) -> bool:
        if phrase == _VERSION:
            return versions
        return all(w in present for w in phrase) and (len(phrase) == 1 or f" {' '.join(phrase)} " in joined)

    # A longer phrase counts once. Its first two words must both occur before they are looked for side by side;
    # a phrase of three words or more is then tried only where its first two words stand before its third.
    for first in present.keys() & _PAIR_FIRSTS:
        for second in _PAIR_SECONDS[first]:
            if second not in present:
                continue
            pair = f" {first} {second} "
            start = joined.find(pair)
            if start == -1:
                continue
            for key in _PAIR_KEYS.get((first, second), ()):
                found[key] += 1
            by_third = _LONGER_PHRASES.get((first, second))
            seen: set[str] = set()
            while by_third is not None and start != -1:
                after = start + len(pair)
                for whole, key in by_third.get(joined[after : joined.find(" ", after)], ()):
                    if whole not in seen and joined.startswith(whole, start):
                        seen.add(whole)
                        found[key] += 1
                start = joined.find(pair, start + 1)
    for key in _LABEL_ORDER:  # in table order, whatever order the sets gave: the output stays deterministic
        if found[key]:
            matches.labels[key] += found[key]
    for signal in _PATTERNS:
        anchors = {anchor for phrase, anchor in signal.starts if has(phrase)}
        if anchors:
            n = sum(1 for _ in anchored_matches(signal.pattern, text, lower, anchors))
            if n:
                matches.labels[(signal.category, signal.label)] += n
    code = lower.count("```") + sum(1 for _ in _FILE_NAME.finditer(lower))
    if code:
        matches.labels[("project", "code reference")] += code
    transient = sum(lower.count(path) for path in _TRANSIENT_PATHS)
    if transient:
        matches.labels[("skip", "transient artifact path")] += transient
    for line in text.split("\n"):
        if line.strip():
            matches.text_lines += 1
            if _OUTPUT_LINE.match(line):
                matches.output_lines += 1
    return matches


_MISSION_STOPWORDS = frozenset({"built", "global", "memory", "mission", "project", "retain", "reflect", "about",
                                "their", "there", "these", "those", "which", "where", "while", "should", "would"})


@functools.lru_cache(maxsize=64)
def mission_terms(mission: str) -> tuple[str, ...]:
    """Words of five letters or more from a bank mission (the earlier router's rule), deduplicated."""
    words = re.split(r"[^a-z0-9]+", mission.lower())
    return tuple(dict.fromkeys(w for w in words if len(w) >= 5 and w not in _MISSION_STOPWORDS))


def mission_hits(text_lower: str, terms: tuple[str, ...]) -> list[str]:
    return [t for t in terms if re.search(rf"\b{re.escape(t)}\b", text_lower)]
