"""Damaged and hostile session lines (issue 13): each class is a reported malformed line or a counted repair,
never a crash, a stall or a blown memory budget, and the branch we import is the one pi would load."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.config import Settings
from hindsight_batch.redaction.redactor import Redactor
from hindsight_batch.retention.memory_filter import MEMORY_MARKERS, excise_memory
from hindsight_batch.retention.records import RecordMaker, RecordStore
from hindsight_batch.retention.stagetimes import StageTimes
from hindsight_batch.session.jsonl import Malformed, ParsedObject, iter_objects
from hindsight_batch.session.reader import read_session
from hindsight_batch.session.tree import active_path
from tests.conftest import SessionBuilder, invoke, read_manifest

TS = "2026-05-01T10:00:09.000Z"


def deep(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


def run(runner: CliRunner, tmp_path: Path, path: Path, *args: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(path), "--manifest", str(manifest), "--include-content", "--json", "-q",
                    "--state", str(tmp_path / "state"), *args)
    assert result.exit_code == 0, result.stderr
    return read_manifest(manifest), json.loads(result.output)


def contents(rows: list[dict[str, Any]]) -> str:
    return "\n".join(r["content"] for r in rows if r.get("content"))


def session_around(line: str) -> SessionBuilder:
    """A question, the damaged line, and an answer that does not hang off it (so the answer is on the branch)."""
    b = SessionBuilder()
    first = b.user("first question stays")
    b.raw(line)
    b.assistant("the answer after the damage", parent=first)
    return b


PATHOLOGICAL = {
    "nested entry": '{"type":"message","id":"x1","parentId":"e1","x":' + deep(2000) + "}",
    "nested timestamp": '{"type":"message","id":"x1","parentId":"e1","timestamp":' + deep(1200) + "}",
    "nested toolCall.arguments": (
        '{"type":"message","id":"x1","parentId":"e1","timestamp":"' + TS + '","message":{"role":"assistant",'
        '"content":[{"type":"toolCall","id":"c","name":"bash","arguments":{"a":' + deep(1100) + "}}]}}"),
    "number over 4,300 digits": '{"type":"message","id":"x1","parentId":"e1","n":' + "7" * 5000 + "}",
    "integer over 4,300 digits with a lone surrogate": (
        '{"type":"message","id":"x1","parentId":"e1","s":"\\ud800","n":' + "7" * 5000 + "}"),
    "NaN, which JSON.parse refuses": '{"type":"message","id":"x1","parentId":"e1","n":NaN}',
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_lines_are_reported_malformed_and_the_rest_is_imported(
    runner: CliRunner, tmp_path: Path, name: str
) -> None:
    path = session_around(PATHOLOGICAL[name]).write(tmp_path / "s.jsonl")
    rows, summary = run(runner, tmp_path, path)
    assert summary["malformed_lines"] == 1 and summary["malformed"][0]["line"] == 3
    text = contents(rows)
    assert "first question stays" in text and "the answer after the damage" in text


@pytest.mark.parametrize("shape", ["nested", "long number", "dense tiny values", "invalid utf-8"])
def test_big_lines_through_the_event_stream_obey_the_same_caps(shape: str) -> None:
    """Lines over the big-line size are parsed from the file with ijson: same caps, bounded values."""
    body = {
        "nested": deep(5000).encode(),
        "long number": b"9" * 100_000,
        "dense tiny values": b"[" + b",".join([b'"a"'] * 600_000) + b"]",
        "invalid utf-8": b'"caf\xe9 ' + b"x" * 5000 + b'"',
    }[shape]
    line = b'{"type":"message","id":"x1","parentId":"e1","content":' + body + b"}"
    got = list(iter_objects(io.BytesIO(b'{"a":1}\n' + line + b'\n{"z":2}\n'), big_line_bytes=1000))
    assert isinstance(got[0], ParsedObject) and isinstance(got[-1], ParsedObject) and got[-1].obj == {"z": 2}
    middle = got[1]
    if shape in ("nested", "long number"):
        assert isinstance(middle, Malformed) and middle.lineno == 2
        assert ("nested deeper" if shape == "nested" else "number literal") in middle.reason
    elif shape == "dense tiny values":
        assert isinstance(middle, ParsedObject) and middle.obj["id"] == "x1" and middle.obj["parentId"] == "e1"
        assert len(middle.obj["content"]) < 600_000  # the budget cut the values no setting keeps
    else:
        assert isinstance(middle, ParsedObject) and middle.invalid_utf8
        assert middle.obj["content"].startswith("caf\ufffd ")


def test_a_dense_line_under_the_big_line_size_is_read_under_the_value_budget() -> None:
    line = b'{"type":"message","id":"x1","parentId":"e1","content":[' + b",".join([b"[]"] * 700_000) + b"]}"
    assert 1 << 20 < len(line) < 8 << 20
    got = list(iter_objects(io.BytesIO(line + b"\n")))
    assert isinstance(got[0], ParsedObject) and got[0].obj["id"] == "x1" and len(got[0].obj["content"]) < 700_000


WRONG = [{"k": [1]}, [["x"]], 42, True, None, "__DEEP__"]  # __DEEP__: nested 990 levels (orjson reads 1,023)


@pytest.mark.parametrize("field", ["type", "role", "content", "id", "parentId", "timestamp", "customType",
                                   "blocks", "block type", "text", "toolName", "toolCallId", "message",
                                   "summary", "command", "arguments", "usage", "mimeType"])
def test_wrong_json_types_in_trusted_fields_never_crash(runner: CliRunner, tmp_path: Path, field: str) -> None:
    b = SessionBuilder()
    b.user("first question stays")
    for i, wrong in enumerate(WRONG):
        value: Any = wrong
        message: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
        entry: dict[str, Any] = {"type": "message", "id": f"w{i}", "parentId": b.leaf, "timestamp": TS}
        if field in ("type", "id", "parentId", "timestamp", "customType", "summary"):
            entry[field] = value
        elif field in ("role", "content", "toolName", "toolCallId", "command", "usage"):
            message[field] = value
            if field in ("toolName", "toolCallId"):
                message["role"] = "toolResult"
            if field == "command":
                message["role"] = "bashExecution"
        elif field == "blocks":
            message["content"] = [value, {"type": "text", "text": "kept"}]
        elif field == "block type":
            message["content"] = [{"type": value, "text": "x"}]
        elif field == "text":
            message["content"] = [{"type": "text", "text": value}]
        elif field == "arguments":
            message["content"] = [{"type": "toolCall", "id": "c", "name": "bash", "arguments": value}]
        elif field == "mimeType":
            message["content"] = [{"type": "image", "mimeType": value, "data": "AAAA"}]
        if field == "customType":
            entry["type"] = "custom_message"
            entry["content"] = "custom"
        if field == "summary":
            entry["type"] = "compaction"
            entry["firstKeptEntryId"] = "e1"
        if field != "message":
            entry["message"] = message
        else:
            entry["message"] = value
        b.raw(json.dumps(entry).replace('"__DEEP__"', deep(990)))  # json.dumps itself stops at ~1,000 levels
        b.leaf = entry["id"] if isinstance(entry["id"], str) and entry["id"] != "__DEEP__" else b.leaf
    b.user("last question stays")
    path = b.write(tmp_path / "s.jsonl")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"retainContent": {"assistant": ["text", "toolCall", "image"],
                                                    "toolResult": ["text"]},
                                  "strip": {"topLevel": [], "message": []},
                                  "import": {"retainCustomTypes": ["*"]}}))
    for mode in ("full", "context"):
        rows, _summary = run(runner, tmp_path, path, "--config", str(config), "--compaction", mode)
        assert "last question stays" in contents(rows)


def test_lone_surrogates_are_replaced_at_read_time_and_counted(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder()
    b.raw(json.dumps({"type": "message", "id": "u1", "parentId": None, "timestamp": TS,
                      "message": {"role": "user", "content": [{"type": "text", "text": "lone \ud800 here"}]}}))
    b.leaf = "u1"
    b.assistant("and a pair \U0001F600 stays")
    path = b.write(tmp_path / "s.jsonl")
    assert "\\ud800" in path.read_text()
    rows, summary = run(runner, tmp_path, path)
    assert summary["surrogates_replaced"] == 1
    raw = (tmp_path / "m.jsonl").read_bytes()
    raw.decode("utf-8")  # strict: no surrogate reached the manifest
    text = contents(rows)
    assert "lone \ufffd here" in text and "\U0001F600" in text
    result = invoke(runner, "import", str(path), "--manifest", str(tmp_path / "h.jsonl"), "--state",
                    str(tmp_path / "state2"))
    assert "1 lone surrogates" in result.stderr


def test_invalid_utf8_is_replaced_and_counted_also_in_a_skipped_tool_result_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    b = SessionBuilder()
    b.user("caf\u00e9 question")
    b.assistant("calling")
    b.tool_result("bash", "output")
    b.assistant("done")
    lines = [line.encode() for line in b.lines]
    lines[1] = lines[1].replace("caf\u00e9".encode(), b"caf\xe9")  # Latin-1 byte: invalid UTF-8
    lines[3] = lines[3].replace(b'"toolName":"bash"', b'"toolName":"ba\xffsh"').replace(b'"c1"', b'"c\xfe1"')
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    rows, summary = run(runner, tmp_path, path)
    assert summary["invalid_utf8_lines"] == 2 and summary["malformed_lines"] == 0
    assert "caf\ufffd question" in contents(rows) and "done" in contents(rows)


def broken_tool_result_session(tmp_path: Path, spaced: bool = False) -> Path:
    b = SessionBuilder()
    b.user("before the break")
    b.assistant("calling", {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}})
    result = {"type": "message", "id": "r1", "parentId": b.leaf, "timestamp": TS,
              "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                          "content": [{"type": "text", "text": "BROKEN"}], "isError": False, "timestamp": 1}}
    line = json.dumps(result) if spaced else json.dumps(result, separators=(",", ":"))
    b.raw(line.replace('"BROKEN"', '"bad \\x escape"'))  # JSON.parse (pi) refuses the line
    b.leaf = "r1"
    b.assistant("after the break")
    return b.write(tmp_path / "s.jsonl")


@pytest.mark.parametrize("tool_text", [False, True])
@pytest.mark.parametrize("spaced", [False, True])
def test_a_tool_result_line_pi_cannot_parse_breaks_the_chain_whatever_the_settings(
    runner: CliRunner, tmp_path: Path, tool_text: bool, spaced: bool
) -> None:
    """pi drops the unparsable line, so its active path starts after it: ours too, with or without tool
    results retained (before, the fast path indexed the line unparsed and walked past the break)."""
    path = broken_tool_result_session(tmp_path, spaced)
    args: list[str] = []
    if tool_text:
        config = tmp_path / "c.json"
        config.write_text(json.dumps({"retainContent": {"toolResult": ["text"]}}))
        args = ["--config", str(config)]
    rows, summary = run(runner, tmp_path, path, *args)
    assert summary["malformed_lines"] == 1
    text = contents(rows)
    assert "after the break" in text and "before the break" not in text


class Recorder:
    """The import's visitor, noting which entries were projected (a wrapper: the compiled build's classes cannot
    be subclassed from a test)."""

    def __init__(self) -> None:
        self.maker = RecordMaker(Settings(), Redactor(b"k"), RecordStore(), StageTimes())
        self.projected: list[str] = []

    def __call__(self, entry: dict[str, Any], node: Any) -> Any:
        self.projected.append(node.id)
        return self.maker(entry, node)

    def unparsed_tool_result(self, tool_name: str, call_id: str) -> Any:
        return self.maker.unparsed_tool_result(tool_name, call_id)

    def finish(self) -> None:
        self.maker.finish()


@pytest.mark.parametrize("spaced", [False, True])
def test_the_fast_path_takes_compact_and_spaced_tool_result_lines(tmp_path: Path, spaced: bool) -> None:
    b = SessionBuilder()
    b.user("q")
    b.assistant("calling")
    result = {"type": "message", "id": "r1", "parentId": b.leaf, "timestamp": TS,
              "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                          "content": [{"type": "text", "text": "out"}], "isError": False, "timestamp": 1}}
    b.raw(json.dumps(result) if spaced else json.dumps(result, separators=(",", ":")))
    b.leaf = "r1"
    b.assistant("done")
    path = b.write(tmp_path / "s.jsonl")
    visitor = Recorder()
    session = read_session(path, visitor)
    assert "r1" not in visitor.projected  # indexed by the fast path, not projected
    nodes = {n.id: n for n in session.entries}
    assert nodes["r1"].payload.dropped == "retain-content" and nodes["r1"].parent_id == "e2"
    assert [n.id for n in active_path(session.entries)] == ["e1", "e2", "r1", "e3"]


def test_memory_marker_removal_is_linear_and_leaves_no_opening() -> None:
    text = "<hindsight_memories>x</hindsight_memories><" * 100_000 + "<hindsight_" + \
        "<hindsight-memory>m</hindsight-memory>memories>tail"
    out, removed = excise_memory(text)  # quadratic before: minutes for this 4 MB
    assert removed == 100_002 and out == "<" * 100_000
    assert excise_memory("a<hindsight-memory>1<hindsight_memories>2</hindsight-memory>3</hindsight_memories>4") \
        == ("a4", 1)
    for opening in MEMORY_MARKERS:
        assert opening not in excise_memory("<" + opening[1:5] + opening + "x" + MEMORY_MARKERS[opening]
                                            + opening[5:] + "y")[0]


def test_lone_surrogates_in_keys_and_nested_values_are_replaced_and_a_valid_pair_is_kept() -> None:
    line = b'{"k\\ud800":["\\udc00",{"a":"x\\ud800"}],"pair":"\\ud83d\\ude00"}\n'
    got = list(iter_objects(io.BytesIO(line)))
    assert isinstance(got[0], ParsedObject) and got[0].surrogates == 3
    assert got[0].obj == {"k\ufffd": ["\ufffd", {"a": "x\ufffd"}], "pair": "\U0001F600"}


LONG = "/a" * 40_000  # 80 KB: 40,000 folders deep


@pytest.mark.timeout(300)
def test_very_long_header_values_cost_no_memory_and_a_cwd_no_folder_can_have_fails_alone(tmp_path: Path) -> None:
    """Every header field 80 KB long, each in its own session, imported under a 1 GB address-space limit. A cwd
    40,000 folders deep took 6.3 GB (every parent as a path), then "File name too long"; now it fails alone, saying
    why, and every other session is imported."""
    import resource
    import subprocess
    import sys

    folder = tmp_path / "sessions"
    values: dict[str, Any] = {"id": LONG, "timestamp": LONG, "cwd": LONG, "parentSession": LONG,
                              "branchedFrom": LONG, "version": "3" + " " * 80_000, "extra": LONG}
    for field, value in values.items():
        b = SessionBuilder(session_id=f"s-{field}")
        header = json.loads(b.lines[0])
        header[field] = value
        b.lines[0] = json.dumps(header)
        b.user(f"a question in the session with a long {field}")
        b.write(folder / f"{field}.jsonl")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    done = subprocess.run([sys.executable, "-m", "hindsight_batch", "import", str(folder), "--json", "-q",
                           "--manifest", str(tmp_path / "m.jsonl"), "--state", str(tmp_path / "state")],
                          capture_output=True, text=True, timeout=240, preexec_fn=limited)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert [(Path(f["file"]).name, f["reason"]) for f in summary["failed_files"]] == [
        ("cwd.jsonl", "cwd is 80,000 characters long, longer than any folder pi can run in (4,096 bytes)")]
    assert summary["sessions"] == len(values) - 1
    assert {Path(r["source_file"]).stem for r in read_manifest(tmp_path / "m.jsonl")} == set(values) - {"cwd"}
