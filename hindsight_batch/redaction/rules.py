"""Secret-detection rules (S3).

Every rule must run in linear time on hostile input, because tool output can be megabytes of anything:

* a rule is tried only where one of its literal anchors occurs (found with ``str.find``), or, for the few rules
  whose secrets begin with no literal (Discord, Telegram, Twilio, an AWS secret key in prose), only in a text that
  holds their keyword, with a pattern whose first step is a look-behind that fails at once inside a run;
* every repetition is bounded or possessive (``++``, ``{m,n}+``) over a class that cannot contain what follows
  it, and most patterns require a non-token character before their start. So an attempt never backtracks, and
  attempts from different starts never re-scan the same run: total work is O(n);
* PEM private-key blocks are matched with ``str.find`` rather than a regex (:mod:`.redactor`).

Secrets without a prefix are found by the keyword rules (``secret-assignment``, ``secret-phrase``): a value after
a secret-sounding word, judged by :func:`.values.secret_value` (length, entropy, not code).

``scripts/bench_redaction.py`` feeds 10 MB adversarial lines through all of them; ``scripts/eval_redaction.py``
measures recall and precision on a labelled set.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from hindsight_batch.redaction.values import CODE as _CODE
from hindsight_batch.redaction.values import (
    base64_text,
    character_classes,
    is_chosen,
    is_code_or_reference,
    is_known_non_secret,
    is_placeholder,
    is_self_describing,
    secret_value,
    shannon_entropy,
)


@dataclass(frozen=True, slots=True)
class Rule:
    """A secret pattern.

    ``anchors`` are lowercase literals at which every match starts: the redactor finds them with ``str.find`` and
    tries the pattern only there (anchored), instead of letting the regex engine try every position. A rule with
    no anchors is searched with ``finditer`` once one of its ``prefilter`` literals was seen; a rule with both is
    tried at its anchors once a ``prefilter`` literal was seen.
    """

    id: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0  # the group that holds the secret (0: the whole match; -1: the last group that matched)
    accept: Callable[[re.Match[str]], bool] | None = None  # a second look at a candidate, to spare ordinary code
    prefilter: tuple[str, ...] = ()
    # For a text, a test of an anchor's position that a match starting there passes, far cheaper than the pattern
    # where anchors are dense (asked in increasing order of positions).
    possible: Callable[[str], Callable[[int], bool]] | None = None
    # A cheaper pattern, matching the same as ``pattern`` where ``needs_pattern`` (for a text, asked in increasing
    # order of positions) says the rest of ``pattern`` cannot match.
    lean: re.Pattern[str] | None = None
    needs_pattern: Callable[[str], Callable[[int], bool]] | None = None

    @property
    def literals(self) -> tuple[str, ...]:
        """What a text must hold for the rule to be tried at all."""
        return self.prefilter or self.anchors


_PASSWORD_WORD = re.compile(r"pass|pw", re.I)


def looks_secret(value: str, key: str = "") -> bool:
    """For a string under a secret-sounding key in a structure (``{"password": "hunter22"}``)."""
    if key and not secret_key_name(key) and _JOINED_WORDS.fullmatch(value):
        return False  # {"redis_key": "user:1234:profile"}: a key only by its name's last part, holding a name
    return secret_value(value, password=bool(_PASSWORD_WORD.search(key)), quoted=True,
                        uuid=_UUID_NAME.search(key) is not None, secret="secret" in key.lower())


# What a key's name says it is for, when the key is a secret: SIGNING_KEY, encryptionKey, MASTER_KEY (not a sort
# key, a primary key or a public one). Each is also where a match starts: few and distinctive, since every
# literal costs each batch of records a little more to search.
_KEY_PURPOSES = (
    "encrypt", "encryption", "decrypt", "decryption", "signing", "master", "hmac", "jwt", "cipher", "crypto",
    "license", "licence", "webhook", "consumer", "recovery", "session", "shared", "admin", "write", "ingest",
)
_KEY_PURPOSE_LITERALS = ("encrypt", "decrypt", "signing", "master", "hmac", "jwt", "cipher", "crypto", "licen",
                         "webhook", "consumer", "recovery", "session", "shared",
                         "adminkey", "admin_key", "admin-key", "writekey", "write_key", "write-key", "ingestkey",
                         "ingest_key", "ingest-key")  # (not "admin" or "write" alone: words of every log)
# Names that are a secret's only as a whole part of a name and before an operator (DB_PASS=v, "pw": "v", AUTH: v,
# SIGNING_KEY=v): in prose, or inside a longer word (bypass, author, design_key), they are ordinary words.
# (psk: a Wi-Fi or VPN pre-shared key, wpa_supplicant's psk=, NetworkManager's, strongSwan's ': PSK "v"')
_WHOLE_PART_NAMES = rf"passcode|pass|pw|auth|creds?|psk|(?:{'|'.join(_KEY_PURPOSES)})[_-]?key"
SECRET_KEY_NAME = re.compile(
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credential|cookie|authorization|bearer|basic[_-]?auth",
    re.I,
)
# The whole-part names as a part of a key: DB_PASS, x-auth, "pw", creds, SIGNING_KEY, signing.key; in camelCase
# (dbPass, signingKey, authKey). Not bypass, author, hotkey, sort_key.
_PART_KEY_NAME = re.compile(rf"(?:^|[_\-.\s])(?:{_WHOLE_PART_NAMES})(?=$|[_\-.\s])", re.I)
_CAMEL_KEY_NAME = re.compile(
    r"(?:^|(?<=[a-z0-9]))(?:Pass|Pw|Auth|Creds?|(?:" + "|".join(p.capitalize() for p in _KEY_PURPOSES) + r")Key)"
    r"(?=$|[A-Z0-9_\-.])"
    r"|^(?:(?:pass|pw|auth|creds?)(?=[A-Z0-9])|(?:" + "|".join(_KEY_PURPOSES) + r")Key(?=$|[A-Z0-9_\-.]))"
)


def secret_name(name: str) -> bool:
    """Whether a name (an object key, a variable) is a secret's: by its words (:func:`secret_key_name`) or by its
    last part (DD_APP_KEY, GH_PAT), unless that names a database's, map's or public key."""
    if secret_key_name(name):
        return True
    last = _LAST_PART.search(name)
    return last is not None and not _NOT_SECRET_KEY_NAMES.search(name[: last.start()])


_LAST_PART = re.compile(r"(?<=[A-Za-z0-9])[_.\-](?:key|KEY|Key|pat|PAT|Pat|salt|SALT)$|(?<=[a-z0-9])(?:Key|Pat)$"
                        r"|(?i:presharedkey)$")  # (not hotkey, monkey)


def secret_key_name(key: str) -> bool:
    """Whether an object key names a secret (its string value is then judged whole)."""
    return bool(SECRET_KEY_NAME.search(key) or _PART_KEY_NAME.search(key) or _CAMEL_KEY_NAME.search(key))


_HOST_END = re.compile(r"[/:?#]")
_PRIVATE_SUFFIXES = (".internal", ".local", ".lan", ".corp", ".intranet", ".home.arpa", ".private")


def private_host_checker(extra_globs: tuple[str, ...]) -> Callable[[str], bool]:
    """True for a URL whose host is on a private network: RFC 1918 and link-local addresses, internal
    top-level names, and the configured ``redaction.privateHosts`` globs. Loopback is not private: it names
    the developer's own machine and carries no secret."""

    def check(url: str) -> bool:
        rest = url.split("://", 1)[1]
        host = _HOST_END.split(rest, maxsplit=1)[0].lower() if not rest.startswith("[") else rest[: rest.find("]") + 1]
        if any(fnmatchcase(host, pattern.lower()) for pattern in extra_globs):
            return True
        if not host[:1].isdigit() and not host.startswith("["):
            return host.endswith(_PRIVATE_SUFFIXES)
        try:
            address = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            return False
        return (address.is_private or address.is_link_local) and not address.is_loopback

    return check


def _c(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_TOKEN = r"A-Za-z0-9_\-"
# Not preceded by a token character, unless it ends an escape of JSON text ("\nghp_…" in a transcript of a transcript).
_NB = rf"(?:(?<![{_TOKEN}])|(?<=\\[nrt]))"
_NA = rf"(?![{_TOKEN}])"  # not followed by one


def _refused_credential(value: str) -> bool:
    """A key or a token, as an API refused it: long, random, of three kinds of character or a long hex run; not an
    id, a path, a number, a UUID (a request's id) or a placeholder."""
    if len(value) < 20 or is_placeholder(value) or is_known_non_secret(value) or "://" in value:
        return False
    hex_run = len(value) >= 32 and all(c in "0123456789abcdefABCDEF" for c in value)
    return hex_run or (character_classes(value) >= 3 and shannon_entropy(value) >= 3.5)


def _credential(match: re.Match[str]) -> bool:
    """A header credential, unless it is a template, a placeholder or a bare name of code."""
    value = match.group(match.lastindex or 0).strip("\"'`")
    if not _url_credential(match) or is_self_describing(value):
        return False
    if any(c in value for c in "()[]") or ("." in value and _CODE.fullmatch(value) and not _has_digit(value)):
        return False  # authorization = base64.decodebytes(authorization), headers[1], request.token
    return not (len(value) < 40 and is_code_or_reference(value) and not any(c.isdigit() for c in value))


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _url_credential(match: re.Match[str]) -> bool:
    """A password in a URL or a query parameter, unless it is a template or a placeholder (a password there
    is never code, so a plain word counts)."""
    value = match.group(match.lastindex or 0).strip("\"'`")
    if _PERCENT_ENCODED.match(value):
        return not is_placeholder(value)  # %23t3q%29…: a password percent-encoded, not a %TEMPLATE%
    return len(value) >= 4 and not is_placeholder(value) and not value.startswith(("$", "{", "<", "%", "["))


# (a reserved character's code, %23 for "#", %40 for "@": not %DB_PASS%)
_PERCENT_ENCODED = re.compile(r"%(?:2[0-9A-Fa-f]|3[A-Fa-f]|40|5[BbDdEe]|60|7[B-Eb-e])"
                              r"(?![^%\s]{0,64}+%(?![0-9A-Fa-f]{2}))")


def _url_user_or_password(match: re.Match[str]) -> bool:
    """A URL's password (:func:`_url_credential`), or a token given as its user name (long and random: no one's
    name)."""
    if match.lastindex == 2:
        value = match.group(2)
        return character_classes(value) >= 3 and shannon_entropy(value) >= 4.0 and not is_placeholder(value)
    return _url_credential(match)


def _base64_private_key(match: re.Match[str]) -> bool:
    """A base64 run that starts like an encoded "-----BEGIN …" is a key when its label says PRIVATE KEY (not a
    certificate or a public key)."""
    head = re.sub(r"[^A-Za-z0-9+/]", "", match.group(0)[:96])[:64]
    try:
        decoded = base64.b64decode(head[: len(head) - len(head) % 4], validate=True)
    except (binascii.Error, ValueError):
        return False
    parts = decoded.split(b"-----", 2)  # "", the label, the rest
    return len(parts) == 3 and b"PRIVATE KEY" in parts[1]


def _docker_auth(match: re.Match[str]) -> bool:
    """A registry ``auth`` is base64 of ``user:password``."""
    decoded = base64_text(match.group(1), errors="replace")
    return decoded is not None and ":" in decoded and not is_placeholder(decoded)


# Keywords whose value is a secret: the keyword rules' alternation and literals (lowercase).
# The last part of a name that makes any name a secret's when a value is assigned to it: DD_APP_KEY=v,
# heroku.api.key=v, AZURE_DEVOPS_PAT=v, PresharedKey = v (a key or a personal access token of any service), and
# a salt that is a secret of its own (WordPress's NONCE_SALT).
_SUFFIX_NAMES = r"[_.\-](?:key|pat|salt)|presharedkey"
_KEYWORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    rf"|credentials?|bearer|basic[ _-]?auth|{_WHOLE_PART_NAMES}|{_SUFFIX_NAMES}"
)
_KEYWORD_LITERALS = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "api_key", "api-key", "apikey", "access_key",
    "access-key", "accesskey", "private_key", "private-key", "privatekey", "credential", "bearer", "basic_auth",
    "basic-auth", "basicauth", "basic auth", "pass", "pw", "auth", "cred", "psk",
    *_KEY_PURPOSE_LITERALS, "_key", ".key", "-key", "_pat", ".pat", "-pat", "_salt", "presharedkey",
)
# Names ending in _KEY that hold no secret: a database's or a map's key, a public or a site key, a key's id.
_NOT_SECRET_KEY_NAMES = re.compile(
    r"(?:public|publishable|pub|site|primary|foreign|sort|partition|cache|idempotency|object|row|range|hash|map"
    r"|lookup|group|routing|shard|cursor|index|unique|composite|translation|i18n|locale|hot|short|react|list|item"
    r"|column|field|attribute|prop|state|bucket|file|path|s3|blob|image|asset|gpg|pgp|kms|ssh|dedup|dedupe|join"
    r"|search|query|sign_in|signin|license_file|music|piano|api_key|access_key|secret)[_.\-]?$", re.I)
