"""Is a value next to a secret-sounding word a secret? (The keyword-and-entropy detector's second look.)

A value is a secret when it is long enough and random enough (Shannon entropy) and is not code: identifiers,
member access (``options?.apiKey``), calls, template references (``${{ secrets.X }}``, ``process.env.X``), paths,
URLs, UUIDs, hashes in a known context (``sha256:…``), image data, numbers or placeholders (``xxx``,
``<your-key>``, ``changeme``). Passwords get a lower bar than tokens: people choose them.
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import math
import re
from collections import Counter

_PLACEHOLDER_WORDS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "string", "str", "bool", "int", "number", "object",
        "password", "passwd", "secret", "token", "changeme", "example", "redacted", "required", "optional",
        "default", "value", "your_token", "your_key", "your_password", "hidden", "masked", "secret123",
        "password123", "admin", "root", "test", "testing", "dummy", "sample", "placeholder", "postgres", "mysql",
        "pass", "empty", "missing", "unknown", "todo", "tbd", "foo", "bar", "baz", "letmein", "hunter2",
    }
)
_PLACEHOLDER_PARTS = ("xxxx", "****", "...", "…", "your", "placeholder", "changeme", "change_me", "change-me",
                      "example", "redacted", "dummy", "-here", "_here", "{{", "}}", "${")
_PLACEHOLDER_PART = re.compile("|".join(map(re.escape, _PLACEHOLDER_PARTS)))  # (one pass, not one a part)
# A command substitution or a printf-style name ("$(cat key)", "%(password)s"), not a chosen value that holds "$(" or
# "%(" ("b$6$(b!Yt…", "%(0I&QB…)").
_SUBSTITUTION = re.compile(r"\$\([\w .\-/|]{1,80}+\)|%\(\w{1,80}+\)")
# A value chosen by a person or a generator (Django's "%v#*o%7f…", "$qOe%ql(mQO9O&)"): every kind of character,
# several symbols code rarely strings together; a call (getToken(a, b)) ends with its bracket and starts with a name.
_SYMBOLS = frozenset("!#%^&*@~$")
_BRACKETS = frozenset("()")
_WHOLE_CALL = re.compile(r"[A-Za-z_$][\w$.]{0,80}+\(.{0,4096}\)[;,]?")
# A value that names what it is ("test-api-key-123", "my_secret_token") is an example someone typed.
_SELF_DESCRIBING = re.compile(r"(?:^|[-_.])(?:api[-_]?key|key|token|secret|password|passwd|test|mock|sample|demo)"
                              r"(?:$|[-_.0-9])")
_REFERENCE_STARTS = ("$", "%", "{", "[", "(", "&", "@", "!", "#", "*", "\\", "<")
_REFERENCE_PREFIXES = ("os.environ", "os.getenv", "process.env", "import.meta.env", "env.", "self.", "this.",
                       "secrets.", "vars.", "settings.", "config.", "data:", "file:", "sha1:", "sha256:", "sha384:",
                       "sha512:", "sha1-", "sha256-", "sha384-", "sha512-", "md5:", "arn:", "bearer", "basic",
                       "base64:")  # (base64: is judged by its size: rules.laravel-app-key)
# A name or a chain of names (member access, optional chaining, scope resolution), optionally called.
CODE = re.compile(r"[A-Za-z_$][\w$]{0,80}+(?:(?:\?\.|!\.|\.|::|->)[A-Za-z_$][\w$]{0,80}+){0,20}+[!?]?(?:\(\)?)?")
_APP_PASSWORD = re.compile(r"[a-z]{4}(?:-[a-z]{4}){3}|[a-z]{4}(?: [a-z]{4}){3}")
# A call: of a name without digits (getToken(), not "Adm1n(x"), or of a member (base64.b64encode(…)).
_CALL_AT = re.compile(r"(?<![\w$.])(?:[A-Za-z_$][A-Za-z_$.]{0,80}+"
                      r"|[A-Za-z_$][\w$]{0,40}+(?:\.[A-Za-z_$][\w$]{0,40}+){1,8}+)\(")
_CALL = re.compile(r"[A-Za-z_$][A-Za-z_$.]{0,80}+\(")  # a call of a name (no digit in it): code, not a password
# Words run together as a name is spelled (getPassword, DbPass, secretValue): not the random letters of a password.
_CAMEL_WORDS = re.compile(r"[a-z]{1,40}+(?:[A-Z][a-z]{2,40}+){0,12}+|(?:[A-Z][a-z]{2,40}+){1,12}+|[A-Z]{1,40}+")
_WORDY_NAME = re.compile(r"[A-Za-z_$][A-Za-z_$.\-]{0,200}+")  # letters only: a name, not a value
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]{0,40}+(?:_[A-Z0-9]{1,40}+){1,10}+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NUMBER = re.compile(r"[-+]?[0-9][0-9_,.:]{0,40}+[a-zA-Z%]{0,3}")
_VERSIONISH = re.compile(r"v?[0-9]+(?:\.[0-9]+){1,4}+(?:[-+][\w.]{0,30}+)?")
_WORD_SEPARATORS = re.compile(r"[_\-.]")
_WORDS = re.compile(r"[A-Za-z]{1,40}+(?:[_\-.][A-Za-z]{1,40}+){1,12}+")  # max_completion_tokens, my-app.prod
# An algorithm's name, alone or as a setting spells it (argon2_v19_default, pbkdf2_sha256, bcrypt-sha256, HS256): what
# a PASSWORD_HASHERS or a JWT_ALG setting holds, not a secret.
_ALGORITHM = re.compile(r"(?i:(?:argon2(?:id|i|d)?|bcrypt|scrypt|yescrypt|pbkdf2|sha(?:1|224|256|384|512)|md5"
                        r"|blake2[bs]?|[hre]s(?:256|384|512)|aes(?:128|192|256)?|chacha20|hmac))"
                        r"(?:[_\-.](?:[a-z]{1,16}+|v?[0-9]{1,4}+|[a-z]{1,8}+[0-9]{1,4}+)(?![a-z0-9])){0,6}+")
_DIGIT = re.compile(r"[0-9]")
_PATH_SEGMENT = re.compile(r"[a-z0-9_.@\-]{0,80}+|[A-Z]?[a-z]{1,40}+(?:[A-Z][a-z]{1,40}+){0,5}+")


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s character distribution."""
    if not value:
        return 0.0
    n = len(value)
    return -sum([c / n * math.log2(c / n) for c in Counter(value).values()])  # (a list: faster, the same sum)


