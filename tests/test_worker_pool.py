"""The worker pool seen from outside: a worker that dies while the next file is being handed out (the pool is
found broken at ``submit``, before any future says so) costs nothing but a fresh pool; every file is planned."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import small_sessions

# In a fresh process: the first pool refuses its third file as a pool whose worker just died does
# (BrokenProcessPool at submit); every later pool is a real one.
PROBE = """
import json, sys
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from hindsight_batch import workers
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
result = run_import(ImportOptions(paths=(Path(sys.argv[1]),), jobs=2, live_retained="include",
                                  state_dir=Path(sys.argv[2]), manifest=Path(sys.argv[3])))
print(json.dumps({"files": result.data["files"], "failed": result.data["failed_files_total"],
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
