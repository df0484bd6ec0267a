"""Hostile inputs for the secret rules: each one is built to make a backtracking pattern go quadratic or worse.

Shared by ``tests/test_redaction.py`` (it must finish) and ``scripts/bench_redaction.py`` (how fast).
"""

from __future__ import annotations

import base64
import functools
import random
from collections.abc import Callable, Iterable

from hindsight_batch.base import jsoncodec
from hindsight_batch.redaction.redactor import Findings, Redactor


def adversarial_inputs(megabytes: int = 10) -> dict[str, str]:
    n = megabytes * 1_000_000
    return {
        "jwt-prefix-run": "eyJ" * (n // 3),
        "jwt-near-miss": ("eyJ" + "a" * 200 + ".") * (n // 204),
        "pem-begin-run": "-----BEGIN RSA PRIVATE KEY-----" * (n // 31),
        "assignment-run": "password=" * (n // 9),
        "scheme-run": "a://" * (n // 4),
        "long-hosts": ("https://" + "a" * 300) * (n // 308),
        "empty-params": "?token=&" * (n // 8),
        "header-run": "Authorization: " * (n // 15),
        "one-token": "A" * n,
        "short-keys": ("sk-" + "a" * 19 + " ") * (n // 23),
        "cookie-run": "cookie:" * (n // 7),
        "url-userinfo": ("x://" + "u" * 250 + ":" + "p" * 250) * (n // 505),
        "xml-unclosed": ("<db.password a='" + "a" * 200 + "'>" + "v" * 250 + "\n") * (n // 470),
        "xml-names": ("<" + "password" * 6) * (n // 49),
        "stdin-pipes": ("echo '" + "p" * 250 + "' | sudo " + "-u x " * 6) * (n // 290),
    }


def near_misses(size: int, literals: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """For every rule (``literals``: rule id -> the literals it starts at or needs), inputs that hold its literals
    thousands of times but never quite a secret: the literal alone, then a value one character too short, then a
    value far past the rule's bound, each repeated to ``size`` characters."""
    n = size
    out: dict[str, str] = {}
    for rule, lits in literals.items():
        for lit in lits[:3]:
            for kind, unit in (
                ("repeat", lit),
                ("short", lit + "=Ab1" + " "),
                ("spaced", lit + " is Ab1Cd\n"),
                ("long", lit + "Ab1" * 1500 + " "),
            ):
                out[f"{rule}/{lit.strip()}/{kind}"] = unit * max(1, n // len(unit))
    return out


# Families of text dense with what makes a gate or a rule stop and look (issue 37): each is one unit repeated, so that
# 1x and 8x of it can be timed in one process and compared. Linear work takes about 8 times as long on 8 times the
# text; a scan to the end of a string from each stop makes it 64 times.
DENSE_FAMILIES: dict[str, str] = {
    "dense-keywords": "the token and the pass of the secret ",
    "keyword-names": "token password secret api_key ",  # each name the value of the one before, in prose
    "keyword-run": "tokenpasswordsecret",
    "dense-quotes": "token'\"pass\"'",
    "dense-equals": "token=pass=a ",
    "dense-base64": "data:\n  DATABASE_URL: cG9zdGdyZXM6Ly91OnBAaDo1NDMyL2Q=\n  auth: dG9rZW46",
    "basic-headers": "Authorization: Basic dG9rZW46cGFzcw== ",
    "long-json-string": "{\"token\": \"" + "a\\\"" * 40,
    # a browser's cookie objects (fields between a name and its value), sentences in other languages naming a host
    "cookie-objects": '{"name":"sid","path":"/","domain":"a.io","secure":true,"value":"x"} cookie ',
    "phrase-sentences": "la contraseña de db.x.io es PgSqL y aBcD, DB 비번: sEsS ",
    "names-as-values": "access_key basic-auth DB_KEY x-auth-key ",  # each name the value of the one before
    "dense-foreign-words": "密码 口令 キー ",  # words that start a secret-phrase, and no digit on the line
}


def dense_family(name: str, size: int) -> str:
    unit = DENSE_FAMILIES[name]
    return unit * max(1, size // len(unit))


def through_import(redactor: Redactor, text: str) -> str:
    """``text`` as a user message, through the record gates and then the rules where the gates let it in, as an
    import sends it."""
    message = {"role": "user", "content": [{"type": "text", "text": text}]}
    data = jsoncodec.dumps({"type": "message", "message": message})
    hints = redactor.hints_each_utf8([data])[0]
    if not (hints and redactor.needs_redaction(data, hints)):
        return text
    return str(redactor.redact_value(message, Findings(), hints)["content"][0]["text"])


# The timing campaign of issue 37 (scripts/redaction_campaign.py): families of text built to make a gate or a rule
# work more than once per position, each a function of the size wanted. The rules' literals come from the rules, so
# a new rule's words are in the campaign as soon as it is added.
_B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _random_run(alphabet: str, size: int, seed: int = 37) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices(alphabet, k=size))


def _unique_values(forms: tuple[str, ...], size: int, seed: int = 37) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size:
        value = "".join(rng.choices(_B64_ALPHABET[:62], k=rng.randint(8, 24)))
        out.append(forms[len(out) % len(forms)].format(value))
        total += len(out[-1])
    return "".join(out)


def campaign_families(literals: Iterable[str]) -> dict[str, Callable[[int], str]]:
    """Each family by name: its text of (about) ``size`` characters. ``literals``: every literal the rules start
    at or need (lowercase), each tried alone, assigned, quoted, and before 50 KB of one character."""
    fixed: dict[str, str] = {
        # keywords of every kind, dense, and each before a long run of what a value may hold
        "dense-words": "password token secret key auth cookie Bearer Basic api_key -----BEGIN pass pw creds ",
        "dense-assigned": "password=token=secret=key=auth=cookie=Bearer=Basic=api_key=",
        "dense-colons": "password: token: secret: auth: cookie: api_key: x-auth: DB_PASS: ",
        "quotes-backslashes": "\\\"'`\\\\\"'",
        "quote-keyword": "\"token\":\"\\\"pass\\\"\"",
        "equals": "=",
        "colons": ":",
        "equals-colons": "a=b:c=d:",
        "at-colon": "a:b@",
        "url-userinfo": "https://a:b@",
        "scheme-userinfo": "://u:p@h",
        "percent": "%2F%3A%40%23",
        "percent-password": "password=%23%40%2F",
        "kebab": "ab-cd-ef-",
        "snake": "ab_cd_ef_",
        "dotted": "ab.cd.ef.",
        "cjk": "密码是密钥的数据库",
        "cjk-password": "数据库密码：",
        "rtl": "كلمة المرور هي ",
        "cyrillic": "мой пароль это ",
        "surrogate-escapes": "\\ud83d\\ude00\\ud83d",
        "crlf": "password=abc\r\ntoken: x\r\n",
        "short-lines": "token x\n",
        "one-line": "token x ",
        "nested-escapes": "token\\\\\\\": \\\\\\\"",
        "json-escaped-kv": "{\\\"password\\\": \\\"",
        "yaml-data-keys": "kind: Secret\ntype: Opaque\ndata:\n  DATABASE_URL: cG9zdGdyZXM6Ly91OnBAaDo1NDMyL2Q=\n",
        "pem-no-end": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n",
        "pem-certificate": "-----BEGIN CERTIFICATE-----\n",
        "pem-end-only": "-----END RSA PRIVATE KEY-----",
        "cli-words": "mysql -u root x y z w v u t s r q p o n m l k ",
        "echo-pipe": "echo 'abcdef' | ",
        "sudo-words": "sudo -u x -g y ",
        "expect-spawn": "spawn ssh x\nexpect \"password:\"\n",
        "phrase-words": "my key: the new one is mot de passe clave ",
        "xml-open": "<password>",
        "xml-key-value": "<add key=\"DbPassword\" value=\"",
        "base64-prefix": "base64:",
        "authorization": "Authorization: Basic ",
        "cookie-pairs": "Cookie: a=b; ",
        "set-cookie": "Set-Cookie: sid=",
        "jwt-dots": "eyJhbGciOi.",
        "pgpass": "pgpass h:5432:d:u:",
        "wallet": "mnemonic: abc ",
        "hash-dollars": "$2b$10$",
        "aws-ids": "AKIAIOSFODNN7EXAMPLE ",
        "numbered-read": "     1\tpassword = x\n",
        "value-field": "{\"name\": \"DB_PASSWORD\", \"value\": ",
        "copula": "the token is ",
        "giving": "here is my token ",
    }
    families: dict[str, Callable[[int], str]] = {name: functools.partial(_repeat, unit) for name, unit in fixed.items()}
    families.update({f"dense/{name}": functools.partial(dense_family, name) for name in DENSE_FAMILIES})
    families.update({
        "base64-run": functools.partial(_random_run, _B64_ALPHABET),
        "base64url-run": functools.partial(_random_run, _B64_ALPHABET[:62] + "-_"),
        "hex-run": functools.partial(_random_run, "0123456789abcdef"),
        "base64-lines": lambda size: _repeat(_random_run(_B64_ALPHABET, 76) + "\n", size),
        "k8s-huge-base64": lambda size: ("apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n  DATABASE_URL: "
                                         + _random_run(_B64_ALPHABET, size) + "\n"),
        "k8s-huge-base64-of-url": lambda size: (
            "kind: Secret\ndata:\n  DATABASE_URL: "
            + base64.b64encode(_repeat("postgres://u:p@h/d?password=", size * 3 // 4).encode()).decode() + "\n"),
        "docker-auths": lambda size: _repeat("{\"auths\": {\"r\": {\"auth\": \"" + base64.b64encode(
            b"u:" + b"p" * 3000).decode() + "\"}}} ", size),
        "mixed-unicode": functools.partial(_random_run, "aé密ك п=:\"'\\-_/@%\n\t"),
        # a different value after each keyword (no cache helps): assigned, in prose, quoted
        "unique-values": functools.partial(_unique_values, ("password={} ", "the token {} ", "api_key: \"{}\" ",
                                                            "DB_PASS={} ", "secret {} ", "auth={} ")),
    })
    for char in " \n\t-_./\\\"'`:=@%$#&()[]{}<>|;,+*~!?^aAzZ09":
        families[f"run-{char!r}"] = functools.partial(_repeat, char)
    for word in ("password", "token", "secret", "key", "auth", "cookie", "Bearer ", "Basic ", "api_key",
                 "-----BEGIN ", "DB_PASS", "_KEY", "sk-", "ghp_", "://"):
        for filler in ("X", "a", "\\", "\"", " ", "-", "=", "A1", "/+"):
            unit = word + filler * (50_000 // len(filler))
            families[f"{word.strip()}+50KB-{filler!r}"] = functools.partial(_repeat, unit)
    for lit in sorted(literals):
        for kind, unit in (("alone", lit + " "), ("assigned", lit + "=Ab1Cd2Ef3 "), ("quoted", f"{lit}\": \"Ab1\\\""),
                           ("joined", lit + lit.upper()), ("long", lit + "Ab1_" * 2000 + " ")):
            families[f"lit/{lit}/{kind}"] = functools.partial(_repeat, unit)
    return families


def mutated_samples(texts: list[str], size: int, seed: int = 37) -> str:
    """``texts`` (the rules' own positive examples) each mutated at random (a character dropped, doubled, replaced
    or moved), concatenated, repeated to ``size`` characters."""
    rng = random.Random(seed)
    alphabet = _B64_ALPHABET + " \n\t\"'\\=:@-_.%$#"
    out: list[str] = []
    for text in texts:
        chars = list(text)
        for _ in range(rng.randint(1, 6)):
            if not chars:
                break
            i = rng.randrange(len(chars))
            kind = rng.randrange(4)
            if kind == 0:
                del chars[i]
            elif kind == 1:
                chars.insert(i, chars[i] * rng.randint(1, 64))
            elif kind == 2:
                chars[i] = rng.choice(alphabet)
            else:
                chars.insert(rng.randrange(len(chars)), chars.pop(i))
        out.append("".join(chars))
    unit = "\n".join(out) + "\n"
    return _repeat(unit, size)
