"""Test inputs in the shapes the live extensions write, each built as the extension's own code builds it (the file
and function are named beside each builder). Fingerprints are made by Node's own ``JSON.stringify`` (as the
extension makes them), not by this tool's Python, so a test of matching by content is not a test of the code with
itself. Recordings of the real extensions (``tests/fixtures/extensions/``) are preferred where they exist."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from tests.conftest import SessionBuilder

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node (for JSON.stringify) is not installed")

# pi-hindsight extensions/lifecycle/retain-cursor.ts: messageFingerprint (sha256 of JSON.stringify of these keys of
# the message, in this order), chainHash, idChainHash and buildCursor (RETAIN_CURSOR_TAIL_WINDOW = 200).
_CURSOR_JS = r"""
const { createHash } = require("node:crypto");
const { messages, through } = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const sha = (text) => createHash("sha256").update(text).digest("hex");
const fingerprint = (m) => sha(JSON.stringify({ id: m.id, role: m.role, timestamp: m.timestamp, content: m.content,
  toolName: m.toolName, isError: m.isError, model: m.model, stopReason: m.stopReason }));
const id = (m) => (typeof m.id === "string" ? m.id : typeof m.id === "number" ? String(m.id) : "");
let chain = "", idChain = "";
for (let i = 0; i <= through; i++) {
  chain = sha(chain + fingerprint(messages[i]));
  idChain = sha(idChain + id(messages[i]));
}
const tailStart = Math.max(0, through - 200 + 1);
const tail = messages.slice(tailStart, through + 1);
process.stdout.write(JSON.stringify({ index: through, chainHash: chain, idChainHash: idChain, tailStart,
  messageIds: tail.map(id), fingerprints: tail.map(fingerprint) }));
"""


def messages_of(builder: SessionBuilder, ids: list[str]) -> list[dict[str, Any]]:
    """The ``message`` objects of these entries as ``agent_end`` hands them over in pi 0.73.1: the message as the
    session file holds it, without an id."""
    entries = {e["id"]: e for e in map(json.loads, builder.lines[1:]) if isinstance(e.get("id"), str)}
    return [entries[i]["message"] for i in ids]


def luxus_cursor(run_messages: list[dict[str, Any]], through: int | None = None) -> dict[str, Any]:
    """A session's retain cursor as ``advanceRetainCursor`` writes it after one agent run: built over that run's
    messages only, so ``index`` counts within the run and every ``messageIds`` value is ``""``."""
    assert NODE is not None
    through = len(run_messages) - 1 if through is None else through
    done = subprocess.run([NODE, "-e", _CURSOR_JS], input=json.dumps({"messages": run_messages, "through": through}),
                          capture_output=True, text=True, timeout=60, check=True)
    cursor: dict[str, Any] = json.loads(done.stdout)
    return cursor


def luxus_meta(**changes: Any) -> dict[str, Any]:
    """A session meta record as ``writeSessionMemoryMeta`` writes it (extensions/utils/session-memory-meta.ts
    ``defaultSessionMemoryMeta`` with the changes a command makes: ``setSessionMemoryMode``,
    ``setSessionRetainEnabled`` …)."""
    meta: dict[str, Any] = {"retained": True, "recallMode": "normal", "retainMode": "normal",
                            "nextRetainMode": "normal", "mode": "normal", "tags": [],
                            "createdAt": "2026-05-01T10:00:00.000Z", "updatedAt": "2026-05-01T10:00:00.000Z"}
    meta.update(changes)
    return meta


def hpi_meta(builder: SessionBuilder, retained: bool | None = None, tags: list[str] | None = None) -> str:
    """hindsight-pi's ``pi.appendEntry(HINDSIGHT_META_TYPE, nextMeta(entries, patch))`` (extensions/commands.ts
    ``hindsight:toggle-retain``, ``hindsight:tag``): a custom entry whose data is the whole next meta."""
    data: dict[str, Any] = {"retained": True if retained is None else retained, "tags": tags or []}
    return builder.entry("custom", customType="hindsight-meta", data=data)


def hpi_queue_record(session_id: str, message: dict[str, Any], at: str, bank: str = "proj") -> dict[str, Any]:
    """One record of hindsight-pi's auto queue as its ``message_end`` handler appends it (extensions/index.ts):
    ``content`` is ``JSON.stringify(prepareRetainEntry({type: "message", message, timestamp}))`` with the default
    options (extensions/retain/prepare.ts: user and assistant keep their text blocks; ``strip.topLevel`` removes
    ``type``; ``strip.message`` removes api, provider, model, usage, cost, stopReason, timestamp, responseId)."""
    kept = {k: v for k, v in message.items()
            if k not in ("api", "provider", "model", "usage", "cost", "stopReason", "timestamp", "responseId")}
    if isinstance(kept.get("content"), list):
        kept["content"] = [b for b in kept["content"] if isinstance(b, dict) and b.get("type") == "text"]
    prepared = {"message": kept, "timestamp": at}
    return {"sessionId": session_id, "bankId": bank, "content": json.dumps(prepared, separators=(",", ":")),
            "context": "pi: demo", "tags": ["harness:pi", f"session:{session_id}", "store_method:auto"],
            "metadata": {"source": "pi", "kind": "session-message", "origin": "auto", "workspace": "pi"},
            "timestamp": "2026-05-01T10:00:00.000Z", "document_id": session_id, "update_mode": "append"}
