"""The library without the command line: a program imports ``hindsight_batch``, runs an import and a flush, and
gets typed results; the CLI is a layer over the same calls (same counts)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import hindsight_batch
from hindsight_batch import ImportOptions, ImportResult, UsageError, flush_queues, run_import
from tests.conftest import SAMPLES, invoke, read_manifest
from tests.test_flush import SECRET, job, project_queue, write_queue

# Session files under samples/ (the folder's *.jsonl and one folder down): seven sessions and one empty file.
SAMPLE_FILES, SAMPLE_SESSIONS = 8, 7


def samples_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SAMPLES, tmp_path / "sessions"))


def test_run_import_plans_the_samples_and_writes_the_manifest(tmp_path: Path) -> None:
    sessions = samples_copy(tmp_path)
    manifest = tmp_path / "plan.jsonl"
    options = ImportOptions(paths=[sessions], manifest=manifest, state_dir=tmp_path / "state",
                            live_retained="include")
    result = run_import(options)
    assert isinstance(result, ImportResult) and result.ok
    assert (result.mode, result.files, result.sessions) == ("dry-run", SAMPLE_FILES, SAMPLE_SESSIONS)
    rows = read_manifest(manifest)
    assert result.chunks == len(rows) > 0 and result.statuses == {"planned": len(rows)}
    assert {row["status"] for row in rows} == {"planned"}
    assert all(row["source_file"].startswith(str(sessions)) for row in rows)
    assert result.summary.manifest == str(manifest) and result.stale is None
    assert (tmp_path / "state" / "ledger.duckdb").is_file()
    # The ledger remembers: the same files again are not read again, their rows are reused as they were (S4).
    again = run_import(ImportOptions(paths=[sessions], state_dir=tmp_path / "state", live_retained="include"))
    assert again.run_id != result.run_id and again.summary.unchanged_files == SAMPLE_SESSIONS
    assert (again.chunks, again.statuses, again.summary.bytes_read) == (result.chunks, result.statuses, 0)


def test_the_import_document_is_still_the_results_data(tmp_path: Path) -> None:
    """``ImportResult.data`` (public before the typed ``summary``) is still the whole ``import --json`` document."""
    result = run_import(ImportOptions(paths=[samples_copy(tmp_path)], state_dir=tmp_path / "state",
                                      live_retained="include"))
    assert result.data == result.to_dict()
    assert (result.data["run_id"], result.data["sessions"], result.data["statuses"]) == (
        result.run_id, SAMPLE_SESSIONS, result.statuses)


def test_the_summary_type_is_public() -> None:
    from hindsight_batch import ImportSummary
    from hindsight_batch.importing.accounting import ImportSummary as defined

    assert ImportSummary is defined and "ImportSummary" in hindsight_batch.__all__


def test_the_cli_import_is_the_library_call(runner: CliRunner, tmp_path: Path) -> None:
    sessions = samples_copy(tmp_path)
    library = run_import(ImportOptions(paths=[sessions], state_dir=tmp_path / "a", live_retained="include"))
    printed = invoke(runner, "import", str(sessions), "--state", str(tmp_path / "b"), "--live-retained", "include",
                     "--json", "-q")
    data = json.loads(printed.output)
    for key in ("files", "sessions", "chunks", "statuses", "routes", "items_by_bank_role", "redactions"):
        assert data[key] == library.to_dict()[key], key


def test_options_that_do_not_go_together_are_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--wait goes with --apply") as raised:
        run_import(ImportOptions(paths=[samples_copy(tmp_path)], wait=True, state_dir=tmp_path / "state"))
    assert raised.value.exit_code == 2
    assert not (tmp_path / "state").exists()  # refused before any work


def test_flush_queues_dry_run_counts_and_writes_nothing(tmp_path: Path) -> None:
    queue = write_queue(project_queue(tmp_path), [job("b", "d", "hello"), job("b", "d", f"key {SECRET}")],
                        extra_lines=("{broken",))
    before = queue.read_bytes()
    reports = flush_queues([tmp_path / "proj"], dry_run=True)
    assert [r.queue for r in reports] == [str(queue)]
    report = reports[0]
    assert (report.jobs, report.would_send, report.sent, report.dead_lettered, report.quarantined) == (2, 1, 0, 1, 1)
    assert queue.read_bytes() == before and [p.name for p in queue.parent.iterdir()] == ["retain-queue.jsonl"]
    assert SECRET not in json.dumps(report.to_dict())


def test_flush_queues_without_paths_finds_the_global_queue_folder(isolated_home: Path) -> None:
    queue = write_queue(isolated_home / ".hindsight" / "pi-queues" / "b.jsonl", [job("b", "d", "hello")])
    reports = flush_queues(dry_run=True)
    assert [(r.queue, r.would_send) for r in reports] == [(str(queue), 1)]


def test_the_package_exports_what_it_documents() -> None:
    for name in hindsight_batch.__all__:
        assert getattr(hindsight_batch, name) is not None, name
        assert name in (hindsight_batch.__doc__ or "") or name.startswith("__") or name in {
            "COMPILED_SOURCES", "build", "stale_compiled"}, f"{name} is not documented"
    with pytest.raises(AttributeError):
        hindsight_batch.no_such_name  # noqa: B018


def test_importing_the_package_is_cheap_and_an_import_needs_no_click(tmp_path: Path) -> None:
    """A program that imports hindsight_batch pays for nothing it does not call; a dry run through the library
    loads neither click nor httpx."""
    sessions = samples_copy(tmp_path)
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "import hindsight_batch\n"
        "from hindsight_batch import ImportOptions, flush_queues, run_import, load_settings, restore\n"
        "heavy = ['httpx', 'tqdm', 'duckdb', 'click', 'pydantic', 'hindsight_batch.importing.importer',"
        " 'hindsight_batch.plan.planning', 'hindsight_batch.session.reader', 'hindsight_batch.cli']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        f"result = run_import(ImportOptions(paths=[Path({str(sessions)!r})], state_dir=Path({str(tmp_path)!r}) /"
        " 'state', live_retained='include'))\n"
        "print(result.sessions, sorted(m for m in ('click', 'httpx') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                          cwd=tmp_path)
    assert done.stdout.splitlines() == ["[]", f"{SAMPLE_SESSIONS} []"], done.stdout + done.stderr


def test_status_shows_the_ledger_totals_and_every_projects_queue(runner: CliRunner, tmp_path: Path,
                                                                 isolated_home: Path) -> None:
    """status finds a project's queue through the cwd of a session under the default session root, counts its jobs
    and dead letters, and reads the ledger's totals (without creating a ledger that is not there)."""
    project = tmp_path / "proj"
    queue = write_queue(project_queue(tmp_path), [job("b", "d1", "one"), job("b", "d2", "two")])
    queue.with_name("retain-queue.dead.jsonl").write_text(json.dumps(job("b", "d3", "dead")) + "\n\n")
    sessions = isolated_home / ".pi" / "agent" / "sessions" / "--proj--"
    sessions.mkdir(parents=True)
    header = {"type": "session", "id": "s-status", "version": 3, "timestamp": "2026-05-01T10:00:00.000Z",
              "cwd": str(project)}
    (sessions / "s.jsonl").write_text(json.dumps(header) + "\n")
    state = tmp_path / "state-folder"
    before = json.loads(invoke(runner, "status", "--json", "--state", str(state)).output)
    assert before["ledger"] == {"path": str(state / "ledger.duckdb"), "exists": False} and not state.exists()
    assert before["queues"] == [{"queue": str(queue), "jobs": 2, "dead": 1}]
    run_import(ImportOptions(paths=[SAMPLES], state_dir=state, live_retained="include"))
    after = json.loads(invoke(runner, "status", "--json", "--state", str(state)).output)
    ledger = after["ledger"]
    assert (ledger["exists"], ledger["runs"], ledger["sources"]) == (True, 1, SAMPLE_FILES - 1)
    text = invoke(runner, "status", "--state", str(state)).output
    assert f"queue: {queue}: 2 job(s), 1 dead-lettered" in text and '"runs": 1' in text


def test_the_readme_library_example_runs_as_written(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's "Using it as a library" example, taken from the README itself, run in a folder holding a copy
    of samples/: it plans the sessions and writes plan.jsonl (a dry run; nothing else is set up)."""
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Using it as a library"):]
    start = section.index("```python\n") + len("```python\n")
    code = section[start:section.index("```", start)]
    shutil.copytree(SAMPLES, tmp_path / "samples")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})  # the README's own example
    sessions, chunks = (int(n) for n in capsys.readouterr().out.split())
    rows = read_manifest(tmp_path / "plan.jsonl")
    assert (sessions, chunks) == (SAMPLE_SESSIONS, len(rows)) and chunks > 0
