"""S3: classes of secrets (and of text that is none) found missing by the second independent set (issue 37,
tests/fixtures/independent/secrets2). Each test is about a class of input, checked through the rules alone and
through an import's record gates; each has text beside it that must stay as it is."""

from __future__ import annotations

import pytest

from hindsight_batch.redaction.redactor import Findings, Redactor
from tests.adversarial import through_import

REDACTOR = Redactor(b"k")


def _both(text: str) -> tuple[str, str]:
    """``text`` redacted by the rules alone and through an import (its record gates, its JSON)."""
    return REDACTOR.redact_text(text, Findings()), through_import(REDACTOR, text)


def _assert_redacted(text: str, secret: str, kept: str) -> None:
    for out in _both(text):
        assert secret not in out, out
        assert kept in out, out


def _assert_kept(text: str) -> None:
    for out in _both(text):
        assert out == text, out


@pytest.mark.parametrize(("text", "secret", "kept"), [
    # A sentence's full stop after the value is the sentence's.
    ("the value of VOYAGE_API_KEY is pa-CJk0YBoSzxKehspRszxHqeXpri9a. It worked yesterday.",
     "pa-CJk0YBoSzxKehspRszxHqeXpri9a", ". It worked yesterday."),
    ("the token is Xk29vLpQ8rTz3mWnq7. Next step", "Xk29vLpQ8rTz3mWnq7", ". Next step"),
    # A call's closing bracket before an escaped newline of JSON text is the call's.
    ('{"text":"TOKEN = \\"AVUEBx1hdkxhpRpX4yDb9v2B0kA6biVc\\"\\nclient = Client(api_key=UPSTASH_TOKEN)\\n"}',
     "AVUEBx1hdkxhpRpX4yDb9v2B0kA6biVc", "client = Client(api_key=UPSTASH_TOKEN)\\n"),
])
def test_a_redaction_never_eats_past_the_value(text: str, secret: str, kept: str) -> None:
    _assert_redacted(text, secret, kept)


@pytest.mark.parametrize("text", [
    '{"text":"client = Client(api_key=UPSTASH_REDIS_REST_TOKEN)\\nprint(client)"}',
    "client = Client(api_key=ANTHROPIC_ADMIN_KEY)",
    "API_TOKEN=abc.def.",
])
def test_a_name_given_as_the_value_is_code(text: str) -> None:
    _assert_kept(text)
