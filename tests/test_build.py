"""The optional compiled build (setup.py, scripts/compile.sh): `--version` says which build runs, and the test
script's second pass really runs the compiled modules."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hindsight_batch import COMPILED_SOURCES, build, stale_compiled
from hindsight_batch.errors import ConfigError
from hindsight_batch.routing import signals
from hindsight_batch.session.model import EntryNode, LineProblem, SessionHeader
from tests.conftest import REPO, invoke


def test_version_names_the_build_that_is_running(runner: CliRunner) -> None:
    compiled = not signals.__file__.endswith(".py")  # a mypyc module is an extension module
    result = invoke(runner, "--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"hindsight-batch, version 0.1.0 ({'mypyc' if compiled else 'pure'} build)"


@pytest.mark.skipif("HINDSIGHT_BATCH_EXPECT_BUILD" not in os.environ, reason="set by scripts/test.sh")
def test_the_suite_runs_the_build_the_test_script_asked_for() -> None:
    assert build() == os.environ["HINDSIGHT_BATCH_EXPECT_BUILD"]


def test_what_import_jobs_sends_between_processes_survives_pickling() -> None:
    """A compiled frozen class refuses pickle's field-by-field restore; the session types pickle through their
    constructors instead, in both builds (``import --jobs`` returns them from its workers)."""
    header = SessionHeader(id="s1", version=3, timestamp=None, cwd="/w", parent_session="p_1.jsonl")
    node = EntryNode(seq=0, lineno=2, id="e1", parent_id=None, type="message", timestamp="t", payload={"k": 1})
    problem = LineProblem(lineno=7, reason="invalid JSON")
    for value in (header, node, problem):
        assert pickle.loads(pickle.dumps(value)) == value
    # A configuration error a worker meets comes back whole: its type, source and key.
    error = pickle.loads(pickle.dumps(ConfigError("/w/.pi/hindsight.json", "strip", "not a list")))
    assert (type(error), error.source, error.key, str(error)) == (
        ConfigError, "/w/.pi/hindsight.json", "strip", "/w/.pi/hindsight.json: strip: not a list")


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "summary"])
def test_a_dry_run_with_nothing_to_read_loads_neither_the_pipeline_nor_httpx(tmp_path: Path, quiet: bool) -> None:
    """Fixed costs: an import of an empty folder (a cron run with nothing new) and a dry run that does not ask
    the server load neither the reading, routing and planning modules nor the HTTP client, the progress bar or
    the duckdb package's Python layer (the ledger needs only its engine, ``_duckdb``), also when the summary is
    printed."""
    quiet_flag = ", '-q'" if quiet else ""
    probe = (
        "import sys\n"
        "from hindsight_batch.cli import cli\n"
        f"cli.main(['import', {str(tmp_path / 'empty')!r}, '--state', {str(tmp_path / 'state')!r},"
        f" '--live-retained', 'include'{quiet_flag}], standalone_mode=False)\n"
        "heavy = ['httpx', 'tqdm', 'hindsight_batch.plan.planning', 'hindsight_batch.redaction.redactor',"
        " 'hindsight_batch.session.reader', 'hindsight_batch.session.model', 'hindsight_batch.routing',"
        " 'hindsight_batch.plan.items', 'duckdb']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    (tmp_path / "empty").mkdir()
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    assert quiet or "files 0: sessions 0" in done.stderr


def test_a_re_run_over_unchanged_sessions_loads_neither_the_planner_nor_the_workers(tmp_path: Path) -> None:
    """A catch-up re-run (every session unchanged since the last run) reuses the ledger's rows: with worker
    processes asked for, none is started and neither the planner, the routing strategies, the redactor nor the
    HTTP client is loaded (the rows are the same as the first run's)."""
    sessions = tmp_path / "sessions"
    shutil.copytree(REPO / "samples", sessions)
    args = [str(sessions), "--state", str(tmp_path / "state"), "--live-retained", "include", "--jobs", "2"]
    probe = (
        "import sys, json\n"
        "from hindsight_batch.cli import cli\n"
        "try:\n"
        f"    cli.main(['import', *{args!r}, '-q'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ['httpx', 'tqdm', 'hindsight_batch.plan.planning', 'hindsight_batch.importing.workers',"
        " 'concurrent.futures.process', 'hindsight_batch.redaction.redactor', 'hindsight_batch.routing.strategy']\n"
        "print(json.dumps(sorted(m for m in heavy if m in sys.modules)))\n"
    )
    first = invoke(CliRunner(), "import", *args, "--json")
    assert first.exit_code == 0 and json.loads(first.output)["unchanged_files"] == 0
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [], done.stdout + done.stderr
    again = invoke(CliRunner(), "import", *args, "--json")
    data = json.loads(again.output)
    assert data["unchanged_files"] == data["sessions"] > 0 and data["chunks"] == json.loads(first.output)["chunks"]
    assert data["jobs"] == 1  # the summary claims no worker process


def test_sources_edited_after_an_in_place_build_are_named(tmp_path: Path) -> None:
    """scripts/compile.sh records each compiled source's hash; an edit since (shadowed by its .so) is named, so
    the CLI can warn instead of silently running the old code."""
    package = tmp_path / "pkg"
    (package / "session").mkdir(parents=True)
    (package / "chunking.py").write_text("A = 1\n")
    (package / "session" / "reader.py").write_text("B = 1\n")
    record = {name: hashlib.sha256((package / name).read_bytes()).hexdigest()
              for name in ("chunking.py", "session/reader.py")}
    (package / COMPILED_SOURCES).write_text(json.dumps(record))
    assert stale_compiled(package) == []
    (package / "session" / "reader.py").write_text("B = 2\n")
    assert stale_compiled(package) == ["session/reader.py"]
    assert stale_compiled(tmp_path) == []  # no record: a pure build, or one compiled elsewhere


@pytest.mark.parametrize(("given", "expected"), [(None, "__all__"), ("", ""), ("logfire", "logfire")])
def test_the_command_skips_pydantic_plugin_discovery_unless_the_user_chose(given: str | None,
                                                                          expected: str) -> None:
    """Fixed costs: the command sets pydantic's documented PYDANTIC_DISABLE_PLUGINS (no scan of every installed
    distribution's metadata at each start), but a value the user set is kept."""
    probe = (
        "import os, sys\n"
        "from hindsight_batch.cli import main\n"
        "sys.argv = ['hindsight-batch', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(repr(os.environ.get('PYDANTIC_DISABLE_PLUGINS')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if given is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = given
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                          env=env)
    assert done.stdout.splitlines()[-1] == repr(expected), done.stdout + done.stderr


# Run as the console script does (hindsight_batch.__main__.main), with the import command's library call replaced
# by one that reports how the cyclic garbage collector stands while the command runs.
_GC_PROBE = """
import gc, sys
import hindsight_batch.api as api
from hindsight_batch.errors import UsageError
def probe(*args, **kwargs):
    print("during", gc.isenabled(), gc.get_freeze_count() > 0, "hindsight_batch.importing.importer" in sys.modules)
    raise UsageError("stop here")
api.run_import = api.ledger_report = probe
from hindsight_batch.__main__ import main
sys.argv = ["hindsight-batch", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    print("exit", exc.code)
print("after", gc.isenabled())
"""


@pytest.mark.parametrize("args", [["import", "nowhere", "-q"], ["report"], ["--help"], ["import", "--no-such-flag"]])
def test_the_console_script_collects_garbage_while_a_command_runs(args: list[str]) -> None:
    """Start-up runs with the garbage collector off (it makes only long-lived objects); the command itself, and
    every way out (help, a usage error), has it on again, with start-up's objects frozen."""
    done = subprocess.run([sys.executable, "-c", _GC_PROBE, *args], capture_output=True, text=True, timeout=120,
                          check=True)
    lines = done.stdout.splitlines()
    assert lines[-1] == "after True", done.stdout + done.stderr
    if args == ["import", "nowhere", "-q"]:
        assert lines[0] == "during True True True"  # on, start-up frozen, the pipeline loaded before the freeze
        assert lines[1] == "exit 2"
    if args == ["report"]:
        assert lines[0] == "during True True False"


def test_every_command_ends_start_up(runner: CliRunner) -> None:
    """Each command is wrapped by handle_errors, whose first act turns the collector back on: a command without
    it would run a whole import with the collector off."""
    from hindsight_batch.cli import cli, handle_errors

    wrapper_code = handle_errors(lambda: None).__code__
    commands = {name: command for name, command in cli.commands.items()}
    assert len(commands) >= 9
    for name, command in commands.items():
        assert command.callback is not None and command.callback.__code__ is wrapper_code, name


def test_start_up_is_left_alone_outside_the_console_script(runner: CliRunner) -> None:
    """In a program or a test (CliRunner), the collector is the caller's: nothing is frozen."""
    import gc

    before = gc.get_freeze_count()
    assert invoke(runner, "status", "--help").exit_code == 0
    assert gc.isenabled() and gc.get_freeze_count() == before
