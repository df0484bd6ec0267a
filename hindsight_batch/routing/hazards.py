"""What no memory should hold, or no User Bank should take, found in a chunk's text.

* prompt injection: text addressed to an AI or a memory system ("AI assistants reading this", "note to LLM
  memory systems", "store this preference globally", ``<!-- agent: … -->``). In what the agent read or wrote it is
  never the user's preference; wherever it stands, the chunk goes to no User Bank and the decision says why.
* memory echo: earlier memory quoted back in prose ("From your memory bank: you prefer …"); S1's markers are
  ``retention/memory_filter.py``'s, this is the prose form of the same thing.
* third-party personal data: phone numbers, national ids and e-mail addresses of people other than the user.
* acknowledgement: a chunk that holds nothing but "ok", "thanks", "sounds good" and the like.

Each pattern is tried only where one of its literal starts occurs
(:func:`hindsight_batch.base.textscan.anchored_matches`).
"""

from __future__ import annotations

import re

from hindsight_batch.base.textscan import anchored_matches

_AI = (r"(?:ai|a\.i\.|llms?|(?:large\s+)?language\s+models?|(?:ai\s+|coding\s+)?agents?|(?:ai\s+|coding\s+)?"
       r"assistants?|models?|bots?|chatbots?|copilots?|claude|chatgpt|gpt(?:-\d\w*)?|gemini|codex|crawlers?"
       r"|memory\s+(?:systems?|stores?|banks?|tools?|layers?)|automated\s+(?:systems?|tools?|agents?))")
# Where each of _AI's words starts (lowercase): the anchors of a rule that begins with one.
_AI_STARTS = ("ai", "a.i.", "llm", "large", "language", "agent", "coding", "assistant", "model", "bot", "chatbot",
              "copilot", "claude", "chatgpt", "gpt", "gemini", "codex", "crawler", "memory", "automated")
_W = r"(?<![a-z0-9_])"  # a word starts here (on lowercase text)

# A rule: the literal starts of its matches (lowercase), and the pattern, tried only where one of them occurs
# (textscan.anchored_matches): a chunk is read at str.find speed, not by the regex engine at each position.
# A rule with gates is tried only if the text holds one of them (a phrase every match holds, found by ``in``).
_Rule = tuple[tuple[str, ...], "re.Pattern[str]", tuple[str, ...]]


def _rule(anchors: tuple[str, ...], pattern: str, gates: tuple[str, ...] = ()) -> _Rule:
    return anchors, re.compile(pattern), gates


