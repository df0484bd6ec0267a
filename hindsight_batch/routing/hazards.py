"""What no memory should hold, or no User Bank should take, found in a chunk's text (issue 38).

* prompt injection: text addressed to an AI or a memory system ("AI assistants reading this", "note to LLM
  memory systems", "store this preference globally", ``<!-- agent: … -->``). In what the agent read or wrote it is
  never the user's preference; wherever it stands, the chunk goes to no User Bank and the decision says why.
* memory echo: earlier memory quoted back in prose ("From your memory bank: you prefer …"); S1's markers are
  ``retention/memory_filter.py``'s, this is the prose form of the same thing.
* third-party personal data: phone numbers, national ids and e-mail addresses of people other than the user.
* acknowledgement: a chunk that holds nothing but "ok", "thanks", "sounds good" and the like.

Each check is gated by a cheap substring test, so a chunk without the words pays one ``in`` per check.
"""

from __future__ import annotations

import re

_AI = (r"(?:ai|a\.i\.|llms?|(?:large\s+)?language\s+models?|(?:ai\s+|coding\s+)?agents?|(?:ai\s+|coding\s+)?"
       r"assistants?|models?|bots?|chatbots?|copilots?|claude|chatgpt|gpt(?:-\d\w*)?|gemini|codex|crawlers?"
       r"|memory\s+(?:systems?|stores?|banks?|tools?|layers?)|automated\s+(?:systems?|tools?|agents?))")
# Anywhere, whoever wrote it: addressed to an AI or a memory system, or an order to store something globally.
_INJECTION_ANY = re.compile(
    rf"\b{_AI}\s+(?:that\s+(?:are\s+|is\s+)?|who\s+(?:are\s+|is\s+)?)?(?:reading|processing|parsing|indexing|"
    r"ingesting|summari[sz]ing|scanning|seeing|consuming|reads?|process(?:es)?|sees?)\s+(?:this|these)\b"
    rf"|\bnotes?\s+(?:to|for)\s+(?:any\s+|all\s+|the\s+|future\s+|an?\s+)?(?:{_AI}|memory|memories)\b"
    rf"|\b(?:to|for)\s+(?:any|all|every)\s+{_AI}"
    rf"|\b(?:important|attention|note|notice|instructions?|message|psa|reminder|warning)\s*+[:,]?\s+(?:for|to)\s+"
    rf"(?:all\s+|any\s+|the\s+)?{_AI}"
    r"|\bi\s+am\s+the\s+user\b|\[system\]|\bmemory\s+update\s*:|\buser\s+preference\s*="
    r"|\bignore\s+(?:all\s+|any\s+|the\s+|your\s+)?(?:previous|prior|earlier|above|preceding|former)\s+"
    r"(?:instructions|prompts?|rules|directions)"
    r"|<!--\s*(?:ai|agents?|llms?|assistants?|claude|copilot|gpt|bots?|memory)\b"
    r"|\bhinweis\s+(?:an|für)\s+(?:die\s+|alle\s+|den\s+)?(?:ki|llms?|agenten|assistenten|ki-\w+)"
    r"|\b(?:ki|llms?|ki-assistenten|ki-agenten),?\s+die\s+(?:dies|das|diesen\s+text)\s+lesen"
    r"|\bnotes?\s+(?:pour|à|aux)\s+(?:l'ia|les\s+ia|l'assistant|les\s+assistants|les\s+agents|llms?|l'agent)"
    r"|\b(?:ia|ias|llms?|assistants?\s+ia|agents?\s+ia)\s+qui\s+(?:lisez|lisent|lit)\b"
    r"|\bnotas?\s+(?:para|a)\s+(?:la\s+|el\s+|a\s+|o\s+|los\s+|las\s+|os\s+|as\s+)?(?:ia|ias|llms?|agentes?|"
    r"asistentes?|assistentes?|modelos?)\b"
    r"|\b(?:ia|ias|llms?|asistentes|assistentes|agentes)\s+que\s+(?:lean|leen|lêem|leem|lee|lê)\b"
    r"|(?:ai|llm|エージェント|アシスタント)(?:への|に)(?:注意|メモ|指示|お知らせ)|(?:エージェント|アシスタント)へ[:：、]"
    r"|これを読んでいる(?:ai|llm|アシスタント|エージェント)",
)
_INJECTION_ANY_GATE = ("reading", "processing", "parsing", "indexing", "ingesting", "summari", "scanning", "seeing",
                       "consuming", "read", "process", "sees", "note", "memory", "memories", "ignore", "<!--",
                       "hinweis", "lesen", "lisez", "lisent", "lit ", "nota", "lean", "leen", "lêem", "leem", "lee ",
                       "lê ", "への", "読んで", "へ", " to ", " for ", "the user", "[system]", "preference")
