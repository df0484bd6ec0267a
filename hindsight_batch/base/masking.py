"""Credentials never reach an output: every message, status line and summary goes through :func:`mask`.

What is masked: the password of a URL's userinfo (``http://user:***@host``; a userinfo with no password is often
a token by itself, ``https://***@host``), the value of a secret-looking query parameter (``?api_key=***``,
``token``, ``key``, ``sig``, …), and any value registered with :func:`remember_secret` (the API key, wherever
it turns up, for instance in a server's error detail).
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://userinfo@ — the userinfo runs to the last "@" before the host's end (a password may hold "@").
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]{0,30}://)(?P<user>[^\s/?#@:\"'<>]*+)"
                       r"(?::(?P<password>[^\s/?#\"'<>]*))?@(?=[^\s@/?#\"'<>]*(?:[\s/?#\"'<>]|$))")
_PARAMS = (
    "access_token", "refresh_token", "id_token", "token", "api_key", "apikey", "api-key", "key", "secret",
    "client_secret", "password", "passwd", "pwd", "auth", "sig", "signature", "code", "x-amz-signature",
    "x-amz-credential", "x-goog-signature", "x-goog-credential",
)
_QUERY = re.compile(r"(?P<name>[?&;](?:" + "|".join(re.escape(p) for p in _PARAMS) + r")=)[^&;#\s\"'<>]+",
                    re.IGNORECASE)

_secrets: set[str] = set()


def remember_secret(value: str | None) -> None:
    """From now on, :func:`mask` replaces ``value`` wherever it occurs (too short a value would mask noise)."""
    if value and len(value) >= 4:
        _secrets.add(value)


def _userinfo(match: re.Match[str]) -> str:
    if match.group("password") is None:
        return f"{match.group('scheme')}{MASK}@" if match.group("user") else match.group(0)
    return f"{match.group('scheme')}{match.group('user')}:{MASK}@"


def mask(text: str) -> str:
    """``text`` with every credential it holds replaced by ``***``."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    if "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    if "=" in text:
        text = _QUERY.sub(lambda m: m.group("name") + MASK, text)
    return text