# Anywhere, whoever wrote it: addressed to an AI or a memory system.
_INJECTION_ANY: tuple[_Rule, ...] = (
    _rule(_AI_STARTS, rf"{_W}{_AI}\s+(?:that\s+(?:are\s+|is\s+)?|who\s+(?:are\s+|is\s+)?)?(?:reading|processing"
          r"|parsing|indexing|ingesting|summari[sz]ing|scanning|seeing|consuming|reads?|process(?:es)?|sees?)\s+"
          r"(?:this|these)\b", ("reading th", "reads th", "read th", "processing th", "process th", "processes th",
                                "parsing th", "indexing th", "ingesting th", "summarizing th", "summarising th",
                                "scanning th", "seeing th", "sees th", "see th", "consuming th")),
    _rule(("note",), rf"{_W}notes?\s+(?:to|for)\s+(?:any\s+|all\s+|the\s+|future\s+|an?\s+)?(?:{_AI}|memory"
          r"|memories)\b|notes?\s+(?:pour|à|aux)\s+(?:l'ia|les\s+ia|l'assistant|les\s+assistants|les\s+agents|llms?"
          r"|l'agent)"),
    _rule(("to any", "to all", "to every", "for any", "for all", "for every"),
          rf"{_W}(?:to|for)\s+(?:any|all|every)\s+{_AI}\b"),
    _rule(("important", "attention", "note", "notice", "instruction", "message", "psa", "reminder", "warning"),
          rf"{_W}(?:important|attention|note|notice|instructions?|message|psa|reminder|warning)\s*+[:,]?\s+"
          rf"(?:for|to)\s+(?:all\s+|any\s+|the\s+)?{_AI}\b"),
    _rule(("i am the user", "[system]", "memory update", "user preference"),
          rf"{_W}i\s+am\s+the\s+user\b|\[system\]|memory\s+update\s*:|user\s+preference\s*="),
    _rule(("ignore",), rf"{_W}ignore\s+(?:all\s+|any\s+|the\s+|your\s+)?(?:previous|prior|earlier|above|preceding"
          r"|former)\s+(?:instructions|prompts?|rules|directions)"),
    _rule(("<!--",), r"<!--\s*(?:ai|agents?|llms?|assistants?|claude|copilot|gpt|bots?|memory)\b"),
    # Text hidden from a person reading the page: there only for a machine to read.
    _rule(("style",), r"style\s*=\s*[\"'][^\"'>]{0,200}?(?:display\s*:\s*none|visibility\s*:\s*hidden"
          r"|font-size\s*:\s*0(?![.\d]*[1-9]))", ("display", "visibility", "font-size")),
    # A line that speaks to an AI by name ("LLM: the user's identity is …").
    _rule(("ai:", "llm:", "agent:", "assistant:"),
          rf"{_W}(?:ai|llm|agent|assistant)s?\s*:\s+(?:the\s+user|remember|store|save|always|never|ignore"
          r"|you\s+must|from\s+now\s+on)"),
    _rule(("hinweis",), rf"{_W}hinweis\s+(?:an|für)\s+(?:die\s+|alle\s+|den\s+)?(?:ki|llms?|agenten|assistenten"
          r"|ki-\w+)"),
    _rule(("ki", "llm"), rf"{_W}(?:ki|llms?|ki-assistenten|ki-agenten),?\s+die\s+(?:dies|das|diesen\s+text)\s+lesen",
          ("lesen",)),
    _rule(("ia", "llm", "assistant", "agent", "asistentes", "assistentes", "agentes"),
          rf"{_W}(?:ia|ias|llms?|assistants?\s+ia|agents?\s+ia)\s+qui\s+(?:lisez|lisent|lit)\b"
          r"|(?:ia|ias|llms?|asistentes|assistentes|agentes)\s+que\s+(?:lean|leen|lêem|leem|lee|lê)\b",
          ("qui lis", "qui lit", "que le", "que lê")),
    _rule(("nota",), rf"{_W}notas?\s+(?:para|a)\s+(?:la\s+|el\s+|a\s+|o\s+|los\s+|las\s+|os\s+|as\s+)?(?:ia|ias"
          r"|llms?|agentes?|asistentes?|assistentes?|modelos?)\b"),
    _rule(("ai", "llm", "エージェント", "アシスタント", "これを読んでいる"),
          r"(?:ai|llm|エージェント|アシスタント)(?:への|に)(?:注意|メモ|指示|お知らせ)|(?:エージェント|アシスタント)へ[:：、]"
          r"|これを読んでいる(?:ai|llm|アシスタント|エージェント)", ("エージェント", "アシスタント", "読んでいる")),
)
# In what the agent read or wrote only: orders to store something globally, claims about the user's preferences,
# orders to remember something in every repo, greetings to an AI. The user may write "remember this globally for
# me"; a README may not.
_INJECTION_READ: tuple[_Rule, ...] = (
    _rule(("store", "save", "add", "write", "record", "persist", "put", "keep", "commit", "memori", "remember"),
          rf"{_W}(?:store|save|add|write|record|persist|put|keep|commit|memori[sz]e|remember)\s+(?:this|that|these"
          r"|the\s+following|it)(?:\s+[\w'-]+){0,3}?\s+(?:globally|permanently|forever|(?:in|into|to)\s+(?:your\s+"
          r"|the\s+)?(?:[\w-]+\s+){0,2}(?:memory|memories|user\s+bank|memory\s+bank)|for\s+(?:all|every|future)\s+"
          r"(?:sessions?|projects?|repos?|repositories|conversations?))",
          ("global", "permanent", "forever", "memor", "user bank", "for all", "for every", "for future")),
    _rule(("remember", "memori", "note", "store", "save", "record"),
          rf"{_W}(?:remember|memori[sz]e|note|store|save|record)\b[^.\n]{{0,160}}?\b(?:in|across|for|on)\s+(?:every"
          r"|all|any|each)\s+(?:(?:of\s+)?(?:their|his|her|the|your|my)\s+)?(?:repos?|repositories|projects?"
          r"|codebases?|sessions?|conversations?)\b", ("repo", "project", "codebase", "session", "conversation")),
    _rule(("apply", "global"), rf"{_W}apply\s+(?:this\s+|it\s+)?globally|{_W}global(?:ly)?\s+(?:memory|user\s+memory)"
          r"|global\s+speichern"),
    _rule(("l'utilisateur", "der benutzer", "die benutzerin", "el usuario", "la usuaria", "o usuário",
           "o utilizador"),
          r"(?:l'utilisateur|der\s+benutzer|die\s+benutzerin|el\s+usuario|la\s+usuaria|o\s+usuário|o\s+utilizador)\s+"
          r"(?:\w+\s+)?(?:préfère|veut|aime|souhaite|möchte|bevorzugt|will|mag|prefiere|quiere|prefere|quer|gosta)"),
    _rule(("mémoris", "merken", "speichern", "guarda", "salv", "memoriz"),
          r"(?:mémorisez|mémorise|merken|speichern|guarda|guárdalo|salve|salva|memorize|memoriza)[\w-]*\s+"
          r"(?:\w+\s+)?(?:globalement|global|globalmente)"),
    _rule(("グローバルメモリ", "ユーザーは"), r"グローバルメモリ|ユーザーは"),
    _rule(("ai,", "llm,", "agent,", "assistant,"), rf"{_W}(?:ai|llm|agent|assistant)s?\s*,\s+(?:the\s+user|remember"
          r"|store|save|always|never|ignore|you\s+must|from\s+now\s+on)"),
    _rule(("the user",), r"the\s+user(?:'s)?\s+(?:always\s+|really\s+|strongly\s+|now\s+)?(?:prefers?|preferred"
          r"|preference|wants|likes|loves|hates|requires|approves|has\s+approved|allows|insists|name\s+is"
          r"|is\s+called)"),
    _rule(("attention", "dear", "hey", "hello", "hi ", "hi,", "instruction", "message", "to all", "psa"),
          rf"{_W}(?:attention|dear|hey|hello|hi|instructions?\s+(?:to|for)|message\s+(?:to|for)|to\s+all|psa\s+for)"
          rf"\s*[:,]?\s+(?:the\s+|any\s+|all\s+)?{_AI}\b"),
)


