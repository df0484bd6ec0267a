"""What the user told the live extension holds in every batch path: per-project switches of both
extensions, hindsight-pi's hindsight-meta entries (retention toggled per session, session tags), hindsight-pi's
parent tag. Inputs are built as the extensions' code writes them (tests/extension_shapes.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.extension.switches import path_hashes
from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.extension_shapes import hpi_meta


def a_session(tmp_path: Path, project: Path, sid: str = "sw-1") -> tuple[SessionBuilder, Path]:
    b = SessionBuilder(cwd=str(project), session_id=sid)
    b.user("SECRET-PLAN question about the importer module")
    b.assistant("answer: the parser was fixed")
    return b, b.write(tmp_path / "sessions" / f"{sid}.jsonl")


def run(runner: CliRunner, tmp_path: Path, *args: str) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "state"),
                    "--manifest", str(manifest), "--json", "--include-content", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.output), read_manifest(manifest), result.output


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# (file relative to the project's parent folder, its text, words of the reason). hindsight-pi reads
# .hindsight/config.json in every folder from / down to the cwd (extensions/config.ts readConfigFile), so a parent
# folder's file holds; its boolOr reads a string as value === "true".
PROJECT_SWITCHES = [
    (".hindsight/config.json", {"host": {"pi": {"enabled": False}}}, "host.pi.enabled is false"),
    ("proj/.hindsight/config.json", {"host": {"pi": {"saveMessages": False}}}, "host.pi.saveMessages is false"),
    ("proj/.hindsight/config.json", {"host": {"pi": {"saveMessages": "no"}}}, 'host.pi.saveMessages is "no"'),
    ("proj/.pi/hindsight.json", {"enabled": False}, "pi-hindsight: enabled is false"),
    ("proj/.pi/hindsight.jsonc", '{ // off\n "retain": {"enabled": false, "async": true},\n}', "retain.enabled"),
    ("proj/.pi/hindsight.json", {"banks": {"project": {"enabled": False}}}, "banks.project.enabled is false"),
    ("proj/.pi/hindsight.json", {"banks": {"coding": {"enabled": False}}}, "banks.coding.enabled is false"),
    # pi-hindsight's newest versions: the "pi-hindsight" section of pi's settings (config/config.ts)
    ("proj/.pi/settings.json", {"packages": [], "pi-hindsight": {"retain": {"enabled": False}}},
     "pi-hindsight.retain.enabled is false"),
]


@pytest.mark.parametrize(("where", "content", "reason"), PROJECT_SWITCHES)
def test_a_project_switched_off_is_left_out_by_catch_up_and_reported_by_an_import(
    runner: CliRunner, tmp_path: Path, where: str, content: dict[str, Any] | str, reason: str
) -> None:
    project = tmp_path / "work" / "proj"
    project.mkdir(parents=True)
    write(tmp_path / "work" / where, content if isinstance(content, str) else json.dumps(content))
    a_session(tmp_path, project)
    summary, rows, _ = run(runner, tmp_path, "--catch-up")
    assert [r["status"] for r in rows] == ["switched-off"] and "SECRET-PLAN" not in json.dumps(rows)
    assert reason in summary["switched_off"][0]["reason"] and summary["switched_off"][0]["switch"] == "project"
    # A one-off import takes it (with no project bank it writes nothing: not-written) and says so;
    # --respect-switches leaves it out.
    summary, rows, _ = run(runner, tmp_path)
    assert [r["status"] for r in rows] in (["planned"], ["not-written"]) and summary["switched_off_total"] == 1
    assert rows[0]["switch"]["switch"] == "project"
    text = invoke(runner, "import", str(tmp_path / "sessions"), "--state", str(tmp_path / "s2")).stderr
    assert "switched off by the live extension: 1 session(s), 0 left out" in text and "--respect-switches" in text
    summary, rows, _ = run(runner, tmp_path, "--respect-switches")
    assert [r["status"] for r in rows] == ["switched-off"] and summary["switched_off_skipped"] == 1


def test_the_switch_is_in_status_not_among_keys_not_used(runner: CliRunner, tmp_path: Path,
                                                       isolated_home: Path) -> None:
    project = tmp_path / "proj"
    write(project / ".hindsight" / "config.json", json.dumps({"host": {"pi": {"enabled": False, "logging": True}}}))
    result = invoke(runner, "status", "--cwd", str(project), "--json")
    data = json.loads(result.stdout)
    assert not any("host.pi.enabled" in key for key in data["ignored_extension_keys"])
    assert any("host.pi.logging" in key for key in data["ignored_extension_keys"])
    assert "host.pi.enabled is false" in data["retain_switch"]
    assert "SWITCHED OFF" in invoke(runner, "status", "--cwd", str(project)).stdout
    write(isolated_home / ".pi" / "agent" / "hindsight.json", json.dumps({"enabled": True, "retain": {"async": True}}))
    data = json.loads(invoke(runner, "status", "--cwd", str(tmp_path), "--json").stdout)
    keys = " ".join(data["ignored_extension_keys"])
    assert ": enabled" not in keys and "retain.async" in keys and data["retain_switch"] is None


@pytest.mark.parametrize(("variable", "value", "off"), [("HINDSIGHT_ENABLED", "false", True),
                                                       ("HINDSIGHT_SAVE_MESSAGES", "0", True),
                                                       ("PI_HINDSIGHT_ENABLED", "off", True),
                                                       ("PI_HINDSIGHT_ENABLED", "yes", False)])
def test_the_extensions_variables_switch_too(runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             variable: str, value: str, off: bool) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    a_session(tmp_path, project)
    monkeypatch.setenv(variable, value)
    _, rows, _ = run(runner, tmp_path, "--catch-up")
    assert ([r["status"] for r in rows] == ["switched-off"]) is off


def test_a_session_toggled_off_before_its_first_message_is_left_out_whole(runner: CliRunner, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    b = SessionBuilder(cwd=str(project), session_id="sw-off")
    hpi_meta(b, retained=False)  # /hindsight:toggle-retain
    b.user("SECRET-PLAN question about the importer module")
    b.assistant("answer: the parser was fixed")
    b.write(tmp_path / "sessions" / "s.jsonl")
    summary, rows, _ = run(runner, tmp_path, "--catch-up")
    assert [r["status"] for r in rows] == ["switched-off"] and "SECRET-PLAN" not in json.dumps(rows)
    assert summary["switched_off"][0]["switch"] == "hpi-session" and summary["sessions"] == 0
    summary, rows, _ = run(runner, tmp_path)
    assert "SECRET-PLAN" in rows[0]["content"] and summary["switched_off"][0]["respected"] is False


def test_messages_written_while_retention_was_off_are_left_out(runner: CliRunner, tmp_path: Path) -> None:
    """extensions/index.ts message_end checks sessionRetained(entries) as each message ends: the last meta before a
    message decides for it; tags are those of the last meta (sessionTags)."""
    project = tmp_path / "proj"
    project.mkdir()
    b = SessionBuilder(cwd=str(project), session_id="sw-span")
    b.user("ONE question about the importer module")
    b.assistant("ONE answer")
    hpi_meta(b, retained=False)
    b.user("TWO-PRIVATE question")
    b.assistant("TWO-PRIVATE answer")
    hpi_meta(b, retained=True)
    hpi_meta(b, retained=True, tags=["team-a", "  "])  # /hindsight:tag team-a (a blank tag is dropped)
    b.user("THREE question")
    b.assistant("THREE answer")
    b.write(tmp_path / "sessions" / "s.jsonl")
    summary, rows, _ = run(runner, tmp_path, "--catch-up")
    content = "".join(r["content"] or "" for r in rows)
    assert "ONE" in content and "THREE" in content and "TWO-PRIVATE" not in content
    assert summary["messages_dropped"]["switched-off"] == 2 and "team-a" in rows[0]["tags"]
    assert "  " not in rows[0]["tags"]
    summary, rows, _ = run(runner, tmp_path, "--no-respect-switches", "--catch-up")
    assert "TWO-PRIVATE" in "".join(r["content"] or "" for r in rows)


def test_the_parent_tag_is_the_parent_files_name_as_hindsight_pi_writes_it(runner: CliRunner, tmp_path: Path) -> None:
    """extensions/session-document.ts getParentSessionId: the parentSession path's last segment without .jsonl."""
    project = tmp_path / "proj"
    project.mkdir()
    b = SessionBuilder(cwd=str(project), session_id="child")
    header = json.loads(b.lines[0])
    header["parentSession"] = "/home/u/.pi/agent/sessions/--p--/2026-05-01T10-00-00-000Z_0196-abcd.JSONL"
    b.lines[0] = json.dumps(header)
    b.user("question about the importer module")
    b.assistant("answer")
    b.write(tmp_path / "sessions" / "s.jsonl")
    _, rows, _ = run(runner, tmp_path)
    assert "parent:2026-05-01T10-00-00-000Z_0196-abcd" in rows[0]["tags"]
    assert "parent:0196-abcd" not in rows[0]["tags"]


