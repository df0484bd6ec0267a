"""The worker pool seen from outside: a worker that dies while the next file is being handed out (the pool is
found broken at ``submit``, before any future says so) costs nothing but a fresh pool; every file is planned.
Small files are handed out in batches, in file order, and the plan is the one a single process makes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.importing import importer, workers
from tests.conftest import SessionBuilder, invoke, read_manifest, small_sessions

# In a fresh process, files handed out two at a time: the first pool refuses its third batch as a pool whose
# worker just died does (BrokenProcessPool at submit); every later pool is a real one.
PROBE = """
import json, sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from hindsight_batch.importing import workers
from hindsight_batch.api import ImportOptions, run_import

real_pool = workers.worker_pool
made = []

def worker_pool(*args, **kwargs):
    pool = real_pool(*args, **kwargs)
    made.append(pool)
    if len(made) == 1:
        submit, calls = pool.submit, []
        def broken_on_the_third(*a, **k):
            calls.append(1)
            if len(calls) == 3:
                raise BrokenProcessPool("a child process terminated abruptly")
            return submit(*a, **k)
        pool.submit = broken_on_the_third
    return pool

workers.worker_pool = worker_pool
workers.BATCH_FILES = 2
result = run_import(ImportOptions(paths=(Path(sys.argv[1]),), jobs=2, live_retained="include",
                                  state_dir=Path(sys.argv[2]), manifest=Path(sys.argv[3])))
print(json.dumps({"files": result.files, "failed": result.failed_files,
                  "chunks": result.chunks, "pools": len(made)}))
"""


def test_a_pool_found_broken_when_a_file_is_handed_out_is_replaced_and_every_file_is_planned(tmp_path: Path) -> None:
    small_sessions(tmp_path / "sessions", "pool", count=5)
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "sessions"), str(tmp_path / "state"),
                           str(tmp_path / "plan.jsonl")], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout.strip().splitlines()[-1])
    assert (data["files"], data["failed"]) == (5, 0) and data["pools"] >= 2
    rows = [json.loads(line) for line in (tmp_path / "plan.jsonl").read_text().splitlines()]
    assert {row["session_id"] for row in rows} == {f"pool-{n}" for n in range(5)} and len(rows) == data["chunks"]


def _hand_overs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Spy: the files of each batch the parent hands to a worker, by name, in the order they were handed out."""
    batches: list[list[str]] = []
    real_pool = workers.worker_pool

    def worker_pool(*args: Any, **kwargs: Any) -> Any:
        pool = real_pool(*args, **kwargs)
        submit = pool.submit

        def spied(fn: Any, tasks: Any = None, *rest: Any) -> Any:
            if fn is workers.plan_batch:
                batches.append([task.path.name for task, _ in tasks])
            return submit(fn, tasks, *rest)

        pool.submit = spied  # type: ignore[method-assign]
        return pool

    monkeypatch.setattr(workers, "worker_pool", worker_pool)
    return batches


