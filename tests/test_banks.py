"""The bank of each session, as the configured live extension derives it, in real git repositories made here."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch.config import ConfigResolver
from hindsight_batch.plan.banks import BankResolver, Git, Unreproducible, sanitize
from tests.conftest import SessionBuilder, invoke, read_manifest
from tests.server import Server

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def sha(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def git(cwd: Path, *args: str) -> None:
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1", **who}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=30)


def repo(path: Path, remote: str | None = None, branch: str = "main", commit: bool = True) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", branch)
    if remote:
        git(path, "remote", "add", "origin", remote)
    if commit:
        git(path, "commit", "-q", "--allow-empty", "-m", "init")
    return path


def write_json(path: Path, data: object, text: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else json.dumps(data))
    return path


def bank_for(home: Path, cwd: Path | str, env: dict[str, str] | None = None) -> tuple[str, str]:
    full = {"HOME": str(home), "PATH": os.environ["PATH"], **(env or {})}
    resolved = ConfigResolver(env=full).for_cwd(str(cwd))
    return BankResolver(full).derive(resolved, str(cwd), Path(str(cwd)).name)


@pytest.mark.parametrize(("raw", "expected"), [
    ("My Repo!!", "my-repo"),
    ("--Acme__API--", "acme__api"),
    ("", "pi-memory"),
    ("!!!", "pi-memory"),
    ("Überprojekt", "berprojekt"),
    ("a/b:c.d", "a-b-c-d"),
    ("x" * 119 + "-yy", "x" * 119 + "-"),  # cut after trimming: a dash can end the id, as in the extension
    ("y" * 130, "y" * 120),
])
def test_sanitizer_edge_cases(raw: str, expected: str) -> None:
    assert sanitize(raw) == expected


def test_hindsight_pi_per_repo_remotes_and_fallbacks(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"host": {"pi": {"recallMode": "hybrid"}}})
    scp = repo(tmp_path / "a", "git@github.com:acme/Widget.git")
    https = repo(tmp_path / "b", "https://ci:glpat-SECRET123@gitlab.example.com/group/sub/API-Server.git")
    bare = repo(tmp_path / "Plain Repo")
    plain = tmp_path / "no-git"
    plain.mkdir()
    (scp / "src").mkdir()
    assert bank_for(isolated_home, scp / "src")[0] == "widget"
    bank, why = bank_for(isolated_home, https)
    assert bank == "api-server" and "per-repo" in why and "remote origin" in why
    assert "glpat-SECRET123" not in why  # the reason is printed and stored: the URL's credentials are masked
    root = subprocess.run(["git", "-C", str(bare), "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert bank_for(isolated_home, bare)[0] == f"plain-repo-{sha(root, 10)}"
    assert bank_for(isolated_home, plain)[0] == f"dir-no-git-{sha(str(plain), 10)}"


def test_hindsight_pi_git_branch_detached_head_and_the_other_strategies(tmp_path: Path, isolated_home: Path) -> None:
    config = write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "git-branch"})
    work = repo(tmp_path / "w", "ssh://git@host/x/Widget.git", branch="Feature/Login")
    assert bank_for(isolated_home, work)[0] == "widget--feature-login"
    git(work, "checkout", "-q", "--detach")
    bank, why = bank_for(isolated_home, work)
    assert bank == "widget" and "detached" in why
    write_json(config, {"bankStrategy": "per-directory"})
    assert bank_for(isolated_home, work)[0] == f"dir-w-{sha(str(work), 10)}"
    write_json(config, {"bankStrategy": "global", "global_bank": "Team Memory"})
    assert bank_for(isolated_home, work)[0] == "team-memory"
    write_json(config, {"bankStrategy": "global"})
    assert bank_for(isolated_home, work)[0] == "pi-global-memory"
    write_json(config, {"bankStrategy": "per-repo", "bankId": "Fixed Bank", "mappings": {str(work): "Mapped/One"}})
    assert bank_for(isolated_home, work) == ("mapped-one", f"mappings['{work}'] ({config})")
    assert bank_for(isolated_home, tmp_path)[0] == "fixed-bank"  # no mapping there: bankId, whatever the strategy
    write_json(config, {"bankStrategy": "pi-session"})
    with pytest.raises(Unreproducible, match="pi-session"):
        bank_for(isolated_home, work)


def test_toml_flat_keys_and_the_environment(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.toml", None,
               '# written by the hindsight CLI\napi_url = "localhost:9999"\nbank_id = "From TOML"\n')
    full = {"HOME": str(isolated_home)}
    resolved = ConfigResolver(env=full).for_cwd(str(tmp_path))
    assert resolved.settings.base_url == "http://localhost:9999"
    assert resolved.origin("baseUrl").endswith("config.toml (api_url)")
    assert resolved.family == "hindsight-pi"
    assert bank_for(isolated_home, tmp_path)[0] == "from-toml"
    assert bank_for(isolated_home, tmp_path, {"HINDSIGHT_BANK_ID": "Env Bank"}) == (
        "env-bank", "bankId (env HINDSIGHT_BANK_ID)")


def test_host_pi_settings_shape_retention_and_unused_keys_are_listed(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {
        "apiKey": "k", "host": {"pi": {"retainContent": {"user": ["text"], "assistant": ["text", "toolCall"],
                                                         "toolResult": []},
                                       "projectName": "acme", "recallMode": "hybrid", "autoRecallTags": None},
                                "claude-code": {"x": 1}},
        "recall_types": "world", "hosts": {}})
    project = write_json(tmp_path / "p" / ".hindsight" / "config.json",
                         {"host": {"pi": {"retainContent": {"assistant": ["thinking"]}}}})
    resolved = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(tmp_path / "p"))
    content = resolved.settings.retain_content
    # host.pi is merged one level deep by the extension: the project's retainContent replaces the whole value.
    assert content.assistant == ["thinking"] and content.user == ["text"]
    assert resolved.origin("retainContent") == f"{project} (host.pi.retainContent)"
    assert resolved.settings.project_name == "acme"
    assert any(key.endswith("host.pi.recallMode") for key in resolved.ignored_keys)
    assert any(key.endswith("host.claude-code") for key in resolved.ignored_keys)
    write_json(project, {"host": {"pi": {"retainContnet": {}}}})
    from hindsight_batch.errors import ConfigError
    with pytest.raises(ConfigError, match=r"host\.pi\.retainContnet"):
        ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(tmp_path / "p"))


def test_pi_hindsight_jsonc_and_its_project_bank(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".pi" / "agent" / "hindsight.jsonc", None, """{
      // pi-hindsight's own file: comments and trailing commas
      "hindsight": {"baseUrl": "http://127.0.0.1:7777", /* inline */ "timeoutMs": 1000,},
      "banks": {"project": {"enabled": true, "derive": "repo",}, "user": {"enabled": false}},
      "retain": {"content": {"assistant": ["text", "toolCall"]}},
      "recall": {"budget": "mid"},
    }""")
    root = repo(tmp_path / "My_Websites", "git@github.com:acme/site.git")
    (root / "apps" / "web").mkdir(parents=True)
    real = os.path.realpath(root)
    bank, why = bank_for(isolated_home, root / "apps" / "web")
    assert bank == f"pi-project-my-websites-{sha(real, 12)}" and "derive repo" in why
    resolved = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(root))
    assert resolved.family == "pi-hindsight" and resolved.settings.base_url == "http://127.0.0.1:7777"
    write_json(root / "apps" / "web" / ".pi" / "hindsight.json", {"banks": {"project": {"derive": "cwd"}}})
    web = str(root / "apps" / "web")
    assert bank_for(isolated_home, web)[0] == f"pi-project-web-{sha(web, 12)}"
    write_json(root / "apps" / "web" / ".pi" / "hindsight.json", {"banks": {"project": {"derive": "basename"}}})
    assert bank_for(isolated_home, web)[0] == "My_Websites"
    assert bank_for(isolated_home, web, {"PI_HINDSIGHT_PROJECT_BANK_ID": "kai-coding"})[0] == "kai-coding"


def test_both_families_found_is_a_configuration_error(runner: CliRunner, tmp_path: Path,
                                                      isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo"})
    write_json(isolated_home / ".pi" / "agent" / "hindsight.json", {"banks": {"project": {"derive": "repo"}}})
    result = invoke(runner, "status", "--cwd", str(tmp_path))
    assert result.exit_code == 3 and "both extensions" in result.stderr and "extension" in result.stderr
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo", "extension": "pi-hindsight"})
    assert invoke(runner, "status", "--cwd", str(tmp_path)).exit_code == 0


def test_status_cwd_shows_the_bank_and_why(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"host": {"pi": {"projectName": "acme"}}})
    work = repo(tmp_path / "w", "git@github.com:acme/Widget.git")
    result = invoke(runner, "status", "--cwd", str(work))
    assert result.exit_code == 0, result.stderr
    assert "extension configuration: hindsight-pi" in result.output
    assert "project bank: widget" in result.output and "remote origin" in result.output
    data = json.loads(invoke(runner, "status", "--cwd", str(work), "--json").output)
    assert data["project_bank_id"] == "widget" and data["extension_config"] == "hindsight-pi"
    row = next(r for r in data["settings"] if r["key"] == "projectName")
    assert row["from"].endswith("config.json (host.pi.projectName)")
    # No extension configuration at all: this tool's own rule, said so.
    (isolated_home / ".hindsight" / "config.json").unlink()
    data = json.loads(invoke(runner, "status", "--cwd", str(work), "--json").output)
    assert data["extension_config"] == "none" and data["project_bank_id"].startswith("pi-w-")
    assert "no extension configuration" in data["project_bank_why"]


def session_in(tmp_path: Path, cwd: Path | str, sid: str) -> Path:
    b = SessionBuilder(cwd=str(cwd), session_id=sid)
    b.user("Fix the uploader's retry loop in this repo.")
    b.assistant("Fixed the retry loop; added a test.")
    return b.write(tmp_path / "sessions" / f"{sid}.jsonl")


def import_rows(runner: CliRunner, tmp_path: Path, *paths: Path, code: int = 0
                ) -> tuple[list[dict], dict]:  # type: ignore[type-arg]
    manifest = tmp_path / "m.jsonl"
    result = invoke(runner, "import", *map(str, paths), "--manifest", str(manifest), "--state", str(tmp_path / "st"),
                    "--json", "--live-retained", "include")
    assert result.exit_code == code, result.stderr
    return read_manifest(manifest), json.loads(result.output)


def test_import_lands_in_the_extension_bank_per_session(runner: CliRunner, tmp_path: Path,
                                                        isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"host": {"pi": {}}})
    one = repo(tmp_path / "one", "https://github.com/acme/one.git")
    two = repo(tmp_path / "two", "git@github.com:acme/Two.git", branch="dev")
    rows, summary = import_rows(runner, tmp_path, session_in(tmp_path, one, "s1"), session_in(tmp_path, two, "s2"))
    assert {r["session_id"]: r["bank_id"] for r in rows} == {"s1": "one", "s2": "two"}
    assert "remote origin" in rows[0]["bank_why"] and summary["project_banks"]["one"]["sessions"] == 1


def test_deleted_cwd_uses_the_recorded_bank_or_is_skipped(runner: CliRunner, tmp_path: Path,
                                                          isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo"})
    gone = tmp_path / "gone"
    kept = session_in(tmp_path, gone, "s-gone")
    unknown = session_in(tmp_path, tmp_path / "also-gone", "s-unknown")
    queue = isolated_home / ".hindsight" / "pi-queues" / "s-gone.auto.jsonl"
    write_json(queue, None, json.dumps({"sessionId": "s-gone", "bankId": "recorded-bank", "content": "x"}) + "\n")
    rows, summary = import_rows(runner, tmp_path, kept, unknown, code=1)  # a session without a bank: exit 1
    assert {r["bank_id"] for r in rows} == {"recorded-bank"} and "recorded by the extension" in rows[0]["bank_why"]
    skipped = summary["sessions_skipped"]
    assert [s["file"] for s in skipped] == [str(unknown)] and "no longer exists" in skipped[0]["reason"]
    assert summary["without_bank_fix"] == [f"--map {tmp_path / 'also-gone'}=<the folder where this repository is now>"]


def test_a_recorded_bank_that_differs_from_the_derived_one_skips_the_session(
    runner: CliRunner, tmp_path: Path, isolated_home: Path
) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo"})
    work = repo(tmp_path / "w", "git@github.com:acme/widget.git")
    path = session_in(tmp_path, work, "s-moved")
    write_json(isolated_home / ".hindsight" / "pi-queues" / "s-moved.tool.jsonl", None,
               json.dumps({"sessionId": "s-moved", "bankId": "old-bank", "content": "x"}) + "\n")
    rows, summary = import_rows(runner, tmp_path, path, code=1)  # skipped for want of a bank: exit 1
    assert rows == [] and "old-bank" in summary["sessions_skipped"][0]["reason"]


def test_junk_in_the_extensions_queue_does_not_fail_the_sessions_import(
    runner: CliRunner, tmp_path: Path, isolated_home: Path
) -> None:
    """A line nested deeper than the parser's recursion limit, or a JSON array naming recall, in the extension's
    queue made the session's import fail every run (a RecursionError blamed on the session file). The lines that
    say something are read; the rest is skipped."""
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo"})
    kept = session_in(tmp_path, tmp_path / "gone", "s-gone")
    with kept.open("a") as session:
        session.write('["hindsight-recall", "bankId"]\n')
    queue = isolated_home / ".hindsight" / "pi-queues" / "s-gone.auto.jsonl"
    write_json(queue, None, "[" * 100_000 + "]" * 100_000 + "\n" + '{"bankId": ' * 3000 + "\n" +
               json.dumps({"sessionId": "s-gone", "bankId": "recorded-bank", "content": "x"}) + "\n")
    rows, summary = import_rows(runner, tmp_path, kept)
    assert summary["failed_files_total"] == 0, summary["failed_files"]
    assert {r["bank_id"] for r in rows} == {"recorded-bank"}


def test_git_is_run_read_only(tmp_path: Path) -> None:
    work = repo(tmp_path / "w", "git@github.com:acme/widget.git")
    before = sorted(p.name for p in (work / ".git").iterdir())
    code, out = Git().run(str(work), "remote", "get-url", "origin")
    assert (code, out.strip()) == (0, "git@github.com:acme/widget.git")
    assert sorted(p.name for p in (work / ".git").iterdir()) == before
    assert Git().run(str(tmp_path / "nowhere"), "status")[0] != 0


def test_jsonc_keeps_strings_intact() -> None:
    from hindsight_batch.config.families import strip_jsonc

    text = '{"url": "http://x//y", "s": "a,}", /* c */ "l": [1, 2, ], // end\n "o": {"k": "/*v*/",},}'
    assert json.loads(strip_jsonc(text)) == {"url": "http://x//y", "s": "a,}", "l": [1, 2], "o": {"k": "/*v*/"}}


def test_your_own_files_decide_the_extension_not_a_cloned_repository(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo"})
    work = repo(tmp_path / "w", "git@github.com:acme/widget.git")
    write_json(work / ".pi" / "hindsight.json", {"banks": {"project": {"bankId": "other-extension-bank"}}})
    resolved = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(work))
    assert resolved.family == "hindsight-pi" and bank_for(isolated_home, work)[0] == "widget"
    assert str(work / ".pi" / "hindsight.json") in resolved.family_files["pi-hindsight"]


def test_a_flat_toml_file_hindsight_pi_reads_but_toml_does_not(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.toml", None,
               "# flat\napi_url = http://127.0.0.1:7000\nbank_id = 'Unquoted Ok'\nrecall_types = world,experience\n")
    resolved = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(tmp_path))
    assert resolved.settings.base_url == "http://127.0.0.1:7000" and resolved.settings.bank_id == "Unquoted Ok"
    write_json(isolated_home / ".hindsight" / "config.toml", None, "api_url = http://x\nsurprise = 1 2\n")
    from hindsight_batch.errors import ConfigError
    with pytest.raises(ConfigError, match="not valid TOML"):
        ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(tmp_path))


def test_pi_session_strategy_uses_the_bank_a_persisted_recall_names(runner: CliRunner, tmp_path: Path,
                                                                    isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "pi-session"})
    work = tmp_path / "w"
    work.mkdir()
    b = SessionBuilder(cwd=str(work), session_id="s-ps")
    b.user("Fix the uploader's retry loop in this repo.")
    b.entry("custom_message", customType="hindsight-recall", content="<hindsight_memories>x</hindsight_memories>",
            display=False, details={"bankId": "session-lz3k9a", "query": "q"})
    b.assistant("Fixed.")
    rows, _ = import_rows(runner, tmp_path, b.write(tmp_path / "sessions" / "ps.jsonl"))
    assert {r["bank_id"] for r in rows} == {"session-lz3k9a"} and "pi-session" in rows[0]["bank_why"]
    assert not any("hindsight_memories" in json.dumps(r) for r in rows)


def test_pi_hindsight_queue_job_for_another_bank_skips_the_session(runner: CliRunner, tmp_path: Path,
                                                                   isolated_home: Path) -> None:
    from hindsight_batch.extension.switches import path_hashes

    write_json(isolated_home / ".pi" / "agent" / "hindsight.json", {"banks": {"project": {"derive": "cwd"}}})
    work = tmp_path / "w"
    work.mkdir()
    path = session_in(tmp_path, work, "s-q")
    digest = path_hashes(path)[-1]
    job = {"id": "j1", "bankId": "pi-project-elsewhere-000000000000", "documentId": f"pi-session:{digest}",
           "createdAt": "2026-05-01T10:00:00Z", "updateMode": "append", "item": {"content": "x"}, "retries": 0}
    write_json(work / ".pi" / "hindsight" / "retain-queue.jsonl", None, json.dumps(job) + "\n")
    rows, summary = import_rows(runner, tmp_path, path, code=1)
    assert rows == [] and "pi-project-elsewhere" in summary["sessions_skipped"][0]["reason"]
    job["bankId"] = f"pi-project-w-{sha(str(work), 12)}"  # the same bank: imported there
    write_json(work / ".pi" / "hindsight" / "retain-queue.jsonl", None, json.dumps(job) + "\n")
    rows, _ = import_rows(runner, tmp_path, path)
    assert {r["bank_id"] for r in rows} == {job["bankId"]}


def test_pi_hindsight_linked_worktree_shares_the_main_worktree_bank(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".pi" / "agent" / "hindsight.json", {})
    main = repo(tmp_path / "main-repo", "git@github.com:acme/site.git")
    git(main, "worktree", "add", "-q", str(tmp_path / "feature-wt"), "-b", "feat")
    real = os.path.realpath(main)
    assert bank_for(isolated_home, tmp_path / "feature-wt")[0] == f"pi-project-main-repo-{sha(real, 12)}"


def test_without_git_the_rule_is_not_guessed(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"bankStrategy": "per-repo"})
    work = repo(tmp_path / "w", "git@github.com:acme/widget.git")
    resolved = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(work))
    no_git = {"HOME": str(isolated_home), "PATH": str(tmp_path / "empty-bin")}
    with pytest.raises(Unreproducible, match="git is not installed"):
        BankResolver(no_git).derive(resolved, str(work), "w")
    choice = BankResolver(no_git).choose(resolved, str(work), "w", "s-nogit", tmp_path / "none.jsonl")
    assert choice.bank_id is None and choice.skip and "git is not installed" in choice.skip


def test_no_extension_configuration_keeps_this_tools_rule(tmp_path: Path, isolated_home: Path) -> None:
    project = write_json(tmp_path / "p" / ".hindsight" / "config.json", {"banks": {"project": {"bankId": "from-file"}}})
    assert bank_for(isolated_home, tmp_path / "p") == ("from-file", f"banks.project.bankId ({project})")
    assert bank_for(isolated_home, tmp_path / "p", {"HINDSIGHT_BANK_ID": "from-env"})[0] == "from-env"
    assert bank_for(isolated_home, tmp_path / "q")[0] == f"pi-q-{sha(str(tmp_path / 'q'), 8)}"


def test_host_pi_values_as_the_extension_reads_them(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".hindsight" / "config.json", {"host": {"pi": {
        "constantTags": "team:core, harness:pi", "toolFilter": '{"toolCall": {"include": ["bash"]}}',
        "observationScopes": "per_tag"}}})
    s = ConfigResolver(env={"HOME": str(isolated_home)}).for_cwd(str(tmp_path)).settings
    assert s.constant_tags == ["team:core", "harness:pi"] and s.tool_filter.tool_call.include == ["bash"]
    assert s.observation_scopes == "per_tag"


def test_a_config_as_hindsight_pi_setup_writes_it(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    """Every key its saveConfig writes (both spellings of the top-level ones), untouched: accepted, bank in effect."""
    host = {"enabled": True, "workspace": "pi", "peerName": "user", "aiPeer": "pi", "linkedHosts": [],
            "recallMode": "hybrid", "recallTypes": ["observation"], "recallPerType": 2, "recallDisplayMode": "grouped",
            "autoCreateBank": True, "logging": True, "dialecticDynamic": True, "reasoningLevel": "low",
            "showRecallIndicator": True, "showRetainIndicator": True, "indicatorsInContext": False,
            "renameSessionToBank": False, "searchBudget": "mid", "reflectBudget": "low", "contextTokens": 1200,
            "contextRefreshTtlSeconds": 300, "contextRefreshMessageThreshold": 8, "contextCadence": 1,
            "injectionFrequency": "every-turn", "writeFrequency": "turn", "saveMessages": True,
            "retainMode": "response",
            "stepRetainThreshold": 5, "toolPreviewLength": 500, "maxMessageLength": 25000, "recallMaxQueryChars": 800,
            "recallLongQueryBehavior": "skip", "autoRecallPersist": False, "autoRecallDisplay": False,
            "constantTags": ["harness:pi"], "autoRecallTags": ["{project}"], "autoRecallTagsMatch": "any_strict",
            "projectName": "acme", "observationScopes": [["{project}"]],
            "retainContent": {"assistant": ["text"], "user": ["text"], "toolResult": []},
            "strip": {"topLevel": ["type", "id", "parentId"], "message": ["usage"]},
            "toolFilter": {"toolCall": {"exclude": ["read"]}, "toolResult": {"exclude": ["read"]}}}
    write_json(isolated_home / ".hindsight" / "config.json", {
        "apiKey": "hs-key-1234", "api_key": "hs-key-1234", "baseUrl": "http://127.0.0.1:8888",
        "api_url": "http://127.0.0.1:8888", "bankId": "My Memory", "bank_id": "My Memory", "bankStrategy": "manual",
        "recallTypes": ["observation"], "recall_types": ["observation"], "mappings": {}, "host": {"pi": host},
        "hosts": {"work": {"baseUrl": "http://other:8888", "bankStrategy": "per-repo"}}})
    result = invoke(runner, "status", "--cwd", str(tmp_path), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["project_bank_id"] == "my-memory" and data["extension_config"] == "hindsight-pi"
    assert "hs-key-1234" not in result.stdout


def test_pi_hindsight_api_key_references(tmp_path: Path, isolated_home: Path) -> None:
    write_json(isolated_home / ".pi" / "agent" / "hindsight.json", {"hindsight": {"apiKeyRef": "env:MY_HS_KEY"}})
    env = {"HOME": str(isolated_home), "MY_HS_KEY": "hs-from-ref"}
    key = ConfigResolver(env=env).for_cwd(str(tmp_path)).settings.api_key
    assert key is not None and key.get_secret_value() == "hs-from-ref"
    write_json(isolated_home / ".pi" / "agent" / "hindsight.json",
               {"hindsight": {"apiKey": {"source": "env", "name": "MY_HS_KEY"}}})
    key = ConfigResolver(env=env).for_cwd(str(tmp_path)).settings.api_key
    assert key is not None and key.get_secret_value() == "hs-from-ref"


def test_pi_hindsight_scope_tags_reach_imported_items(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    """pi-hindsight recalls by project:<id>/repo:<key> (any_strict): imports carry the same tags as its live
    retains, so they are found."""
    write_json(isolated_home / ".pi" / "agent" / "hindsight.json", {"banks": {"project": {"derive": "repo"}}})
    root = repo(tmp_path / "Site", "git@github.com:Acme/Site.git")
    (root / "web").mkdir()
    rows, _ = import_rows(runner, tmp_path, session_in(tmp_path, root / "web", "s-tags"))
    real = os.path.realpath(root)
    assert {"source:pi", "project:github-com-acme-site", f"repo:site-{sha(real, 12)}"} <= set(rows[0]["tags"])
    assert rows[0]["bank_id"] == f"pi-project-site-{sha(real, 12)}"


@pytest.mark.parametrize("project_file", [
    ".hindsight/config.json",  # this tool's own shape: banks.project.bankId
    ".pi/hindsight.json",  # pi-hindsight's project file
])
def test_a_project_bank_equal_to_the_user_bank_is_refused(runner: CliRunner, tmp_path: Path, isolated_home: Path,
                                                          project_file: str) -> None:
    # S2: a cloned repository's file must not send its transcripts into the User Bank by naming it.
    write_json(isolated_home / ".hindsight" / "config.json", {"banks": {"user": {"bankId": "my-user-bank",
                                                                                 "enabled": True}}})
    work = tmp_path / "w"
    write_json(work / project_file, {"banks": {"project": {"bankId": "my-user-bank"}}})
    other = tmp_path / "other"
    write_json(other / ".hindsight" / "config.json", {"banks": {"project": {"bankId": "other-bank"}}})
    rows, summary = import_rows(runner, tmp_path, session_in(tmp_path, work, "s-clash"),
                                session_in(tmp_path, other, "s-fine"), code=1)
    assert {r["session_id"] for r in rows} == {"s-fine"} and {r["bank_id"] for r in rows} == {"other-bank"}
    skipped = summary["sessions_skipped"]
    assert [Path(s["file"]).name for s in skipped] == ["s-clash.jsonl"]
    assert "my-user-bank is the User Bank" in skipped[0]["reason"]
    # A hindsight-pi bankId (or any other rule) that gives the User Bank's id is refused the same way.
    (work / project_file).unlink()
    write_json(work / ".hindsight" / "config.json", {"bankId": "my-user-bank"})
    rows, summary = import_rows(runner, tmp_path, session_in(tmp_path, work, "s-clash2"), code=1)
    assert rows == [] and "is the User Bank" in summary["sessions_skipped"][0]["reason"]
    data = json.loads(invoke(runner, "status", "--cwd", str(work), "--json").output)
    assert data["project_bank_id"] is None and "refused" in data["project_bank_why"]


def test_an_applied_import_writes_nothing_to_the_user_bank_a_project_file_names(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, hindsight_server: Server
) -> None:
    suffix = uuid.uuid4().hex[:8]
    user_bank, other_bank = f"user-{suffix}", f"proj-{suffix}"
    monkeypatch.setenv("HINDSIGHT_BASE_URL", hindsight_server.url)
    write_json(isolated_home / ".hindsight" / "config.json", {"banks": {"user": {"bankId": user_bank,
                                                                                 "enabled": True}}})
    work, other = tmp_path / "w", tmp_path / "other"
    write_json(work / ".hindsight" / "config.json", {"banks": {"project": {"bankId": user_bank}}})
    write_json(other / ".hindsight" / "config.json", {"banks": {"project": {"bankId": other_bank}}})
    result = invoke(runner, "import", str(session_in(tmp_path, work, "s-clash")),
                    str(session_in(tmp_path, other, "s-fine")), "--apply", "--wait", "--json",
                    "--state", str(tmp_path / "st"), "--live-retained", "include")
    assert result.exit_code == 1, result.stderr  # a session without a usable bank
    with hindsight_server.client() as client:
        assert list(client.documents(user_bank)) == []  # what the server holds: nothing in the User Bank
        assert len(list(client.documents(other_bank))) == 1
    summary = json.loads(result.output)
    assert [Path(s["file"]).name for s in summary["sessions_skipped"]] == ["s-clash.jsonl"]
