"""hindsight-pi's recordings (tests/fixtures/extensions/hpi) put back where a user has them: the session files,
``~/.hindsight`` (config, queues) and the project (a git repository whose origin names the bank) under a test's own
folders, and the documents the server held loaded into a real server, as hindsight-pi wrote them (id, text, tags,
context, time), each scenario in its own bank (the project's origin names it, as hindsight-pi's per-repo default
reads it). tests/test_recorded_extensions.py replays them too, under their recorded banks; this one adds the git
origin, pi's queue folder and a bank of its own per test, which the bank rules (items 3 and 4) need."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_batch.sinks.hindsight import HindsightClient

HPI = Path(__file__).resolve().parent / "fixtures" / "extensions" / "hpi"


@dataclass
class Rerooted:
    scenario: str
    home: Path
    project: Path
    sessions: Path  # pi's session folder for the project
    bank: str  # the bank the documents are loaded into (the recorded one, made unique)
    recorded_bank: str
    files: list[Path] = field(default_factory=list)


def _swap(text: str, home: Path, project: Path, url: str) -> str:
    return (text.replace("http://HINDSIGHT", url).replace("/PROJECT", str(project)).replace("/HOME", str(home)))


def reroot(scenario: str, root: Path, home: Path, url: str = "http://HINDSIGHT", unique: str | None = None,
           project_name: str = "PROJECT") -> Rerooted:
    """The scenario's files under ``root`` and ``home``. ``unique`` is added to the bank's name (the origin's last
    segment), so that runs sharing a server do not meet; the project is ``root/<project_name>``."""
    source = HPI / scenario
    banks = json.loads((source / "server.json").read_text())
    (recorded,) = banks
    bank = f"{recorded}-{unique}" if unique else recorded
    project = root / project_name
    project.mkdir(parents=True, exist_ok=True)
    sessions = root / "sessions" / "--PROJECT--"
    sessions.mkdir(parents=True, exist_ok=True)
    files = []
    for path in sorted((source / "sessions" / "--PROJECT--").glob("*.jsonl")):
        target = sessions / path.name
        target.write_text(_swap(path.read_text(), home, project, url))
        files.append(target)
    hindsight_home = source / "hindsight-home"
    if hindsight_home.is_dir():
        for path in hindsight_home.rglob("*"):
            if path.is_file():
                target = home / ".hindsight" / path.relative_to(hindsight_home)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(_swap(path.read_text(), home, project, url).replace(recorded, bank))
    flushed = any(r["method"] == "POST" and r["path"].endswith("/memories") and r["body"].get("items", [{}])[0]
                  .get("document_id") for r in map(json.loads, (source / "requests.jsonl").read_text().splitlines()))
    if flushed:  # hindsight-pi made its queue folder before the flush (queue.ts mkdirSync); git keeps no empty one
        (home / ".hindsight" / "pi-queues").mkdir(parents=True, exist_ok=True)
    if (source / "project").is_dir():
        for path in (source / "project").rglob("*"):
            if path.is_file():
                target = project / path.relative_to(source / "project")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(path.read_text())
    git = ["git", "-C", str(project)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "remote", "add", "origin", f"git@example.invalid:acme/{bank}.git"], check=True)
    return Rerooted(scenario, home, project, sessions, bank, recorded, files)


def documents(scenario: str) -> list[dict[str, Any]]:
    banks = json.loads((HPI / scenario / "server.json").read_text())
    (bank,) = banks.values()
    return list(bank.get("documents") or [])


def load_server(where: Rerooted, client: HindsightClient) -> None:
    """The documents the server held after the scenario, retained again as hindsight-pi sent them (one item per
    document: its whole text, tags, context and time), paths re-rooted."""
    for doc in documents(where.scenario):
        params = doc.get("retain_params") or {}
        item: dict[str, Any] = {
            "content": _swap(doc["original_text"], where.home, where.project, "http://HINDSIGHT"),
            "document_id": doc["id"], "update_mode": "replace",
            "tags": [_swap(t, where.home, where.project, "http://HINDSIGHT") for t in doc.get("tags") or []],
        }
        for key in ("context", "metadata"):
            if params.get(key):
                item[key] = params[key]
        if params.get("event_date"):
            item["timestamp"] = params["event_date"]
        operation = client.retain(where.bank, [item], str(uuid.uuid4())).operation_id
        deadline = time.monotonic() + 120
        while operation and time.monotonic() < deadline:
            if client.operation(where.bank, operation).get("status") in ("completed", "failed", "not_found"):
                break
            time.sleep(0.3)


# --- what a run planned, against what the extension holds ------------------------------------------------------


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content or [] if isinstance(b, dict) and b.get("type") == "text" and b.get("text")]


def turns(path: Path) -> list[tuple[str, str, str]]:
    """The session's user and assistant messages that have text: (entry id, role, text)."""
    found = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") if entry.get("type") == "message" else None
        if message and message.get("role") in ("user", "assistant") and _texts(message):
            found.append((entry["id"], message["role"], "\n".join(_texts(message))))
    return found


def document_texts(text: str) -> list[str]:
    """The message texts of a hindsight-pi document's text (live records and backfill lists), in order."""
    out: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        value = json.loads(line)
        for record in value if isinstance(value, list) else [value]:
            texts = _texts(record.get("message") or {})
            if texts:
                out.append("\n".join(texts))
    return out