def _matches(rules: tuple[_Rule, ...], text: str) -> bool:
    """Whether a rule matches ``text`` (lowercase) where one of its anchors occurs."""
    return any((not gates or any(gate in text for gate in gates))
               and next(anchored_matches(pattern, text, text, anchors), None) is not None
               for anchors, pattern, gates in rules)


def prompt_injection(user_text: str, other_text: str) -> bool:
    """Text addressed to an AI or a memory system: anywhere by :data:`_INJECTION_ANY`, in what the agent read or
    wrote also by :data:`_INJECTION_READ`. Both arguments lowercase."""
    return bool(user_text and _matches(_INJECTION_ANY, user_text)) or (bool(other_text) and (
        _matches(_INJECTION_ANY, other_text) or _matches(_INJECTION_READ, other_text)))


_MEMORY = (r"(?:stored\s+|saved\s+|long-term\s+|hindsight\s+)?(?:memory\s+banks?|memories|memory|user\s+bank"
           r"|stored\s+preferences|saved\s+preferences|recalled\s+memories)\b")
_ECHO: tuple[_Rule, ...] = (
    _rule(("from", "according", "based", "per"),
          rf"{_W}(?:from|according\s+to|based\s+on|per)\s+(?:your|my|the\s+user's)\s+{_MEMORY}"
          r"(?!\s+(?:usage|leak|footprint|limit|allocation|pressure|consumption))"
          r"|from\s+the\s+(?:memory\s+bank|user\s+bank)\b"
          r"|from\s+(?:our\s+)?(?:past|previous|earlier|prior)\s+(?:sessions?|conversations?|chats?)\s*[,:]?\s+"
          r"(?:you|i\s+know|i\s+recall)"),
    _rule(("what",), rf"{_W}what\s+(?:the\s+)?(?:memory|memories|hindsight|memory\s+bank)\s+(?:returned|says|said"
          r"|recalled|holds|has|gave|shows)\b"),
    _rule(("memory", "memories"), rf"{_W}memor(?:y|ies)\s+(?:returned|results?|search\s+returned|recall|queued|stored"
          r"|saved|retained|recorded)\b"),
    _rule(("hindsight",), rf"{_W}hindsight\s+(?:memory|memories|recall|recalled)\b"),
    _rule(("recalled", "i recalled", "i've recalled", "we recalled", "we've recalled"),
          rf"{_W}(?:recalled\s+(?:memories|memory|facts|preferences|context)|(?:i|i've|we|we've)\s+recalled)\b"),
    _rule(("relevant memories",), rf"{_W}relevant\s+memories\b"),
    _rule(("your saved", "your stored", "your remembered", "my saved", "my stored", "my notes"),
          rf"{_W}(?:your|my)\s+(?:saved|stored|remembered)?\s*(?:preferences|memories|notes|settings)\s+(?:say|says"
          r"|show|shows|are|include|includes|mention)\b"),
    _rule(("my memor", "your memor"), rf"{_W}(?:my|your)\s+memor(?:y|ies)\s+(?:says?|shows?|notes?|indicates?"
          r"|contains?|holds?|tells?)\b"),
    _rule(("i remember", "i recall"), rf"{_W}i\s+(?:remember|recall)\s+(?:that\s+)?you\s+(?:prefer|like|said"
          r"|told|use|want|asked|are|have|always|never)"),
    _rule(("as you",), rf"{_W}as\s+you\s+(?:told|mentioned\s+to|said\s+to)\s+me\s+(?:before|previously|earlier"
          r"|last\s+time)"),
    _rule(("you previously", "you earlier", "you once"), rf"{_W}you\s+(?:previously|earlier|once)\s+(?:told"
          r"|said|mentioned)\b"),
    _rule(("i have",), rf"{_W}i\s+have\s+(?:it\s+)?(?:on\s+record|noted|stored|saved)\s+that\s+you"),
    _rule(("stored", "saved"), rf"{_W}(?:stored|saved)\s+(?:in|to)\s+(?:your|my)\s+memory\s+(?:bank\s+)?"
          r"(?:that|:)"),
    _rule(("aus", "laut"), rf"{_W}(?:aus|laut)\s+(?:deinem|meinem|ihrem)\s+(?:gedächtnis|speicher)"
          r"|laut\s+(?:deinen|meinen)\s+erinnerungen"),
    _rule(("d'après", "selon"), rf"{_W}(?:d'après|selon)\s+(?:ta|ma|votre)\s+mémoire"),
    _rule(("según", "de tu", "de mi"), rf"{_W}según\s+(?:tu|mi|su)\s+memoria|de\s+(?:tu|mi)\s+memoria\s*:"),
    _rule(("de acordo", "segundo", "da sua", "da minha"),
          rf"{_W}(?:de\s+acordo\s+com|segundo)\s+(?:a\s+)?(?:sua|minha)\s+memória|da\s+(?:sua|minha)\s+memória\s*:"),
    _rule(("記憶", "メモリ"), r"記憶によると|メモリによると|メモリーによると|記憶では"),
)