_WHOLE_PART = re.compile(_WHOLE_PART_NAMES, re.I)
# A name that says a UUID-shaped value is a credential (Heroku API keys, npm's legacy tokens), not an id.
# (also heroku.api.key, and a camelCase API token's name: postmarkApiToken, not an AWS ClientToken)
_UUID_NAME = re.compile(r"pass|pw|secret|api[_\-.\s]?key|access[_\-.\s]?key|auth|credential|creds?(?:$|[_\-.])"
                        r"|(?:^|[_\-.\s])token|(?-i:(?:Api|API|Server|Access|Account|Service|Admin|Deploy|Bot)Token)"
                        # (a private key, a licence's or a master key: MongoDB Atlas's private API key is a UUID)
                        r"|(?:private|licen[cs]e|master|signing|encryption)[_\-\s]?key", re.I)
# A name ending like these holds something about the secret, not the secret: TOKEN_URL, password_file, maxTokens.
_NOT_SECRET_SUFFIXES = (
    "url", "uri", "path", "file", "dir", "name", "type", "count", "len", "length", "env", "var", "header",
    "prefix", "limit", "budget", "ttl", "expiry", "expires", "expiresat", "endpoint", "field", "id", "hash",
    "policy", "mode", "format", "size", "provider", "source", "store", "usage", "estimate", "helper", "command",
    "cmd", "method", "scheme", "label", "hint", "prompt", "regex", "pattern", "strategy", "kind", "ref", "index",
    "timeout", "location", "manager", "service", "client", "count", "max", "min", "enabled", "required", "reset",
    "rotation", "version", "spec", "schema", "validator", "input", "key_id", "keyid", "arn", "stdin",
    # a setting that names how secrets are made or checked: PASSWORD_HASHERS, TOKEN_ALGORITHM, SECRET_KEY_BACKEND
    "hasher", "hashers", "hashing", "algo", "algorithm", "algorithms", "alg", "kdf", "backend", "validators",
    # a digest of the secret, or a file that holds it encrypted or named: token_sha256, credentials.yml.enc
    "sha1", "sha256", "sha512", "md5", "digest", "checksum", "fingerprint", "enc", "yml", "yaml", "json", "txt",
)
# A name made of these before the secret's word is about something else: a page token is a cursor.
_NOT_SECRET_PREFIXES = ("page", "pagination", "continuation", "cursor", "sync", "resume", "nextpage", "next_page")


_HEX = re.compile(r"[0-9a-fA-F]{7,128}")
_HASH_WORDS = ("commit", "sha", "rev", "hash", "digest", "checksum", "etag", "integrity")


def _name_before(text: str, start: int) -> str:
    """The part of a name that stands before ``start`` (DB_ of DB_PASS), at most 32 characters."""
    # (The window read backwards, matched in C: a loop in Python over it was most of the keyword rule's time.)
    run = _NAME_RUN.match(text[max(0, start - 32) : start][::-1])
    return text[start - run.end() : start] if run else ""


_NAME_RUN = re.compile(r"[\w.\-]{1,32}+")  # (\w: what str.isalnum() takes, and "_")


def _starts_a_part(text: str, start: int) -> bool:
    """Whether a name part begins at ``start``: after no letter or digit, or in camelCase (dbPass)."""
    if start == 0 or not text[start - 1].isalnum():
        return True
    return text[start].isupper() and not text[start - 1].isupper()


_COPULA = re.compile(r"[ \t](?:is|was|are)[ \t]", re.I)
# More sentence shapes that give a value after a secret's name (issue 37, second set): "I set RAILWAY_TOKEN to v"
# (after a verb of setting: _SETTING), "the wifi password at the office is v", "the X_TOKEN I use locally: v".
# A few short words at most; each shape is bounded. (The record gate's _SHAPE_GAP holds the same.)
_PROSE_WORD = r"[\w'’\-()]{1,24}+,?"
# (a copula, also of the languages that write "password" in English: "la password del server è v"; a verb of setting)
_PROSE_VERB = (r"(?:is|was|are|es|est|ist|jest|este|è|é|är|(?:re)?set[ \t]++to|changed[ \t]++to"
               r"|updated[ \t]++to|rotated[ \t]++to|(?:should|will|must|would|can)[ \t]++be|is[ \t]++now)")
# (Each word is taken once, up to the verb or the word before a colon: no backtracking over the words.)
# (The first words of the verbs, as a trie: each word is checked in a few steps, not one per verb.)
_PROSE_VERB_START = (r"(?:i(?:st?)|w(?:as|ill|ould)|are|e(?:st?e?|s)|jest|[èé]|är|s(?:et|hould)|reset|c(?:hanged|an)"
                     r"|updated|rotated|must)")
_PROSE_WORDS = rf"(?:(?!{_PROSE_VERB_START}[ \t]){_PROSE_WORD}[ \t]++){{0,5}}+"
_PROSE_WORDS_GIVEN = rf"{_PROSE_WORDS}(?:{_PROSE_VERB}|{_PROSE_WORD}:)(?=[ \t])"
_PROSE_GIVEN = r"|(?:to|as)(?=[ \t])"
_SETTING = re.compile(r"(?<![\w-])(?:set|sets|setting|changed?|changing|updated?|updating|rotated?|reset|configured?"
                      r"|export(?:ed)?|stored?)"
                      r"\s+(?:[\w-]{1,24}+\s+){0,3}+$", re.I)
# Words in the gap that make the value an id or a hash the sentence names ("the key of the commit is 3f78…").
_ID_WORDS = re.compile(r"(?<![\w-])(?:commit|sha|hash|digest|checksum|id|ids|row|record|version|revision|rev)"
                       r"(?![\w-])", re.I)


def _whole_part_use(match: re.Match[str], keyword: str) -> bool:
    """A whole-part name (pass, pw, auth, creds, SIGNING_KEY) names a secret when it starts a part of a name and is
    assigned (DB_PASS=v), a flag (--pass v), or, in prose, a key's name (the SIGNING_KEY v) or said to be it (my
    wifi pass is v): "tests pass 3 of 4" and "auth flow v2" are ordinary words."""
    if not _starts_a_part(match.string, match.start()):
        return False
    if match.group(3) is not None or match.string.endswith("-", 0, match.start()):
        return True
    if keyword[-3:].lower() == "key" and (keyword[-4] in "_-" or keyword[-3] == "K"):
        return True
    if keyword.lower() == "psk" and match.group(4) is not None:
        return True  # ipsec.secrets' : PSK "v", nmcli's wifi-sec.psk "v"
    if (keyword.lower().startswith(("pass", "pw")) and character_classes(match.group(5)) >= 3
            and not _PASSED_ON.match(match.string, match.end())):
        # the db pass Rocket#Winter8639: a chosen password, not "tests pass 3a4b5c" nor the verb: "pass
        # KEEP-1cb101c520 as the second argument", "pass X-Request-Id to the handler"
        return True
    return _COPULA.search(match.string, match.end(2), match.start(5)) is not None


_TABLE_GAP = re.compile(r"[ \t]{2,}+(?=[^\s|│║])")  # the blanks between a table's columns
_PASSED_ON = re.compile(r"[ \t]++(?:as|to|into|through|along|via|on|down|back|around|over)(?![\w\-])", re.I)


def _long_option(text: str, name_start: int) -> bool:
    """Whether a name that starts with ``--`` is a command's long option: after a space, a quote or nothing."""
    return name_start == 0 or text[name_start - 1] in " \t\n\"'`"


def _about_a_secret(rest: str) -> bool:
    """Whether what follows a secret's word in a name makes the name something else: a longer word (tokenizer,
    secretary, passwordless) or a name for something about the secret (TOKEN_URL, password_file, passwordHash)."""
    if not rest:
        return False
    if rest[0].islower() and not (rest[0] == "s" and (len(rest) == 1 or not rest[1].islower())):
        return True
    return rest.lower().replace("_", "").replace("-", "").replace(".", "").endswith(_NOT_SECRET_SUFFIXES)


def _keyword_value(match: re.Match[str]) -> bool:
    """The keyword rule's second look: is the name a secret's name, and is its value a secret?"""
    value = match.group(5)
    keyword = match.group(1)
    # secret_value's own first test, done before anything else: dense keywords ("token=token=…") stop here.
    if len(value.strip("\"'`").rstrip("=")) < (6 if keyword[0] in "pP" else 8):
        return False
    # Then the value, before the name and the words around it (each a refusal): the judgement is cached, and those
    # looks cost more where names are dense ("access_key access_key …", each name the next's value).
    rest = match.group(2)
    before = _name_before(match.string, match.start())
    name_start = match.start() - len(before)
    password = keyword[0] in "pP" and keyword[1] in "aAwW"
    # (a command's long option is no prose: cast send --private-key 0x…, --token <hex>: a value given, even an id's
    # shape)
    in_prose = match.group(3) is None and not (before == "--" and _long_option(match.string, name_start))
    # (In prose, unless the name is a variable's: set -gx XI_API_KEY v, "OPENAI_API_KEY   v".)
    prose = in_prose and not (_ENV_NAME.fullmatch(before + keyword + rest)
                              or _SHELL_SET.search(match.string, max(0, name_start - 16), name_start))
    if not secret_value(value, password=password, quoted=bool(match.group(4)), prose=prose,
                        uuid=_UUID_NAME.search(before + keyword + rest) is not None,
                        secret=keyword.lower() == "secret"):
        return False
    if keyword[0] in "_.-" or keyword[:3].lower() == "pre":  # (presharedkey, not privatekey)
        # A name's last part (DD_APP_KEY): assigned, after a name part, in a name that is not a database's key.
        assigned = match.group(3) is not None or _given(match) or _ENV_NAME.fullmatch(before + keyword)
        if not assigned or (keyword[0] in "_.-" and not match.string[match.start() - 1 : match.start()].isalnum()):
            return False
        if _NOT_SECRET_KEY_NAMES.search(before) or match.group(2):
            return False
        if _JOINED_WORDS.fullmatch(value.strip("\"'`")):
            return False  # redis_key = 'user:1234:profile', METRIC_KEY=http_requests_total_v2: a name, not a key
    elif _WHOLE_PART.fullmatch(keyword) and not _whole_part_use(match, keyword):
        return False  # "tests pass 3 of 4", bypass=…, author: …, DESIGN_KEY=…
    if _about_a_secret(rest):
        return False
    if _HEX.fullmatch(value) and any(word in match.string[max(0, match.start() - 24) : match.start()].lower()
                                     for word in _HASH_WORDS):
        return False  # "commit token 3f78…": a git SHA or a digest named as such
    if match.group(3) in ("||", "??") and not match.group(4):
        return False  # a default is a quoted literal: not n.key||!!(e.key&&…) in minified code
    if keyword.lower() == "psk" and _JOINED_WORDS.fullmatch(value.strip("\"'`")):
        return False  # "Cryptography_HAS_PSK_TLSv1_3": cryptography_has_psk_tlsv1_3, a name
    if " " in value and not password and not match.group(4):
        return False  # an unquoted app password (SMTP_PASS=abcd efgh ijkl mnop) is a password's, not "token: this…"
    if before.lower().rstrip("_-.").endswith(_NOT_SECRET_PREFIXES):
        return False  # next_page_token: a cursor
    if (match.group(3) or "").strip() == "," and not (_ENV_NAME.fullmatch(before + keyword + rest)
                                                      and _CALL_ARGUMENT.search(match.string, max(0, name_start - 12),
                                                                                name_start)):
        return False  # only a call's name and value: define('AUTH_KEY', 'v'), os.environ.setdefault("X_TOKEN", "v")
    if in_prose and not _prose_shape_given(match, before):
        return False
    if in_prose and rest.endswith("."):
        return False  # "the tests pass. KEEP-00020ebeba": the word ended a sentence
    if (in_prose and len(value) < 20 and _IDENTIFIER.fullmatch(value) and _TABLE_GAP.match(match.string, match.end(2))
            and _TABLE_GAP.match(match.string, match.end())):
        # a listing's column: "OPENAI_API_KEY   fd513a10da6dbe5a  2026-03-01" (a short digest or id, as listings
        # print them; a key is longer)
        return False
    if prose and not _given(match) and not _config_line(match) and _IDENTIFIER.fullmatch(value.strip("\"'`")):
        return False  # "I'll pass the token 99f9…-… through", "token 8985ff… of the lexer": an id, not a value given
    # (not a SealedSecret's encryptedData: ciphertext only its controller opens)
    return _SEALED.search(match.string, max(0, match.start() - 2000), match.start()) is None


# An identifier, a hash or an id: hex, a UUID, lowercase letters and digits (with - or _), a path. After a bare
# word in prose it is a name the sentence talks about, unless the words say a value is given (:func:`_given`).
_IDENTIFIER = re.compile(r"[0-9a-f\-]{7,128}+|[a-z0-9_\-]{1,128}+|[A-Z0-9_\-]{1,128}+|[\w.\-]{0,128}+/[\w./\-]{0,256}+")
_SEALED = re.compile(r"encryptedData:")
# Lowercase words and numbers joined by "_", ":" or ".": what a cache's, a metric's or a setting's key holds; a key
# of a service is one random run (or mixes cases, or joins its parts by "-", as a UUID does).
_JOINED_WORDS = re.compile(r"[a-z0-9]{1,16}+(?:[_:.][a-z0-9]{1,16}+){1,16}+")
_CALL_ARGUMENT = re.compile(r"\([ \t]*+\\{0,8}+[\"']$")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]{0,40}+(?:_[A-Z0-9]{1,40}+){1,10}+")