def _corpus_with_one_large_file(folder: Path) -> list[str]:
    """40 small sessions and, 20th in file order, one of more than ``BATCH_BYTES``; their names in file order."""
    small_sessions(folder, "batch", count=40)
    large = SessionBuilder(cwd="/work/batch", session_id="batch-large")
    large.user("the whole build log follows")
    large.assistant("x " * (workers.BATCH_BYTES // 2 + 1000))
    large.write(folder / "s25x.jsonl")  # sorts after s25.jsonl, before s26.jsonl: 20th
    return sorted(p.name for p in folder.glob("*.jsonl"))


def test_small_files_go_to_the_workers_in_batches_in_file_order_and_a_large_one_alone(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = _corpus_with_one_large_file(tmp_path / "sessions")
    monkeypatch.setattr(workers, "BATCH_SECONDS", 3600.0)  # batches close by count and size only
    batches = _hand_overs(monkeypatch)
    one = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "1", "--manifest", str(tmp_path / "1.jsonl"),
                 "--state", str(tmp_path / "s1"), "--json")
    many = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "2", "--manifest", str(tmp_path / "2.jsonl"),
                  "--state", str(tmp_path / "s2"), "--json")
    assert one.exit_code == many.exit_code == 0, many.stderr
    # Handed out in file order: 16 at a time; the files before the large one go before it, the large one alone.
    large = names.index("s25x.jsonl")
    assert [n for batch in batches for n in batch] == names
    assert [len(b) for b in batches] == [16, large - 16, 1, 16, len(names) - large - 17]
    assert batches[2] == ["s25x.jsonl"]
    # And the plan is the same as one process makes.
    rows = [{k: v for k, v in r.items() if k != "run_id"} for r in read_manifest(tmp_path / "1.jsonl")]
    assert [{k: v for k, v in r.items() if k != "run_id"} for r in read_manifest(tmp_path / "2.jsonl")] == rows
    assert json.loads(many.output)["jobs"] == 2 and len({r["session_id"] for r in rows}) == 41


def test_a_batch_is_handed_out_once_its_first_file_has_waited_batch_seconds(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent that prepares files slowly (a slow disk, catch-up verdicts) never keeps idle workers waiting for
    a full batch: with ``BATCH_SECONDS`` 0 every file goes as soon as it is prepared."""
    names = _corpus_with_one_large_file(tmp_path / "sessions")
    monkeypatch.setattr(workers, "BATCH_SECONDS", 0.0)
    batches = _hand_overs(monkeypatch)
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "2", "--state", str(tmp_path / "s"))
    assert result.exit_code == 0, result.stderr
    assert batches == [[name] for name in names]


def test_the_parent_stops_handing_out_files_while_too_many_wait(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers slower than the parent (here: a sleep per file) never get the whole corpus queued: at most
    ``WORKER_BACKLOG_FILES`` files wait, however small they are."""
    small_sessions(tmp_path / "sessions", "backlog", count=24)
    monkeypatch.setattr(workers, "BATCH_FILES", 1)
    monkeypatch.setattr(workers, "WORKER_BACKLOG_FILES", 4)
    real_plan = workers.plan_session

    def slow_plan(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(workers, "plan_session", slow_plan)
    batches = _hand_overs(monkeypatch)
    handed_out_when_finished: list[int] = []
    real_finish = importer.Importer._finish

    def finish(self: Any, *args: Any, **kwargs: Any) -> Any:
        handed_out_when_finished.append(len(batches))
        return real_finish(self, *args, **kwargs)

    monkeypatch.setattr(importer.Importer, "_finish", finish)
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "2", "--state", str(tmp_path / "s"))
    assert result.exit_code == 0, result.stderr
    assert len(handed_out_when_finished) == len(batches) == 24
    # The k-th file is finished with at most WORKER_BACKLOG_FILES + 1 files handed out beyond it.
    assert all(out <= k + 5 for k, out in enumerate(handed_out_when_finished, start=1)), handed_out_when_finished


SPAWNED = """
import json, sys
from pathlib import Path
from hindsight_batch.importing import workers
from hindsight_batch.api import ImportOptions, run_import

real, sys.platform = sys.platform, "darwin"  # as on macOS: workers are spawned (a fresh interpreter each)
context = workers._context()
sys.platform = real
assert context.get_start_method() == "spawn"
workers._context = lambda: context
result = run_import(ImportOptions(paths=(Path(sys.argv[1]),), jobs=2, live_retained="include", progress=True,
                                  state_dir=Path(sys.argv[2]), manifest=Path(sys.argv[3]), include_content=True))
print(json.dumps({"jobs": result.summary.jobs, "failed": result.failed_files}))
"""


def test_spawned_workers_as_on_macos_plan_the_same_as_one_process(runner: CliRunner, tmp_path: Path) -> None:
    """Where fork is unsafe (macOS), workers are spawned: the tasks, the settings and the progress pipe reach a
    fresh interpreter, and the plan is the one a single process makes."""
    small_sessions(tmp_path / "sessions", "spawn", count=6)
    done = subprocess.run([sys.executable, "-c", SPAWNED, str(tmp_path / "sessions"), str(tmp_path / "state"),
                           str(tmp_path / "spawned.jsonl")], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"jobs": 2, "failed": 0}
    one = invoke(runner, "import", str(tmp_path / "sessions"), "--jobs", "1", "--include-content",
                 "--live-retained", "include", "--manifest",
                 str(tmp_path / "one.jsonl"), "--state", str(tmp_path / "state1"))
    assert one.exit_code == 0, one.stderr

    def plan(name: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in ("run_id", "fingerprints")}
                for r in read_manifest(tmp_path / name)]

    assert plan("spawned.jsonl") == plan("one.jsonl") and len(plan("one.jsonl")) == 6
