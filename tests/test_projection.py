"""Projection: S1 (no memory echo) first, then retainContent, strip, toolFilter and the documented special cases."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hindsight_batch.config import Settings
from hindsight_batch.retention.projection import Projection, Projector


def settings(**data: Any) -> Settings:
    return Settings.model_validate(data)


def msg(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-05-01T10:00:00.000Z",
            "message": {"role": role, "content": content, "timestamp": 1777629600000, **extra}}


def project(entry: dict[str, Any], **config: Any) -> Projection:
    return Projector(settings(**config)).project(entry)


def dumped(p: Projection) -> str:
    return json.dumps(p.record)


# Everything allowed: S1 must hold even when the user's settings would keep everything.
EVERYTHING: dict[str, Any] = {
    "retainContent": {"user": ["text", "image"], "assistant": ["text", "thinking", "toolCall"],
                      "toolResult": ["text", "image"]},
    "toolFilter": {"toolCall": {"include": ["*"]}, "toolResult": {"include": ["*"]}},
    "import": {"retainCustomTypes": ["*"]},
}


@pytest.mark.parametrize("config", [{}, EVERYTHING])
def test_s1_recall_custom_message_entry_is_dropped(config: dict[str, Any]) -> None:
    entry = {"type": "custom_message", "customType": "hindsight-recall", "content": "<hindsight_memories>m",
             "display": False, "id": "r", "parentId": "u", "timestamp": "2026-05-01T10:00:00.000Z"}
    p = project(entry, **config)
    assert p.record is None and p.dropped == "recall"


@pytest.mark.parametrize("config", [{}, EVERYTHING])
def test_s1_recall_message_with_role_custom_is_dropped(config: dict[str, Any]) -> None:
    p = project(msg("custom", "memories", customType="hindsight-recall"), **config)
    assert p.record is None and p.dropped == "recall"


@pytest.mark.parametrize("marker", ["<hindsight_memories>", "<hindsight-memory>", "  \n<hindsight_memories>"])
def test_s1_text_block_starting_with_a_memory_marker_is_dropped(marker: str) -> None:
    p = project(msg("user", [{"type": "text", "text": f"{marker}SECRET-RECALL</hindsight_memories>"},
                             {"type": "text", "text": "real question"}]))
    assert p.record is not None and "SECRET-RECALL" not in dumped(p) and "real question" in dumped(p)
    assert p.removed["recall-block"] == 1


def test_s1_message_that_is_only_memory_is_dropped_as_recall() -> None:
    p = project(msg("user", "<hindsight-memory>only memory</hindsight-memory>"))
    assert p.record is None and p.dropped == "recall"


def test_s1_memory_block_spliced_into_text_is_excised() -> None:
    text = "Please fix it.\n<hindsight_memories>RECALL-X</hindsight_memories>\nThanks!"
    p = project(msg("user", [{"type": "text", "text": text}]))
    assert "RECALL-X" not in dumped(p) and "Please fix it." in dumped(p) and "Thanks!" in dumped(p)
    unclosed = project(msg("user", [{"type": "text", "text": "Question <hindsight-memory>RECALL-Y tail"}]))
    assert "RECALL-Y" not in dumped(unclosed) and "Question" in dumped(unclosed)


@pytest.mark.parametrize("config", [{}, EVERYTHING])
@pytest.mark.parametrize(
    "blocks",
    [
        ["<hindsight_memories>", "RECALL-BODY</hindsight_memories>"],
        ["Question first <hindsight_memories>RECALL-A", "RECALL-BODY", "RECALL-C</hindsight_memories>"],
        ["<hindsight-memory>RECALL-A<mental_models>", "RECALL-BODY</mental_models>", "RECALL-C</hindsight-memory>"],
        ["<hindsight_memories>RECALL-A", "<mental_models>RECALL-BODY</hindsight_memories>RECALL-C</mental_models>"],
    ],
    ids=["opening alone", "over three blocks", "nested", "overlapping"],
)
def test_s1_a_memory_block_split_over_text_blocks_is_dropped_whole(config: dict[str, Any], blocks: list[str]) -> None:
    """<hindsight_memories> alone in one text block, its body and closing tag in the next: the body reached the
    manifest. A memory block is one unit wherever the message's blocks split it; the text after it stays."""
    content = [{"type": "text", "text": t} for t in blocks] + [{"type": "text", "text": " and the real question"}]
    content[-2]["text"] += " then my own words"
    p = project(msg("user", content), **config)
    assert p.record is not None and "RECALL" not in dumped(p) and "hindsight" not in dumped(p)
    assert "real question" in dumped(p) and "then my own words" in dumped(p)
    assert ("Question first" in dumped(p)) == blocks[0].startswith("Question first")