_SHELL_SET = re.compile(r"(?<![\w\-])set[ \t]++-[A-Za-z]{1,4}+[ \t]++$")  # fish's set -gx name v: any name's case


def _prose_shape_given(match: re.Match[str], before: str) -> bool:
    """The longer sentence shapes (_PROSE_GIVEN) give a value only as they say: "to" after a verb of setting; words
    before a copula or a colon that name no id or hash."""
    gap = match.string[match.end(2) : match.start(5)].strip(" \t\"'`\\")
    if gap.lower() in ("to", "as"):  # "I set X to v", "I exported X as v"
        head = match.string[max(0, match.start() - len(before) - 64) : match.start() - len(before)]
        return _SETTING.search(head) is not None
    if len(gap.split()) < 2:
        return True
    if _ID_WORDS.search(gap):
        return False
    # an id ("the token passed to the handler is req_8f7a…") unless a variable's name or a giving phrase says more
    name = before + match.group(1) + match.group(2)
    return not _IDENTIFIER.fullmatch(match.group(5).strip("\"'`")) or bool(
        _ENV_NAME.fullmatch(name) or _GIVING.search(match.string, max(0, match.start() - 48), match.start()))


def _config_line(match: re.Match[str]) -> bool:
    """Whether the name starts a line and its value ends it: "  password v" in a .netrc, not a sentence."""
    text = match.string
    head = text[max(0, match.start() - 160) : match.start()].rstrip(" \t")
    # (a .netrc's one-line form, "machine H login U password v", and grep -n's file:N: before a line)
    lead = _LINE_LEAD.search(head)
    if lead:
        head = head[: lead.start()]
    starts = not head or head.endswith(("\n", "\\n", "\t", "\\t", '"'))
    return starts and (match.end() == len(text) or text.startswith(("\n", "\r", "\\n", "\\r"), match.end()))


_LINE_LEAD = re.compile(r"(?:(?<![^\s\"])[^\s:\\\"]{1,64}+:[0-9]{1,7}+:)?+[ \t]*+"
                        r"(?:machine[ \t]++[^\s\\]{1,64}+(?:[ \t]++login[ \t]++[^\s\\]{1,64}+)?+)?+$")


def _given(match: re.Match[str]) -> bool:
    """Whether the words around a secret's name say its value is given: a copula ("the token is v"), a quote
    around it, or a giving phrase before the name ("here is the api key v", "use my token v")."""
    if match.group(4) is not None or _COPULA.search(match.string, match.end(2), match.start(5)) is not None:
        return True
    # (before the whole name: "aws configure set aws_secret_access_key v", "set the X_TOKEN v")
    start = match.start() - len(_name_before(match.string, match.start()))
    return _GIVING.search(match.string, max(0, start - 48), start) is not None


# Words before a secret's name that give its value: "here is the heroku api key v", "use my token v", "the new one".
_GIVING = re.compile(r"(?<![\w-])(?:here(?:'s|\s+is|\s+are)|use|using|my|our|new|paste[ds]?|rotated|set)\s+"
                     r"(?:[\w-]{1,24}+\s+){0,3}+$", re.I)


_AUTH_SCHEMES = r"bearer|basic|token|digest|bot|apikey|sso-key|ssws"
# A quoted value runs to its closing quote (the same quote, escaped or not: text that is itself a JSON string holds
# \"value\"), whatever else it holds: other quotes, "&", "#", "(" (a chosen password: "Blue&Blue8204", Django's
# ")nk&…"). An unquoted one runs to a blank or a separator; "&", ":" and "=" are part of it unless a "name=" or
# "name:" follows them (the next "key=value" of a query string), a bracket unless it is the last character (a
# call's closing parenthesis), a backslash unless it starts an escape of JSON text (\n, \"). After a bare word
# (prose, group 3 absent) no "=" or bracket: "token_type=bearer latency_ms=42" gives no value.
# A name and its value given as two fields: {"name": "DD_APP_KEY", "value": "v"} (tool calls that set a variable,
# docker inspect), "- name: DB_PASSWORD\n  value: v" (a Kubernetes container's env).
# (also CloudFormation's {"ParameterKey": "DbPassword", "ParameterValue": "v"})
_VALUE_FIELD = (r"(?:[ \t]*+,?[ \t]*+(?:(?:\\[rn]|[\r\n]){1,2}+[+\-]?[ \t]{0,40}+)?"  # (a diff's sign too)
                r"(?:\\{0,8}+[\"'])?(?:parameter)?value(?:\\{0,8}+[\"'])?(?=[ \t]*+[:=]))?")
# (A "." or a closing bracket ends the value before a blank, a quote or an escape of JSON text: "is v. It worked",
# Client(api_key=NAME)\n.)
_VALUE_END = r"(?![\s\"'`]|\\[nrt\"]|$)"
_UNQUOTED = (r"(?:[^\s\"',;{}\[\]()<>`=:&\\.]|\." + _VALUE_END + r"|[:&=](?=\S)(?![\w.\-]{1,64}+[=:])"
             r"|\((?=[^\s\"'`,;:\]}])"
             r"|\)(?=[^\s\"'`,;:)\]}\\]|\\(?![nrt]))"
             r"|\\(?![nrt\\\"'`]))")
_UNQUOTED_PROSE = (r"(?:[^\s\"',;{}\[\]()<>`=:&\\.]|\." + _VALUE_END + r"|[:&](?![\w.\-]{1,64}+[=:])"
                   r"|[()](?=[^\s\"'`,;:)\]}\\]|\\(?![nrt])))")
# (A value may hold blanks only as an app password prints them: "abcd efgh ijkl mnop", also unquoted at a line's end.)
# (A single-quoted value may hold its quote doubled, as YAML and SQL escape it: password: 'e''K5Nx…', or as a
# shell writes it: 'hPz'\''!X0…', also in JSON text.)
_VALUE = (rf"((?(4)(?:[a-z]{{4}}(?: [a-z]{{4}}){{3}}(?=\\{{0,8}}+\4)"
          rf"|(?:'(?:\\{{1,8}}+')?'(?=\S)|(?!\\{{0,8}}+\4)\S){{4,4096}}+)"
          rf"|(?(3)(?:[a-z]{{4}}(?: [a-z]{{4}}){{3}}(?=[ \t]*+(?:$|[\r\n]|\\[rn]))|{_UNQUOTED}{{4,1024}}+)"
          rf"|{_UNQUOTED_PROSE}{{4,1024}}+))"
          r"={0,3}+)")

_SHELL_WORD = r"""(?:'[^'\n]{0,256}+'|"[^"\n]{0,256}+"|[^\s'"|;&<>]{1,256}+)"""
# (also quoted in JSON text: --body \"v\")
_CLI_VALUE = (r"""('[^'\n]{1,256}+'|"[^"\n]{1,256}+"|\\{1,8}+"(?:[^"\\\n]|\\(?!\\{0,7}+"))"""
              r"""{1,256}+\\{1,8}+"|(?:[^\s'"|;&<>`\\]|\\(?![nrt"'])){1,256}+)""")


def _cli(commands: str, flag: str) -> str:
    """A command (its name ends there), up to sixteen words, then ``flag`` (which ends with the value's group)."""
    return rf"(?:{commands})(?![\w\-])(?:[ \t]++{_SHELL_WORD}){{0,16}}?[ \t]++{flag}"


_CLI_PASSWORD = "|".join((
    _cli(r"mysql(?:dump|admin|import|check|pump|sh)?|mariadb(?:-dump|-admin|-import|-check)?", "-p" + _CLI_VALUE),
    _cli(r"sshpass", r"-p[ \t]*+" + _CLI_VALUE),
    _cli(r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]++registry|az)[ \t]++login",
         r"(?:-p|--password)[ \t]++" + _CLI_VALUE),
    _cli(r"redis-cli", r"-a[ \t]++" + _CLI_VALUE),
    _cli(r"ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)", r"-w[ \t]*+" + _CLI_VALUE),
    _cli(r"sqlcmd|bcp|osql", r"-P[ \t]*+" + _CLI_VALUE),
    _cli(r"zip|unzip|zipcloak", r"-P[ \t]++" + _CLI_VALUE),
    _cli(r"7z|7za|7zr|rar|unrar", "-p" + _CLI_VALUE),
    _cli(r"ssh-keygen", r"-[NP][ \t]*+" + _CLI_VALUE),
    _cli(r"openssl", r"-k[ \t]++" + _CLI_VALUE),
    _cli(r"mongo(?:sh|dump|restore|export|import|stat|top)?", r"-p[ \t]++" + _CLI_VALUE),
    _cli(r"curl", r"""(?:-u|--user|--proxy-user|-U)[ \t]*+(?:\\{0,8}+['"])?[^\s:'"\\]{0,128}+:""" + _CLI_VALUE),
    _cli(r"keytool|jarsigner", r"-(?:src|dest)?(?:store|key)pass[ \t]++" + _CLI_VALUE),
    _cli(r"lftp", r"-u[ \t]++[^\s,]{1,128}+," + _CLI_VALUE),
    _cli(r"smbclient", r"-U[ \t]*+[^\s%]{1,128}+%" + _CLI_VALUE),
    # secrets handed to a CI's or a registry's command line, or to a server's
    _cli(r"gh[ \t]++(?:secret|variable)[ \t]++set|glab[ \t]++variable[ \t]++(?:set|create)",
         r"(?:--body|-b)(?:[ \t]*+|=)" + _CLI_VALUE),
    _cli(r"cargo[ \t]++login", "" + _CLI_VALUE),
    _cli(r"xcrun[ \t]++(?:altool|notarytool)", r"(?:-p|--password)[ \t]++" + _CLI_VALUE),
    _cli(r"redis-server", r"--requirepass[ \t]++" + _CLI_VALUE),
    _cli(r"net[ \t]++use", r"/user:[^\s]{1,128}+[ \t]++(?!/)" + _CLI_VALUE),  # (net use \\host\share /user:u v)
    _cli(r"rabbitmqctl", r"(?:add_user|change_password)[ \t]++[^\s]{1,128}+[ \t]++" + _CLI_VALUE),
    r"(?i:sshpass)=" + _CLI_VALUE,  # SSHPASS=v sshpass -e …
    # SQL: CREATE USER … IDENTIFIED BY 'v', ALTER USER … IDENTIFIED WITH mysql_native_password BY 'v'
    r"(?i:identified[ \t]++(?:with[ \t]++\w{1,64}+[ \t]++)?by)[ \t]++(?i:password[ \t]++)?" + _CLI_VALUE,
    r"send[ \t]++\{([^}\n]{1,256}+)\}",  # expect's send {v} (after a password prompt: _cli_password)
    # htpasswd -b [other flags] FILE USER PASSWORD
    r"htpasswd(?=[^\n|;&]{0,64}?[ \t]-[a-zA-Z]{0,7}b)(?:[ \t]++-[a-zA-Z]{1,8}+){1,4}+"
    r"(?:[ \t]++[^\s\-][^\s]{0,256}+){2}[ \t]++" + _CLI_VALUE,
))
# Where a match starts (lowercase). A short command name is looked for with the blank after it: "7z", "rar" or
# "bcp" alone occur in ordinary words and random ids, and every record holding one would go through the rules.
_CLI_COMMANDS = (
    "mysql", "mariadb", "sshp", "docker login", "podman login", "nerdctl login", "buildah login", "skopeo login",
    "oras login", "helm registry login", "az login", "redis-cli", "ldap", "sqlcmd", "bcp ", "osql ", "zip ",
    "unzip ", "zipcloak", "7z ", "7za ", "7zr ", "rar ", "unrar ", "ssh-keygen", "openssl", "mongo ", "mongosh",
    "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop", "curl ", "keytool",
    "jarsigner", "lftp ", "smbclient", "htpa",  # (sshpass and htpasswd hold "pass": the keyword rule's word)
    "gh secret", "gh variable", "glab variable", "cargo login", "redis-server", "rabbitmqctl", "identified by",
    "identified with", "send {", "xcrun", "net use",
)

