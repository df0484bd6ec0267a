"""Configuration files as users and the extension leave them, generated: any of them either resolves or stops the
run with a :class:`ConfigError` naming the file and the key (S8, fail closed), never anything else, and no error
repeats a credential found in it, wherever it was put.

And our own JSONC reader (``families.strip_jsonc``, for pi-hindsight's ``hindsight.jsonc``): it keeps every
position (error messages point into the user's file), leaves plain JSON as it is, and reads JSON with comments
and trailing commas as the JSON without them.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.config.families import strip_jsonc
from hindsight_batch.errors import ConfigError

SECRET = "hsk_live_7Qm2ZcV9xN4pL8rT3wY6"
BOUNDED = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALARS = st.none() | st.booleans() | st.integers(-2, 10**6) | st.floats(allow_nan=False) | st.text(max_size=6)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=5), inner, max_size=3), max_leaves=8)


ANY_VALUE_TEXT = VALUES.map(json.dumps)


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of the defaults: where a user could write a value."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    return found


KEY_PATHS = _paths(Settings().model_dump(by_alias=True, mode="json"))


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


@st.composite
def config_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A config file holding the API key, with values of any type at real keys (the key itself too), now and
    then a misspelt key, and now and then cut short; as JSON or as pi-hindsight's JSONC."""
    url = draw(st.sampled_from(["http://127.0.0.1:9", f"http://127.0.0.1:{SECRET}", f"http://u:{SECRET}@host",
                                f"http://host/?api_key={SECRET}", f"ftp://{SECRET}@host", f"http://[{SECRET}]"]))
    data: dict[str, Any] = {"apiKey": SECRET, "baseUrl": url}
    for _ in range(draw(st.integers(0, 4))):
        path = draw(st.sampled_from(KEY_PATHS))
        value = draw(st.sampled_from([SECRET, [SECRET], {"k": SECRET}, f"x {SECRET} y"]) | VALUES)
        _set(data, path, value)
    if draw(st.booleans()):
        data[draw(st.sampled_from(["apikey", "baseURL", "import2", SECRET]))] = draw(VALUES)
    name = draw(st.sampled_from(["config.json", "hindsight.jsonc"]))
    text = json.dumps(data, indent=draw(st.sampled_from([None, 2]))).encode()
    if draw(st.integers(0, 4)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return name, text


@BOUNDED
@given(config_files())
@example(("config.json", json.dumps({"apiKey": SECRET, SECRET: ""}).encode()))  # the key pasted as a key name
@example(("config.json", json.dumps({"apiKey": SECRET, "baseUrl": f"http://127.0.0.1:{SECRET}"}).encode()))
@example(("config.json", json.dumps({"apiKey": SECRET, "baseUrl": {"k": SECRET}}).encode()))  # object for a string
@example(("config.json", json.dumps({"apiKey": SECRET, "import": {"branches": {}}}).encode()))
@example(("config.json", json.dumps({"apiKey": SECRET, "observationScopes": {"k": 1}}).encode()))  # a union
@example(("config.json", b'{"strip":' * 5000 + b"1" + b"}" * 5000))  # past the parser's recursion limit
@example(("hindsight.jsonc", b"[" * 100_000 + b"]" * 100_000))
def test_any_config_file_resolves_or_names_file_and_key_without_repeating_the_key(file: tuple[str, bytes]) -> None:
    name, text = file
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(text)
        try:
            resolved = ConfigResolver(env={}, config_file=path).for_cwd(None)
        except ConfigError as exc:
            message = str(exc)
            assert exc.source == str(path) and exc.key and exc.problem
            assert not re.search(r"(list|dict|str|literal|function-\w+|nullable)\[", exc.key)  # as written, no type
            assert SECRET not in message and SECRET[:12] not in message, message
        else:
            assert isinstance(resolved.settings, Settings)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["HINDSIGHT_RETAIN_CONTENT", "HINDSIGHT_STRIP", "HINDSIGHT_TOOL_FILTER",
                        "HINDSIGHT_OBSERVATION_SCOPES"]),
       st.sampled_from(["[" * 100_000, "{" * 3000, '{"user": [' + "[" * 5000 + "]" * 5000 + "]}", "[1,", "NaN", SECRET])
       | ANY_VALUE_TEXT)
# A key holding a dot: the error's source was once looked up by splitting the key path on dots, and lost.
@example("HINDSIGHT_RETAIN_CONTENT", '{".": {}}')
@example("HINDSIGHT_TOOL_FILTER", '{"toolCall": {"a.b": []}}')
def test_any_json_in_an_environment_variable_resolves_or_names_it(name: str, value: str) -> None:
    try:
        ConfigResolver(env={name: value}).for_cwd(None)
    except ConfigError as exc:
        assert exc.source == f"env {name}" and SECRET not in str(exc)


JSONC_NOISE = st.sampled_from([" ", "\n", "\t", "// a comment, with \"quotes\" and /* */\n", "/* block\n , */",
                               "/**/", "// no newline at the end?\n"])


def _jsonc(draw: st.DrawFn, value: Any) -> str:
    """``value`` as JSON with comments and whitespace between tokens and, now and then, a trailing comma."""
    def noise() -> str:
        return "".join(draw(st.lists(JSONC_NOISE, max_size=2)))

    if isinstance(value, dict):
        items = [f"{noise()}{json.dumps(k)}{noise()}:{noise()}{_jsonc(draw, v)}{noise()}" for k, v in value.items()]
        trailing = "," + noise() if items and draw(st.booleans()) else ""
        return "{" + ",".join(items) + trailing + noise() + "}"
    if isinstance(value, list):
        items = [f"{noise()}{_jsonc(draw, v)}{noise()}" for v in value]
        trailing = "," + noise() if items and draw(st.booleans()) else ""
        return "[" + ",".join(items) + trailing + noise() + "]"
    return json.dumps(value)


STRINGS = st.lists(st.sampled_from([*'ab"\\/,*}]{[ \n', "//", "/*", "*/", ",}", "é"]), max_size=6).map("".join)
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | STRINGS, lambda inner: st.lists(
    inner, max_size=3) | st.dictionaries(STRINGS, inner, max_size=3), max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.data())
def test_jsonc_with_comments_and_trailing_commas_reads_as_the_json_without_them(
    value: Any, data: st.DataObject
) -> None:
    plain = json.dumps(value, indent=data.draw(st.sampled_from([None, 1])))
    assert strip_jsonc(plain) == plain  # plain JSON is left as it is (strings with // or , in them too)
    text = _jsonc(data.draw, value)
    stripped = strip_jsonc(text)
    assert len(stripped) == len(text)  # positions kept: an error points into the user's file
    assert json.loads(stripped) == value


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*'{}[]",:/*\\ \nab1', "//", "/*", "*/"]), max_size=30).map("".join))
def test_jsonc_reader_takes_any_text_and_keeps_its_length(text: str) -> None:
    assert len(strip_jsonc(text)) == len(text)
