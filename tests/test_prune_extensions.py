"""prune-recall-messages removes every recall shape the two live extensions persist, and nothing else (issue 36).

Each shape is built as the extension's code writes it: pi-hindsight's recall block (a message whose string content
starts with ``<hindsight-memory>``, as its ``/hindsight:recall-cleanup`` finds it, extensions/lifecycle/
recall-cleanup.ts), hindsight-pi's ``hindsight-recall`` custom message (extensions/recall-message.ts) and the
``hindsight-recall-status`` indicator its earlier versions persisted through ``pi.sendMessage`` (a
``custom_message`` entry with the recalled previews in ``details``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hindsight_batch import prune
from hindsight_batch.session.reader import read_session
from hindsight_batch.session.tree import active_path
from tests.conftest import SessionBuilder, invoke


def test_both_extensions_recall_shapes_go_and_lookalikes_stay(runner: CliRunner, tmp_path: Path) -> None:
    b = SessionBuilder()
    first = b.user("first question")
    luxus = b.message("user", "\n  <hindsight-memory>\nBank: pi-project-x\n1. LEAKED-LUXUS fact [project:x]\n"
                              "</hindsight-memory>")
    answer = b.assistant("answer one")
    status = b.entry("custom_message", customType="hindsight-recall-status", content="memory context loaded",
                     display=True, details={"bankId": "acme", "previews": ["LEAKED-STATUS preview"], "resultCount": 1})
    hpi = b.entry("custom_message", customType="hindsight-recall", content="LEAKED-HPI recall", display=False,
                  details={"bankId": "acme"})
    mention = b.message("user", "Please explain <hindsight-memory> tags")  # a mention further in: kept
    retain = b.entry("custom_message", customType="hindsight-retain-status", content="retain successful",
                     display=True)  # the retain indicator is not recall: kept
    meta = b.entry("custom", customType="hindsight-meta", data={"retained": False, "tags": []})
    array = b.message("user", [{"type": "text", "text": "<hindsight-memory>in an array</hindsight-memory>"}])
    last = b.assistant("the end")
    path = b.write(tmp_path / "s.jsonl")
    preview = invoke(runner, "prune-recall-messages", str(path), "--json")
    assert preview.exit_code == 0, preview.stderr
    result = prune.prune_file(path, confirm=True, force=True)
    assert result.status == "pruned", result.reason
    text = path.read_text()
    assert "LEAKED" not in text
    kept = [json.loads(line)["id"] for line in text.splitlines()[1:]]
    assert kept == [first, answer, mention, retain, meta, array, last] and luxus not in kept
    assert status not in kept and hpi not in kept
    path_ids = [n.id for n in active_path(read_session(path).entries)]
    assert path_ids[0] == first and path_ids[-1] == last  # the tree still reaches the leaf through the survivors
    assert {e.id for e in read_session(path).entries} >= set(path_ids)
