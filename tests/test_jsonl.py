"""The tolerant line reader: pi's splitting rules, malformed and glued lines, truncated tails, huge lines."""

from __future__ import annotations

import io
import json
import math

from hindsight_batch.session.jsonl import Malformed, ParsedObject, iter_lines, iter_objects


def objects(data: bytes, **kw: int) -> list[ParsedObject | Malformed]:
    return list(iter_objects(io.BytesIO(data), **kw))


def test_splits_on_newline_only_not_on_unicode_line_separators() -> None:
    # Raw U+2028/U+2029 are legal inside JSON strings (pi writes them raw); str.splitlines() would cut the line.
    # A CRLF line ending leaves a harmless trailing \r, as in JSON.parse.
    first = json.dumps({"a": "x\u2028y\u2029z"}, ensure_ascii=False).encode()
    got = objects(first + b"\n" + b'{"b":"crlf"}\r\n')
    assert [o.obj for o in got if isinstance(o, ParsedObject)] == [{"a": "x\u2028y\u2029z"}, {"b": "crlf"}]


def test_blank_lines_are_skipped_but_counted_in_line_numbers() -> None:
    got = objects(b'{"a":1}\n\n   \n{"b":2}\n')
    assert [(o.lineno, o.obj) for o in got if isinstance(o, ParsedObject)] == [(1, {"a": 1}), (4, {"b": 2})]


def test_malformed_line_is_reported_with_its_number_and_reading_goes_on() -> None:
    got = objects(b'{"a":1}\n{"broken":\n{"c":3}\n')
    assert isinstance(got[1], Malformed)
    assert got[1].lineno == 2 and not got[1].truncated_tail
    assert isinstance(got[2], ParsedObject) and got[2].obj == {"c": 3}


def test_two_glued_objects_are_both_recovered() -> None:
    got = objects(b'{"a":1}{"b":2}\n{"c":3}\n')
    parsed = [o for o in got if isinstance(o, ParsedObject)]
    assert [o.obj for o in parsed] == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert [o.glued for o in parsed] == [True, True, False]
    assert parsed[0].lineno == parsed[1].lineno == 1


def test_truncated_last_line_is_a_tail_not_corruption() -> None:
    got = objects(b'{"a":1}\n{"b":"half')
    assert isinstance(got[-1], Malformed) and got[-1].truncated_tail


def test_complete_last_line_without_newline_is_read() -> None:
    got = objects(b'{"a":1}\n{"b":2}')
    assert [o.obj for o in got if isinstance(o, ParsedObject)] == [{"a": 1}, {"b": 2}]


def test_invalid_utf8_is_replaced_like_node_does() -> None:
    got = objects(b'{"a":"caf\xe9"}\n')
    assert isinstance(got[0], ParsedObject) and got[0].obj == {"a": "caf\ufffd"}


def test_non_object_line_is_malformed() -> None:
    got = objects(b'[1,2]\n"text"\n')
    assert all(isinstance(o, Malformed) for o in got)


def test_big_lines_are_not_held_whole_and_long_strings_are_cut() -> None:
    big = json.dumps({"type": "message", "id": "x", "message": {"content": "A" * 5000}}).encode()
    data = b'{"a":1}\n' + big + b"\n" + big + big + b"\n" + b'{"z":9}\n'
    lines = list(iter_lines(io.BytesIO(data), big_line_bytes=1000))
    assert [line.data is None for line in lines] == [False, True, True, False]
    got = objects(data, big_line_bytes=1000, big_string_chars=100)
    parsed = [o for o in got if isinstance(o, ParsedObject)]
    assert [o.lineno for o in parsed] == [1, 2, 3, 3, 4]
    content = parsed[1].obj["message"]["content"]
    assert content.startswith("A" * 100) and content.endswith("[cut 4900 bytes]")
    assert parsed[2].glued and parsed[3].glued


def test_big_line_strings_with_escapes_and_multibyte_text_survive_the_cut() -> None:
    text = 'x\\"y\\\\' + "é" * 3000 + '\\u00e9 "quoted" \\\\'
    obj = {"a": text, "b": "short \\\" quote", "c": [1, 2.5, True, None, "z" * 2000]}
    line = json.dumps(obj, ensure_ascii=False).encode()
    for cap in (1, 2, 3, 5, 7, 100, 1001, 5000, 10_000):
        got = objects(line + b"\n", big_line_bytes=100, big_string_chars=cap)
        assert len(got) == 1 and isinstance(got[0], ParsedObject), cap
        parsed = got[0].obj
        assert parsed["b"] == obj["b"] or "[cut" in parsed["b"]
        assert parsed["c"][:4] == [1, 2.5, True, None]
        if cap >= 10_000:
            assert parsed == obj


