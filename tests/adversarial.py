"""Hostile inputs for the secret rules: each one is built to make a backtracking pattern go quadratic or worse.

Shared by ``tests/test_redaction.py`` (it must finish) and ``scripts/bench_redaction.py`` (how fast).
"""

from __future__ import annotations


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
    }