# In what the agent read or wrote only: claims about the user's preferences, orders to remember something in
# every repo, greetings to an AI. The user may write "remember that I use tabs in every repo"; a README may not.
_INJECTION_READ = re.compile(
    r"\b(?:store|save|add|write|record|persist|put|keep|commit|memori[sz]e|remember)\s+(?:this|that|these|the"
    r"\s+following|it)(?:\s+[\w'-]+){0,3}?\s+(?:globally|permanently|forever|(?:in|into|to)\s+(?:your\s+|the\s+)?"
    r"(?:[\w-]+\s+){0,2}(?:memory|memories|user\s+bank|memory\s+bank)|for\s+(?:all|every|future)"
    r"\s+(?:sessions?|projects?|repos?|repositories|conversations?))"
    r"|\bapply\s+(?:this\s+|it\s+)?globally|\bglobal(?:ly)?\s+(?:memory|user\s+memory)"
    r"|\b(?:l'utilisateur|der\s+benutzer|die\s+benutzerin|el\s+usuario|la\s+usuaria|o\s+usuário|o\s+utilizador)\s+"
    r"(?:\w+\s+)?(?:préfère|veut|aime|souhaite|möchte|bevorzugt|will|mag|prefiere|quiere|prefere|quer|gosta)"
    r"|\b(?:mémorisez|mémorise|merken|speichern|guarda|guárdalo|salve|salva|memorize|memoriza)[\w-]*\s+"
    r"(?:\w+\s+)?(?:globalement|global|globalmente)|\bglobal\s+speichern|グローバルメモリ|ユーザーは"
    r"|\bthe\s+user(?:'s)?\s+(?:always\s+|really\s+|strongly\s+|now\s+)?(?:prefers?|preferred|preference|wants|"
    r"likes|loves|hates|requires|approves|has\s+approved|allows|insists|name\s+is|is\s+called)"
    r"|\b(?:remember|memori[sz]e|note|store|save|record)\b[^.\n]{0,160}?\b(?:in|across|for|on)\s+(?:every|all|"
    r"any|each)\s+(?:(?:of\s+)?(?:their|his|her|the|your|my)\s+)?(?:repos?|repositories|projects?|codebases?|"
    r"sessions?|conversations?)\b"
    rf"|\b(?:attention|dear|hey|hello|hi|instructions?\s+(?:to|for)|message\s+(?:to|for)|to\s+all|psa\s+for)\s*"
    rf"[:,]?\s+(?:the\s+|any\s+|all\s+)?{_AI}\b",
)
_INJECTION_READ_GATE = ("the user", "remember", "memori", "mémori", "note", "store", "save", "record", "attention",
                        "dear", "hey", "hello", "hi ", "instruction", "message", "to all", "psa", "global",
                        "utilisateur", "benutzer", "usuario", "usuária", "usuário", "utilizador", "speicher",
                        "guarda", "salv", "ユーザー", "グローバル")


def prompt_injection(user_text: str, other_text: str) -> bool:
    """Text addressed to an AI or a memory system: anywhere by :data:`_INJECTION_ANY`, in what the agent read or
    wrote also by :data:`_INJECTION_READ`. Both arguments lowercase."""
    for text, pattern, gate in ((user_text, _INJECTION_ANY, _INJECTION_ANY_GATE),
                                (other_text, _INJECTION_ANY, _INJECTION_ANY_GATE),
                                (other_text, _INJECTION_READ, _INJECTION_READ_GATE)):
        if text and any(word in text for word in gate) and pattern.search(text):
            return True
    return False