# More of the family, as the tools' manuals give their password and token options (issue 37, second set): a
# broker's, a remote desktop's, a database shell's, a cloud CLI's, a publisher's. A value of Oracle's user/password
# (sqlplus, expdp, rman …) ends at the "@" of its connect identifier, as does a MySQL Shell URI's.
_ORACLE_PASSWORD = r"""((?:[^\s@/"'|;&<>`\\]){1,128}+)"""
_CLI_MORE_PASSWORD = "|".join((
    _cli(r"mosquitto_(?:pub|sub|rr)", r"(?:-P|--pw)[ \t]++" + _CLI_VALUE),
    _cli(r"(?:x|wl|sdl-)freerdp3?", r"/(?:p|gp|pth):" + _CLI_VALUE),
    _cli(r"rdesktop|rabbitmqadmin|cqlsh|cypher-shell|oc[ \t]++login|cf[ \t]++login|twine|vsce|ovsx|psexec(?:\.exe)?"
         r"|paexec|evil-winrm|crackmapexec|netexec|nxc", r"(?:-p|--password)[ \t]++" + _CLI_VALUE),
    _cli(r"ipmitool", r"-P[ \t]++" + _CLI_VALUE),
    _cli(r"plink|pscp|psftp", r"-pw[ \t]++" + _CLI_VALUE),
    _cli(r"cmdkey", r"/pass:" + _CLI_VALUE),
    _cli(r"schtasks", r"/RP[ \t]++" + _CLI_VALUE),
    _cli(r"security[ \t]++(?:add-(?:generic|internet)-password|(?:unlock|create)-keychain|set-keychain-password)",
         r"-[wpP][ \t]++" + _CLI_VALUE),
    _cli(r"net[ \t]++user", r"[^\s/\\]{1,128}+[ \t]++(?![/*])" + _CLI_VALUE),  # net user NAME PASSWORD /add
    # mc alias set ALIAS URL ACCESS_KEY SECRET_KEY (and the older mc config host add)
    _cli(r"mc[ \t]++(?:alias[ \t]++set|config[ \t]++host[ \t]++add)",
         r"[^\s\-][^\s]{0,127}+[ \t]++[^\s]{1,512}+[ \t]++[^\s]{1,256}+[ \t]++" + _CLI_VALUE),
    _cli(r"codecov(?:cli)?|doctl|flyctl|fly", r"(?:-t|--token|--access-token)[ \t]++" + _CLI_VALUE),
    _cli(r"etcdctl", r"--user[ \t=]++[^\s:]{1,128}+:" + _CLI_VALUE),
    _cli(r"mosquitto_passwd", r"-b[ \t]++[^\s]{1,256}+[ \t]++[^\s]{1,128}+[ \t]++" + _CLI_VALUE),
    _cli(r"htpasswd", r"-(?=[a-zA-Z]{0,6}n)(?=[a-zA-Z]{0,6}b)[a-zA-Z]{2,7}+[ \t]++[^\s\-][^\s]{0,127}+[ \t]++"
         + _CLI_VALUE),  # htpasswd -nb USER PASSWORD (no file: printed)
    _cli(r"wpa_passphrase", _SHELL_WORD + r"[ \t]++" + _CLI_VALUE),
    _cli(r"valkey-cli|keydb-cli", r"-a[ \t]++" + _CLI_VALUE),
    _cli(r"snyk[ \t]++auth|nuget[ \t]++setapikey", _CLI_VALUE),
    _cli(r"cf[ \t]++auth", r"[^\s\-][^\s]{0,127}+[ \t]++" + _CLI_VALUE),  # cf auth USER PASSWORD
    _cli(r"poetry[ \t]++config", r"http-basic\.[\w\-]{1,64}+[ \t]++[^\s]{1,128}+[ \t]++" + _CLI_VALUE),
    # database shells (Sybase and FreeTDS, SAP HANA, DB2), servers' management boards (Dell, HPE), VMware guests,
    # Samba's other clients, PDFs' passwords, ncftp
    _cli(r"isql|tsql|sqsh", r"-P[ \t]*+" + _CLI_VALUE),
    _cli(r"hdbsql|racadm|ilorest|ncftp(?:put|get)?", r"-p[ \t]++" + _CLI_VALUE),
    _cli(r"vmrun", r"-gp[ \t]++" + _CLI_VALUE),
    _cli(r"rpcclient|winexe|smbget|smbcacls|smbmap", r"-U[ \t]*+[^\s%]{1,128}+%" + _CLI_VALUE),
    _cli(r"pdftk", r"(?:user|owner|input)_pw[ \t]++" + _CLI_VALUE),
    _cli(r"db2", r"connect[ \t]++to[ \t]++[^\s]{1,128}+[ \t]++user[ \t]++[^\s]{1,128}+[ \t]++using[ \t]++"
         + _CLI_VALUE),
    _cli(r"nuget|dotnet[ \t]++nuget", r"(?:-ApiKey|-k|--api-key)[ \t]++" + _CLI_VALUE),
    _cli(r"sonar-scanner|mvn|gradle|gradlew", r"-Dsonar\.(?:login|token|password)=" + _CLI_VALUE),
    # Oracle's user/password[@connect]: sqlplus, SQL*Loader, Data Pump, RMAN, Data Guard; exp and imp only with the
    # "@" of a connect identifier or userid= (alone they are common words before a path)
    _cli(r"sqlplus|sqlldr|expdp|impdp|rman|dgmgrl|tkprof",
         r"(?:[A-Za-z]{1,16}+=)?\\{0,8}+[\"']?[A-Za-z][\w$#.]{0,63}+/" + _ORACLE_PASSWORD + r"(?=[@\s\"'\\]|$)"),
    _cli(r"exp|imp", r"(?:userid=)?[A-Za-z][\w$#.]{0,63}+/" + _ORACLE_PASSWORD + "(?=@)"),
    r"SQL>[ \t]++(?i:conn(?:ect)?)[ \t]++[A-Za-z][\w$#.]{0,63}+/" + _ORACLE_PASSWORD + r"(?=[@\s\\]|$)",
    _cli(r"mysqlsh|mysqlx", r"(?:--uri[ \t=]++)?(?:mysqlx?://)?[A-Za-z][\w.\-]{0,63}+:" + _ORACLE_PASSWORD + "(?=@)"),
    r"jdbc:oracle:(?:thin|oci8?):[A-Za-z][\w$#.]{0,63}+/" + _ORACLE_PASSWORD + "(?=@)",  # a JDBC URL's user/password@
    # a secret store's set command, whose value option or second word is the secret whatever the name: Azure Key
    # Vault, SSM's SecureString, Pulumi's --secret config; InfluxDB's password and token
    _cli(r"az[ \t]++keyvault[ \t]++secret[ \t]++set", r"--value[ \t=]++" + _CLI_VALUE),
    _cli(r"aws[ \t]++ssm[ \t]++put-parameter(?=[^\n|;&]{0,512}?SecureString)", r"--value[ \t=]++" + _CLI_VALUE),
    _cli(r"pulumi[ \t]++config[ \t]++set(?=[^\n|;&]{0,256}?--secret(?![\w\-]))",
         r"(?!-)[^\s=]{1,128}+[ \t]++" + _CLI_VALUE),
    _cli(r"influx", r"(?:-p|--password|-t|--token)[ \t=]++" + _CLI_VALUE),
))
_CLI_MORE_COMMANDS = (
    "mosquitto_", "xfreerdp", "wlfreerdp", "sdl-freerdp", "rdesktop", "rabbitmqadmin", "cqlsh", "cypher-shell",
    "oc login", "cf login", "twine", "vsce", "ovsx", "psexec", "paexec", "evil-winrm", "crackmapexec", "netexec",
    "nxc ", "ipmitool", "plink", "pscp", "psftp", "cmdkey", "schtasks", "security add-", "security unlock-",
    "security create-", "security set-", "net user", "mc alias", "mc config", "codecov", "doctl", "fly ", "flyctl",
    "etcdctl", "htpa", "wpa_passphrase", "valkey-cli", "keydb-cli",
    "snyk auth", "nuget", "dotnet nuget", "sonar-scanner", "mvn ", "gradle", "sqlplus", "sqlldr", "expdp", "impdp",
    "rman ", "dgmgrl", "tkprof", "exp ", "imp ", "sql> conn", "mysqlsh", "mysqlx", "cf auth", "poetry config",
    "jdbc:oracle:", "isql", "tsql", "sqsh", "hdbsql", "racadm", "ilorest", "ncftp", "vmrun", "rpcclient", "winexe",
    "smbget", "smbcacls", "smbmap", "pdftk", "db2 ", "az keyvault", "aws ssm", "pulumi config", "influx ",
)


# A template where a password goes: {password}, {self.pw!r}, %DB_PASS%, [PASSWORD] (<password> is a placeholder
# already).
_TEMPLATE = re.compile(r"\{(?:[A-Za-z_][^{}\s]{0,64}+)?\}|%[A-Za-z_]\w*+%|\[[A-Za-z_][\w\s.\-]*+\]")


def _given_password(value: str) -> bool:
    """A password given to a command, unless it is a reference, a command's output, another flag, a template or
    a placeholder ($PW, `cat pw`, -, {password}, %PW%, changeme). A password may begin with any other character
    ({001, [x9, %a7)."""
    value = value.strip("\"'\\")
    return (len(value) >= 4 and not value.startswith(("$", "`", "-")) and _TEMPLATE.fullmatch(value) is None
            and not is_placeholder(value))


def _stdin_password(match: re.Match[str]) -> bool:
    """A password on standard input (:func:`_given_password`); what chpasswd reads is user:password."""
    value = match.group(match.lastindex or 0)
    reader = match.string[match.start() : match.start(match.lastindex or 0)] + match.string[
        match.end(match.lastindex or 0) : match.end()]  # (not the value: "echo chpasswd | docker login …")
    if "chpasswd" in reader:
        value = value.strip("\"'").partition(":")[2]
    return _given_password(value)


def _cli_password(match: re.Match[str]) -> bool:
    """A password on a command line (:func:`_given_password`), where the command is one."""
    if match.string.startswith("send", match.start()):
        return "assword" in match.string[max(0, match.start() - 160) : match.start()]  # expect's answer to a prompt
    before = match.string[match.start() - 1 : match.start()]
    if match.string.endswith(("\\n", "\\t", "\\r"), 0, match.start()):
        before = ""  # after an escape of JSON text: a command at the start of a line
    if before and (before.isalnum() or before in "-_./"):
        return False  # inside a longer name or a path: gzip, my_mysql, ./node_modules/.bin/zip (a file, not a run)
    return _given_password(match.group(match.lastindex or 0))


# A password piped into a command that reads it from standard input (echo VALUE | docker login --password-stdin,
# printf '%s' VALUE | sudo -S …, echo user:VALUE | chpasswd), or given to one as a here-string (… <<< VALUE).
_SUDO_STDIN = rf"sudo(?:[ \t]++{_SHELL_WORD}){{0,4}}?[ \t]++(?:-[A-Za-z]{{0,6}}?S[A-Za-z]{{0,6}}+|--stdin)(?![\w\-])"
_STDIN_READERS = _SUDO_STDIN + r"|(?:sudo(?:[ \t]++-[\w\-]{1,16}+){0,4}+[ \t]++)?(?:" + "|".join((  # (sudo chpasswd)
    r"[^\n|;&<>]{0,256}?(?<![\w\-])--password-stdin(?![\w\-])",  # docker, podman, helm registry, oras… login
    r"chpasswd(?![\w\-])",
    r"passwd --stdin(?![\w\-])",
    r"gh[ \t]++secret[ \t]++set(?![\w\-])",  # (the value piped in: echo -n v | gh secret set NAME)
    rf"smbpasswd(?:[ \t]++{_SHELL_WORD}){{0,8}}?[ \t]++-[A-Za-z]{{0,4}}?s(?![\w\-])",
    rf"htpasswd(?:[ \t]++{_SHELL_WORD}){{0,8}}?[ \t]++-[A-Za-z]{{0,6}}?i(?![\w\-])",
    r"kinit(?![\w\-])",
    r"gpg2?(?![\w\-])[^\n|;&<>]{0,256}?--passphrase-fd[ =]0(?![\w\-])",
    r"openssl(?![\w\-])[^\n|;&<>]{0,256}?-pass(?:in|out) stdin(?![\w\-])",
)) + ")"
_STDIN_PASSWORD = (
    # echo [-n] VALUE | reader; printf ['%s\n'] VALUE | reader
    r"(?:(?<![\w\-./])|(?<=\\[nrt]))"
    r"(?:echo(?:[ \t]++-[neE]{1,3}+)*+"
    r"|printf(?:[ \t]++(?:'%s(?:\\{1,2}n)?'|\\{0,3}\"%s(?:\\{1,4}n)?\\{0,3}\"|%s(?:\\n)?))?)"
    rf"[ \t]++{_CLI_VALUE}[ \t]*+\|(?!\|)[ \t]*+(?:{_STDIN_READERS})"
    # reader … <<< VALUE (a flag that reads standard input, then up to sixteen words)
    rf"|(?:(?<![\w\-])|(?<=\\[nrt]))(?:{_SUDO_STDIN}|--password-stdin|chpasswd|passwd --stdin|kinit|vercel env add)"
    r"(?![\w\-])"
    rf"(?:[ \t]++{_SHELL_WORD}){{0,16}}?[ \t]*+<<<[ \t]*+{_CLI_VALUE}"
)
# Every match holds one of these (lowercase: chpasswd, passphrase-fd). None holds "pass": a literal that holds
# another is searched for in each record that holds that one, and "pass" is in many; and each starts with a letter
# that other gates start with ("c" and "p" would each cost every record one more search).
_STDIN_LITERALS = ("sudo", "stdin", "hpa", "smbpa", "htpa", "kinit", "hrase-fd", "vercel env", "gh secret")


