"""Property tests of the record gates (S3): a record the fast path skips holds nothing the slow pass would redact.

An import searches each serialized record for the rules' literals and, for a record whose only literals are the
keyword rule's words, for the shape of a secret after them (``Redactor.needs_redaction``); only records that pass
go through the rules. That check is meant to be a superset of what the rules find. Here texts are built around
the keyword rule's names in every case, as a part of a longer name or word, with any operator or none and any
value, in a message's text, in a tool call's arguments and as an object key: whatever the slow pass changes, the
gates must have let through.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hindsight_batch import jsoncodec
from hindsight_batch.redaction.redactor import Findings, Redactor

REDACTOR = Redactor(b"k")

_NAMES = ("pass", "pw", "auth", "cred", "creds", "passcode", "password", "passwd", "pwd", "token", "secret",
          "api_key", "apiKey", "access-key", "credentials", "signing_key", "signingKey", "master-key", "hmackey",
          "session_key", "encryptionKey", "jwt_key", "webhookKey", "licence_key", "basic auth")
_CASES = (str.lower, str.upper, str.capitalize, lambda name: name)
_BEFORE = ("", "db_", "DB_", "my", "x-", "by", "com", "--", "-", "smtp.", "dB", "X_", "9", "the ", "my wifi ")
_AFTER = ("", "s", "S", "es", "word", "_FILE", "Hash", "ed", "_1", "Id", "_key", ".value")
_GAPS = ("=", ": ", " = ", "\t=\t", ":=", "=>", " is ", " was ", " ", "': '", " : ", "\t", "  are  ", "=\"", "='")
_VALUES = ("Qz7Lm2Xp9Vk4", "Blue!Blue983", "9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0", "hunter22", "abc",
           "Rocket#Winter8639", "abcdefghijklmnopqrstuvwx", "3a4b5c6d7e", "Tr0ub4dor&3", "$SECRET", "${{ x }}")

names = st.builds(lambda name, case: case(name), st.sampled_from(_NAMES), st.sampled_from(_CASES))
values = st.sampled_from(_VALUES) | st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=0, max_size=24)
texts = st.builds(
    lambda head, before, name, after, gap, value, tail: f"{head}{before}{name}{after}{gap}{value}{tail}",
    st.sampled_from(("", "run: ", "export ", "{\"", "see ")), st.sampled_from(_BEFORE), names,
    st.sampled_from(_AFTER), st.sampled_from(_GAPS), values, st.sampled_from(("", " ok", "\"}", "'", "\n", ";")),
)


def _gated(message: dict[str, Any]) -> tuple[bool, bool]:
    """(whether the slow pass changes the message, whether the gates let the record through to it)."""
    data = jsoncodec.dumps({"type": "message", "message": message})
    hints = REDACTOR.hints_each_utf8([data])[0]
    changed = REDACTOR.redact_value(message, Findings(), hints) != message
    return changed, bool(hints) and REDACTOR.needs_redaction(data, hints)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, where=st.sampled_from(("text", "arguments", "key")))
@example(text="DOOR_PASSCODE=Qz7Lm2Xp9Vk4", where="text")  # found by this test: the gate stopped at "pass" + "code"
@example(text="credss=Qz7Lm2Xp9Vk4", where="text")  # "creds" and a plural "s" after it
@example(text="passcodees=Qz7Lm2Xp9Vk4", where="key")  # an object key the rule judged whole, the gate refused
def test_the_gates_never_skip_a_record_the_rules_would_redact(text: str, where: str) -> None:
    if where == "text":
        message: dict[str, Any] = {"role": "user", "content": [{"type": "text", "text": text}]}
    elif where == "arguments":
        message = {"role": "assistant", "content": [{"type": "toolCall", "name": "bash", "arguments": {
            "command": text}}]}
    else:  # the name as an object key, the value under it
        name, _, value = text.partition("=")
        message = {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {
            name: value or "Qz7Lm2Xp9Vk4"}}]}
    changed, passed = _gated(message)
    assert passed or not changed, message


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_hints_of_a_batch_are_every_literal_each_record_holds(text: str) -> None:
    """The gates' literal search (grouped by letter, the keyword rule's words apart) finds exactly the literals a
    plain search finds, in a record alone and between others."""
    records = [jsoncodec.dumps({"t": text}), jsoncodec.dumps({"t": "plain " + text[::-1]}), b'{"t":"token"}']
    literals = set(REDACTOR._rules_of) | {"-----begin "}
    for record, hints in zip(records, REDACTOR.hints_each_utf8(records), strict=True):
        lowered = record.lower().decode()
        assert hints == {lit for lit in literals if lit in lowered}, record
