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
    is_code_or_reference,
    is_placeholder,
    is_self_describing,
    secret_value,
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
    group: int = 0  # the group that holds the secret (0: the whole match)
    accept: Callable[[re.Match[str]], bool] | None = None  # a second look at a candidate, to spare ordinary code
    prefilter: tuple[str, ...] = ()

    @property
    def literals(self) -> tuple[str, ...]:
        """What a text must hold for the rule to be tried at all."""
        return self.prefilter or self.anchors


_PASSWORD_WORD = re.compile(r"pass|pwd", re.I)


def looks_secret(value: str, key: str = "") -> bool:
    """For a string under a secret-sounding key in a structure (``{"password": "hunter22"}``)."""
    return secret_value(value, password=bool(_PASSWORD_WORD.search(key)), quoted=True)


SECRET_KEY_NAME = re.compile(
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential"
    r"|cookie|authorization|bearer|(?:^|[_\-.])auth(?:$|[_\-.])|basic[_-]?auth",
    re.I,
)

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
_NB = rf"(?<![{_TOKEN}])"  # not preceded by a token character
_NA = rf"(?![{_TOKEN}])"  # not followed by one


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
    return len(value) >= 4 and not is_placeholder(value) and not value.startswith(("$", "{", "<", "%", "["))


def _docker_auth(match: re.Match[str]) -> bool:
    """A registry ``auth`` is base64 of ``user:password``."""
    value = match.group(1)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and not is_placeholder(decoded.decode("utf-8", "replace"))


# Keywords whose value is a secret: the keyword rules' alternation and literals (lowercase).
_KEYWORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credentials?|bearer|basic[ _-]?auth"
)
_KEYWORD_LITERALS = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "api_key", "api-key", "apikey", "access_key",
    "access-key", "accesskey", "private_key", "private-key", "privatekey", "credential", "bearer", "basic_auth",
    "basic-auth", "basicauth", "basic auth",
)
# A name ending like these holds something about the secret, not the secret: TOKEN_URL, password_file, maxTokens.
_NOT_SECRET_SUFFIXES = (
    "url", "uri", "path", "file", "dir", "name", "type", "count", "len", "length", "env", "var", "header",
    "prefix", "limit", "budget", "ttl", "expiry", "expires", "expiresat", "endpoint", "field", "id", "hash",
    "policy", "mode", "format", "size", "provider", "source", "store", "usage", "estimate", "helper", "command",
    "cmd", "method", "scheme", "label", "hint", "prompt", "regex", "pattern", "strategy", "kind", "ref", "index",
    "timeout", "location", "manager", "service", "client", "count", "max", "min", "enabled", "required", "reset",
    "rotation", "version", "spec", "schema", "validator", "input", "key_id", "keyid", "arn",
)


_HEX = re.compile(r"[0-9a-fA-F]{7,128}")
_HASH_WORDS = ("commit", "sha", "rev", "hash", "digest", "checksum", "etag", "integrity")


def _keyword_value(match: re.Match[str]) -> bool:
    """The keyword rule's second look: is the name a secret's name, and is its value a secret?"""
    value = match.group(5)
    if len(value) < 6:
        return False
    rest = match.group(2)
    if rest:
        if rest[0].islower() and not (rest[0] == "s" and (len(rest) == 1 or not rest[1].islower())):
            return False  # the keyword starts a longer word: tokenizer, secretary, passwordless
        if rest.lower().replace("_", "").replace("-", "").replace(".", "").endswith(_NOT_SECRET_SUFFIXES):
            return False
    if _HEX.fullmatch(value):
        before = match.string[max(0, match.start() - 24) : match.start()].lower()
        if any(word in before for word in _HASH_WORDS):
            return False  # "commit token 3f78…": a git SHA or a digest named as such
    keyword = match.group(1)
    password = keyword[0] in "pP" and keyword[1] in "aAwW"
    return secret_value(value, password=password, quoted=bool(match.group(4)), prose=match.group(3) is None)


_AUTH_SCHEMES = r"bearer|basic|token|digest|bot|apikey|sso-key"
# A quoted value runs to its closing quote, whatever punctuation it holds (a chosen password: "Blue&Blue8204").
# An unquoted one stops at separators; "&" and ":" are part of it unless a "name=" or "name:" follows them, so a
# value never runs into the next "key=value" of a query string (and "=" only as padding at the end).
_VALUE = (r"((?(4)[^\s\"'`]{4,1024}+|(?:[^\s\"',;{}\[\]()<>`=:&]|[:&](?![\w.\-]{1,64}+[=:])){4,1024}+)"
          r"={0,3}+)")

RULES: tuple[Rule, ...] = (
    Rule(
        "authorization-header",
        ("authorization", "proxy-authorization"),
        _c(
            r"(?<![\w-])(?:proxy-)?authorization[\"'`]?\s*+[:=]\s*+[\"'`]?"
            rf"(?:(?:{_AUTH_SCHEMES})\s++)?([^\s\"'`,;]{{6,4096}}+)",
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
        _c(r"(?<![\w-])(?:set-)?cookie[ \t]*+:[ \t]*+([^\r\n]{1,4096}+)", re.I),
        1,
    ),
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
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "gloas-", "glimt-", "glagent-", "glffct-"),
        _c(rf"{_NB}gl(?:pat|dt|rt|ptt|soat|cbt|oas|imt|agent|ffct)-[A-Za-z0-9_\-]{{20,255}}+"),
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
        ("accountkey=", "sharedaccesskey="),
        _c(r"(?:account|sharedaccess)key=([A-Za-z0-9+/]{20,128}+={0,2}+)", re.I),
        1,
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
    Rule(
        "url-credentials",
        ("://",),
        _c(r"://[^\s/:@\"'<>]{0,256}+:([^\s/@\"'<>]{1,256}+)@"),
        1,
        _url_credential,
    ),
    Rule(
        "url-secret-param",
        (
            "access_token=", "refresh_token=", "id_token=", "token=", "api_key=", "apikey=", "key=", "secret=",
            "client_secret=", "password=", "passwd=", "auth=", "sig=", "signature=", "code=",
        ),
        _c(
            r"(?<=[?&])(?:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|client_secret"
            r"|password|passwd|auth|sig|signature|code)=([^&\s\"'#<>]{4,4096}+)",
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
        _c(
            rf"({_KEYWORDS}|api key|access key|private key)([A-Za-z0-9_.\-]{{0,32}}+)[\"'`]?"
            r"(?:[ \t]*+(:=|=>|[:=])[ \t]*+|[ \t]++(?:(?:is|was|are|of|for the [a-z]{1,20}+ is)[ \t]++)?)"
            r"(?:([\"'`])|)(?:b\"|r\")?" + _VALUE,
            re.I,
        ),
        5,
        _keyword_value,
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