# Password hashes in the crypt formats (bcrypt, yescrypt, Argon2) and Django's PBKDF2: a leaked hash is a password
# to crack offline. Not the "$1$", "$5$" and "$6$" forms, nor Werkzeug's "pbkdf2:sha256:…": with no letter (or none
# of a letter group's) to look for, each would cost every record one more search (docs/secrets.md).
_CRYPT = r"[./A-Za-z0-9]"
_PASSWORD_HASH = (
    rf"\$2[aby]\$[0-9]{{2}}\${_CRYPT}{{53}}"
    rf"|\$y\${_CRYPT}{{1,32}}+\${_CRYPT}{{1,64}}+\${_CRYPT}{{43}}"
    r"|\$argon2(?:id|i|d)\$(?:v=[0-9]{1,3}\$)?m=[0-9]{1,10},t=[0-9]{1,10},p=[0-9]{1,3}\$[A-Za-z0-9+/]{8,128}+"
    r"\$[A-Za-z0-9+/]{16,512}+"
    r"|pbkdf2_sha(?:1|256|512)\$[0-9]{1,9}\$[A-Za-z0-9./+]{1,128}+\$[A-Za-z0-9+/]{20,128}+={0,2}+"
)


# A secret in XML, as Maven's settings.xml, a .NET config or NuGet's keep it: <password>v</password>,
# <db.password>v</db.password>, <add key="DbPassword" value="v" />. Judged as a value under that name is. An
# element's name ends with the secret's word, so that its closing tag ends with one of the rule's literals: the
# word's last letters, not the keyword rule's words (a record holding "password" or "token" would then be
# searched for each of the rule's literals, and go to the slow pass whatever the shape of what follows).
_XML_NAME = r"(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)"
_XML_ELEMENT = r"(?:(?:password|passphrase|secret|token|credential)s?|(?:api|access|private)[_-]?key)"
# (Each starts with a letter that starts other gates already: one more would cost every record one more search.)
_XML_LITERALS = ("ord>", "ords>", "rase>", "rases>", "ret>", "rets>", "oken>", "okens>", "ey>", "ial>", "ials>",
                 "value=")
_XML_NAME_WORD = re.compile(_XML_NAME, re.I)
_XML_SECRET = (
    rf"<([\w.\-:]{{0,48}}?{_XML_ELEMENT})(?:[ \t][^<>]{{0,256}}?)?>[ \t]*+([^<>\s][^<>\n]{{0,255}}+)"
    r"</\1>"
    rf"|key[ \t]*+=[ \t]*+\"([^\"<>]{{0,48}}?{_XML_NAME}[^\"<>]{{0,32}}?)\""
    r"[ \t]++value[ \t]*+=[ \t]*+\"([^\"]{1,256}+)\""
)


def _xml_secret(match: re.Match[str]) -> bool:
    """The value under a secret's name, judged as a quoted value is (not ${env.NEXUS_PASSWORD}, {{ password }}),
    unless the name is about the secret (PasswordPolicy, TokenEndpoint)."""
    name = match.group(1) or match.group(3)
    *_, last = _XML_NAME_WORD.finditer(name)
    value = match.group(match.lastindex or 0)
    return not _about_a_secret(name[last.end():]) and looks_secret(value, name)


# Words for a password (then for a key, a token, credentials) in other languages, lowercase; a word whose first
# letter changes case outside ASCII is given without it (ароль: Пароль and пароль).
_PHRASE_PASSWORD_WORDS = ("mot de passe", "contraseña", "contrasena", "passwort", "kennwort", "wachtwoord", "senha",
                          "hasło", "haslo", "арол", "パスワード", "密码", "密碼", "口令", "şifre", "sifre", "비밀번호",
                          "lösenord", "losenord", "heslo", "mật khẩu", "kata sandi", "كلمة المرور", "كلمة السر",
                          "पासवर्ड", "parola", "salasana", "passord", "adgangskode", "lozinka", "jelszó", "app password",
                          "app-specific password",
                          # (and Korean's short form, Bulgarian's, Serbian's, Thai, Hebrew, Persian, Greek, and more)
                          "비번", "비밀 번호", "암호", "озинк", "รหัสผ่าน", "סיסמ", "رمز عبور", "گذرواژه",
                          "ωδικός πρόσβασης", "υνθηματικό", "暗証番号", "contrasenya", "parool", "geslo", "parolă",
                          "slaptažodis", "kata laluan", "mat khau", "palavra-passe")
_PHRASE_KEY_WORDS = ("clave", "schlüssel", "chiave", "clé", "sleutel", "klucz", "ключ", "キー", "密钥", "llave",
                     "chave", " key:", " key is ", "new one is ", "credenciales", "zugangsdaten",
                     "令牌", "秘钥", "トークン", "토큰", "окен", "екрет")
_PHRASE_LITERALS = (*_PHRASE_PASSWORD_WORDS, *_PHRASE_KEY_WORDS)
_PHRASE_MARK = (r"(?:[ \t]*+[:=][ \t]++|[ \t]*+：[ \t]*+|[ \t]++(?:c'est|es|ist|est|è|é|är|er|jest|je|lautet|sono"
                r"|são|is|это|это:|to|erneuert:|ist jetzt|est maintenant|es ahora|は|是)[ \t]*+"
                r"|[ \t]*+是[ \t]*+|[ \t]++[—–][ \t]++|[ \t]++)"
                r"(?:[«„“‘「『‹][ \t]*+)?")  # (a dash for a copula: "Пароль — v"; the quotes of "« v »", „v“)
# (A digit, a symbol or two changes to upper case in it (not PostgreSQL, GitHub), and not a number or an address
# alone: words of the sentence are tried as the value first, and a refused value hides the rest.)
_PHRASE_VALUE = (r"(?=[^\s0-9]{0,127}+[0-9]|[^\s!#%^&*@~$]{0,127}+[!#%^&*@~$]"
                 r"|(?-i:\S{0,127}?[a-z][A-Z]\S{0,127}?[a-z][A-Z]))"
                 r"(?![0-9.:/\-]{1,64}+(?:[\s,;)!?]|$))"
                 # (punctuation inside the value, also a run of it: "Ipd!!%hz5", not a sentence's end)
                 r"((?:[^\s.,;:!?。，、）)\"'`\\»“”’」』›]|[.,;:!?]{1,8}+(?=[^\s.,;:!?\"'`\\]))" r"{6,128}+)")
_PHRASE = (
    r"(?:app(?:-specific)? password)(?: for [^\s]{1,64}+)?(?:[ \t]++is)?[:\s]{1,3}+([a-z]{4}(?:[ \-][a-z]{4}){3})"
    r"(?![a-z])"
    r"|(?:" + "|".join(re.escape(w.rstrip()) for w in _PHRASE_PASSWORD_WORDS + _PHRASE_KEY_WORDS).replace(
        r"\ key", r"(?<=[^\W\d_])\ key") + ")"  # (" key:" after a word: "my X key: v", not YAML's "  key: v")
    # up to six words (a service, "sudo", "del server", a host 10.0.3.17) before the mark, none ending a sentence
    r"(?:[\w\-'’]{0,24}+(?:[ \t]++[\w\-'’]{1,24}+(?:\.[\w\-]{1,24}+){0,4}+){0,6}?)?" + _PHRASE_MARK + _PHRASE_VALUE
    # a user and a password after credentials' word: "creds: analytics / Passw0rd…", "login: admin / v"
    + r"|(?<![\w\-])(?:creds|credentials|login)[ \t]*+:[ \t]*+[\w.@\-]{1,64}+[ \t]*+/[ \t]*+" + _PHRASE_VALUE
)
_PHRASE_ANCHORS = (*_PHRASE_LITERALS, "creds:", "credentials:", "login:")


# What a value given in a sentence holds (secret_value, prose): a digit, a capital (letters at random change case) or
# a symbol; else a line break, which ends the sentence.
_VALUE_MARK_OR_BREAK = re.compile(r"[0-9A-Z!#$%&*+/=?@^~()\[\]{}<>|;\\]|[^\S \t]")
_APP_PASSWORD_WORDS = ("app password", "app-specific password")


def _value_ahead(text: str) -> Callable[[int], bool]:
    """Where a phrase may start: a digit, a capital or a symbol follows its word before anything but spaces and tabs
    breaks the text (an app password, four groups of lower-case letters, is the exception). The next such character
    or break is found once for all the words before it: 1 MB of "密码 " took 1.1 s, a pattern tried at each word."""
    found = -1

    def possible(pos: int) -> bool:
        nonlocal found
        if text[pos : pos + 21].lower().startswith(_APP_PASSWORD_WORDS):
            return True
        if found < pos:
            match = _VALUE_MARK_OR_BREAK.search(text, pos)
            found = len(text) if match is None else match.start()
        return found < len(text) and not text[found].isspace()

    return possible


# More languages' words for a password (issue 37, second set), with the marks of their scripts: Thai, Hindi, Bengali
# and Tamil write vowels as combining marks (not \w), Thai runs words together ("รหัสผ่านของเซิร์ฟเวอร์คือ v").
# Each is a stem where the word inflects (Hungarian jelszava, Greek κωδικός/κωδικού, Hebrew סיסמה/סיסמא).
_PHRASE_MORE_WORDS = ("รหัสผ่าน", "jelszav", "jelszót", "κωδικ", "συνθηματικ", "סיסמ", "парол", "лозинк", "geslo",
                      "parool", "parole", "slaptažod", "lykilorð", "contrasenya", "contrasinal", "pasahitz", "رمز عبور",
                      "گذرواژه", "پاس ورڈ", "পাসওয়ার্ড", "கடவுச்சொல்", "nenosiri", "kata laluan", "wagwoord",
                      "palavra-passe", "palavra passe", "암호", "패스워드", "暗証番号", "პაროლ", "գաղտնաբառ",
                      "құпия сөз", "şifrə", "нууц үг", "kodeord", "lösen", "kennwort", "hasła", "hasla", "hesla",
                      "contraseñ", "passwortes", "codice di accesso", "parola d'ordine")
_PHRASE_LETTER = r"[\w\-'’\u0300-\u036f\u0900-\u0dff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]"
_PHRASE_MORE = (
    r"(?:" + "|".join(re.escape(w) for w in _PHRASE_MORE_WORDS) + ")"
    rf"(?:{_PHRASE_LETTER}{{0,40}}+(?:[ \t]++{_PHRASE_LETTER}{{1,24}}+){{0,6}}?)?"
    r"(?:[ \t]*+[:=：][ \t]*+|[ \t]++(?:είναι|הוא|היא|on|este|adalah|ialah|là|ni|er|är|is|ist|je)[ \t]++|[ \t]++)"
    + _PHRASE_VALUE
)
# A value given before the word: "use v as the password for the admin account", "try v as your api key".
_AS_THE_SECRET = (r"(?<![\w\-])(?:use|using|try|enter|type|set|with)[ \t]++(?:\\{0,8}+[\"'`])?"
                  r"([^\s\"'`\\]{6,128}+)(?:\\{0,8}+[\"'`])?[ \t]++as[ \t]++(?:(?:the|my|your|our|a|an|its)[ \t]++)?"
                  r"(?:[\w\-]{1,24}+[ \t]++){0,2}?(password|passphrase|passcode|token|secret|api[ _\-]?key)(?![\w\-])")
_AS_THE_SECRET_LITERALS = tuple(f" as {article}{word}" for article in ("", "the ", "my ", "your ", "our ", "a ", "an ")
                                for word in ("password", "passphrase", "passcode", "token", "secret", "api key",
                                             "api_key", "api-key", "apikey"))


def _as_the_secret(match: re.Match[str]) -> bool:
    value = match.group(1)
    return secret_value(value, password=match.group(2).lower().startswith("pass"), quoted=False, prose=True)


def _phrase_value(match: re.Match[str]) -> bool:
    """An app password of four groups is one as printed; any other value is judged as a value given in prose."""
    if match.group(1) is not None:
        return not is_placeholder(match.group(1))
    value = match.group(match.lastindex or 2)
    word = match.group(0)[:12].lower()
    password = not word.startswith(tuple(w.strip()[:4] for w in _PHRASE_KEY_WORDS))
    return secret_value(value, password=password, quoted=False, prose=True, uuid=_credential_said(match))


# A credential's word in the sentence before "new one is …" (I rotated the snyk credentials, new one is …).
_CREDENTIAL_WORD = re.compile(r"credential|api[ _\-]?key|\bkeys?\b|token|secret|password", re.I)


def _credential_said(match: re.Match[str]) -> bool:
    """Whether the sentence says a UUID-shaped value is a credential (Snyk's, Postmark's and Heroku's keys are
    UUIDs): "my snyk key: …", "here's the license key: …", "rotated the snyk credentials, new one is …"; not a
    database's or a request's key ("the partition key: …", "idempotency key: …")."""
    text = match.string
    head = match.group(0)[:12].lower()
    before = text[max(0, match.start() - 80) : match.start()]
    if head.startswith("new one is"):
        return _CREDENTIAL_WORD.search(before) is not None
    if head.startswith(" key"):
        name = before.rsplit(None, 1)[-1] if before.strip() else ""
        return (not _NOT_SECRET_KEY_NAMES.search(name + "_") and not name.lower().startswith("idempot")
                and _GIVING.search(before + " ") is not None)
    return False