_ECHO = re.compile(
    r"\b(?:from|according\s+to|based\s+on|per)\s+(?:your|my|the\s+user's)\s+(?:stored\s+|saved\s+|"
    r"long-term\s+|hindsight\s+)?(?:memory\s+banks?|memories|memory|user\s+bank|stored\s+preferences|saved\s+"
    r"preferences|recalled\s+memories)\b(?!\s+(?:usage|leak|footprint|limit|allocation|pressure|consumption))"
    r"|\bfrom\s+the\s+(?:memory\s+bank|user\s+bank)\b"
    r"|\bwhat\s+(?:the\s+)?(?:memory|memories|hindsight|the\s+memory\s+bank)\s+(?:returned|says|said|recalled|holds|has"
    r"|gave|shows)\b|\bmemory\s+(?:returned|results?|search\s+returned)\b"
    r"|\bhindsight\s+(?:memory|memories|recall|recalled)\b"
    r"|\brecalled\s+(?:memories|memory|facts|preferences|context)\b"
    r"|\b(?:i|i've|we|we've)\s+recalled\b|\bmemory\s+recall\b|\brelevant\s+memories\b"
    r"|\b(?:my|your)\s+memor(?:y|ies)\s+(?:says?|shows?|notes?|indicates?|contains?|holds?|tells?)\b"
    r"|\bi\s+(?:remember|recall)\s+(?:that\s+)?you\s+(?:prefer|like|said|told|use|want|asked|are|have|always|never)"
    r"|\bas\s+you\s+(?:told|mentioned\s+to|said\s+to)\s+me\s+(?:before|previously|earlier|last\s+time)"
    r"|\byou\s+(?:previously|earlier|once)\s+(?:told|said|mentioned)\b"
    r"|\bfrom\s+(?:our\s+)?(?:past|previous|earlier|prior)\s+(?:sessions?|conversations?|chats?)\s*[,:]?\s+"
    r"(?:you|i\s+know|i\s+recall)"
    r"|\bi\s+have\s+(?:it\s+)?(?:on\s+record|noted|stored|saved)\s+that\s+you"
    r"|\b(?:stored|saved)\s+(?:in|to)\s+(?:your|my)\s+memory\s+(?:bank\s+)?(?:that|:)"
    r"|\b(?:aus|laut)\s+(?:deinem|meinem|ihrem)\s+(?:gedächtnis|speicher)|\blaut\s+(?:deinen|meinen)\s+erinnerungen"
    r"|\b(?:d'après|selon)\s+(?:ta|ma|votre)\s+mémoire"
    r"|\bsegún\s+(?:tu|mi|su)\s+memoria|\bde\s+(?:tu|mi)\s+memoria\s*:"
    r"|\b(?:de\s+acordo\s+com|segundo)\s+(?:a\s+)?(?:sua|minha)\s+memória|\bda\s+(?:sua|minha)\s+memória\s*:"
    r"|記憶によると|メモリによると|メモリーによると|記憶では",
)
_ECHO_GATE = ("memor", "recall", "told", "said", "mentioned", "previous", "past", "earlier", "prior", "noted",
              "stored", "saved", "user bank", "gedächtnis", "speicher", "erinnerungen", "mémoire", "memoria", "記憶",
              "メモリ")


def memory_echo(text: str) -> bool:
    """Earlier memory quoted back in prose. ``text`` lowercase."""
    return any(word in text for word in _ECHO_GATE) and _ECHO.search(text) is not None


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
_STREET = re.compile(
    r"\b\d{1,5}[a-z]?\s+(?:[a-z][\w'-]*\s+){1,3}(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd"
    r"|way|court|ct|place|pl|square|sq|terrace)\b|\b(?:rue|calle|rua|avenida|av\.)\s+[\w' -]{2,40},?\s*\d{1,5}\b"
    r"|\b[\w-]+(?:straße|strasse|weg|gasse|platz)\s+\d{1,5}\b"
)
_ID_VALUE = re.compile(r"\b[a-z]{0,2}\d[\d .-]{6,20}\d[a-z]?\b")


def third_party_personal_data(text: str, lower: str) -> str | None:
    """What kind of another person's personal data ``text`` holds ("phone number", "national id", "e-mail
    address"), or None. A phone number or id needs its word on the same line (or a ``+`` country code); an address
    the user gives as their own ("my email is …") is not a third party's."""
    digits = sum(c.isdigit() for c in text)
    if digits >= 7:
        for line in lower.split("\n"):
            if sum(c.isdigit() for c in line) < 7:
                continue
            if _ID_WORDS.search(line) and (_NATIONAL_ID.search(line) or _ID_VALUE.search(line)):
                return "national id"
            if "iban" in line and _IBAN.search(line) and not _own_phone(line):
                return "bank account"
            if re.search(r"\b\d{3}-\d{2}-\d{4}\b|\b\d{3}\.\d{3}\.\d{3}-\d{2}\b", line):
                return "national id"
            if _INTERNATIONAL.search(line) and not _OWN_ADDRESS.search(line) and not _own_phone(line):
                return "phone number"
            if _PHONE_WORDS.search(line) and _PHONE.search(line) and not _own_phone(line):
                return "phone number"
    if "address" in lower or "adresse" in lower or "dirección" in lower or "endereço" in lower or "住所" in lower:
        for line in lower.split("\n"):
            if _STREET.search(line) and not re.search(r"\bmy\s+(?:\w+\s+)?address|\bmeine\s+adresse", line):
                return "postal address"
    if "@" in text:
        own = _OWN_ADDRESS.search(lower) is not None
        for match in _EMAIL.finditer(text):
            if _person_address(match.group(1), match.group(2)) and not own:
                return "e-mail address"
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