def test_a_reviewed_session_with_pi_hindsight_tags_is_sent_as_reviewed(runner: CliRunner, tmp_path: Path) -> None:
    """The session meta's tags are part of what was reviewed: --from-run finds the same settings, refuses nothing."""
    from tests.extension_shapes import luxus_meta
    from tests.fake_hindsight import FakeState, fake_hindsight

    project = tmp_path / "proj"
    project.mkdir()
    _, path = a_session(tmp_path, project)
    meta = project / ".pi" / "hindsight" / "session-meta" / f"{path_hashes(path)[-1]}.json"
    write(meta, json.dumps(luxus_meta(tags=["release-7"])))
    fake = FakeState()
    with fake_hindsight(fake) as url:
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"baseUrl": url, "banks": {"project": {"bankId": "tagged"}}}))
        common = ("--config", str(config), "--state", str(tmp_path / "state"), "--live-retained", "include")
        dry = invoke(runner, "import", str(tmp_path / "sessions"), "--json", "-q", *common)
        run_id = json.loads(dry.stdout)["run_id"]
        result = invoke(runner, "import", "--apply", "--from-run", run_id, "--json", *common)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["from_run"]["refused_total"] == 0
    assert any("release-7" in doc.get("tags", []) for doc in fake.documents["tagged"].values())


