"""Property tests of the record gates (S3): a record the fast path skips holds nothing the slow pass would redact.

An import searches each serialized record for the rules' literals and, for a record whose only literals are the
keyword rule's words, for the shape of a secret after them (``Redactor.needs_redaction``); only records that pass
go through the rules. That check is meant to be a superset of what the rules find. Here texts are built around
the keyword rule's names in every case, as a part of a longer name or word, with any operator or none and any
value, in a message's text, in a tool call's arguments and as an object key: whatever the slow pass changes, the
gates must have let through.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from hindsight_batch.base import jsoncodec
from hindsight_batch.redaction.redactor import _BASE64_LITERALS, _DECODE_LITERALS, Findings, Redactor
from hindsight_batch.redaction.values import is_placeholder

REDACTOR = Redactor(b"k")

_NAMES = ("pass", "pw", "auth", "cred", "creds", "passcode", "password", "passwd", "pwd", "token", "secret",
          "api_key", "apiKey", "access-key", "credentials", "signing_key", "signingKey", "master-key", "hmackey",
          "session_key", "encryptionKey", "jwt_key", "webhookKey", "licence_key", "basic auth", "psk", "wpa_psk")
_CASES = (str.lower, str.upper, str.capitalize, lambda name: name)
_BEFORE = ("", "db_", "DB_", "my", "x-", "by", "com", "--", "-", "smtp.", "dB", "X_", "9", "the ", "my wifi ", "I set ")
_AFTER = ("", "s", "S", "es", "word", "_FILE", "Hash", "ed", "_1", "Id", "_key", ".value")
_GAPS = ("=", ": ", " = ", "\t=\t", ":=", "=>", " is ", " was ", " ", "': '", " : ", "\t", "  are  ", "=\"", "='",
         " to ", " at the office is ", " I use locally: ", ", in case you need it, is ", " should be ", " -> ",
         " (for the admin user): ", " has been reset to ", " as ")  # (sentence shapes: rules._PROSE_GIVEN)
_VALUES = ("Qz7Lm2Xp9Vk4", "Blue!Blue983", "9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0", "hunter22", "abc",
           "Rocket#Winter8639", "abcdefghijklmnopqrstuvwx", "3a4b5c6d7e", "Tr0ub4dor&3", "$SECRET", "${{ x }}",
           "PrmOpehLGLxn", "rx%bUt&m(b#r#Cp")

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
@example(text="pass=_BASE64")  # (a literal that lets a text be decoded, not a rule's)
def test_hints_of_a_batch_are_every_literal_each_record_holds(text: str) -> None:
    """The gates' literal search (grouped by letter, the keyword rule's words apart) finds exactly the literals a
    plain search finds, in a record alone and between others."""
    records = [jsoncodec.dumps({"t": text}), jsoncodec.dumps({"t": "plain " + text[::-1]}), b'{"t":"token"}']
    literals = set(REDACTOR._rules_of) | {"-----begin ", *_BASE64_LITERALS, *_DECODE_LITERALS}  # (decoded)
    for record, hints in zip(records, REDACTOR.hints_each_utf8(records), strict=True):
        lowered = record.lower().decode()
        assert hints == {lit for lit in literals if lit in lowered}, record


# A password given on standard input, in the shapes a shell allows: whatever the feeder, quoting, blanks and reader,
# the value is gone (and the gates let the record through); fed from a reference or a command, nothing changes.

_FEEDERS = ("echo", "echo -n", "echo -e", "printf", "printf '%s\\n'", 'printf "%s"', "printf %s")
_READERS = ("docker login -u bot --password-stdin ghcr.io", "podman login --password-stdin -u me quay.io",
            "sudo -S apt-get update", "sudo -kS true", "sudo -u postgres -S psql", "sudo --stdin ls", "chpasswd",
            "sudo chpasswd", "sudo -E chpasswd", "passwd --stdin deploy", "kinit admin@EXAMPLE.COM",
            "htpasswd -i -c .htpasswd admin", "smbpasswd -a -s deploy", "gpg --batch --passphrase-fd 0 -d x.gpg",
            "openssl rsa -in k.pem -passin stdin", "helm registry login r.io -u u --password-stdin")
_HERE_READERS = ("docker login -u bot --password-stdin ghcr.io", "sudo -S apt-get update", "chpasswd",
                 "passwd --stdin deploy", "kinit admin")
_BLANKS = (" ", "  ", "\t")
passwords = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="'\"`$|;&<>\\"),
                    min_size=4, max_size=40).filter(
    # (not another flag, a placeholder, or a template's shape: {password}, %PW%, [PASSWORD])
    lambda v: not v.startswith("-") and not is_placeholder(v) and not re.fullmatch(r"\{.*\}|%.*%|\[.*\]", v))


def _quoted(value: str, quote: str) -> str:
    return f"{quote}{value}{quote}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feeder=st.sampled_from(_FEEDERS), value=passwords, quote=st.sampled_from(("", "'", '"')),
       blank=st.sampled_from(_BLANKS), reader=st.sampled_from(_READERS), here=st.booleans(),
       here_reader=st.sampled_from(_HERE_READERS), lead=st.sampled_from(("", "cd app && ", "$ ", "(", "x; ")))
def test_a_password_on_standard_input_never_survives(feeder: str, value: str, quote: str, blank: str, reader: str,
                                                      here: bool, here_reader: str, lead: str) -> None:
    chpasswd = "chpasswd" in (here_reader if here else reader)
    word = _quoted(f"deploy:{value}" if chpasswd else value, quote)  # (chpasswd reads user:password)
    command = (f"{lead}{here_reader}{blank}<<<{blank}{word}" if here
               else f"{lead}{feeder}{blank}{word}{blank}|{blank}{reader}")
    message: dict[str, Any] = {"role": "assistant", "content": [{"type": "toolCall", "name": "bash",
                                                                 "arguments": {"command": command}}]}
    assume(value not in command.replace(word, "", 1))  # (not a word of the command around it)
    out = REDACTOR.redact_value(message, Findings())
    assert value not in out["content"][0]["arguments"]["command"].replace("[REDACTED:stdin-password]", ""), command
    changed, passed = _gated(message)
    assert changed and passed, command


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(feeder=st.sampled_from(_FEEDERS), name=st.from_regex(r"[A-Z][A-Z_]{2,12}", fullmatch=True),
       form=st.sampled_from(("${}", "$" + "{{{}}}", '"${}"', "`cat {}`", '"$(cat {})"', "-", "{{{}}}", "%{}%",
                             "'[{}]'", "<{}>")),
       reader=st.sampled_from(_READERS))
def test_standard_input_from_a_reference_or_a_command_is_left_alone(feeder: str, name: str, form: str,
                                                                     reader: str) -> None:
    command = f"{feeder} {form.format(name)} | {reader}"
    assert REDACTOR.redact_text(command, Findings()) == command


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.binary(min_size=1, max_size=64), context=st.sampled_from((
    "APP_KEY={}", 'APP_KEY="{}"', "'key' => env('APP_KEY', '{}'),", "APP_PREVIOUS_KEYS={},base64:x",
    '{{"app_key": "{}"}}', "the key is {} now")))
def test_a_laravel_key_is_redacted_by_its_size(key: bytes, context: str) -> None:
    """A key of 16 to 64 bytes (Laravel makes 16 or 32) is gone; shorter base64 (a word, a tiny blob) is kept."""
    encoded = base64.b64encode(key).decode()
    text = context.format("base64:" + encoded)
    out = REDACTOR.redact_text(text, Findings())
    if len(key) >= 16 and not is_placeholder(encoded):
        assert encoded.rstrip("=") not in out and "[REDACTED:laravel-app-key]" in out, text
    elif len(key) < 16:
        assert out == text


# A secret in XML, as config files hold it: any element named for a secret (a prefix, the word in any case, a
# plural), with or without attributes and blanks, or a key and value pair; the value is gone and the gates let it in.

_XML_PREFIXES = ("", "db.", "Smtp", "client_", "ClearText", "jdbc.", "nexus:", "spring.datasource.")
_XML_WORDS = ("password", "Password", "PASSWORD", "passwd", "secret", "Secret", "token", "Token", "apiKey", "ApiKey",
              "api-key", "passphrase", "credential", "accessKey", "privateKey")
# (No backtick: the assignment it is compared with ends a quoted value there; XML does not.)
xml_values = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="<>&\"'`"),
                     min_size=8, max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(prefix=st.sampled_from(_XML_PREFIXES), word=st.sampled_from(_XML_WORDS), plural=st.sampled_from(("", "s")),
       value=xml_values, attributes=st.sampled_from(("", ' type="string"', " a='1' b='2'")),
       blank=st.sampled_from(("", " ", "\t")), pair=st.booleans())
def test_a_secret_in_xml_never_survives(prefix: str, word: str, plural: str, value: str, attributes: str,
                                       blank: str, pair: bool) -> None:
    """Whatever value the keyword detector takes for a secret under a name (``name="value"``), it is gone from
    the same name's element or key and value pair."""
    if word.lower().endswith("key"):
        plural = ""  # (an element is <ApiKey>, never <ApiKeys>: the rule looks for the singular)
    if word == "passwd":
        pair = True  # (<passwd> elements are not looked for: docs/secrets.md)
    name = f"{prefix}{word}{plural}"
    assume(REDACTOR.redact_text(f'{name}="{value}"', Findings()) != f'{name}="{value}"')
    text = (f'<add key="{name}"{blank or " "}value="{value}" />' if pair
            else f"<{name}{attributes}>{blank}{value}</{name}>")
    message: dict[str, Any] = {"role": "toolResult", "content": [{"type": "text", "text": f"<config>{text}</config>"}]}
    out = REDACTOR.redact_value(message, Findings())
    assert value not in out["content"][0]["text"], text
    changed, passed = _gated(message)
    assert changed and passed, text