def test_s1_a_memory_block_split_across_a_thinking_block_that_is_not_kept_is_dropped_whole() -> None:
    thinking = [{"type": "text", "text": "<hindsight_memories>"}, {"type": "thinking", "thinking": "RECALL-A"},
                {"type": "text", "text": "RECALL-B</hindsight_memories>answer"}]
    p = project(msg("assistant", thinking))
    assert p.record is not None and "RECALL" not in dumped(p) and "answer" in dumped(p)
    opened_in_thinking = [{"type": "thinking", "thinking": "<hindsight_memories>RECALL-A"},
                          {"type": "text", "text": "RECALL-B</hindsight_memories>answer"}]
    p = project(msg("assistant", opened_in_thinking))
    assert p.record is not None and "RECALL" not in dumped(p) and "answer" in dumped(p)


def test_s1_a_message_whose_memory_is_split_over_its_only_blocks_is_dropped_as_recall() -> None:
    p = project(msg("user", [{"type": "text", "text": "<hindsight_memories>"},
                             {"type": "text", "text": "RECALL</hindsight_memories>"}]))
    assert p.record is None and p.dropped == "recall"


def test_s1_hindsight_tool_calls_and_results_never_pass_even_with_include_all() -> None:
    projector = Projector(settings(**EVERYTHING))
    call = msg("assistant", [{"type": "text", "text": "checking"},
                             {"type": "toolCall", "id": "t1", "name": "hindsight_recall", "arguments": {"q": "ARG"}},
                             {"type": "toolCall", "id": "t2", "name": "bash", "arguments": {"command": "ls"}}])
    p = projector.project(call)
    assert "hindsight_recall" not in dumped(p) and "ARG" not in dumped(p) and "bash" in dumped(p)
    assert p.removed["hindsight-tool-call"] == 1
    result = projector.project(msg("toolResult", [{"type": "text", "text": "OUT"}], toolName="hindsight_recall",
                                   toolCallId="t1", isError=False))
    assert result.record is None and result.dropped == "hindsight-tool"
    # A result that lost its tool name is still recognised by the call id of a hindsight call.
    nameless = projector.project(msg("toolResult", [{"type": "text", "text": "OUT"}], toolCallId="t1"))
    assert nameless.record is None and nameless.dropped == "hindsight-tool"


def test_s1_memory_inside_tool_arguments_is_excised() -> None:
    p = project(msg("assistant", [{"type": "toolCall", "id": "t", "name": "write",
                                   "arguments": {"content": "<hindsight_memories>RECALL-Z</hindsight_memories>"}}]),
                **EVERYTHING)
    assert "RECALL-Z" not in dumped(p)


def test_default_retain_content_keeps_user_and_assistant_text_only() -> None:
    projector = Projector(Settings())
    assistant = projector.project(msg("assistant", [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
        {"type": "text", "text": "answer", "textSignature": "x"},
        {"type": "toolCall", "id": "t", "name": "bash", "arguments": {"command": "ls"}},
    ], model="m", usage={"input": 1}))
    assert assistant.record == {
        "timestamp": "2026-05-01T10:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
    }
    result = projector.project(msg("toolResult", [{"type": "text", "text": "x"}], toolName="bash"))
    assert result.record is None and result.dropped == "retain-content"


def test_user_string_content_and_strip_keys() -> None:
    p = project(msg("user", "plain string"), strip={"topLevel": ["parentId"], "message": []})
    assert p.record is not None
    assert p.record["type"] == "message" and p.record["id"] == "e1" and "parentId" not in p.record
    assert p.record["message"]["timestamp"] == "2026-05-01T10:00:00.000Z"  # epoch ms became ISO
    assert p.record["message"]["content"] == [{"type": "text", "text": "plain string"}]