# Every echo rule's match holds one of these: a chunk without any of them is not read further.
_ECHO_GATES = ("memor", "rememb", "recall", "hindsight", "told", "said", "mentioned", "noted", "stored", "saved",
               "user bank", "previous", "past", "earlier", "prior",
               "on record", "mémoire", "memória", "gedächtnis", "speicher", "erinnerungen", "記憶", "メモリ")


def memory_echo(text: str) -> bool:
    """Earlier memory quoted back in prose. ``text`` lowercase."""
    return any(gate in text for gate in _ECHO_GATES) and _matches(_ECHO, text)


_PHONE_WORDS = re.compile(
    r"\b(?:phone|tel|telephone|mobile|cell|cellphone|call|text|sms|whatsapp|signal|number|contact|reach|dial|fax"
    r"|telefon|handy|rufnummer|nummer|téléphone|portable|numéro|teléfono|celular|móvil|número|telefone|telemóvel)\b"
    r"|電話|携帯|番号",
)
_PHONE = re.compile(r"(?<![0-9A-Za-z_.:/#=-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}[ .-]\d{2,4}[ .-]?\d{2,5}"
                    r"(?:[ .-]\d{2,4})?(?![0-9A-Za-z_.:/-])")
_INTERNATIONAL = re.compile(r"(?<![0-9A-Za-z_+])\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}(?![0-9A-Za-z_])")
_ID_WORDS = re.compile(
    r"\b(?:ssn|social\s+security|national\s+(?:id|insurance|identity)|passport|id\s+(?:number|card|no)|tax\s+id|"
    r"dni|nie|nif|cpf|rg|steuer-?id|steueridentifikationsnummer|personalausweis|insee|sécurité\s+sociale|"
    r"numéro\s+fiscal|bsn|pesel|personnummer|aadhaar|nino)\b|マイナンバー|個人番号",
)
_NATIONAL_ID = re.compile(
    r"\b\d{3}-\d{2}-\d{4}\b"  # US SSN
    r"|\b\d{3}\.\d{3}\.\d{3}-\d{2}\b"  # BR CPF
    r"|\b[a-ceghj-pr-tw-z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[a-d]\b"  # UK NINO
    r"|\b\d{8}-?[a-z]\b|\b[xyz]-?\d{7}-?[a-z]\b"  # ES DNI / NIE
    r"|\b[12]\s?\d{2}\s?\d{2}\s?\d{2}\s?\d{3}\s?\d{3}(?:\s?\d{2})?\b"  # FR INSEE
    r"|\b\d{11}\b|\b\d{4}\s\d{4}\s\d{4}\b"  # DE Steuer-ID, JP My Number
)
_EMAIL = re.compile(r"(?<![\w.+-])([\w.+-]{1,64})@((?:[\w-]{1,63}\.)+[a-z]{2,24})(?![\w.-]*\w)", re.I)
# Local parts of addresses that are a role, a robot or a placeholder, not a person.
_ROLE_ADDRESSES = frozenset({
    "noreply", "no-reply", "donotreply", "do-not-reply", "bot", "ci", "admin", "administrator", "support", "info",
    "team", "ops", "dev", "devs", "git", "github", "gitlab", "security", "hello", "contact", "notifications",
    "notification", "root", "user", "users", "test", "tests", "example", "you", "your", "yourname", "name",
    "someone", "somebody", "me", "email", "mail", "postmaster", "webmaster", "hostmaster", "abuse", "sales",
    "billing", "help", "helpdesk", "service", "services", "office", "hr", "jobs", "careers", "press", "legal",
    "privacy", "release", "releases", "deploy", "build", "builds", "alerts", "alert", "monitoring", "oncall",
    "on-call", "engineering", "maintainers", "maintainer", "owner", "owners", "feedback", "newsletter", "marketing",
    "foo", "bar", "baz", "john.doe", "jane.doe", "user.name", "first.last", "firstname.lastname", "git-bot",
})
# The user's own address: "my email is …", "reach me at …", and the same in the other languages.
_OWN_ADDRESS = re.compile(
    r"\b(?:my|mine)\s+(?:work\s+|personal\s+|private\s+)?(?:e-?mail|address|contact)(?:\s+address)?\s*(?:is|:)"
    r"|\b(?:reach|contact|email|mail|write\s+to)\s+me\s+(?:at|on|via)"
    r"|\bmeine?\s+(?:e-?mail|adresse)(?:-adresse)?\s*(?:ist|lautet|:)|\bmon\s+(?:e-?mail|adresse)\s*(?:est|:)"
    r"|\bmi\s+(?:correo|e-?mail)\s*(?:electrónico\s+)?(?:es|:)|\bmeu\s+(?:e-?mail|endereço)\s*(?:é|:)"
    r"|私のメール",
)


