#!/usr/bin/env python3
"""Write the synthetic sample sessions under ``samples/--<cwd>--/`` (deterministic; run again to refresh).

Each file exercises features of the reader and the retention pipeline; the README's sample table says which.
Every seeded secret is fake and listed in ``samples/seeded-secrets.txt``; every recalled memory and every
hindsight tool output carries a marker word listed in ``samples/seeded-memory-markers.txt``, so tests can prove
that none of them reaches a manifest's content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent / "samples"
OUT = ROOT  # the folder is laid out like a pi session root: one folder per cwd

SECRETS = {
    "github": "ghp_FAKEfakeFAKEfake0123456789abcdefABCD",
    "openai": "sk-proj-FAKEfake0123456789abcdefghijklmnopqrstuv",
    "anthropic": "sk-ant-api03-FAKEfake0123456789abcdefghijklmnop",
    "aws": "AKIAFAKEFAKE12345678",
    "slack": "xoxb-1234567890-FAKEfakeFAKEfake",
    "google": "AIzaFAKEfake0123456789abcdefghijklmnopq",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlLXVzZXIifQ.FAKEsignature0123",
    "bearer": "FAKEbearerToken0123456789abcdef",
    "db_password": "Tr0ub4dor-FAKE-pw",
    "url_password": "FAKEurlPass99",
    "cookie": "sessionid=FAKEcookie0123456789",
    "private_key_body": "MIIEowIBAAKCAQEAfakeFAKEfakeFAKEkeymaterial",
    "private_url": "http://build.corp.internal/secret-dashboard",
}
RECALL_MARKERS = ["RECALLED-MEMORY-ALPHA", "RECALLED-MEMORY-BETA", "RECALLED-MEMORY-GAMMA",
                  "HINDSIGHT-TOOL-OUTPUT-DELTA", "HINDSIGHT-TOOL-ARG-EPSILON"]

MS0 = 1777629600000  # 2026-05-01T10:00:00Z


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class V3:
    """Builds a v3 session: entries appended as children of the current leaf, like pi."""

    def __init__(self, session_id: str, cwd: str, start: int = MS0) -> None:
        self.t = start
        self.n = 0
        self.leaf: str | None = None
        self.lines = [line({"type": "session", "version": 3, "id": session_id, "timestamp": iso(start), "cwd": cwd})]

    def _id(self) -> str:
        self.n += 1
        return f"{self.n:08x}"

    def add(self, kind: str, parent: str | None = "leaf", **fields: Any) -> str:
        self.t += 1500
        entry_id = self._id()
        parent_id = self.leaf if parent == "leaf" else parent
        if kind == "custom_message":
            obj = {"type": kind, **fields, "id": entry_id, "parentId": parent_id, "timestamp": iso(self.t)}
        else:
            obj = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": iso(self.t), **fields}
        self.lines.append(line(obj))
        self.leaf = entry_id
        return entry_id

    def user(self, text: str, parent: str | None = "leaf", images: bool = False) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if images:
            content.append({"type": "image", "data": "iVBORw0KGgo" + "A" * 400, "mimeType": "image/png"})
        return self.add("message", parent, message={"role": "user", "content": content, "timestamp": self.t})

    def assistant(self, *blocks: dict[str, Any], stop: str = "stop") -> str:
        return self.add("message", message={
            "role": "assistant", "content": list(blocks), "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-sonnet-4-5", "usage": {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": 30, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": stop, "timestamp": self.t})

    def result(self, call_id: str, name: str, text: str, error: bool = False) -> str:
        return self.add("message", message={
            "role": "toolResult", "toolCallId": call_id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": error, "timestamp": self.t})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def main_session() -> str:
    s = V3("0196a1b2-0000-7000-8000-000000000001", "/home/dev/acme-api")
    s.add("model_change", None, provider="anthropic", modelId="claude-sonnet-4-5")
    s.add("thinking_level_change", thinkingLevel="medium")
    s.add("session_info", name="queue lock fix")
    u1 = s.user("In this repo the retain queue lock must use a stale-owner check. Please fix the lock in src/queue.ts.")
    # Persisted recall, shape 1: a custom_message entry right after the user message.
    s.add("custom_message", customType="hindsight-recall",
          content="<hindsight_memories>\nRelevant memories from past sessions:\n\n1. RECALLED-MEMORY-ALPHA the queue "
                  "uses a lock directory\n</hindsight_memories>", display=False,
          details={"count": 1, "snippet": "RECALLED-MEMORY-ALPHA", "memories": "RECALLED-MEMORY-ALPHA"})
    s.add("custom", customType="hindsight-meta", data={"retained": True})
    s.assistant({"type": "thinking", "thinking": "The user wants the stale-owner check.", "thinkingSignature": "c2ln"},
                text("Let me recall what we know and look at the file."),
                call("toolu_01", "hindsight_recall", query="queue lock HINDSIGHT-TOOL-ARG-EPSILON", budget="mid"),
                call("toolu_02", "read", path="src/queue.ts"), stop="toolUse")
    s.result("toolu_01", "hindsight_recall", "1. HINDSIGHT-TOOL-OUTPUT-DELTA: lock dir is .lock")
    s.result("toolu_02", "read", "export function lock() { /* ... */ }")
    s.assistant(text("I changed the lock to record its owner pid and treat it as stale after 30 s."),
                call("toolu_03", "edit", path="src/queue.ts", oldText="lock()", newText="lock(owner)"),
                call("toolu_04", "bash", command="npm test -- queue"), stop="toolUse")
    s.result("toolu_03", "edit", "Applied 1 edit")
    s.result("toolu_04", "bash", "PASS src/queue.test.ts\nTests: 4 passed")
    s.assistant(text("Tests pass. The stale-owner rule is in src/queue.ts."))
    # Persisted recall, shape 2: a message entry with role custom.
    s.user("Deploy it with my token please.")
    s.add("message", message={"role": "custom", "customType": "hindsight-recall",
                              "content": "<hindsight-memory>RECALLED-MEMORY-BETA deploys go through CI"
                                         "</hindsight-memory>",
                              "display": False, "timestamp": s.t})
    s.assistant(text(f"Running: curl -H 'Authorization: Bearer {SECRETS['bearer']}' https://api.example.com/deploy "
                     f"with GITHUB_TOKEN={SECRETS['github']}"))
    s.user(f"Also the db is postgres://admin:{SECRETS['url_password']}@db.example.com/app and "
           f"DB_PASSWORD={SECRETS['db_password']}; dashboard at {SECRETS['private_url']}",
           images=True)
    s.assistant(text(f"Noted. Keys seen: {SECRETS['openai']} {SECRETS['anthropic']} {SECRETS['aws']} "
                     f"{SECRETS['slack']} {SECRETS['google']} {SECRETS['jwt']}"))
    s.user("Remember: I prefer terse answers across all my projects.\n\n<hindsight_memories>RECALLED-MEMORY-GAMMA "
           "the user likes tabs</hindsight_memories>")
    s.assistant(text(f"Understood. Cookie: {SECRETS['cookie']}\n-----BEGIN RSA PRIVATE KEY-----\n"
                     f"{SECRETS['private_key_body']}\n-----END RSA PRIVATE KEY-----"))
    # The user's own shell command (!cmd) and one excluded from context (!!cmd).
    s.add("message", message={"role": "bashExecution", "command": "git status", "output": "On branch main\n",
                              "exitCode": 0, "cancelled": False, "truncated": False, "timestamp": s.t})
    s.add("message", message={"role": "bashExecution", "command": "cat ~/.netrc", "output": "machine x",
                              "exitCode": 0, "cancelled": False, "truncated": False, "excludeFromContext": True,
                              "timestamp": s.t})
    fork_point = s.assistant(text("Anything else?"))
    # Branch A (abandoned): a question, then the user navigates back.
    s.user("Should we rewrite the queue in Rust?", parent=fork_point)
    s.assistant(text("Probably not: the queue is small and the TypeScript version is tested."))
    # Branch B (active): a branch summary of A, a label, then the work continues.
    s.add("branch_summary", fork_point, fromId=fork_point, summary="The user asked about a Rust rewrite; declined.")
    s.add("label", targetId=u1, label="lock-fix")
    s.add("custom_message", customType="prompt-summary", content="Summary: lock fix done", display=True,
          details={"k": 1})
    s.user("Now document the lock protocol in docs/queue.md.")
    s.assistant(text("Documented the lock protocol: owner file, heartbeat, 30 s stale rule."))
    s.add("compaction", summary="The session fixed the queue lock (stale-owner check) and documented it.",
          firstKeptEntryId=s.leaf, tokensBefore=12000, details={"readFiles": [], "modifiedFiles": []}, fromHook=False)
    s.user("Thanks. Last thing: bump the version to 1.2.0 for the release.")
    s.assistant(text("Bumped to 1.2.0 in package.json; ready for the PR #42 release."))
    return "\n".join(s.lines) + "\n"


def v1_session() -> str:
    """Version 1: no ids; a compaction by index; a bashExecution; two objects glued on one line."""
    lines = [line({"type": "session", "id": "11111111-2222-4333-8444-555555555555", "timestamp": iso(MS0),
                   "cwd": "/home/dev/acme-web", "provider": "anthropic", "modelId": "claude-opus-4-5",
                   "thinkingLevel": "off"})]
    t = MS0

    def msg(role: str, body: str, **extra: Any) -> str:
        nonlocal t
        t += 1000
        m: dict[str, Any] = {"role": role, "content": [text(body)], "timestamp": t, **extra}
        return line({"type": "message", "timestamp": iso(t), "message": m})

    lines.append(msg("user", "Set up the web app build with vite."))
    lines.append(msg("assistant", "Configured vite in vite.config.ts.", stopReason="stop"))
    lines.append(line({"type": "thinking_level_change", "timestamp": iso(t), "thinkingLevel": "high"}))
    lines.append(msg("user", "Add a lint step to the build."))
    # Glued: the assistant reply and the next user message were written without a newline between them.
    lines.append(msg("assistant", "Added eslint to the build script.", stopReason="stop")
                 + msg("user", "Why did the build break on CI?"))
    lines.append(line({"type": "message", "timestamp": iso(t), "message": {
        "role": "bashExecution", "command": "npm run build", "output": "error TS2307", "exitCode": 1,
        "cancelled": False, "truncated": False, "timestamp": t}}))
    lines.append(msg("assistant", "A missing type import; fixed in src/main.ts.", stopReason="stop"))
    # Index 4 with the header at 0 = the "Add a lint step" user message.
    lines.append(line({"type": "compaction", "timestamp": iso(t), "summary": "Vite set up; lint added.",
                       "firstKeptEntryIndex": 4, "tokensBefore": 50000}))
    lines.append(msg("user", "Great, ship it."))
    lines.append(msg("assistant", "Shipped v0.3.0.", stopReason="stop"))
    return "\n".join(lines) + "\n"


def v2_session() -> str:
    """Version 2: ids and a tree; the old ``hookMessage`` role (now ``custom``), with recall in it."""
    t = MS0
    out = [line({"type": "session", "version": 2, "id": "22222222-3333-4444-8555-666666666666",
                 "timestamp": iso(t), "cwd": "/home/dev/acme-api"})]
    rows = [
        ("a1", None, {"role": "user", "content": "How do we version the API?"}),
        ("a2", "a1", {"role": "hookMessage", "customType": "hindsight-recall",
                      "content": "<hindsight_memories>RECALLED-MEMORY-ALPHA v1 prefix</hindsight_memories>",
                      "display": False}),
        ("a3", "a2", {"role": "assistant", "content": [text("We prefix routes with /v1 and bump on breaking changes.")],
                      "stopReason": "stop"}),
        ("a4", "a3", {"role": "user", "content": [text("Write that into docs/api.md.")]}),
        ("a5", "a4", {"role": "assistant", "content": [text("Added the versioning policy to docs/api.md.")],
                      "stopReason": "stop"}),
    ]
    for entry_id, parent, message in rows:
        t += 1000
        out.append(line({"type": "message", "id": entry_id, "parentId": parent, "timestamp": iso(t),
                         "message": {**message, "timestamp": t}}))
    return "\n".join(out) + "\n"


def live_session() -> str:
    """A session being written: a malformed line in the middle and a truncated last line."""
    s = V3("0196a1b2-0000-7000-8000-000000000004", "/home/dev/acme-api")
    s.user("Start the migration to the new ledger schema.")
    s.assistant(text("Started: the migration adds a documents table."))
    s.lines.append('{"type":"message","id":"broken","parentId":')  # corrupt, not at the end
    s.user("Continue with the sources table.")
    s.assistant(text("Added the sources table with size and mtime."))
    body = "\n".join(s.lines) + "\n"
    return body + '{"type":"message","id":"0000ffff","parentId":"00000004","timestamp":"2026-05-01T10:0'


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    files = {
        "--home-dev-acme-api--/2026-05-01T10-00-00-000Z_0196a1b2-0000-7000-8000-000000000001.jsonl": main_session(),
        "--home-dev-acme-web--/2026-05-01T10-00-00-000Z_11111111-2222-4333-8444-555555555555.jsonl": v1_session(),
        "--home-dev-acme-api--/2026-05-01T10-00-00-000Z_22222222-3333-4444-8555-666666666666.jsonl": v2_session(),
        "--home-dev-acme-api--/2026-05-01T11-00-00-000Z_0196a1b2-0000-7000-8000-000000000004.jsonl": live_session(),
        "--home-dev-empty--/2026-05-01T12-00-00-000Z_0196a1b2-0000-7000-8000-000000000005.jsonl": "",
    }
    for name, body in files.items():
        path = OUT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    (ROOT / "seeded-secrets.txt").write_text("\n".join(SECRETS.values()) + "\n", encoding="utf-8")
    (ROOT / "seeded-memory-markers.txt").write_text("\n".join(RECALL_MARKERS) + "\n", encoding="utf-8")
    print(f"wrote {len(files)} sessions under {OUT}")


if __name__ == "__main__":
    main()
