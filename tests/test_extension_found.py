"""Which bank an import writes to when no configuration names the live extension (issue 36 items 3 and 4), over
hindsight-pi's recordings: hindsight-pi runs without a config file on its defaults (recording ``env-only``: bank =
the origin's last segment; ``no-config``: disabled until given a server, installed all the same), so it is found by
pi's packages, its files and its session entries; with nothing found a dry run says so and --apply sends nothing
until the user names one. A session whose repository moved gets its bank from where it is now (--map)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES, invoke, read_manifest
from tests.hpi_recordings import Rerooted, reroot
from tests.server import Server


def dry_run(runner: CliRunner, where: Rerooted, tmp_path: Path, *args: str, code: int = 0
            ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    manifest = tmp_path / f"m-{uuid.uuid4().hex[:6]}.jsonl"
    result = invoke(runner, "import", str(where.sessions), "--manifest", str(manifest), "--json",
                    "--live-retained", "include", "--state", str(tmp_path / "state-hb"), *args)
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), read_manifest(manifest) if manifest.exists() else []


def bank_of(summary: dict[str, Any]) -> tuple[str, str]:
    ((bank, seen),) = summary["project_banks"].items()
    return bank, seen["why"]


def test_nothing_found_a_dry_run_says_so(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    where = reroot("no-config", tmp_path, isolated_home)
    summary, rows = dry_run(runner, where, tmp_path)
    bank, _ = bank_of(summary)
    assert bank.startswith("pi-project-") and rows[0]["status"] == "planned"  # this tool's own bank, planned
    (unnamed,) = summary["bank_unnamed"]
    assert "no live extension was found" in unnamed["reason"] and "--extension hpi|pi-hindsight" in unnamed["reason"]
    summary, _ = dry_run(runner, where, tmp_path, "--extension", "hpi")  # named: hindsight-pi's defaults
    assert bank_of(summary)[0] == where.bank and summary["bank_unnamed_total"] == 0


@pytest.mark.parametrize(("sign", "family"), [
    ("package", "hindsight-pi"), ("local extension", "hindsight-pi"), ("session entry", "hindsight-pi"),
    ("luxus package", "pi-hindsight"), ("luxus files", "pi-hindsight"),
])
def test_the_installed_extension_is_found_and_its_defaults_apply(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, sign: str, family: str
) -> None:
    scenario = "off-session" if sign == "session entry" else "no-config"  # off-session holds hindsight-meta entries
    where = reroot(scenario, tmp_path, isolated_home)
    shutil.rmtree(isolated_home / ".hindsight" / "pi-queues", ignore_errors=True)
    agent = isolated_home / ".pi" / "agent"
    agent.mkdir(parents=True)
    if sign == "package":  # what `pi install npm:@walodayeet/hindsight-pi` writes (pi docs/packages.md)
        (agent / "settings.json").write_text(json.dumps({"packages": ["npm:@walodayeet/hindsight-pi"]}))
    elif sign == "local extension":
        (agent / "extensions" / "memory").mkdir(parents=True)
        (agent / "extensions" / "memory" / "package.json").write_text('{"name": "@walodayeet/hindsight-pi"}')
    elif sign == "luxus package":  # a project install (pi install -l)
        (where.project / ".pi").mkdir()
        (where.project / ".pi" / "settings.json").write_text(json.dumps(
            {"packages": [{"source": "npm:@luxusai/pi-hindsight", "skills": []}]}))
    elif sign == "luxus files":
        (where.project / ".pi" / "hindsight").mkdir(parents=True)
        (where.project / ".pi" / "hindsight" / "retain-cursors.json").write_text('{"version": 3, "sessions": {}}')
    summary, rows = dry_run(runner, where, tmp_path)
    bank, why = bank_of(summary)
    assert why.startswith(f"{family} found installed") and summary["bank_unnamed_total"] == 0
    # pi-hindsight's scope tags (its recall filters by them) come with its bank rule
    assert any(t.startswith("repo:") for t in rows[0]["tags"]) == (family == "pi-hindsight")
    if family == "hindsight-pi":
        assert bank == where.bank  # per-repo: the origin's last segment
        assert ("hindsight-meta" in why) == (sign == "session entry")
        # no-config: hindsight-pi is disabled until it has a server; off-session's config file gives it one
        assert ("disabled until it is given a server" in why) == (scenario == "no-config")
    else:
        assert bank.startswith("pi-project-project-")  # pi-hindsight's derive repo: pi-project-<root name>-<hash>


def test_both_found_is_a_question_not_a_guess(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    where = reroot("complete", tmp_path, isolated_home)  # hindsight-pi's queue folder
    (where.project / ".pi" / "hindsight" / "session-meta").mkdir(parents=True)  # and pi-hindsight's files
    summary, _ = dry_run(runner, where, tmp_path)
    (unnamed,) = summary["bank_unnamed"]
    assert unnamed["reason"].startswith("both live extensions were found")


def test_only_the_base_url_variable_hindsight_pi_defaults(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = reroot("env-only", tmp_path, isolated_home)
    monkeypatch.setenv("HINDSIGHT_BASE_URL", "http://127.0.0.1:9")
    summary, _ = dry_run(runner, where, tmp_path)
    bank, why = bank_of(summary)
    assert bank == where.bank and "disabled" not in why and "pi-queues" in why


@pytest.mark.timeout(600)
def test_apply_sends_nothing_until_the_extension_is_named(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, hindsight_server: Server
) -> None:
    where = reroot("no-config", tmp_path, isolated_home, unique=uuid.uuid4().hex[:8])
    config = tmp_path / "hb.json"  # this tool's own file: a server, no extension's key
    config.write_text(json.dumps({"baseUrl": hindsight_server.url}))
    summary, _ = dry_run(runner, where, tmp_path, "--config", str(config), "--apply", code=1)
    assert summary["chunks"] == 0 and summary["without_bank_total"] == 1
    assert summary["without_bank_fix"] == ["--extension hpi|pi-hindsight, or a bank (bankId)"]
    with hindsight_server.client() as client:
        assert not list(client.documents(where.bank))
    summary, _ = dry_run(runner, where, tmp_path, "--config", str(config), "--apply", "--extension", "hpi", "--wait")
    assert bank_of(summary)[0] == where.bank and summary["upload"]["documents"] == {"confirmed": 1}


@pytest.mark.parametrize("how", ["flag", "config key"])
def test_a_moved_repository_gets_its_bank_from_where_it_is_now(
    runner: CliRunner, tmp_path: Path, isolated_home: Path, how: str
) -> None:
    where = reroot("complete", tmp_path / "old", isolated_home)
    now = tmp_path / "new" / "PROJECT"
    now.parent.mkdir()
    where.project.rename(now)
    summary, _ = dry_run(runner, where, tmp_path, code=1)  # the cwd is gone: no bank, exit 1, the fix said
    assert summary["chunks"] == 0 and summary["without_bank_total"] == 1
    assert "no longer exists" in summary["without_bank"][0]["reason"]
    assert summary["without_bank_fix"] == [f"--map {where.project}=<the folder where this repository is now>"]
    result = invoke(runner, "import", str(where.sessions), "--live-retained", "include",
                    "--state", str(tmp_path / "state-hb"))
    assert result.exit_code == 1 and f"--map {where.project}=" in result.stderr
    if how == "flag":
        args: tuple[str, ...] = ("--map", f"{tmp_path / 'old'}={tmp_path / 'new'}")
    else:
        config = isolated_home / ".hindsight" / "config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()),
                                      "pathMap": {str(tmp_path / "old"): str(tmp_path / "new")}}))
        args = ()
    summary, rows = dry_run(runner, where, tmp_path, *args)
    bank, why = bank_of(summary)
    assert bank == where.bank and f"read as {now}" in why and summary["without_bank_total"] == 0
    assert rows and all(r["status"] == "planned" for r in rows)


def test_status_shows_the_bank_an_import_would_choose(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    where = reroot("complete", tmp_path, isolated_home)
    data = json.loads(invoke(runner, "status", "--cwd", str(where.project), "--json").output)
    assert data["project_bank_id"] == where.bank and data["project_bank_why"].startswith("hindsight-pi found installed")
    shutil.rmtree(isolated_home / ".hindsight" / "pi-queues")
    data = json.loads(invoke(runner, "status", "--cwd", str(where.project), "--json").output)
    assert data["project_bank_id"].startswith("pi-project-") and "--extension hpi" in data["project_bank_why"]


def test_path_map_is_yours_to_set(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    """A cloned repository's file cannot redirect other sessions' banks: pathMap there is ignored with a warning;
    a relative folder is an error naming the key (flag: usage error)."""
    where = reroot("complete", tmp_path, isolated_home)
    (where.project / ".hindsight").mkdir()
    (where.project / ".hindsight" / "config.json").write_text(json.dumps({"pathMap": {"/x": "/y"}}))
    summary, _ = dry_run(runner, where, tmp_path)
    assert any("pathMap ignored" in w for w in summary["ignored_project_keys"])
    config = tmp_path / "hb.json"
    config.write_text(json.dumps({"pathMap": {"relative": "/y"}}))
    result = invoke(runner, "import", str(where.sessions), "--config", str(config))
    assert result.exit_code == 3 and "pathMap" in result.stderr
    result = invoke(runner, "import", str(where.sessions), "--map", "relative=/y")
    assert result.exit_code == 2 and "OLD=NEW" in result.stderr


def test_the_summary_gives_each_reason_with_its_count(runner: CliRunner, tmp_path: Path, isolated_home: Path) -> None:
    """Sessions of one import can differ in what is found (the shipped samples: one holds both extensions' entries,
    the others neither): each reason is printed with its own count, not the first session's for all."""
    result = invoke(runner, "import", str(SAMPLES), "--live-retained", "include", "--state", str(tmp_path / "s"))
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()  # the human summary, on stderr
    (head,) = [i for i, line in enumerate(lines) if "planned into this tool's own bank" in line]
    total = int(lines[head].split()[0])
    listed = [line.strip() for line in lines[head + 1:] if line.startswith("    ") and " session(s): " in line]
    reasons = [line.split(" session(s): ", 1)[1] for line in listed]
    assert len(reasons) == len(set(reasons)) >= 2 and sum(int(line.split()[0]) for line in listed) == total
    assert any(r.startswith("both live extensions were found") for r in reasons)
    assert all(r.count('"') % 2 == 0 for r in reasons)  # each entry named in balanced quotes