# A cookie as a browser tool or an export gives it: {"name": "PHPSESSID", "value": "…", "domain": …} (Playwright's
# storage state, DevTools, EditThisCookie, Puppeteer's setCookie), the name first, up to ten other fields between.
_COOKIE_OBJECT = (
    r"(?<![\w$])name\\{0,8}+[\"']?[ \t]*+:[ \t]*+\\{0,8}+[\"']([^\"'\\\s]{1,128}+)\\{0,8}+[\"']"
    r"(?:[ \t]*+,(?:[ \t\r\n]|\\[rnt]){0,32}+\\{0,8}+[\"']?(?!value\b)[A-Za-z_$][\w$]{0,31}+\\{0,8}+[\"']?[ \t]*+:"
    r"[ \t]*+(?:\\{0,8}+[\"'][^\"'\\\n]{0,256}+\\{0,8}+[\"']|true|false|null|-?[0-9][0-9.eE+\-]{0,24}+)){0,10}+"
    r"[ \t]*+,(?:[ \t\r\n]|\\[rnt]){0,32}+\\{0,8}+[\"']?value\\{0,8}+[\"']?[ \t]*+:[ \t]*+\\{0,8}+[\"']"
    r"([^\"'\\\s]{8,4096}+)"
)
# A session's or a login's cookie by its name: PHPSESSID, JSESSIONID, sessionid, connect.sid, laravel_session,
# Google's SID and __Secure-3PSID, next-auth.session-token, remember_user_token, LinkedIn's li_at.
_SESSION_COOKIE = re.compile(r"sess|sid$|^sid|auth|token|jwt|remember|login|identity|^li_at$", re.I)


# The fields of an object that give a name and its value: ECS and Kubernetes env ("name"), Postman and Terraform
# variables ("key"), SSM parameters ("Name"), CloudFormation parameters ("ParameterKey").
NAME_VALUE_FIELDS = (("name", "value"), ("key", "value"), ("Name", "Value"), ("Key", "Value"),
                     ("ParameterKey", "ParameterValue"))


def named_value_secret(name: str, value: str) -> bool:
    """A value given under a name in a field of its own ({"name": "DD_APP_KEY", "value": "…"}, a browser's cookie
    {"name": "PHPSESSID", "value": "…"}): a secret when the name is a secret's or a session cookie's and the value
    is one."""
    if _SESSION_COOKIE.search(name):
        # (a session's id is long and random: not a name such as my-session-2024 or dark-mode)
        return (len(value) >= 16 and not _DASHED_WORDS.fullmatch(value) and not is_placeholder(value)
                and secret_value(value, password=False, quoted=True))
    return secret_name(name) and looks_secret(value, name)


_DASHED_WORDS = re.compile(r"(?:[A-Za-z]{2,24}+|[0-9]{1,8}+)(?:[\-_.](?:[A-Za-z]{2,24}+|[0-9]{1,8}+)){1,12}+")


# Between a header's name and its value given as two fields: "name": "Cookie", "value": "…" (a newline, a diff's
# "+" and indentation may come between; quotes escaped in text that is JSON).
_PAIR_GAP = (r"\\{0,8}+[\"'][ \t]*+,?[ \t]*+(?:(?:\\[rn]|[\r\n]){1,2}+[+\-]?[ \t]{0,40}+)?"
             r"\\{0,8}+[\"']value\\{0,8}+[\"'][ \t]*+[:=][ \t]*+\\{0,8}+[\"']")


# A cookie's value that is a secret: long, and not a word or a number (theme=dark, consent=1).
_COOKIE_VALUE = re.compile(r"=([^;\s]{1,4096}+)")
_COOKIE_SECRET = re.compile(r"(?=[^;]{0,4095}?[0-9])(?=[^;]{0,4095}?[A-Za-z])[^;]{12,4096}")


def _basic_credentials(match: re.Match[str]) -> bool:
    """A Basic credential is the base64 of user:password (RFC 7617), a password that is no placeholder."""
    decoded = base64_text(match.group(1))
    if decoded is None:
        return False
    _user, colon, password = decoded.partition(":")
    return (bool(colon) and decoded.isprintable() and len(password) >= 4 and not is_placeholder(password)
            and not password.startswith(("$", "{", "<", "%")))


# Where _PROSE_WORDS_GIVEN can end: a copula or a verb of setting after a blank, or a colon, and then a blank.
_PROSE_WORDS_END = re.compile(rf"(?<=[ \t]){_PROSE_VERB}(?=[ \t])|:(?=[ \t])", re.I)
# What its words, blanks and ending hold: anything else breaks the sentence.
_PROSE_WORDS_BREAK = re.compile(r"[^\w'’\-(), \t]")
_BLANKS = re.compile(r"[ \t]{2}")
# Before the blanks that precede the words, a match holds its name, its rest, a quote and a "]" (a "value" field is
# followed by an operator, never by words): fewer characters than this, the only ones that may break the sentence.
_NAME_REACH = 128
# A name and the words, blanks and ending of _PROSE_WORDS_GIVEN after it, when no two blanks follow one another
# (six words of at most 25 characters): fewer characters than this.
_WORDS_REACH = 512


def _prose_words_ahead(text: str) -> Callable[[int], bool]:
    """Where the keyword rule's sentence shape of a few words (_PROSE_WORDS_GIVEN) may match after a name starting
    at a position: an ending lies ahead, before anything its words cannot hold past the name, and near (or after
    runs of blanks). Elsewhere the pattern without it matches the same. Each search is done once for all the names
    before what it found: 1 MB of "token password secret api_key " took 0.3 s more, each name trying five words."""
    end = brk = blanks = -1

    def needed(pos: int) -> bool:
        nonlocal end, brk, blanks
        if end <= pos:
            found = _PROSE_WORDS_END.search(text, pos + 1)
            end = len(text) + 1 if found is None else found.start()
        if end > len(text):
            return False
        if brk < pos + _NAME_REACH:
            found = _PROSE_WORDS_BREAK.search(text, pos + _NAME_REACH)
            brk = len(text) if found is None else found.start()
        if end > brk:
            return False
        if end - pos <= _WORDS_REACH:
            return True
        if blanks < pos:
            found = _BLANKS.search(text, pos)
            blanks = len(text) if found is None else found.start()
        return blanks < brk

    return needed