def is_self_describing(value: str) -> bool:
    """"test-api-key-123", "my_secret_token"; not a service's token that begins with its kind (Notion's
    secret_<43 random>): what follows the word is random there."""
    match = _SELF_DESCRIBING.search(value.lower())
    return match is not None and not _random_segment(value[match.end() :])


_ANGLED = re.compile(r"<?[\w .,:;/|()!?'\"\-]{0,256}+>?")


def is_placeholder(value: str) -> bool:
    lowered = value.lower()
    if lowered in _PLACEHOLDER_WORDS or len(set(lowered)) <= 2:
        return True
    if ((lowered.startswith("<") or lowered.endswith(">")) and _ANGLED.fullmatch(lowered)) or "<your" in lowered:
        # <your-key>, <token>, <paste token here> (not a chosen value with a "<" inside or at an end: WordPress's
        # salts, "-((7H$~fb…+yb>")
        return True
    return _PLACEHOLDER_PART.search(lowered) is not None or _SUBSTITUTION.search(value) is not None


def is_chosen(value: str) -> bool:
    """A chosen password or a generated key full of symbols (see _SYMBOLS), never an expression of code."""
    symbols = len(_SYMBOLS.intersection(value))
    classes = character_classes(value)
    if not symbols or len(value) < 10:
        return False
    symbols += len(_BRACKETS.intersection(value))
    return (((symbols >= 2 and classes == 4) or (symbols >= 3 and classes == 3)) and shannon_entropy(value) >= 3.0
            and "://" not in value and not _WHOLE_CALL.fullmatch(value))


def is_code_or_reference(value: str) -> bool:
    """A name, a member access or call, an environment variable's name, a template or environment reference."""
    if value.startswith(_REFERENCE_STARTS) or value.lower().startswith(_REFERENCE_PREFIXES):
        return True
    if _CALL_AT.search(value) or "://" in value:
        return True  # getToken(), os.getenv("X"): a call (not ")nk&x%2(v9": a chosen value's brackets)
    if _ENV_NAME.fullmatch(value) or (_WORDY_NAME.fullmatch(value) and not _random_name_pieces(value)):
        return True
    # A chain with a member access is code even when a part holds a digit (``item.v2``, ``a?.b1``).
    return bool(CODE.fullmatch(value)) and any(op in value for op in ("?.", "!.", "::", "->", "."))