def test_catch_up_leaves_out_a_session_whose_meta_cannot_be_found(runner: CliRunner, tmp_path: Path) -> None:
    """No cwd in the header: pi-hindsight's session meta (under <cwd>/.pi/hindsight) cannot be looked at (S8)."""
    b = SessionBuilder(cwd="", session_id="sw-nocwd")
    header = json.loads(b.lines[0])
    del header["cwd"]
    b.lines[0] = json.dumps(header)
    b.user("SECRET-PLAN question")
    b.assistant("answer")
    b.write(tmp_path / "sessions" / "s.jsonl")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"banks": {"project": {"bankId": "somewhere"}}}))
    summary, rows, _ = run(runner, tmp_path, "--catch-up", "--config", str(config))
    assert [r["status"] for r in rows] == ["switched-off"] and "no cwd" in summary["switched_off"][0]["reason"]


def test_session_tags_are_those_in_effect_at_some_message(runner: CliRunner, tmp_path: Path) -> None:
    """hindsight-pi tags each message with the tags in effect when it ends; its document holds their union. A tag
    removed later still tagged the messages before; a tag added after the last message tagged none."""
    project = tmp_path / "proj"
    project.mkdir()
    b = SessionBuilder(cwd=str(project), session_id="sw-tags")
    hpi_meta(b, tags=["early"])
    b.user("ONE question about the importer module")
    b.assistant("ONE answer")
    hpi_meta(b, tags=[])  # /hindsight:remove-tag early
    b.user("TWO question")
    b.assistant("TWO answer")
    hpi_meta(b, tags=["late"])  # after the last message
    b.write(tmp_path / "sessions" / "s.jsonl")
    _, rows, _ = run(runner, tmp_path)
    assert "early" in rows[0]["tags"] and "late" not in rows[0]["tags"]