def _person_address(local: str, domain: str) -> bool:
    local = local.lower()
    base = local.split("+", 1)[0]
    if base in _ROLE_ADDRESSES or any(word in base for word in ("noreply", "no-reply", "bot", "[bot]")):
        return False
    if any(part in _ROLE_ADDRESSES for part in re.split(r"[._-]", base)):  # dev-team@, release.eng@
        return False
    if domain.lower().endswith(("users.noreply.github.com", ".local", ".internal", ".svc")):
        return False
    return any(c.isalpha() for c in base)


_IBAN = re.compile(r"\b[a-z]{2}\d{2}(?:[ ]?[a-z0-9]{4}){3,7}(?:[ ]?[a-z0-9]{1,3})?\b")
# Each word is bounded: an unbounded "[\w-]+" before a suffix backtracks over a long kebab-case or base64url run
# from each of its "-" (quadratic).
_STREET = re.compile(
    r"\b\d{1,5}[a-z]?\s+(?:[a-z][\w'-]{0,40}\s+){1,3}(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard"
    r"|blvd|way|court|ct|place|pl|square|sq|terrace)\b|\b(?:rue|calle|rua|avenida|av\.)\s+[\w' -]{2,40},?\s*\d{1,5}\b"
    r"|\b[\w-]{1,60}(?:straße|strasse|weg|gasse|platz)\s+\d{1,5}\b"
)
_ID_VALUE = re.compile(r"\b[a-z]{0,2}\d[\d .-]{4,20}\d[a-z]?\b")