def test_big_truncated_tail_is_reported_as_tail() -> None:
    data = b'{"a":1}\n{"content":"' + b"B" * 3000
    got = objects(data, big_line_bytes=1000)
    assert isinstance(got[-1], Malformed) and got[-1].truncated_tail


def test_lines_are_the_same_whatever_the_read_size() -> None:
    """Lines are read out of a reused block buffer; a line that runs across blocks is put together again."""
    data = b'{"a":1}\r\n\n  \n{"bb":"' + "é".encode() * 40 + b'"}\n{"c":3}{"d":4}\n\t{"e":5}\n{"tail":'
    expected = [(1, 0, b'{"a":1}\r'), (4, 13, b'{"bb":"' + "é".encode() * 40 + b'"}'),
                (5, 103, b'{"c":3}{"d":4}'), (6, 118, b'\t{"e":5}'), (7, 127, b'{"tail":')]
    for block in (1, 2, 3, 5, 8, 13, 64, 4096):
        # A line is read in place from the reader's buffer, valid until the next line is read: copy it as it comes.
        got = [(line.lineno, line.offset, bytes(line.data or b""), line.terminated)
               for line in iter_lines(io.BytesIO(data), block_bytes=block)]
        assert got == [(*line, n < 4) for n, line in enumerate(expected)], block
        parsed = [(o.lineno, getattr(o, "obj", None)) for o in iter_objects(io.BytesIO(data), block_bytes=block)]
        assert parsed == [(1, {"a": 1}), (4, {"bb": "é" * 40}), (5, {"c": 3}), (5, {"d": 4}), (6, {"e": 5}), (7, None)]


def test_line_offsets_point_at_line_starts() -> None:
    data = b'{"a":1}\n\n{"bb":22}\n'
    lines = list(iter_lines(io.BytesIO(data)))
    assert [(line.lineno, line.offset) for line in lines] == [(1, 0), (3, 9)]
    assert data[lines[1].offset : lines[1].offset + lines[1].length] == b'{"bb":22}'


def test_the_json_codec_reads_and_writes_what_orjson_refuses() -> None:
    """orjson is only a speed-up: what it refuses goes to the standard library, with the same result."""
    from hindsight_batch.base import jsoncodec

    assert jsoncodec.loads(b'{"a":1,"s":"\\ud83d"}') == {"a": 1, "s": "\ud83d"}
    assert math.isnan(jsoncodec.loads(b'{"n":NaN}')["n"])
    assert jsoncodec.dumps({"s": "cut \ud83d", "n": 10**30}) == b'{"s":"cut ?","n":1000000000000000000000000000000}'
    assert jsoncodec.dumps({"b": 1, "a": "é"}, sort_keys=True) == '{"a":"é","b":1}'.encode()


def test_the_json_codecs_output_holds_no_more_memory_than_its_bytes() -> None:
    """A manifest row is kept until its file is finished (and a ledger row until the batch is written): orjson's
    own buffer (4 KB at least, rounded up to a power of two) held 16 KB for a row of 2 KB, 80 MB more for a session
    of 8,800 chunks."""
    import tracemalloc

    from hindsight_batch.base import jsoncodec

    rows = [{"source_file": "/s/a.jsonl", "content": "word " * (size // 5)} for size in (10, 300, 1900, 5000, 40_000)]
    tracemalloc.start()
    try:
        for row in rows:
            before = tracemalloc.get_traced_memory()[0]
            kept = [jsoncodec.dumps(row) for _ in range(50)]
            per_row = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
            assert per_row < len(kept[0]) + 200, (len(kept[0]), per_row)
    finally:
        tracemalloc.stop()


def test_a_big_line_with_a_number_past_any_range_is_a_malformed_line_not_a_failure() -> None:
    """An exponent no Decimal holds (ijson raises decimal.InvalidOperation) on a line read by the big-line
    parser: that line is reported malformed, with its number, and reading goes on (found by scripts/fuzz.py)."""
    big = b'{"type":"message","n":-0.1e99999999999999999999999999,"pad":"' + b"p" * 300 + b'"}'
    data = b'{"a":1}\n' + big + b'\n{"b":2}\n'
    got = objects(data, big_line_bytes=100)
    assert [o.obj for o in got if isinstance(o, ParsedObject)] == [{"a": 1}, {"b": 2}]
    bad = [o for o in got if isinstance(o, Malformed)]
    assert len(bad) == 1 and bad[0].lineno == 2 and "number out of range" in bad[0].reason
