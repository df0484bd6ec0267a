"""Secret-detection rules (S3).

Every rule must run in linear time on hostile input, because tool output can be megabytes of anything:

* a rule is tried only where one of its literal anchors occurs (found with ``str.find``), never at every position;
* every repetition is bounded or possessive (``++``, ``{m,n}+``) over a class that cannot contain what follows
  it, and most patterns require a non-token character before their start. So an attempt never backtracks, and
  attempts from different starts never re-scan the same run: total work is O(n);
* PEM private-key blocks are matched with ``str.find`` rather than a regex (:mod:`.redactor`).

``scripts/bench_redaction.py`` feeds 10 MB adversarial lines through all of them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

_PLACEHOLDERS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "string", "str", "bool", "int", "number",
        "password", "secret", "token", "changeme", "example", "redacted", "required", "optional", "default",
        "value", "your_token", "your_key", "your_password", "xxxxxx", "********",
    }
)


@dataclass(frozen=True, slots=True)
class Rule:
    """A secret pattern.

    ``anchors`` are lowercase literals at which every match starts: the redactor finds them with ``str.find`` and
    tries the pattern only there (anchored), instead of letting the regex engine try every position. A rule with
    no anchors is searched with ``finditer`` after its ``prefilter`` literals were seen.
    """

    id: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int = 0  # the group that holds the secret (0: the whole match)
    accept: Callable[[str], bool] | None = None  # a second look at a candidate, to spare ordinary code
    prefilter: tuple[str, ...] = ()  # for unanchored rules only

    @property
    def literals(self) -> tuple[str, ...]:
        return self.anchors or self.prefilter


_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z_$.]*+(?:\(\))?")


def looks_secret(value: str) -> bool:
    """For ``key = value`` rules: skip placeholders, references and plain identifiers like ``get_token``."""
    stripped = value.strip("\"'`")
    if len(stripped) < 4 or stripped.lower() in _PLACEHOLDERS:
        return False
    if stripped[0] in "$<{%*[" or stripped.startswith(("os.environ", "process.env", "env.", "self.", "this.")):
        return False
    if _IDENTIFIER.fullmatch(stripped):
        return False  # a name, not a value: KIMCHI_API_KEY, config.apiKey, resolveToken()
    if len(stripped) >= 16:
        return True
    has_digit = any(c.isdigit() for c in stripped)
    has_alpha = any(c.isalpha() for c in stripped)
    mixed_case = any(c.isupper() for c in stripped) and any(c.islower() for c in stripped)
    has_symbol = any(not c.isalnum() and c not in "_-." for c in stripped)
    return (has_digit and has_alpha) or mixed_case or has_symbol


SECRET_KEY_NAME = re.compile(
    r"password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|cookie"
    r"|authorization",
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

RULES: tuple[Rule, ...] = (
    Rule(
        "authorization-header",
        ("authorization", "proxy-authorization"),
        _c(
            r"(?<![\w-])(?:proxy-)?authorization[\"']?\s*+[:=]\s*+[\"']?"
            r"(?:(?:bearer|basic|token|digest)\s++)?([^\s\"',;]{6,4096}+)",
            re.I,
        ),
        1,
    ),
    Rule("bearer-token", ("bearer",), _c(rf"{_NB}bearer\s++([A-Za-z0-9._~+/=\-]{{16,4096}}+)", re.I), 1),
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
    Rule("anthropic-key", ("sk-ant-",), _c(rf"{_NB}sk-ant-[A-Za-z0-9_\-]{{20,512}}+")),
    Rule("openai-key", ("sk-",), _c(rf"{_NB}sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,512}}+")),
    Rule("slack-token", ("xox",), _c(rf"{_NB}xox[abposre]-[A-Za-z0-9\-]{{10,512}}+")),
    Rule(
        "slack-webhook",
        ("https://hooks.slack.com/",),
        _c(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{10,256}+"),
    ),
    Rule("google-api-key", ("aiza",), _c(rf"{_NB}AIza[0-9A-Za-z_\-]{{35}}(?![{_TOKEN}])")),
    Rule("google-oauth-token", ("ya29.",), _c(rf"{_NB}ya29\.[0-9A-Za-z_\-]{{20,2048}}+")),
    Rule(
        "jwt",
        ("eyj",),
        _c(rf"{_NB}eyJ[A-Za-z0-9_\-]{{8,8192}}+\.eyJ[A-Za-z0-9_\-]{{8,8192}}+\.[A-Za-z0-9_\-]{{0,8192}}+"),
    ),
    Rule(
        "url-credentials",
        ("://",),
        _c(r"://[^\s/:@\"'<>]{1,256}+:([^\s/@\"'<>]{1,256}+)@"),
        1,
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
    ),
    Rule(
        "secret-assignment",
        (
            "password", "passwd", "pwd", "secret", "token", "api_key", "api-key", "apikey", "access_key",
            "access-key", "accesskey", "private_key", "private-key", "privatekey", "credential",
        ),
        _c(
            r"(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)"
            r"[A-Za-z0-9_.\-]{0,32}+[\"']?[ \t]*+(?::|=|:=|=>)[ \t]*+[\"']?([^\s\"',;{}\[\]()<>`]{4,1024}+)",
            re.I,
        ),
        1,
        looks_secret,
    ),
)


def private_url_rule(extra_globs: tuple[str, ...]) -> Rule:
    return Rule(
        "private-url",
        ("http://", "https://"),
        _c(r"(?<![\w+.\-])https?://[A-Za-z0-9.\-\[\]:]{1,300}+(?:[/?#][^\s\"'<>)\]]{0,2048}+)?", re.I),
        0,
        private_host_checker(extra_globs),
    )