def is_known_non_secret(value: str) -> bool:
    """UUIDs, numbers and versions, paths: values a secret-sounding key often holds without being a secret."""
    if (_UUID.fullmatch(value) or _NUMBER.fullmatch(value) or _VERSIONISH.fullmatch(value)
            or _ALGORITHM.fullmatch(value)):
        return True
    if _WORDS.fullmatch(value):
        # words as names are spelled (max_completion_tokens, X-Api-Key), not random letters ("IfUNmyCJuX-eYkHVX…",
        # a base64url token that happens to hold no digit)
        return all(_CAMEL_WORDS.fullmatch(part) for part in _WORD_SEPARATORS.split(value))
    if "/" in value:
        segments = value.strip("/").split("/")
        if value.startswith(("/", "./", "../", "~/")):
            # A path, unless a part of it is random: base64 keys start with "/" too (an AWS secret key).
            return not any(_random_segment(segment) for segment in segments)
        if all(_PATH_SEGMENT.fullmatch(s) for s in segments):
            return True  # words between slashes: a path or a route, not base64
    return False


def _random_name_pieces(value: str) -> bool:
    """A run of sixteen letters or more cut, as a name is read, into pieces of which several are one capital and one
    small letter that spell no short word ("RnrAJkNoxnWcOZECJuhSDd": Jk, Wc, Dd; a token with no digit). A name's
    pieces are words (myTokenValueForTheAPIClient) and short ones are words too (Id, Db, By, Js)."""
    for part in _WORD_SEPARATORS.split(value):
        if len(part) >= 16 and part.isalpha() and not _CAMEL_WORDS.fullmatch(part):
            pairs = [piece for piece in _NAME_PIECES.findall(part) if len(piece) == 2 and piece not in _SHORT_WORDS]
            if len(pairs) >= max(2, len(part) // 8):
                return True
    return False


_NAME_PIECES = re.compile(r"[A-Z][a-z]++|[A-Z]++(?![a-z])|[a-z]++")
_SHORT_WORDS = frozenset({
    "Id", "Db", "By", "To", "Of", "In", "On", "At", "Is", "Ui", "Js", "Io", "Os", "Ok", "No", "Up", "Do", "Go", "If",
    "Or", "As", "An", "Be", "Me", "My", "We", "Us", "It", "Tx", "Rx", "Ip", "Vm", "Ms", "Ns", "Px", "Em", "Pk", "Fk",
    "Qa", "Ts", "Py", "Rs", "Md", "Ai", "Ml", "Hr", "Pr", "Ci", "Cd", "Vs", "Ex", "Re", "De", "Un", "Et", "Al",
})


def _random_segment(segment: str) -> bool:
    """Long, with upper and lower case and digits: no folder or file is named like that, a key is."""
    return (len(segment) >= 16 and any(c.isupper() for c in segment) and any(c.islower() for c in segment)
            and any(c.isdigit() for c in segment))


def _random_letters(value: str) -> bool:
    """Letters at random, as a generator makes a password of letters only (PrmOpehLGLxn): long, changing case
    four times or more, not words run together as a name is spelled (PostgreSQL, getUserName)."""
    if len(value) < 10 or not (value.isascii() and value.isalpha()) or _CAMEL_WORDS.fullmatch(value):
        return False
    changes = sum(a.islower() != b.islower() for a, b in itertools.pairwise(value))
    return changes >= 4 and shannon_entropy(value) >= 3.0


def character_classes(value: str) -> int:
    """How many of lower case, upper case, digits and other characters ``value`` holds."""
    if value.isascii():  # the same count with no Python loop over the characters: every value judged is counted
        return ((value.upper() != value) + (value.lower() != value) + (_DIGIT.search(value) is not None)
                + (value != "" and not value.isalnum()))
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


@functools.lru_cache(maxsize=4096)  # hostile input repeats one value a million times
def secret_value(value: str, *, password: bool, quoted: bool, prose: bool = False, uuid: bool = False,
                 secret: bool = False) -> bool:
    """Whether ``value``, found after a secret-sounding word, is a secret.

    ``password``: the word was password/passwd/pwd/passphrase (people choose those: a lower bar); ``quoted``: the
    value was a string literal (so it cannot be a bare identifier of code); ``prose``: the value followed the word
    without an assignment or a colon ("the token abc…"), where ordinary words follow too (a higher bar); ``uuid``:
    the name says a credential (an API key, a password, an auth token), so a UUID there is one (Heroku API keys,
    npm's legacy tokens) rather than an id; ``secret``: the name says an API secret (Vonage's are sixteen letters and
    digits, sometimes letters only), so letters at random count as they do for a password."""
    value = value.strip("\"'`").rstrip("=")  # base64 padding says nothing
    if len(value) < (6 if password else 8):
        return False
    if _APP_PASSWORD.fullmatch(value):
        return not is_placeholder(value)  # an app password as Google and Apple print them: four groups of four letters
    if uuid and _UUID.fullmatch(value):
        return not is_placeholder(value)
    if is_chosen(value) and not is_placeholder(value) and not is_self_describing(value):
        # ("R(()sMGa…", "$qOe%ql(mQ…": a bracket or a "$" inside is not a call or a reference; no English word or
        # name holds three kinds of symbol, so this holds in prose too: "the password is m#$A%FG(Vl(Bdfw")
        return True
    if password and prose and _random_letters(value):
        return not is_placeholder(value)  # "mi contraseña de sudo es PrmOpehLGLxn": no word changes case so often
    if (not prose and len(value) >= 20 and _random_letters(value)  # (20: the record gate's run without a digit)
            and sum(c in "aeiouAEIOU" for c in value) < len(value) / 4):
        # VERCEL_TOKEN=kvvFxcoHUSdlvcvwKTXWhWCL: letters at random, few vowels (a name of code has a word's share)
        return not is_placeholder(value)
    if value.isascii():  # (as character_classes: no Python loop over the characters)
        has_digit, has_alpha = _DIGIT.search(value) is not None, value.upper() != value.lower()
    else:
        has_digit, has_alpha = any(c.isdigit() for c in value), any(c.isalpha() for c in value)
    if prose and (len(value) < (8 if password else 12) or not has_digit or not has_alpha):
        return False
    if is_placeholder(value) or is_known_non_secret(value):
        return False
    if is_self_describing(value):
        return False
    if ((password or (secret and len(value) >= 12)) and not prose and len(value) >= 10 and value.isascii()
            and value.isalpha()
            and not _CAMEL_WORDS.fullmatch(value) and shannon_entropy(value) >= 3.0):
        return not is_placeholder(value)  # "zTaNyvRsmkPhLRo": letters at random, not a name of code
    chosen = len(value) >= 10 and character_classes(value) >= 4 and shannon_entropy(value) >= 3.0
    if (value.startswith(_REFERENCE_STARTS) and not chosen) or value.lower().startswith(_REFERENCE_PREFIXES) or (
            "://" in value):
        return False  # $TOKEN, {password}, %DB_PASS% (not "$W#YolG!&A)Bj52", "()Uad%nW)8A#GZ8": chosen ones)
    # Dotted names are code, dotted random parts are a token (a Discord bot token, a JWT without its scheme).
    chain = ("." in value and CODE.fullmatch(value) is not None
             and not any(_random_segment(part) for part in value.split(".")))
    if chain and password and any(c.isdigit() for c in value.rsplit(".", 1)[-1]):
        chain = False  # "Rocket.Maple6209": a chosen password; a member is rarely named with digits
    if chain or (not quoted and not ("." in value and not chain) and is_code_or_reference(value)
                 and not (password and chosen and value.startswith(("#", "!", "@", "*")))):
        return False  # (a password of every kind of character may begin with a symbol: "#FhMwzpsA64WY8MK#K6T")
    if _ENV_NAME.fullmatch(value) or _CALL.match(value) or _CALL_AT.match(value):
        return False  # "KIMCHI_API_KEY": a name even inside quotes; Math.floor(0.8: a call
    entropy = shannon_entropy(value)
    classes = character_classes(value)
    if prose:
        # After a bare word, only what cannot be English: letters with digits (checked above), long and random;
        # after "password", a chosen one too ("Blue!Blue983": every kind of character, a little less random).
        return entropy >= 3.0 or (password and classes >= 3 and entropy >= 2.5)
    if password:
        return (classes >= 2 and entropy >= 2.0) or (quoted and len(value) >= 8 and entropy >= 2.5)
    if not (has_digit and has_alpha):
        # Letters only (or symbols): a long, mixed-case, random string such as a base64 key; never a word.
        return len(value) >= 20 and classes >= 2 and entropy >= 3.5
    return entropy >= (2.5 if len(value) < 16 else 3.0)


def base64_text(value: str, errors: str = "strict") -> str | None:
    """``value`` decoded from base64 (its padding restored) as UTF-8 text, or None when it is not base64 (or, with
    ``errors="strict"``, not text)."""
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8", errors)
    except (binascii.Error, ValueError):
        return None
