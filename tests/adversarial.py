"""Hostile inputs for the secret rules: each one is built to make a backtracking pattern go quadratic or worse.

Shared by ``tests/test_redaction.py`` (it must finish) and ``scripts/bench_redaction.py`` (how fast).
"""

from __future__ import annotations

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
    "keyword-run": "tokenpasswordsecret",
    "dense-quotes": "token'\"pass\"'",
    "dense-equals": "token=pass=a ",
    "dense-base64": "data:\n  DATABASE_URL: cG9zdGdyZXM6Ly91OnBAaDo1NDMyL2Q=\n  auth: dG9rZW46",
    "basic-headers": "Authorization: Basic dG9rZW46cGFzcw== ",
    "long-json-string": "{\"token\": \"" + "a\\\"" * 40,
    # a browser's cookie objects (fields between a name and its value), sentences in other languages naming a host
    "cookie-objects": '{"name":"sid","path":"/","domain":"a.io","secure":true,"value":"x"} cookie ',
    "phrase-sentences": "la contraseña de db.x.io es PgSqL y aBcD, DB 비번: sEsS ",
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