def test_tool_filter_exclude_and_include_replace_each_other() -> None:
    base = {"retainContent": {"assistant": ["text", "toolCall"], "toolResult": ["text"]}}
    call = msg("assistant", [{"type": "toolCall", "id": "a", "name": "read", "arguments": {"path": "x"}},
                             {"type": "toolCall", "id": "b", "name": "bash", "arguments": {"command": "make"}}])
    p = project(call, **base)
    assert '"bash"' in dumped(p) and '"read"' not in dumped(p)  # default exclude: read, grep, find, ls
    include = {**base, "toolFilter": {"toolCall": {"include": ["re*"], "exclude": ["read"]}}}
    p = project(call, **include)
    assert '"read"' in dumped(p) and '"bash"' not in dumped(p)  # include replaces exclude
    edit = msg("toolResult", [{"type": "text", "text": "Applied"}], toolName="edit", isError=False)
    assert project(edit, **base).dropped == "tool-filter"  # results also exclude write and edit by default
    kept = project(msg("toolResult", [{"type": "text", "text": "ok"}], toolName="bash", isError=True), **base)
    assert kept.record is not None and kept.record["message"]["isError"] is True


def test_images_become_a_note_never_base64() -> None:
    p = project(msg("user", [{"type": "text", "text": "see"}, {"type": "image", "data": "QUJD" * 100,
                                                               "mimeType": "image/png"}]),
                retainContent={"user": ["text", "image"]})
    assert "QUJD" not in dumped(p)
    assert p.record is not None and p.record["message"]["content"][1] == {
        "type": "image", "mimeType": "image/png", "note": "image omitted (400 bytes of base64)"}
    assert "image" not in dumped(project(msg("user", [{"type": "text", "text": "see"},
                                                     {"type": "image", "data": "QUJD"}])))


def test_long_text_is_cut_at_max_block_chars() -> None:
    p = project(msg("user", "x" * 1000), **{"import": {"maxBlockChars": 300}})
    text = p.record["message"]["content"][0]["text"]  # type: ignore[index]
    assert text.startswith("x" * 300) and text.endswith("[cut 700 chars]")


def test_bash_execution_follows_tool_settings_and_double_bang_is_dropped() -> None:
    entry = msg("bashExecution", None, command="make test", output="ok", exitCode=0)
    entry["message"].pop("content")
    assert project(entry).dropped == "retain-content"
    both = project(entry, retainContent={"assistant": ["text", "toolCall"], "toolResult": ["text"]})
    assert both.record is not None and both.record["message"] == {
        "role": "bashExecution", "command": "make test", "output": "ok", "exitCode": 0}
    entry["message"]["excludeFromContext"] = True
    assert project(entry, **EVERYTHING).dropped == "excluded-from-context"


def test_custom_messages_need_an_explicit_type_and_summaries_are_not_retained() -> None:
    entry = {"type": "custom_message", "customType": "prompt-summary", "content": "sum", "display": True,
             "id": "c", "parentId": None, "timestamp": "2026-05-01T10:00:00.000Z"}
    assert project(entry).dropped == "custom-message"
    kept = project(entry, **{"import": {"retainCustomTypes": ["prompt-*"]}})
    assert kept.record is not None and kept.record["message"]["role"] == "custom"
    assert project({"type": "compaction", "summary": "s", "id": "x"}).dropped == "summary"
    assert project({"type": "branch_summary", "summary": "s", "id": "x"}).dropped == "summary"
    compaction = {"type": "compaction", "summary": "the summary", "id": "x"}
    context = project(compaction, **{"import": {"compaction": "context"}})
    assert context.record is not None and context.record["message"]["role"] == "compactionSummary"
    assert not project({"type": "model_change", "id": "m"}).is_message


def test_strip_can_remove_keys_the_projection_itself_writes() -> None:
    p = project(msg("user", "plain"), strip={"topLevel": [], "message": ["role", "timestamp"]})
    assert p.record is not None and p.record["message"] == {"content": [{"type": "text", "text": "plain"}]}


def test_a_tool_result_is_hindsight_output_by_call_id_whatever_its_name_gave_before() -> None:
    """Reasons by tool name are remembered per session; a hindsight call id must still win over them."""
    projector = Projector(settings())
    assert projector.tool_result_gate("read", "call-1") == "retain-content"  # remembered for "read"
    call = msg("assistant", [{"type": "toolCall", "id": "call-2", "name": "hindsight_recall", "arguments": {}}])
    projector.project(call)
    assert projector.tool_result_gate("read", "call-2") == "hindsight-tool"
    assert projector.tool_result_gate("read", "call-3") == "retain-content"


def test_a_malformed_tool_call_id_is_a_drop_reason_not_a_crash() -> None:
    entry = msg("toolResult", [{"type": "text", "text": "out"}], toolName="bash", toolCallId=["not", "a", "string"])
    assert project(entry).dropped == "retain-content"
