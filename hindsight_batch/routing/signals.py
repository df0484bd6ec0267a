"""Signals the default heuristic looks for, matched on the text of a chunk (:mod:`.provenance` reads it out of the
projected records: string values only, never keys or structure; classifying pretty-printed JSON made every tool
call look like "identity" and "project" in an earlier router, ``reference/pi-hindsight.md`` §6).

Matching is by words, not by one big regular expression: the text is lowercased and split into word tokens
once, and each signal is a set of phrases indexed by their first one or two words, so a chunk looks up only the
phrases whose start it holds. A handful of signals that need their exact characters (paths, capitals, ``PR #12``)
use small patterns, tried only where their anchor word occurs (:mod:`hindsight_batch.base.textscan`). A chunk's text
is read up to ``ROUTING_SAMPLE_CHARS`` from its start and ``ROUTING_TAIL_CHARS`` from its end: enough to classify
it, and redaction still covers every byte (secrets are found there, not here).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field

from hindsight_batch.base import textscan
from hindsight_batch.base.textscan import anchored_matches

ROUTING_SAMPLE_CHARS = 24_000
ROUTING_TAIL_CHARS = 8_000

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


# (category, label, phrase specs). Categories: "global" (User Bank statements), "project", "skip", and the
# modifiers of a User Bank statement: "durable" (always, in every project…), "one-off" (just this once, for this
# task…) and "request" (the user asks for it to be remembered). English, German, French, Spanish, Portuguese;
# Japanese and Chinese, written without spaces, are :data:`_CJK_PHRASES`.
_ROLE_WORDS = ("(engineer|developer|dev|programmer|designer|manager|student|researcher|scientist|analyst|architect"
               "|consultant|contractor|maintainer|sre|administrator|sysadmin|founder|cto|intern|freelancer|teacher)")
_PHRASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("global", "preference", (
        "i (always|really|generally|usually|strongly|much|definitely|) (prefer|like|love|hate|dislike|enjoy)",
        "i (don't|do not|never) (like|want|enjoy)", "i can't stand", "(i'm|i am) (not|) (a|) (big|huge|) fan of",
        "i (won't|will not|don't|do not|never) (use|write|run|touch|install|accept)",
        "my (preference|preferred|favorite|favourite|preferences|rule|rules|convention|conventions|policy"
        "|default|defaults|standard|standards)", "(i'd|i would) (rather|prefer)",
        "please (always|never)", "(i|i've) (always|never|usually|normally|typically|generally|mostly) "
        "(use|used|write|wrote|want|run|put|add|pick|choose|keep|do|work|start|go|make|name|format|commit|review"
        "|test|read|avoid|ask|rebase|squash|push|deploy|code|sign|indent|structure)",
        "i've (always|never|usually|generally) (preferred|liked|loved|hated)", "i tend to", "(i'm|i am) used to",
        "i'd like you to always",
        "ich (bevorzuge|mag|liebe|hasse|möchte immer|will immer)", "ich (arbeite|schreibe|nutze|benutze|verwende|"
        "programmiere|committe|teste) (immer|lieber|meistens|grundsätzlich|nie|stets|generell)",
        "mir ist (lieber|wichtig)", "ich hätte (gern|gerne|lieber)", "am liebsten", "bitte (immer|nie|niemals)",
        "ich mag (keine|kein|lieber)", "je (préfère|prefere|déteste|deteste|adore)", "j'aime", "j'adore",
        "je n'aime pas", "j'utilise (toujours|souvent|généralement|systématiquement)",
        "je (travaille|code|programme|écris|teste) (toujours|généralement|systématiquement|jamais)",
        "merci de (toujours|ne jamais)", "prefiero", "odio", "me (gusta|gustan|encanta|encantan)", "no me gusta",
        "(siempre|nunca|normalmente|generalmente) (uso|escribo|trabajo|prefiero|programo|hago)",
        "por favor (siempre|nunca)", "prefiro", "odeio", "adoro", "eu (gosto|prefiro|odeio|adoro)", "gosto de",
        "não gosto", "(sempre|nunca|normalmente|geralmente) (uso|escrevo|trabalho|prefiro|programo|faço)",
        "eu (sempre|nunca|normalmente|geralmente)",
    )),
    ("global", "identity", (
        "my (pronouns|handle|username|timezone|birthday|nationality) (is|are)", "my time zone is",
        "my (timezone|time zone|pronouns|nationality)",
        "my (native|first|mother) (language|tongue) is", "my job title is", "my pronouns", "my role is",
        "i go by", "my name's", "(i'm|i am) (a|an) native", "my (second|native|first|mother) (language|tongue)",
        "i work from", "i use (they|he|she) (them|him|her)", "(i'm|i am) (colorblind|colourblind|color-blind"
        "|colour-blind|dyslexic|deaf|left-handed|neurodivergent|autistic|visually impaired|hard of hearing)",
        "(i'm|i am) (based|located) in", "(i'm|i am) from", "i come from",
        "as the (owner|maintainer|lead|author|admin|creator) of",
        "(i'm|i am) the (owner|maintainer|lead|author|admin|creator|tech lead|release manager) (of|for)",
        "i joined (this|the|our) (project|team|company|repo)",
        "(i've|i have) been (a|an) " + _ROLE_WORDS,
        "i work as", "i work remotely", "i live in",
        "ich heiße", "mein name ist", "(nenn|nennt) mich", "ich wohne in", "ich lebe in", "ich komme aus",
        "ich arbeite (bei|als|für)", "meine (pronomen|zeitzone|muttersprache) (ist|sind)",
        "je m'appelle", "mon nom est", "(appelle-moi|appelez-moi)", "j'habite (à|a|en|au)", "je vis (à|a|en|au)",
        "je travaille (chez|comme|pour)", "mes pronoms sont", "mon fuseau horaire est", "ma langue maternelle est",
        "me llamo", "mi nombre es", "llámame", "vivo en", "trabajo (como|para)", "mis pronombres son",
        "mi zona horaria es", "mi lengua materna es", "me chamo", "meu nome é", "(me chame|pode me chamar) de",
        "moro (em|no|na)", "vivo (em|no|na)", "trabalho (como|para)", "meus pronomes são", "meu fuso horário é",
        "minha língua materna é",
    )),
    ("global", "cross-project workflow", (
        "my (usual|general|personal|normal|standard|) (workflow|habit|habits|dotfiles|routine|process)",
        "my (editor|shell|terminal|git|dev) (setup|config)", "(that's|that is) my (shell|editor|terminal|os)",
        "whenever i", "every time i", "wherever i",
    )),
    ("global", "communication style", (
        "(terse|concise|brief|short|detailed|shorter|longer) (answers|replies|responses|explanations)",
        "(reply|respond|answer|talk|write|speak) (to me|) (always|) in (english|german|french|spanish|japanese"
        "|chinese|portuguese|italian|dutch|polish|russian|korean)",
        "no (emoji|emojis)", "(communication|response|writing) style",
        "keep (replies|answers|responses|explanations) (short|brief|concise|terse)",
        "(answer|reply|respond|write) (to me|) in bullet points",
        "(antworte|antworten|schreib|schreibe|sprich) (mir|) (bitte|immer|) (auf|in) (deutsch|englisch"
        "|französisch|spanisch)", "(kurze|knappe|ausführliche) antworten",
        "(réponds|réponds-moi|répondez|répondez-moi|écris-moi) (toujours|) en (français|anglais|allemand"
        "|espagnol)", "(réponses|explications) (courtes|concises|brèves|détaillées)", "réponses en (français|anglais)",
        "(responde|respóndeme|respondeme|contesta|contéstame|escríbeme) (siempre|) en (español|inglés|ingles"
        "|alemán|francés|portugués)", "respuestas (cortas|breves|concisas|detalladas)",
        "(responda|responde|responde-me|respondam|escreva) (sempre|) em (português|portugues|inglês|ingles"
        "|alemão|francês|espanhol)", "respostas (curtas|breves|concisas|detalhadas)",
    )),
    ("scope", "cross-project scope", (
        "globally", "cross-project", "everywhere", "wherever (i|we|you) (work|go|am|are|code)", "global memory",
        "(across|in|for|on|to) (all|every|any|each) (of|) (my|our|the|) (projects|project|repos|repo|repositories"
        "|repository|codebases|codebase|sessions|session|machines|machine|conversations|languages|tools|tool"
        "|editors|apps)",
        "every (project|repo|repository|codebase) (of mine|i own|i work on|i touch)",
        "(every|any) (project|repo|repository|codebase)", "all (my|of my) (projects|repos|repositories|codebases"
        "|work|code|sessions|machines|logs)", "all (projects|repos|repositories|codebases|sessions)",
        "whatever (project|repo) (we're|we are|i'm|i am) in", "whatever we're working on",
        "whatever we are working on", "whatever the project", "whatever project", "regardless of (the|) (project|repo)",
        "no matter (the|which|what) (project|repo)", "for all future (sessions|projects|conversations)",
        "überall", "projektübergreifend", "in (jedem|allen) (projekt|projekten|repo|repos)",
        "(in|bei) (keinem|jedem|allen) (meiner|meinen|meinem) (repos|projekte|projekten|repositories|projekt|repo)",
        "egal in welchem (projekt|repo)", "egal (welches|welcher) (projekt|repo)", "in allen meinen projekten",
        "partout", "dans (tous|chaque) (les|mes|) (projets|projet|dépôts|dépôt)", "(pour|sur) tous mes projets",
        "globalement", "mémoire globale", "quel que soit le projet", "en todas partes",
        "en (todos|cada) (los|mis|) (proyectos|proyecto|repositorios|repositorio)",
        "en (ningún|cualquier) (proyecto|repositorio|repo)", "memoria global", "globalmente",
        "sea cual sea el proyecto", "em todo lugar", "em toda parte",
        "em (todos|cada) (os|) (meus|) (projetos|projeto|repositórios|repositório)",
        "em (nenhum|qualquer) (projeto|repositório|repo)", "memória global",
    )),
    ("durable", "durable marker", (
        "always", "never", "(don't|do not) ever", "generally", "in general", "by default",
        "from now on", "going forward", "in (the|) future", "every time", "whenever", "as a rule",
        "all the time", "immer", "nie", "niemals", "grundsätzlich", "generell", "stets", "ab jetzt", "künftig",
        "in zukunft", "toujours", "jamais", "en général", "généralement", "par défaut", "désormais", "à l'avenir",
        "siempre", "nunca", "generalmente", "por defecto", "de ahora en adelante", "en el futuro", "sempre",
        "em geral", "geralmente", "por padrão", "daqui em diante", "a partir de agora", "no futuro",
    )),
    ("habit", "first-person habit", (
        "i (work|write|use|keep|commit|code|structure|name|format|test|review|run|deploy|want|build|document"
        "|squash|rebase|sign|indent|put|start|do|avoid|stick)", "(i'm|i am) (always|usually|mostly) (on|using|in"
        "|working)", "ich (arbeite|schreibe|nutze|benutze|verwende|programmiere)", "j'utilise",
        "je (travaille|code|programme|écris|veux)", "(uso|escribo|trabajo|programo)", "eu (uso|escrevo|trabalho)",
        "(uso|escrevo|trabalho|programo)",
    )),
    ("directive", "instruction", ()),  # an imperative at a clause's start: :data:`_DIRECTIVE`
    ("one-off", "one-off instruction", (
        "just this once", "only this once", "just once", "this time", "this one time", "for this (task|one|file"
        "|function|session|change|pr|ticket|branch|commit|run|answer|reply|question|conversation|script|bug|issue)",
        "in this (task|file|function|session|change|pr|ticket|branch|answer|reply|conversation|script)",
        "for (now|today)", "right now", "for the moment", "for the time being",
        "nur (dieses|dies|das) (eine|) mal", "dieses (eine|) mal", "diesmal", "für diese aufgabe", "nur heute",
        "vorerst", "juste (cette|pour cette) fois", "cette fois", "cette fois-ci", "pour cette tâche",
        "pour l'instant", "pour le moment", "solo esta vez", "esta vez", "por esta vez", "para esta tarea",
        "por ahora", "só desta vez", "desta vez", "apenas desta vez", "para esta tarefa", "por enquanto",
    )),
    ("request", "memory request", (
        "remember (that|this)", "please remember", "for future reference", "keep in mind", "note that i",
        "for the record", "don't forget that", "merk dir", "denk (daran|dran)", "souviens-toi", "retiens",
        "mémorise", "memoriza", "memorize", "recuerda", "(store|save|keep) (this|that)",
        "add (this|that) to (your|my) memory",
        "rappelle-toi", "ten en cuenta", "lembre-se", "lembra (que|disso)",
        "tenha em mente",
    )),
    ("project", "project reference", (
        "this (repo|repository|project|codebase|package|crate|library|service|app)",
        "our (repo|codebase|project|service|api|backend|frontend|importer|cli|app|gateway)", "in the (repo|codebase)",
        "(in|für|bei) (diesem|dieses|unserem) (repo|projekt|repository|code|service|dienst)",
        "(dans|pour|de) ce (projet|dépôt|repo|service|code)", "(en|para|de) este (proyecto|repositorio|repo|servicio)",
        "(neste|deste|nesse|desse) (projeto|repositório|repo|serviço)",
    )),
    ("project", "architecture", (
        "architecture", "(data|control|request) flow",
        "(schema|migration|endpoint|middleware|pipeline|adapter|interface|module|component|layer|queue|worker"
        "|database|ledger|manifest|parser|reader|router|uploader|handler|schemas|migrations|endpoints|modules"
        "|components|layers|queues|workers|databases|parsers|readers|routers|handlers|adapters|interfaces)",
    )),
    ("project", "implementation decision", (
        "(decided|decision|chose|conclusion|deterministic|idempotent|idempotency|décision|decisión|decisão"
        "|entscheidung|entschieden)", "switch to", "switched to", "instead of", "(we'll|we will) (use|move|switch"
        "|rename|vendor|drop|keep|add|cap|pin|adopt|go)", "going with", "(settles|settled) it", "the plan is",
        "we agreed", "agreed on", "(we're|we are) going to",
    )),
    ("project", "code work", (
        "(implement|implemented|implementation|implements|implementing|refactor|refactored|refactoring|refactors"
        "|fix|fixed|fixes|bug|regression|function|class|method|config|configuration|dependency|dependencies"
        "|test|tests|tested|testing)",
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
_PAIR_SECONDS: dict[str, frozenset[str]] = {  # first word -> the second words of its phrases
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
_ROLES_ANY_LANGUAGE = (
    r"(?:engineer|developer|dev|programmer|designer|manager|student|researcher|scientist|analyst|architect"
    r"|consultant|contractor|maintainer|sre|administrator|sysadmin|founder|cto|intern|freelancer|teacher"
    r"|entwickler(?:in)?|ingenieur(?:in)?|programmierer(?:in)?|informatiker(?:in)?|développeur|développeuse"
    r"|ingénieure?|programmeur|programmeuse|desarrollador(?:a)?|ingenier[oa]|programador(?:a)?"
    r"|desenvolvedor(?:a)?|engenheir[oa]|analista|diseñador(?:a)?)s?\b"
)
# Capitalised words that follow "I'm" at a sentence's start without being a name.
_NOT_NAMES = r"(?!(?:Not|Sorry|Going|Done|Sure|Afraid|Happy|Glad|Still|Also|Just|Here|Back|Trying|Working|Looking" \
             r"|Using|Fine|Good|Ok|Okay|Ready|Confused|Stuck|Curious|Wondering|Thinking|Getting|Seeing|Running" \
             r"|On|In|At|About|Very|So|Really|Pretty|Quite|The|This|That|It|All|Currently|Now|Only|Almost" \
             r"|Busy|Tired|New|Familiar|Aware|Unsure|Able|Unable|Planning|Hoping|Assuming|Talking|Asking)\b)"
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern("global", "identity", re.compile(
        rf"\bmy\s++(?:name|nickname)\s++is\s++{_CASED}|\bcall\s++me\s++{_CASED}"
        rf"|\bi\s++(?:live|am\s++based|work)\s++(?:in|at|for)\s++{_CASED}"
        r"|\bi(?:'m|\s++am|\s++work)\s++(?:on|in|with)\s++the\s++[\w-]++(?:\s++[\w-]++)?\s++team\b"
        rf"|\bi(?:'m|\s++am)\s++{_NOT_NAMES}{_CASED}(?-i:[a-z]{{1,20}})\b(?!\s*+(?:[.]\w|/|\())"
        rf"|\b(?:i'm|i\s++am|ich\s++bin|je\s++suis|soy|sou|eu\s++sou)\s++(?:(?:a|an|ein|eine|un|une|una|um|uma)"
        rf"\s++)?(?:[\w-]+\s+){{0,3}}?{_ROLES_ANY_LANGUAGE}", re.I),
        ((("my", "name", "is"), "my name"), (("my", "nickname", "is"), "my nickname"), (("call", "me"), "call me"),
         (("i", "live"), "i live"), (("i", "am"), "i am"), (("i", "work"), "i work"), (("i'm",), "i'm"),
         (("ich", "bin"), "ich bin"), (("je", "suis"), "je suis"), (("soy",), "soy"), (("sou",), "sou"),
         (("eu", "sou"), "eu sou"))),
    _Pattern("global", "preference", re.compile(
        r"\bi(?:'m|\s++am)\s++(?:an?\s++)(?:[\w+#.-]++\s++){1,2}(?:user|person|fan|guy|girl|nerd|addict|purist)\b",
        re.I), ((("i'm",), "i'm"), (("i", "am"), "i am"))),
    _Pattern("project", "delivery state", re.compile(
        r"\b(?:PR|[Pp]ull request|[Ii]ssue|[Tt]icket)\s*+#?\d++\b|\bTODO\b|\bCI\b|\bv\d++\.\d++(?:\.\d++)?\b"
        r"|\bcommit\s++[0-9a-f]{7,40}+\b"),
        ((("pr",), "pr"), (("pull", "request"), "pull"), (("issue",), "issue"), (("ticket",), "ticket"),
         (("todo",), "todo"), (("ci",), "ci"), (("commit",), "commit"), (_VERSION, "v"))),
)
# Japanese and Chinese are written without spaces: their phrases are found as substrings, by category and label.
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_CJK_PHRASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("global", "preference", (
        "が好き", "の方が好き", "のほうが好き", "好みます", "好みです", "が嫌い", "は嫌い", "が苦手",
        "我喜欢", "我更喜欢", "我不喜欢", "我偏好",
    )),
    ("global", "identity", (
        "私の名前は", "と申します", "と呼んでください", "と呼んで", "に住んでいます", "に住んで", "在住",
        "で働いています", "エンジニアです", "開発者です", "プログラマーです", "デザイナーです", "母国語は",
        "タイムゾーンは", "我叫", "我的名字是", "我住在", "我是一名", "我是工程师", "我是开发",
    )),
    ("global", "communication style", (
        "日本語で答え", "日本語で返", "日本語で回答", "英語で答え", "英語で返", "簡潔に答え", "簡潔な回答",
        "短く答え", "用中文回答", "用英文回答", "简短回答",
    )),
    ("scope", "cross-project scope", (
        "すべてのプロジェクト", "全てのプロジェクト", "どのプロジェクトでも", "全プロジェクト", "すべてのリポジトリ",
        "全てのリポジトリ", "どのリポジトリでも", "グローバル", "所有项目", "每个项目", "全局",
    )),
    ("durable", "durable marker", (
        "いつも", "常に", "必ず", "今後は", "これからは", "普段", "基本的に", "毎回", "总是", "始终", "以后",
    )),
    ("project", "project reference", ("このリポジトリ", "このプロジェクト", "このサービス", "本项目", "这个项目")),
    ("project", "implementation decision", ("決めました", "決定", "决定")),
    ("one-off", "one-off instruction", (
        "今回だけ", "今回は", "このタスクでは", "このタスクだけ", "今だけ", "とりあえず", "这次", "只这一次",
        "这一次",
    )),
    ("request", "memory request", ("覚えておいて", "記憶して", "忘れないで", "记住")),
)
# An instruction: an imperative verb where a clause starts ("Whatever project we're in, explain …"). A User Bank
# statement only with a cross-project scope (strategy.py): alone, "always run the linter" is as likely a project's
# rule as the user's.
_DIRECTIVE = re.compile(
    r"(?:^|[.;:,!?]\s*+|\b(?:then|and|so|but)\s++)(?:please\s++|pls\s++|plz\s++|kindly\s++|bitte\s++|por\s+favor\s++)?"
    r"(?:always\s++|never\s++|just\s++|immer\s++|toujours\s++|siempre\s++|sempre\s++|nunca\s++)?"
    r"(?:use|keep|write|answer|reply|respond|explain|run|ask|avoid|prefer|give|show|suggest|assume|add|put|make"
    r"|format|name|commit|push|default|stick|talk|speak|don't|do\s+not|never|always|cite|include|mention|check"
    r"|document|comment|sign|squash|rebase|indent|wrap|sort|pin|lead|stop|skip|follow|treat|call|address"
    r"|verwende|nutze|benutze|schreib|schreibe|antworte|erkläre|frag|vermeide|utilise|écris|réponds|explique"
    r"|demande|évite|utiliza|usa|escribe|responde|explica|pregunta|evita|escreva|responda|pergunte|evite"
    r"|adicione|utilize)\b|ください|してほしい",
    re.M,
)
# File names by their extension (a literal-prefix regex: one quick pass).
_EXTENSIONS = ("py", "ts", "tsx", "js", "jsx", "mjs", "rs", "go", "java", "kt", "rb", "php", "cpp", "hpp", "cs",
               "swift", "toml", "yaml", "yml", "sql", "sh", "css", "html", "vue", "svelte")
_FILE_NAME = re.compile(r"\.(?:" + "|".join(sorted(_EXTENSIONS, key=len, reverse=True)) + r")(?=[ \n:,)`'\"])")
_TRANSIENT_PATHS = ("/tmp/", "/var/folders/", "/private/var/folders/", "/dev/shm/", "\\appdata\\local\\temp\\",
                    "%temp%", "$tmpdir")

# A line that looks like terminal or test-runner output rather than prose: runners and compilers, tracebacks, git,
# docker, package managers, listings (``ls -l``, columns), logs, JSON and ``key=value`` dumps.
_OUTPUT_LINE = re.compile(
    r"^\s*+(?:\$ |> |>>> |PS> |npm (?:ERR|WARN)|Traceback \(most recent call last\)|at [\w.$<>]{1,200}+ \(|"
    r"File \"[^\"]{1,500}+\", line \d++|={3,}+|-{3,}+|(?:PASS|FAIL|FAILED|ERROR|ok)\s++\S|"
    r"\d++\s++(?:passed|failed|errors?|tests?)\b|"
    r"error(?:\[E\d++\])?:|warning:|Compiling |Finished |Running |real\s++\d|user\s++\d|sys\s++\d|\[\s*+\d++%\]|"
    r"\d++/\d++\s|exit (?:code|status) \d|[\w./\-]{1,200}+:\d++(?::\d++)?:|collected \d|platform |rootdir: |"
    r"[.FEsxX]{3,}+\s*+(?:\[\s*+\d++%\])?\s*+$|[A-Z]\w{0,60}+(?:Error|Exception)\b|raise\s|--> |"
    r"On branch |Your branch |Changes (?:not staged|to be committed)|Untracked files|nothing to commit|"
    r"no changes added|\(use \"git |(?:both )?modified: |new file: |deleted: |renamed: |HEAD detached|"
    r"commit [0-9a-f]{7,40}\b|Author: |Date: |Merge: |diff --git |index [0-9a-f]{6,}\.\.|@@ |\+\+\+ |"
    r"Switched to |Already up to date|Fast-forward|\d++ files? changed|"
    r"CONTAINER ID|REPOSITORY |IMAGE ID|NAME\s++READY|NAMESPACE\s|[0-9a-f]{12}\s{2,}|"
    r"Package\s++Version|Successfully (?:installed|built|uninstalled|tagged)|Requirement already satisfied|"
    r"Collecting |Downloading |Installing collected|Building wheel|Using cached|Reading package lists|"
    r"Setting up |Unpacking |(?:Get|Hit|Ign):\d|"
    r"[dl\-][rwxsStT\-]{9}[@+.]?\s|total \d++\s*+$|Filesystem\s|(?:PID|USER\s++PID|UID\s++PID)\s|"
    r"\S++\s++\d++\s++\d++\.\d++\s++\d++\.\d++\s|\d++(?:\.\d++)?[KMGT]?\t|[├└│]|\S++@\d++\.\d++\.\d++|"
    r"(?:Test Suites|Tests|Snapshots|Time):\s|Ran all test suites|All checks passed|Refreshing state|No changes\.|"
    r"Plan: \d|Apply complete|\d++ director(?:y|ies), \d++ files?|panic: |goroutine \d++ \[|\[signal SIG|"
    r"\S*?\.go:\d++|\S*?\(0x[0-9a-f]|[\w.$]++\(\)\s*+$|_{3,}|E\s{2,}\S|[.FEsxX]++\s*+$|#\d++\s++0x[0-9a-f]++|[0-9a-f]{7,8}:?\s++[0-9a-f]{2,4}\s|Events:|Type\s++Reason|"
    r"(?:Normal|Warning)\s++\w++\s++\d++[smhd]|<---|--->|\[\d++:0x|\{\s*+\"[^\"]++\"\s*+:|"
    r"\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}[ ,.]|"
    r"\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\]?[: \]]|HTTP/\d|< HTTP|"
    r"[{}\[\]],?\s*+$|\"[^\"\n]{1,100}+\"\s*+:\s|"
    r"[A-Za-z0-9][\w.\-\[\],]*+(?:==|===|~=| @ )\S++\s*+$|"
    r"[\w.\-]++=\S*+(?:\s++[\w.\-]++=\S*+)++\s*+$|"
    r"\S++(?: {2,}\S++){2,}\s*+$|[\w@+\-]*+[./_\d][\w.@+\-/]++\s*+$|[\w.@+\-]++/\s*+$)"
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

    def merged(self, other: SignalMatches, drop: frozenset[str] = frozenset()) -> SignalMatches:
        """These signals and ``other``'s, without ``other``'s signals of the categories in ``drop``."""
        labels = Counter(self.labels)
        for key, n in other.labels.items():
            if key[0] not in drop:
                labels[key] += n
        return SignalMatches(labels, self.output_lines + other.output_lines, self.text_lines + other.text_lines)

    def has(self, category: str, label: str) -> bool:
        return self.labels.get((category, label), 0) > 0

    def label_set(self, category: str) -> set[str]:
        return {label for (cat, label), n in self.labels.items() if cat == category and n}

    @property
    def output_ratio(self) -> float:
        return self.output_lines / self.text_lines if self.text_lines else 0.0


def sample(text: str) -> str:
    """What the router reads of a long text: its start and its end."""
    if len(text) <= ROUTING_SAMPLE_CHARS + ROUTING_TAIL_CHARS:
        return text
    return text[:ROUTING_SAMPLE_CHARS] + "\n" + text[-ROUTING_TAIL_CHARS:]


def separated(text: str) -> str:
    """``text`` with each separator (:data:`_SEPARATORS`) replaced by a space, by ``bytes.translate`` on its UTF-8:
    ``str.translate`` looks up every character of a text that is not all ASCII (docs/design-notes.md).
    ``surrogatepass``: a lone surrogate goes through as itself."""
    return text.encode("utf-8", "surrogatepass").translate(_SEPARATOR_TABLE).decode("utf-8", "surrogatepass")


def instruction(text: str) -> bool:
    """Whether ``text`` (the user's words) gives an instruction: :data:`_DIRECTIVE`."""
    return _DIRECTIVE.search(textscan.lower(sample(text))) is not None


def find_signals(text: str) -> SignalMatches:
    """The signals of ``text``. Phrases are read in its prose; of its output lines (:data:`_OUTPUT_LINE`) only the
    skip signals count (a secret or a temporary path printed by a command), so words that a command printed do
    not make it look like a decision."""
    text = sample(text)
    matches = SignalMatches()
    prose: list[str] = []
    output: list[str] = []
    for line in text.split("\n"):
        if line.strip():
            if _OUTPUT_LINE.match(line):
                matches.text_lines += 1
                matches.output_lines += 1
                output.append(line)
                continue
            if len(line.split()) >= 3:  # a word or two ("ruff", "F") is neither prose nor output: not counted
                matches.text_lines += 1
        prose.append(line)
    if not output:
        _match(text, matches.labels)
        return matches
    _match("\n".join(prose), matches.labels)
    printed: Counter[_Key] = Counter()
    _match("\n".join(output), printed)
    for key, n in printed.items():
        if key[0] == "skip":
            matches.labels[key] += n
    return matches


def _match(text: str, labels: Counter[_Key]) -> None:
    """Add the phrase, pattern, file-name and path signals of ``text`` to ``labels``."""
    if not text.strip():
        return
    lower = textscan.lower(text)
    if "\u2019" in lower:  # a typographic apostrophe ("I\u2019m") is the same word as "I'm"
        lower = lower.replace("\u2019", "'")
        text = text.replace("\u2019", "'")
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
    firsts = present.keys() & _PAIR_FIRSTS
    # The pairs of words that stand side by side (a set made at C speed): a pair is looked for in the text only when
    # it is one of them (most of the many phrases that start with "i", "in" or "for" are not there).
    pairs = set(itertools.pairwise(words)) if firsts else set()
    for first in firsts:
        for second in _PAIR_SECONDS[first]:
            if (first, second) not in pairs:
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
    if not text.isascii() and max(text) >= "\u3040" and _CJK.search(text):  # max(): C speed, no regex
        for category, label, phrases in _CJK_PHRASES:
            n = sum(lower.count(phrase) for phrase in phrases)
            if n:
                found[(category, label)] += n
    for key in _LABEL_ORDER:  # in table order, whatever order the sets gave: the output stays deterministic
        if found[key]:
            labels[key] += found[key]
    for signal in _PATTERNS:
        anchors = {anchor for phrase, anchor in signal.starts if has(phrase)}
        if anchors:
            n = sum(1 for _ in anchored_matches(signal.pattern, text, lower, anchors))
            if n:
                labels[(signal.category, signal.label)] += n
    code = lower.count("```") + sum(1 for _ in _FILE_NAME.finditer(lower))
    if code:
        labels[("project", "code reference")] += code
    transient = sum(lower.count(path) for path in _TRANSIENT_PATHS)
    if transient:
        labels[("skip", "transient artifact path")] += transient


_MISSION_STOPWORDS = frozenset({"built", "global", "memory", "mission", "project", "retain", "reflect", "about",
                                "their", "there", "these", "those", "which", "where", "while", "should", "would"})


@functools.lru_cache(maxsize=64)
def mission_terms(mission: str) -> tuple[str, ...]:
    """Words of five letters or more from a bank mission (the earlier router's rule), deduplicated."""
    words = re.split(r"[^a-z0-9]+", mission.lower())
    return tuple(dict.fromkeys(w for w in words if len(w) >= 5 and w not in _MISSION_STOPWORDS))


def mission_hits(text_lower: str, terms: tuple[str, ...]) -> list[str]:
    return [t for t in terms if re.search(rf"\b{re.escape(t)}\b", text_lower)]