_NUMBER = re.compile(r"[+(]?\d(?:[ .()/-]?\d){5,30}")  # six digits or more: a phone number, an id, an IBAN
_ADDRESS_WORDS = ("address", "adresse", "dirección", "endereço", "住所")
_MAX_LINES = 300  # lines with a long number looked at per chunk (a log of numbers is command output anyway)


def third_party_personal_data(lower: str) -> str | None:
    """What kind of another person's personal data ``text`` holds ("phone number", "national id", "bank
    account", "postal address", "e-mail address"), or None. A phone number or an id needs its word on the same
    line (or a ``+`` country code); what the user gives as their own ("my email is …") is not a third party's.
    ``lower``: the text, lowercase."""
    seen: set[int] = set()
    for match in _NUMBER.finditer(lower):
        start = lower.rfind("\n", 0, match.start()) + 1
        if start in seen:
            continue
        seen.add(start)
        if len(seen) > _MAX_LINES:
            break
        end = lower.find("\n", match.end())
        kind = _line_personal_data(lower[start:] if end == -1 else lower[start:end])
        if kind:
            return kind
    for word in _ADDRESS_WORDS:
        pos = lower.find(word)
        if pos != -1:
            start, end = lower.rfind("\n", 0, pos) + 1, lower.find("\n", pos)
            line = lower[start:] if end == -1 else lower[start:end]
            if _STREET.search(line) and not re.search(r"\bmy\s+(?:\w+\s+)?address|\bmeine\s+adresse", line):
                return "postal address"
    pos = lower.find("@")
    own: bool | None = None
    while pos != -1:
        for match in _EMAIL.finditer(lower, max(0, pos - 65), pos + 260):
            if _person_address(match.group(1), match.group(2)):
                if own is None:
                    own = _OWN_ADDRESS.search(lower) is not None
                if not own:
                    return "e-mail address"
        pos = lower.find("@", pos + 260)
    return None