def _keyword_pattern(words: bool) -> re.Pattern[str]:
    """The keyword rule's pattern; with ``words``, also the sentence shape of a few words, then a copula, a verb of
    setting or a word and a colon (_PROSE_WORDS_GIVEN), tried only where :func:`_prose_words_ahead` allows."""
    return _c(
        rf"({_KEYWORDS}|api key|access key|private key)([A-Za-z0-9_.\-]{{0,32}}+)(?:\\{{0,8}}+[\"'`])?"
        + _VALUE_FIELD
        # (operators: a markdown table's cell after a `name`, a call's next argument after a quoted name, a
        # box-drawn table's cell (railway variables); a pydantic SecretStr('v') as a settings object prints it)
        # (and a default after a reference: process.env.TWILIO_AUTH_TOKEN || "v", settings.API_KEY ?? "v")
        + r"\]?(?:[ \t]*+(:=|=>|[:=│→]|(?<=[ \t])->|\|\||\?\?|(?:(?<=`)|(?<=` ))\||(?<=[\"'])[ \t]*+,)[ \t]*+"
        r"|[ \t]++(?:(?:is|was|are|of|for (?:the )?[a-z0-9.\-]{1,64}+ is"
        r"|changed to|is now|del [a-z\-]{1,20}+ è|for [a-z\-]{1,20}+:" + _PROSE_GIVEN
        + ("|" + _PROSE_WORDS_GIVEN if words else "") + r")[ \t]++)?"
        # ("the root password, in case you need it, is v")
        rf"|,[ \t]++{_PROSE_WORDS}{_PROSE_VERB}[ \t]++)"
        # (not grep -n's line number after a file named for a secret: secrets.toml:6:resend_api_key = "v"; not a
        # reference, whose variable's own name and default are tried next: process.env.TWILIO_AUTH_TOKEN || "v")
        r"(?![0-9]{1,7}+:|process\.env\.|import\.meta\.env\.|os\.environ|os\.getenv)"
        # (a string split over lines in brackets: api_key=("abc…"\n "def…"), see redactor._redact_continued)
        r"(?:Secret(?:Str|Bytes)\(|\((?=\\{0,8}+[\"']))?(?:\\{0,8}+([\"'`])|)(?:b\"|r\")?" + _VALUE,
        re.I,
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "authorization-header",
        # (and the headers that carry a service's key under a name with no secret's word: Honeycomb's, JFrog's)
        ("authorization", "proxy-authorization", "x-honeycomb-team", "x-jfrog-art-api"),
        _c(
            r"(?:(?<![\w-])|(?<=\\[nrt]))(?:(?:proxy-)?authorization|x-honeycomb-team|x-jfrog-art-api)"
            r"(?:\\{0,8}+[\"'`])?\s*+[:=]\s*+(?:\\{0,8}+[\"'`])?"
            rf"(?:(?:{_AUTH_SCHEMES}|[A-Za-z][\w\-]{{1,24}}+(?=\s))\s++)?([^\s\"'`,;\\]{{6,4096}}+)",
            re.I,
        ),
        1,
        _credential,
    ),
    Rule("bearer-token", ("bearer",), _c(rf"{_NB}bearer\s++([A-Za-z0-9._~+/=\-]{{16,4096}}+)", re.I), 1,
         _credential),
    Rule(
        "cookie",
        ("cookie", "set-cookie"),
        # (to the end of the line, or of a quoted header: -H 'Cookie: …'; "\n" ends it in text that is JSON)
        # (name=value pairs: "cookie: string" in a type is not a header)
        _c(r"(?:(?<![\w-])|(?<=\\[nrt]))(?:set-)?cookie[ \t]*+:[ \t]*+(?=[^\s=;,]{1,256}+=)"
           r"((?:[^\r\n'\"\\]|\\(?![nrt\"'])){1,4096}+)",
           re.I),
        1,
    ),
    Rule("session-cookie", ("name",), _c(_COOKIE_OBJECT), 2,
         lambda match: named_value_secret(match.group(1), match.group(2)),
         prefilter=("cookie", "sessid", "sessionid")),  # (not "sess": "session" is in most records of some sessions)
    # A header given as a name and a value (a HAR capture's headers, a Postman collection, a probe's httpHeaders),
    # also in a diff (+ lines) and in text that is JSON: the Authorization's credential, the Cookie's values.
    Rule("authorization-header", ("authorization",),
         _c(r"(?:proxy-)?authorization" + _PAIR_GAP + rf"(?:(?:{_AUTH_SCHEMES}|[A-Za-z][\w\-]{{1,24}}+)[ \t]++)?"
            r"([^\s\"'`,;\\]{6,4096}+)", re.I), 1, _credential),
    Rule("cookie", ("cookie",),
         _c(r"(?:set-)?cookie" + _PAIR_GAP
            + r"(?=[^\s=;,\"'\\]{1,256}+=)((?:[^\r\n'\"\\]|\\(?![nrt\"'\\])){1,4096}+)", re.I),
         1, lambda match: any(_COOKIE_SECRET.fullmatch(value) for value in _COOKIE_VALUE.findall(match.group(1)))),
    # HTTP Basic credentials wherever they stand (nginx's proxy_set_header, an access log's auth="Basic …"): the
    # base64 of user:password, decoded to tell it from a word ("Basic usage").
    # HTTP Basic or Digest credentials given to a client in code: requests' auth=("user", "v"), HTTPBasicAuth("user",
    # "v"), aiohttp's BasicAuth("user", "v"): the second literal is the password (not a name: auth=(user, pw)).
    Rule("authorization-header", ("auth=(", "auth = (", "basicauth(", "digestauth("),
         _c(r"(?:auth[ \t]*+=[ \t]*+\(|(?:Basic|Digest)Auth\()[ \t]*+\\{0,8}+[\"'][^\"'\\\r\n]{0,128}+\\{0,8}+[\"']"
            r"[ \t]*+,[ \t]*+\\{0,8}+[\"']([^\"'\\\r\n]{4,256}+)\\{0,8}+[\"']", re.I),
         1, lambda match: _given_password(match.group(1))),
    Rule("authorization-header", ("basic",),
         _c(rf"{_NB}basic[ \t]++([A-Za-z0-9+/]{{8,2048}}+={{0,2}}+)(?![A-Za-z0-9+/=])", re.I), 1, _basic_credentials),
    Rule(
        "aws-access-key",
        ("akia", "asia", "abia", "acca"),
        _c(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    Rule(
        "aws-secret-key",
        (),
        _c(r"aws_?secret_?access_?key[\"']?\s*+[:=]\s*+[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])", re.I),
        1,
        prefilter=("secret_access_key", "secretaccesskey", "secret_accesskey", "secretaccess_key"),
    ),
    Rule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _c(rf"{_NB}(?:gh[pousr]_[A-Za-z0-9]{{30,255}}+|github_pat_[A-Za-z0-9_]{{22,255}}+)"),
    ),
    Rule(
        "gitlab-token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "gloas-", "glimt-", "glagent-", "glffct-", "glft-"),
        _c(rf"{_NB}gl(?:pat|dt|rt|ptt|soat|cbt|oas|imt|agent|ffct|ft)-[A-Za-z0-9_\-]{{20,255}}+"),
    ),
    Rule("anthropic-key", ("sk-ant-",), _c(rf"{_NB}sk-ant-[A-Za-z0-9_\-]{{20,512}}+")),
    Rule("openai-key", ("sk-",), _c(rf"{_NB}sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,512}}+")),
    Rule(
        "stripe-key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
        _c(rf"{_NB}[sr]k_(?:live|test)_[A-Za-z0-9]{{16,255}}+"),
    ),
    Rule("stripe-webhook-secret", ("whsec_",), _c(rf"{_NB}whsec_[A-Za-z0-9+/=]{{24,128}}+")),
    Rule(
        "slack-token",
        ("xox", "xapp-"),
        _c(rf"{_NB}(?:xox[abposre]-[A-Za-z0-9\-]{{10,512}}+|xapp-[0-9]-[A-Za-z0-9\-]{{10,512}}+)"),
    ),
    Rule(
        "slack-webhook",
        ("https://hooks.slack.com/",),
        _c(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{10,256}+"),
    ),
    Rule("google-api-key", ("aiza",), _c(rf"{_NB}AIza[0-9A-Za-z_\-]{{35}}{_NA}")),
    Rule("google-oauth-token", ("ya29.",), _c(rf"{_NB}ya29\.[0-9A-Za-z_\-]{{20,2048}}+")),
    Rule("npm-token", ("npm_",), _c(rf"{_NB}npm_[A-Za-z0-9]{{36}}(?![A-Za-z0-9])")),
    Rule("pypi-token", ("pypi-",), _c(rf"{_NB}pypi-AgE[A-Za-z0-9_\-]{{40,1024}}+")),
    Rule("huggingface-token", ("hf_",), _c(rf"{_NB}hf_[A-Za-z0-9]{{30,40}}(?![A-Za-z0-9])")),
    Rule("sendgrid-key", ("sg.",), _c(rf"{_NB}SG\.[A-Za-z0-9_\-]{{16,32}}\.[A-Za-z0-9_\-]{{30,64}}+")),
    Rule("mailgun-key", ("key-",), _c(rf"{_NB}key-[0-9a-f]{{32}}(?![A-Za-z0-9])")),
    Rule("digitalocean-token", ("dop_v1_", "doo_v1_", "dor_v1_"), _c(rf"{_NB}do[por]_v1_[a-f0-9]{{64}}{_NA}")),
    Rule("databricks-token", ("dapi",), _c(rf"{_NB}dapi[a-f0-9]{{32}}(?:-[0-9]{{1,2}})?{_NA}")),
    Rule(
        "shopify-token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        _c(rf"{_NB}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_NA}"),
    ),
    Rule("heroku-key", ("hrku-",), _c(rf"{_NB}HRKU-[A-Za-z0-9_\-]{{20,128}}+")),
    Rule(
        "azure-storage-key",
        ("accountkey", "sharedaccesskey=", "account_key", "account-key"),
        _c(r"(?:account|sharedaccess)key=(?:\\{0,8}+[\"'])?([A-Za-z0-9+/]{20,128}+={0,2}+)"
           # (a storage account's key, 64 bytes in base64, under its name anywhere: AccountKey: …, ACCOUNT_KEY=…,
           # {"name": "AccountKey", "value": "…"})
           r"|account[_\-]?key(?:\\{0,8}+[\"'])?(?:[ \t]*+,[ \t]*+\\{0,8}+[\"']value\\{0,8}+[\"'])?[ \t]*+[:=][ \t]*+"
           r"(?:\\{0,8}+[\"'])?([A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])", re.I),
        -1,
    ),
    Rule(
        "twilio-key",
        (),
        _c(r"(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![A-Za-z0-9])"),
        prefilter=("wilio",),  # in every "twilio"; its own letter, so not one more pattern stopping at each "t"
    ),
    Rule(
        "discord-bot-token",
        (),
        _c(rf"{_NB}[MNO][A-Za-z0-9_\-]{{23,27}}\.[A-Za-z0-9_\-]{{6}}\.[A-Za-z0-9_\-]{{27,40}}{_NA}"),
        prefilter=("discord",),
    ),
    Rule(
        "telegram-bot-token",
        (),
        _c(rf"(?<![0-9])[0-9]{{8,10}}:AA[A-Za-z0-9_\-]{{30,40}}{_NA}"),
        prefilter=(":aa",),
    ),
    Rule(
        "docker-auth",
        ("auth",),
        _c(r"auth\\?\"[ \t]*+:[ \t]*+\\?\"([A-Za-z0-9+/]{8,2048}+={0,2}+)"),
        1,
        _docker_auth,
        prefilter=("auths",),  # a config.json's "auths" (not "docker": too common a word to gate on)
    ),
    Rule(
        "jwt",
        ("eyj",),
        _c(rf"{_NB}eyJ[A-Za-z0-9_\-]{{8,8192}}+\.eyJ[A-Za-z0-9_\-]{{8,8192}}+\.[A-Za-z0-9_\-]{{0,8192}}+"),
    ),
    # A PEM private key encoded once more in base64, as Kubernetes keeps it (a kubeconfig's client-key-data, a
    # secret's tls.key) and as `base64 key.pem` prints it (lines of 76, which are part of it too).
    Rule(
        "private-key-base64",
        ("ls0tls1crudjti",),
        _c(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{16,4096}+"
           r"(?:(?:\r?\n|\\n)[ \t]{0,16}+[A-Za-z0-9+/]{4,4096}+={0,2}+(?=[\r\n\\\"'\s]|$)){0,4000}+"),
        0,
        _base64_private_key,
    ),
    Rule("discord-webhook", ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
         _c(r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_\-]{60,100}+")),
    # (Its literal is not "age-secret-…": records holding "secret" are searched apart, see .redactor.)
    Rule("age-secret-key", ("age-se",), _c(rf"{_NB}AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{{52,64}}{_NA}")),
    Rule("google-oauth-secret", ("gocspx-",), _c(rf"{_NB}GOCSPX-[A-Za-z0-9_\-]{{28,32}}{_NA}")),
    Rule(
        "service-token",
        # (Without the "_" that follows most prefixes: every literal holding one is looked for in every record
        # holding a "_", and most records do.)
        ("lin_api_", "gsk", "xai-", "pplx-", "r8", "tvly-", "nvapi-", "sntry", "glsa", "dckr", "atatt3", "figd",
         "sq0atp-", "sq0csp-", "ntn", "hvs.", "hvb.", "sbp", "pscale", "dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "rnd",
         "fm1", "fm2", "pcsk_", "lsv2", "pul-", "pmak-", "cfpat-", "nfp", "tskey-", "sgp", "slk", "dt0c01.",
         "rubygems", "xkeysib-", "ops_eyj", "absk", "bedrock-api-key-", "akcp", "sk.eyj", "bkua", "sb_secret_",
         "ezak", "nrak-", "sl.", "eaa", "access_token$", "hcaik_", "hcxik_", "cmvmd", "squ_", "sqp_", "sqa_",
         "flwseck", "sdk-", "mob-", "atbb", "v1.0-", "sha256~", "aqvn", "ico-", "fio-u-", "dnkey-", "tk-us-",
         "1//0"),
        _c(
            rf"{_NB}(?:lin_api_[A-Za-z0-9]{{40}}|gsk_[A-Za-z0-9]{{48,56}}|xai-[A-Za-z0-9]{{70,90}}"
            rf"|pplx-[A-Za-z0-9]{{40,56}}|r8_[A-Za-z0-9]{{37}}|tvly-(?:dev-|prod-)?[A-Za-z0-9]{{24,40}}"
            rf"|nvapi-[A-Za-z0-9_\-]{{60,70}}|sntrys_[A-Za-z0-9+/=_\-]{{40,300}}+|sntryu_[a-f0-9]{{64}}"
            rf"|glsa_[A-Za-z0-9]{{32}}_[a-fA-F0-9]{{8}}|dckr_pat_[A-Za-z0-9_\-]{{27,40}}"
            rf"|ATATT3[A-Za-z0-9_\-=]{{150,300}}+|figd_[A-Za-z0-9_\-]{{38,44}}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{{22,43}}"
            rf"|ntn_[0-9]{{11}}[A-Za-z0-9]{{32,40}}|hv[sb]\.[A-Za-z0-9_\-]{{24,200}}+|sbp_[a-f0-9]{{40}}"
            rf"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.\-]{{32,64}}|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{{40,44}}"
            rf"|rnd_[A-Za-z0-9]{{32}}|fm[12]_[A-Za-z0-9+/=_\-]{{40,2048}}+"
            # Pinecone, LangSmith, Pulumi, Postman, Contentful, Netlify, Tailscale, Sourcegraph (and Cody), Dynatrace,
            # RubyGems, Brevo, 1Password service accounts, Amazon Bedrock (long- and short-lived), Artifactory,
            # Mapbox, Buildkite, Supabase's secret keys. ("pcsk_" keeps its "_": a gate of "p" would cost a search.)
            rf"|pcsk_[A-Za-z0-9]{{5,6}}_[A-Za-z0-9]{{63}}|lsv2_(?:pt|sk)_[a-f0-9]{{32}}_[a-f0-9]{{10}}|pul-[a-f0-9]{{40}}"
            rf"|PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}|CFPAT-[A-Za-z0-9_\-]{{43}}|nfp_[A-Za-z0-9_]{{36}}"
            rf"|tskey-[a-z]{{3,10}}-[A-Za-z0-9_]{{6,64}}+-[A-Za-z0-9_]{{16,128}}+"
            rf"|sgp_(?:[a-fA-F0-9]{{16}}_|local_)?[a-fA-F0-9]{{40}}|slk_[a-f0-9]{{64}}"
            rf"|dt0c01\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{64}}|rubygems_[a-f0-9]{{48}}|xkeysib-[a-f0-9]{{64}}-[A-Za-z0-9]{{16}}"
            rf"|ops_eyJ[A-Za-z0-9+/]{{250,4000}}+={{0,3}}+"
            rf"|ABSK[A-Za-z0-9+/]{{109,269}}+={{0,2}}+|bedrock-api-key-[A-Za-z0-9+/]{{40,4096}}+={{0,2}}+"
            rf"|AKCp[A-Za-z0-9]{{69}}|sk\.eyJ(?:[A-Za-z0-9_\-]|\.(?=[A-Za-z0-9_\-])){{60,240}}+|bkua_[a-z0-9]{{40}}"
            rf"|sb_secret_[A-Za-z0-9_\-]{{20,80}}+"
            # EasyPost, New Relic's user keys, Dropbox's short-lived tokens, Square's and Facebook's access tokens,
            # Braintree's, Honeycomb's ingest keys, Artifactory's reference tokens, SonarQube's, Flutterwave's
            rf"|EZAK[A-Za-z0-9]{{54}}|NRAK-[A-Za-z0-9]{{27}}|sl\.(?:u\.)?[A-Za-z0-9_\-=]{{100,1500}}+"
            rf"|EAAA[A-Za-z0-9_\-+=]{{60}}|EAA[A-Za-z0-9]{{90,512}}+"
            rf"|access_token\$(?:production|sandbox)\$[0-9a-z]{{16}}\$[0-9a-f]{{32}}|hc[ax]ik_[a-z0-9]{{58}}"
            rf"|cmVmd[A-Za-z0-9]{{59}}|sq[upa]_[a-f0-9]{{40}}|FLWSECK(?:_TEST)?-[a-fA-F0-9]{{32}}-X"
            # LaunchDarkly's SDK and mobile keys, Bitbucket's app passwords, Cloudflare's Origin CA keys, OpenShift's
            # OAuth tokens, Yandex's API keys, Infracost's, Frame.io's, Defined Networking's, Scalingo's
            rf"|(?:sdk|mob)-[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}"
            rf"|ATBB[A-Za-z0-9_=\-]{{28,100}}+|v1\.0-[a-f0-9]{{24}}-[a-f0-9]{{146}}|sha256~[A-Za-z0-9_\-]{{43}}"
            rf"|AQVN[A-Za-z0-9_\-]{{35,38}}|ico-[A-Za-z0-9]{{32}}|fio-u-[A-Za-z0-9_=\-]{{64}}"
            rf"|dnkey-[A-Za-z0-9_=\-]{{26}}-[A-Za-z0-9_=\-]{{52}}|tk-us-[A-Za-z0-9_\-]{{48}}"
            rf"|1//0[A-Za-z0-9_\-]{{40,512}}+){_NA}"  # (a Google OAuth refresh token)
        ),
    ),
    # Keys whose prefix is not where they start (Terraform Cloud's "….atlasv1.…", Firebase Cloud Messaging's server
    # keys "AAAA…:APA91b…") or too short to look for in every record (Resend's "re_"): searched in a text holding
    # their mark, each attempt bounded.
    Rule("provider-token", (),
         _c(r"(?<![A-Za-z0-9_\-])(?:[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}"
            r"|AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,200}+|re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24})(?![A-Za-z0-9_\-])"),
         prefilter=("atlasv1", ":apa91b", "resend")),
    # A credential quoted in a report of its refusal: "the X API returns 401 with <key>", "got a 403 using <token>".
    Rule("rejected-credential", ("401 with ", "403 with ", "401 using ", "403 using "),
         _c(r"40[13][ \t]++(?:with|using)[ \t]++(?:(?:the|my|this|key|token)[ \t]++){0,2}+"
            r"([A-Za-z0-9_\-+/=~]{1,256}+(?:[.:][A-Za-z0-9_\-+/=~]{1,256}+){0,8}+)"),
         1, lambda match: _refused_credential(match.group(1))),
    # A password given to a command on its command line: the command, up to sixteen of its words, then the flag that
    # takes the password (mysql -pVALUE, sshpass -p VALUE, docker login -p VALUE, curl -u user:VALUE …).
    Rule("cli-password", _CLI_COMMANDS, _c(_CLI_PASSWORD), -1, _cli_password),
    Rule("cli-password", _CLI_MORE_COMMANDS, _c(_CLI_MORE_PASSWORD), -1, _cli_password),
    # A password given on standard input: echo VALUE | docker login --password-stdin, … | sudo -S, … <<< VALUE.
    Rule("stdin-password", (), _c(_STDIN_PASSWORD), -1, _stdin_password, prefilter=_STDIN_LITERALS),
    # Laravel's APP_KEY (and APP_PREVIOUS_KEYS), under a name that says nothing of a secret: base64: and 22 to 88
    # characters, 16 to 64 bytes (Laravel makes 16 or 32); shorter is a word or a small blob, longer is data.
    Rule("laravel-app-key", ("base64:",), _c(r"base64:([A-Za-z0-9+/]{22,88}+={0,2}+)(?![A-Za-z0-9+/=])"), 1,
         lambda match: not is_placeholder(match.group(1))),
    Rule("xml-secret", (), _c(_XML_SECRET, re.I), -1, _xml_secret, prefilter=_XML_LITERALS),
    # A PuTTY key file's private lines (base64 after "Private-Lines: N"), also as a numbered read shows them.
    Rule("putty-private-key", ("private-lines:",),
         # (a line, also in JSON text ("\\n"), numbered, or in a diff (" ", "+"); not the "Private" of Private-MAC)
         # (grep -n's file:N: too)
         _c(r"Private-Lines:[ \t]*+[0-9]{1,3}+((?:(?:\r?\n|(?:\\r)?\\n)"
            r"(?:[ \t]*+[0-9]{1,6}+(?:\t|\\t)|[^\s:\\\"]{1,64}+:[0-9]{1,7}+:)?[ +]?"
            r"[A-Za-z0-9+/=]{4,128}+(?![\-:])){1,64}+)", re.I), 1),
    # A password or a key given in a sentence of another language ("mon mot de passe c'est v", "数据库密码：v", "La
    # clave de X es v", "den X-Schlüssel erneuert: v"), an app password as Google and Apple print them ("abcd efgh
    # ijkl mnop"), and "my X key: v" / "new one is v". (The English words are the keyword rule's.)
    Rule("secret-phrase", _PHRASE_ANCHORS, _c(_PHRASE, re.I), -1, _phrase_value, possible=_value_ahead),
    Rule("secret-phrase", _PHRASE_MORE_WORDS, _c(_PHRASE_MORE, re.I), 1,
         lambda match: secret_value(match.group(1), password=True, quoted=False, prose=True)),
    Rule("secret-phrase", (), _c(_AS_THE_SECRET, re.I), 1, _as_the_secret, prefilter=_AS_THE_SECRET_LITERALS),
    # An expect script answering a password prompt: expect "password:" then send "VALUE\r" on the same or the next
    # line (as a file, numbered, in grep -rn output, in JSON text). Tried in texts that spawn a program.
    Rule("expect-send", ("expect",),
         _c(r"expect[ \t]++(?:-[a-z]{1,8}+[ \t]++)?\\{0,8}+\"[^\"\n\\]{0,64}?(?:pass|pin\b|secret|token)"
            r"[^\"\n\\]{0,64}+"
            r"\\{0,8}+\"[ \t]*+(?:\{[ \t]*+)?(?:(?:\r?\n|(?:\\r)?\\n)(?:[^\n\\\"]|\\t){0,120}?)?[ \t]*+"
            r"send[ \t]++(?:--[ \t]++)?\\{0,8}+\"((?:[^\"\\\r\n]|\\(?![rn\"\\])){1,256}+)\\{1,8}+r", re.I),
         1, lambda match: not is_placeholder(match.group(1)) and not match.group(1).startswith("$"),
         prefilter=("spawn",)),
    # A wallet's BIP-39 recovery phrase (12 to 24 lowercase words of 3 to 8 letters) under its name (MNEMONIC=,
    # "my seed phrase is: …"), and an Ethereum private key (0x and 64 hex) in a Hardhat or Foundry config's
    # accounts list: a 0x and 64 hex elsewhere is a transaction's or a block's hash.
    Rule("wallet-secret", ("mnemonic", "seed phrase", "seed_phrase", "seed-phrase", "recovery phrase", "accounts:"),
         _c(r"(?:(?:mnemonic|seed[ _-]phrase|recovery[ _-]phrase)[A-Za-z_]{0,16}+(?:\\{0,8}+[\"'])?"
            r"(?:[ \t]*+(?:[:=]|is:?|was:?|:=)[ \t]*+|[ \t]++)(?:\\{0,8}+[\"'`])?"
            r"((?:[a-z]{3,8}+ ){11,23}[a-z]{3,8}+)(?![a-z])"
            r"|accounts[ \t]*+:[ \t]*+\[[ \t]*+\\{0,8}+[\"'`](0x[0-9a-fA-F]{64})(?![0-9a-fA-F]))", re.I),
         -1, lambda match: not is_placeholder(match.group(match.lastindex or 0))),
    # A ~/.pgpass line, hostname:port:database:username:password (a text that names the file), and a WireGuard
    # private key as `wg genkey` prints it (32 bytes in base64, the next lines after the command).
    # (after grep -n's file:N:, also first in a JSON string)
    Rule("pgpass", (), _c(r"(?:(?:(?<=\\[nt])|(?<=[\n\t])|^)(?:[^\s:\\\"]{0,256}?pgpass:[0-9]{1,7}+:)?"
                          r"|(?<=\")[^\s:\\\"]{0,256}?pgpass:[0-9]{1,7}+:)"
                          r"(?:[A-Za-z0-9.\-]{1,253}+|\*):(?:[0-9]{1,5}+|\*)"
                          r":[^:\s\\]{1,63}+:[^:\s\\]{1,63}+:((?:[^\s\\:]|\\[\\:]){4,256}+)(?=\\[nr]|\s|$)"),
         # (also a read whose text does not name the file: a line on Postgres's port or with a wildcard)
         1, lambda match: not is_placeholder(match.group(1)) and secret_value(match.group(1), password=True,
                                                                             quoted=True),
         prefilter=("pgpass", ":5432:", ":*:")),
    Rule("wireguard-key", ("wg genkey",),
         _c(r"wg[ \t]++genkey(?![\w\-])(?:[^\n\\]|\\[^n]){0,300}+(?:\n|\\n)(?:[^\n\\]|\\[^n]){0,300}?"
            r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)(?![A-Za-z0-9+/=])"
            # (or first in a bashExecution's "output", on the line of the "command" that printed it)
            r"|wg[ \t]++genkey(?![\w\-])[^\"\n]{0,300}+\\?\"[ \t]*+,[ \t]*+\\?\"output\\?\"[ \t]*+:[ \t]*+\\?\""
            r"([A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)(?![A-Za-z0-9+/=])"), -1),
    # Rails' master key (32 hex) as a read of config/master.key or config/credentials/<env>.key prints it: the next
    # lines after the file's name, or first in a bashExecution's "output".
    Rule("rails-master-key", (),
         _c(r"(?:master|credentials/[\w\-]{1,64}+)\.key(?![\w.\-])(?:[^\n\\]|\\[^n]){0,300}+(?:\n|\\n)"
            r"(?:[^\n\\]|\\[^n]){0,300}?(?<![0-9A-Za-z])([0-9a-f]{32})(?![0-9A-Za-z])"
            r"|(?:master|credentials/[\w\-]{1,64}+)\.key(?![\w.\-])[^\"\n]{0,300}+\\?\"[ \t]*+,[ \t]*+\\?\"output\\?\""
            r"[ \t]*+:[ \t]*+\\?\"([0-9a-f]{32})(?![0-9A-Za-z])"),
         -1, lambda match: not is_placeholder(match.group(match.lastindex or 0)),
         prefilter=("master.key", "credentials/")),
    # Django's SECRET_KEY: startproject's "django-insecure-" and 50 characters of get_random_secret_key's alphabet,
    # and such a key printed alone in the lines after the call that made it.
    Rule("django-secret-key", ("django-insecure-", "get_random_secret_key"),
         _c(r"django-insecure-[a-z0-9!@#$%^&*(\-_=+)]{50}(?![a-z0-9!@#$%^&*(\-_=+)])"
            r"|get_random_secret_key(?:[^\n\\]|\\[^n]){0,300}+(?:\n|\\n)(?:[^\n\\]|\\[^n]){0,300}?"
            r"(?<![a-z0-9!@#$%^&*(\-_=+)])([a-z0-9!@#$%^&*(\-_=+)]{50})(?![a-z0-9!@#$%^&*(\-_=+)])"
            # (or first in a bashExecution's "output", on the line of the "command" that printed it)
            r"|get_random_secret_key[^\"\n]{0,300}+\\?\"[ \t]*+,[ \t]*+\\?\"output\\?\"[ \t]*+:[ \t]*+\\?\""
            r"([a-z0-9!@#$%^&*(\-_=+)]{50})(?![a-z0-9!@#$%^&*(\-_=+)])"),
         -1, lambda match: is_chosen(match.group(match.lastindex or 0))),
    # A Zapier catch hook's URL is its credential too.
    Rule("zapier-webhook", ("hooks.zapier.com/hooks/catch/",),
         _c(r"hooks\.zapier\.com/hooks/catch/[0-9]{3,12}+/[A-Za-z0-9]{4,32}+/?")),
    # A Teams incoming webhook's URL is its credential: whoever holds it posts to the channel.
    Rule("teams-webhook", (), _c(r"https://[A-Za-z0-9\-]{1,64}+\.webhook\.office\.com/webhookb2/[A-Za-z0-9@/_\-]{40,1024}+"),
         prefilter=("webhook.office.com",)),
    # (Tried where a hash starts, in records holding one of the prefilter: "pbkdf2_sha" itself would be looked for
    # in every record holding a "_".)
    Rule("password-hash", ("$2a$", "$2b$", "$2y$", "$y$", "$argon2", "pbkdf2_sha"),
         _c(rf"(?:{_PASSWORD_HASH})(?![A-Za-z0-9./+=$])"),
         prefilter=("$2a$", "$2b$", "$2y$", "$y$", "$argon2", "bkdf2")),
    Rule(
        "url-credentials",
        ("://",),
        # (or a token as the user name, no password: https://<token>@github.com/, as git's insteadOf writes it)
        _c(r"://(?:[^\s/:@\"'<>]{0,256}+:([^\s/@\"'<>]{1,256}+)|([A-Za-z0-9_\-]{30,256}+))@"),
        -1,
        _url_user_or_password,
    ),
    Rule(
        "url-secret-param",
        (
            "access_token=", "refresh_token=", "id_token=", "token=", "api_key=", "apikey=", "key=", "secret=",
            "client_secret=", "password=", "passwd=", "auth=", "sig=", "signature=", "code=",
        ),
        _c(
            r"(?:(?<=[?&])(?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret"
            r"|password|passwd|auth|sig|signature|code)|(?<=\()key)=([^&\s\"'#<>\\)]{4,4096}+)",  # (key=v): a log
            re.I,
        ),
        1,
        _credential,
    ),
    # The keyword-and-entropy detector. key = value, key: value, "key": "value", key => value, --key=value; and in
    # prose, "the password is X", "secret X", "my api key is X": a value after a secret-sounding name, judged by
    # values.secret_value (group 3, the operator, is absent in prose, where the bar is higher).
    Rule(
        "secret-assignment",
        (*_KEYWORD_LITERALS, "api key", "access key", "private key"),
        _keyword_pattern(words=True),
        5,
        _keyword_value,
        lean=_keyword_pattern(words=False),
        needs_pattern=_prose_words_ahead,
    ),
)


def private_url_rule(extra_globs: tuple[str, ...]) -> Rule:
    check = private_host_checker(extra_globs)
    return Rule(
        "private-url",
        ("http://", "https://"),
        _c(r"(?<![\w+.\-])https?://[A-Za-z0-9.\-\[\]:]{1,300}+(?:[/?#][^\s\"'<>)\]]{0,2048}+)?", re.I),
        0,
        lambda match: check(match.group(0)),
    )
