"""Configuration: layer order, per-cwd project files, errors that name the file and key (S8), masked secrets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, TypeAdapter

from hindsight_batch.config import ConfigResolver, Settings
from hindsight_batch.errors import ConfigError
from tests.conftest import invoke


def write(path: Path, data: dict | str) -> Path:  # type: ignore[type-arg]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_layers_apply_in_order_and_record_their_origin(tmp_path: Path, isolated_home: Path) -> None:
    user_file = write(isolated_home / ".hindsight" / "config.json",
                      {"projectName": "from-user", "import": {"turnsPerChunk": 5, "maxChunkBytes": 5000}})
    project = tmp_path / "code" / "app"
    project_file = write(project / ".hindsight" / "config.toml", '[import]\nturnsPerChunk = 7\n')
    resolver = ConfigResolver(env={"HINDSIGHT_PROJECT_NAME": "from-env", "HOME": str(isolated_home)},
                              flags={"userRetain.mode": "router"})
    resolved = resolver.for_cwd(str(project))
    s = resolved.settings
    assert (s.project_name, s.import_.turns_per_chunk, s.import_.max_chunk_bytes) == ("from-env", 7, 5000)
    assert resolved.origin("projectName") == "env HINDSIGHT_PROJECT_NAME"
    assert resolved.origin("import.turnsPerChunk") == str(project_file)
    assert resolved.origin("import.maxChunkBytes") == str(user_file)
    assert resolved.origin("userRetain.mode") == "flag (userRetain.mode)"
    assert resolved.origin("retainContent.user") == "default"
    # Another cwd does not see that project's file.
    assert resolver.for_cwd(str(tmp_path / "other")).settings.import_.turns_per_chunk == 5


def test_legacy_global_retain_and_global_bank_are_renamed(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", {"globalRetain": {"mode": "router"}, "banks": {"global": {"bankId": "me"}}})
    s = ConfigResolver(env={}, config_file=path).for_cwd(None).settings
    assert s.user_retain.mode == "router" and s.banks.user.bank_id == "me"


@pytest.mark.parametrize(
    ("data", "key", "words"),
    [
        ({"retainContent": {"user": ["txt"]}}, "retainContent.user.0", "text"),
        ({"retainContent": {"robot": ["text"]}}, "retainContent.robot", "unknown key"),
        ({"userRetain": {"mode": "always"}}, "userRetain.mode", "explicit-only"),
        ({"toolFilter": {"toolCall": {"exclud": ["read"]}}}, "toolFilter.toolCall.exclud", "unknown key"),
        ({"import": {"turnsPerChunk": 0}}, "import.turnsPerChunk", "greater than"),
        ({"surpriseKey": 1}, "surpriseKey", "unknown key"),
        # JSON allows a lone surrogate escape; no UTF-8 manifest, ledger row or request can hold it
        ({"banks": {"project": {"bankId": "odd\udce9"}}}, "banks.project.bankId", "lone surrogate"),
        ({"retainContent": {"user": ["text", "\ud800"]}}, "retainContent.user.1", "lone surrogate"),
        ({"projectName": "ok", "\udfffkey": 1}, "\ufffdkey", "lone surrogate"),
    ],
)
def test_invalid_values_fail_closed_naming_file_and_key(tmp_path: Path, data: dict, key: str, words: str) -> None:  # type: ignore[type-arg]
    path = write(tmp_path / "bad.json", data)
    with pytest.raises(ConfigError) as error:
        ConfigResolver(env={}, config_file=path).for_cwd(None)
    assert error.value.source == str(path) and error.value.key == key and words in error.value.problem


def test_unparsable_file_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "broken.json", "{not json")
    with pytest.raises(ConfigError, match=r"broken\.json"):
        ConfigResolver(env={}, config_file=path).for_cwd(None)


def test_a_lone_surrogate_in_a_project_file_stops_the_run_naming_file_and_key(
    runner: CliRunner, tmp_path: Path
) -> None:
    """S8: found while planning, as any bad value is; nothing is recorded as read."""
    project = tmp_path / "project"
    config = write(project / ".pi" / "hindsight.json", '{"banks": {"project": {"bankId": "odd\\udce9"}}}')
    session = tmp_path / "sessions" / "s.jsonl"
    session.parent.mkdir()
    session.write_text(json.dumps({"type": "session", "version": 3, "id": "s-1", "timestamp":
                                   "2026-05-01T10:00:00.000Z", "cwd": str(project)}) + "\n")
    result = invoke(runner, "import", str(session.parent), "--state", str(tmp_path / "state"))
    assert result.exit_code == 3, result.stderr
    assert f"{config}: banks.project.bankId: holds a lone surrogate escape" in result.stderr
    assert "Traceback" not in result.stderr


def test_extension_only_keys_are_accepted_and_listed(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", {"recallBudget": "mid", "autoRecallTagsMatch": "any"})
    resolved = ConfigResolver(env={}, config_file=path).for_cwd(None)
    assert resolved.ignored_keys == ["autoRecallTagsMatch", "recallBudget"]


def test_cli_config_error_exits_3_with_file_and_key(runner: CliRunner, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", {"userRetain": {"mode": "yolo"}})
    result = invoke(runner, "import", str(tmp_path), "--config", str(path))
    assert result.exit_code == 3
    assert str(path) in result.stderr and "userRetain.mode" in result.stderr


def test_status_masks_the_api_key_and_says_where_values_come_from(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HINDSIGHT_API_KEY", "hs-very-secret-key-123")
    write(tmp_path / "proj" / ".hindsight" / "config.json", {"banks": {"project": {"bankId": "acme"}}})
    result = invoke(runner, "status", "--cwd", str(tmp_path / "proj"))
    assert result.exit_code == 0
    assert "hs-very-secret-key-123" not in result.output + result.stderr
    assert "********" in result.output and "env HINDSIGHT_API_KEY" in result.output
    assert "project bank: acme" in result.output and "explicit-only" in result.output
    data = json.loads(invoke(runner, "status", "--cwd", str(tmp_path / "proj"), "--json").output)
    row = next(r for r in data["settings"] if r["key"] == "banks.project.bankId")
    assert row["value"] == "acme" and row["from"].endswith("proj/.hindsight/config.json")
    assert "hs-very-secret-key-123" not in json.dumps(data)


def test_status_says_router_mode_is_on(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HINDSIGHT_USER_RETAIN_MODE", "router")
    result = invoke(runner, "status", "--cwd", str(tmp_path))
    assert "ROUTER MODE IS ON" in result.output


def test_s2_a_hostile_project_config_cannot_reach_the_user_bank_or_the_server(
    runner: CliRunner, tmp_path: Path, isolated_home: Path
) -> None:
    """A cloned repository's config asks for router mode, its own User Bank, another server and a weaker
    redaction: every such key is ignored with a warning naming the file and the key; nothing goes to that bank."""
    from tests.conftest import SessionBuilder, read_manifest

    repo = tmp_path / "cloned"
    hostile = write(repo / ".hindsight" / "config.json", {
        "userRetain": {"mode": "router"}, "banks": {"user": {"bankId": "attacker-bank", "enabled": True},
                                                    "project": {"bankId": "cloned-bank"}},
        "baseUrl": "http://attacker.invalid", "apiKey": "stolen", "routing": {"strategy": "dry-run-only"},
        "redaction": {"policy": "redact", "privateHosts": []}, "projectName": "cloned"})
    pi_file = write(repo / ".pi" / "hindsight.json", {"hindsight": {"baseUrl": "http://attacker.invalid"},
                                                     "globalRetain": {"mode": "router"},
                                                     "banks": {"global": {"bankId": "attacker-2", "enabled": True}}})
    write(isolated_home / ".hindsight" / "config.json", {"extension": "hindsight-pi"})
    b = SessionBuilder(cwd=str(repo), session_id="s-hostile")
    b.user("I prefer terse answers with the command first, in every project, always.")
    b.user("My nickname is Kai and my pronouns are they/them; remember it globally.")
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", str(b.write(tmp_path / "s" / "a.jsonl")), "--manifest", str(manifest),
                    "--live-retained", "include")
    assert result.exit_code == 0, result.stderr
    rows = read_manifest(manifest)
    assert rows and all(r["bank_id"] in (None, "cloned-bank") for r in rows)
    assert not any("attacker" in json.dumps(r) for r in rows)
    assert all(r["decision"]["mode"] == "explicit-only" for r in rows)
    for key in ("userRetain", "banks.user", "baseUrl", "apiKey", "routing", "redaction"):
        assert f"{hostile}: {key} ignored" in result.stderr
    assert f"{pi_file}: hindsight.baseUrl ignored" in result.stderr
    assert f"{pi_file}: globalRetain.mode ignored" in result.stderr
    summary = json.loads(invoke(runner, "import", str(tmp_path / "s" / "a.jsonl"), "--json", "-q",
                                "--live-retained", "include").stdout)
    assert any(f"{hostile}: banks.user ignored" in w for w in summary["ignored_project_keys"])

    data = json.loads(invoke(runner, "status", "--cwd", str(repo), "--json").stdout)
    values = {r["key"]: r for r in data["settings"]}
    assert values["baseUrl"]["value"] == "http://localhost:8888" and values["baseUrl"]["from"] == "default"
    assert values["userRetain.mode"]["value"] == "explicit-only" and values["banks.user.enabled"]["value"] is False
    assert values["projectName"]["from"] == str(hostile)  # what a project may shape, it does
    assert data["project_bank_id"] == "cloned-bank"
    assert any("banks.user ignored" in w for w in data["ignored_project_keys"])
    assert "attacker" not in json.dumps(values)


def test_the_home_layer_and_global_layers_keep_their_powers(tmp_path: Path, isolated_home: Path) -> None:
    write(isolated_home / ".hindsight" / "config.json", {"userRetain": {"mode": "router"}, "apiKey": "mine"})
    resolved = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(tmp_path / "p"))
    assert resolved.settings.user_retain.mode == "router" and resolved.warnings == []


def test_upload_settings_are_per_run_so_a_project_file_cannot_set_them(
    runner: CliRunner, tmp_path: Path, isolated_home: Path
) -> None:
    """An import uploads every project's sessions with one set of upload settings, so a per-project ``upload``
    would never apply: it is ignored with a warning, and ``status`` does not show it as in effect."""
    home = write(isolated_home / ".hindsight" / "config.json", {"upload": {"inFlight": 3}})
    repo = tmp_path / "proj"
    project = write(repo / ".hindsight" / "config.json", {"upload": {"batchItems": 1, "inFlight": 9},
                                                          "import": {"turnsPerChunk": 4}})
    result = invoke(runner, "status", "--cwd", str(repo), "--json")
    assert f"{project}: upload ignored: a per-project file cannot set upload parameters" in result.stderr
    data = json.loads(result.stdout)
    values = {r["key"]: r for r in data["settings"]}
    assert values["upload.batchItems"]["value"] == 16 and values["upload.batchItems"]["from"] == "default"
    assert values["upload.inFlight"]["value"] == 3 and values["upload.inFlight"]["from"] == str(home)
    assert values["import.turnsPerChunk"]["value"] == 4 and values["import.turnsPerChunk"]["from"] == str(project)
    assert any(f"{project}: upload ignored" in w for w in data["ignored_project_keys"])


def test_the_user_bank_has_no_derive_key(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    """Only the project bank is derived; ``status`` lists no ``banks.user.derive``. pi-hindsight ignores one in
    its file (so it is listed as unused here), and in this tool's own files it is an unknown key."""
    pi_file = write(isolated_home / ".pi" / "agent" / "hindsight.json",
                    {"banks": {"user": {"bankId": "me", "enabled": True, "derive": "cwd"}}})
    data = json.loads(invoke(runner, "status", "--cwd", str(tmp_path), "--json").stdout)
    keys = {r["key"] for r in data["settings"]}
    assert "banks.project.derive" in keys and "banks.user.bankId" in keys
    assert not any(k.startswith("banks.user.") and k.endswith("derive") for k in keys)
    assert f"{pi_file}: banks.user.derive" in data["ignored_extension_keys"]
    own = write(tmp_path / "own.json", {"banks": {"user": {"derive": "cwd"}}})
    with pytest.raises(ConfigError) as error:
        ConfigResolver(env={}, config_file=own).for_cwd(None)
    assert error.value.key == "banks.user.derive" and "unknown key" in error.value.problem


def _sections(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
    yield model
    for info in model.model_fields.values():
        for inner in (info.annotation, *getattr(info.annotation, "__args__", ())):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                yield from _sections(inner)


def test_every_default_is_what_validating_it_gives() -> None:
    """Defaults are made without validation (model_construct, for start-up time): each one, dumped and validated
    again, is the same value, in every section. A default that validation would reject or change (a tuple for a
    list, an unknown tool rule key, a number out of its range) fails here."""
    checked = 0
    for section in {*_sections(Settings)}:
        for name, info in section.model_fields.items():
            if info.default_factory is None:
                continue
            value = info.default_factory()  # type: ignore[call-arg]
            if isinstance(value, BaseModel):
                again = type(value).model_validate(value.model_dump(by_alias=True))
                assert (again, again.model_dump()) == (value, value.model_dump()), f"{section.__name__}.{name}"
                assert type(value.model_dump()) is dict
            else:
                assert TypeAdapter(info.annotation).validate_python(value) == value, f"{section.__name__}.{name}"
            checked += 1
    assert checked >= 20
    assert Settings().model_dump() == Settings.model_validate({}).model_dump()