def _line_personal_data(line: str) -> str | None:
    """The kind of personal data one lowercase line holding a long number has, or None."""
    if _ID_WORDS.search(line) and (_NATIONAL_ID.search(line) or _ID_VALUE.search(line)):
        return "national id"
    if "iban" in line and _IBAN.search(line) and not _own_phone(line):
        return "bank account"
    if re.search(r"\b\d{3}-\d{2}-\d{4}\b|\b\d{3}\.\d{3}\.\d{3}-\d{2}\b", line):
        return "national id"
    if "+" in line and _INTERNATIONAL.search(line) and not _OWN_ADDRESS.search(line) and not _own_phone(line):
        return "phone number"
    if _PHONE_WORDS.search(line) and _PHONE.search(line) and not _own_phone(line):
        return "phone number"
    return None


def _own_phone(line: str) -> bool:
    return re.search(r"\bmy\s+(?:\w+\s+)?(?:phone|number|mobile|cell)|\bmeine?\s+(?:telefon|handy|nummer)"
                     r"|\bmon\s+(?:numéro|téléphone|portable)|\bmi\s+(?:teléfono|número|celular|móvil)"
                     r"|\bmeu\s+(?:telefone|número|celular)", line) is not None


_ACK_TEXT = (
    "ok okay k kk okey oki yes yep yeah yup sure no nope thanks thank thx ty tysm cheers great good nice cool "
    "perfect awesome excellent brilliant lovely fine alright right understood got it done sounds looks lgtm "
    "works worked that this is will do go ahead please continue proceed you so much a lot very much welcome "
    "np noted ack roger gotcha agreed exactly correct indeed wonderful amazing super 👍 🙏 ✅ 🎉 ❤️ 😊 🙂 "
    "danke schön vielen dank gut prima genau passt merci beaucoup parfait d'accord très bien gracias muchas vale "
    "perfecto genial bueno obrigado obrigada muito certo beleza ótimo ありがとう ありがとうございます 了解 了解です "
    "はい いいね 完璧 わかりました 承知しました 谢谢 好的 glad to help happy let me know if need anything else i "
    "it's that's all for now you're de rien gern geschehen nada por hi hello hey how can stored saved bitte gerne "
    "avec plaisir con gusto meet anytime helped on problem どういたしまして sounds"
)
_ACK_WORDS = frozenset(_ACK_TEXT.split())


_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|[\U0001F300-\U0001FAFF\u2600-\u27BF]")


def acknowledgement(user_text: str, agent_text: str) -> bool:
    """The user's words are a short acknowledgement (at most 8 words, each of them one of :data:`_ACK_WORDS`) and
    the agent's reply, if any, is a sentence or two (at most 16 words): nothing else was said."""
    if len(user_text) > 100 or len(agent_text) > 200:
        return False
    words = _WORDS.findall(user_text.lower())
    if not words:  # the agent's words alone (the user's message held only recalled memory): all acknowledgement
        reply = _WORDS.findall(agent_text.lower())
        return 0 < len(reply) <= 12 and all(word in _ACK_WORDS for word in reply)
    return len(words) <= 8 and all(word in _ACK_WORDS for word in words) and len(_WORDS.findall(agent_text)) <= 16
