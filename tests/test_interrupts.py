"""Interrupts, as a user or a scheduler sends them, to a real ``hindsight-batch`` process.

SIGINT exits 130 and SIGTERM 143, with one line and no traceback; the ledger records the run as ``interrupted``;
the manifest is either complete or absent (rows go to a temporary file renamed at the end). A run killed with
SIGKILL cannot record anything: ``report`` shows it as interrupted once its lock is free.

The run is slowed down by a driver that wraps ``Importer._finish`` (interpreted in both builds) to sleep after
each file and drop a marker, so the signal arrives mid-run without any timing guess. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import REPO, SessionBuilder, invoke

pytestmark = pytest.mark.timeout(300)

DRIVER = r"""
import sys, time
from pathlib import Path
from hindsight_batch import cli
from hindsight_batch.importing import importer
from hindsight_batch.importing import workers

marker = Path(sys.argv[1])
planned = marker.with_name("planned")
original = importer.Importer._finish
original_plan = workers.plan_session

def slow_plan(path, *args, **kwargs):  # in worker processes (--jobs)
    with planned.open("a") as out:
        out.write(path.name + "\n")
    time.sleep(0.25)
    return original_plan(path, *args, **kwargs)

workers.plan_session = slow_plan
workers.BATCH_FILES = 1  # a file a task: the workers are stopped mid-queue, not mid-batch

def slow(self, job, *args, **kwargs):
    original(self, job, *args, **kwargs)
    self.options.manifest and marker.write_text(str(job.path))
    time.sleep(0.25)

importer.Importer._finish = slow
sys.argv = ["hindsight-batch", *sys.argv[2:]]
cli.main()
"""


def make_sessions(folder: Path, count: int) -> Path:
    for n in range(count):
        b = SessionBuilder(cwd="/work/demo", session_id=f"int-{n}")
        b.user(f"question {n}")
        b.assistant(f"answer {n}")
        b.write(folder / f"s{n:03d}.jsonl")
    return folder


def wait_for(condition: object, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _ctrl_c_acts() -> None:
    """In the child: SIGINT as a terminal's process has it. A shell ignores SIGINT in its background jobs (``cmd &``
    without job control) and Python then keeps it ignored, so a suite started that way would see no Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], Path, Path, Path]:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    folder = make_sessions(tmp_path / "sessions", 40)
    out, state, marker = tmp_path / "out", tmp_path / "state", tmp_path / "marker"
    out.mkdir()
    manifest = out / "m.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(marker), "import", str(folder), "--manifest", str(manifest), "--state",
         str(state), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        preexec_fn=_ctrl_c_acts,
    )
    wait_for(lambda: marker.exists() or proc.poll() is not None, "the first session to be finished")
    assert proc.poll() is None, proc.communicate()
    return proc, manifest, state, out


def latest_status(runner: CliRunner, state: Path) -> str:
    result = invoke(runner, "report", "--state", str(state), "--json")
    assert result.exit_code == 0, result.stderr
    return str(json.loads(result.output)["runs"][0]["status"])


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(c) for c in text.split()]
    return found


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has ended


@pytest.mark.parametrize(("sig", "code", "line"), [
    (signal.SIGINT, 130, "hindsight-batch: interrupted (SIGINT)"),
    (signal.SIGTERM, 143, "hindsight-batch: terminated (SIGTERM)"),
])
def test_an_interrupted_import_exits_with_its_code_records_the_run_and_leaves_no_partial_manifest(
    runner: CliRunner, tmp_path: Path, sig: signal.Signals, code: int, line: str
) -> None:
    proc, manifest, state, out = start(tmp_path)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == code, stderr
    assert stderr.strip().splitlines() == [line]
    assert not manifest.exists() and list(out.iterdir()) == []  # neither a partial manifest nor its temporary file
    assert latest_status(runner, state) == "interrupted"


def test_ctrl_c_with_jobs_ends_the_workers_and_prints_no_traceback(runner: CliRunner, tmp_path: Path) -> None:
    proc, manifest, state, out = start(tmp_path, "--jobs", "2")
    workers = children(proc.pid)
    assert workers, "the import runs worker processes"
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines() == ["hindsight-batch: interrupted (SIGINT)"]
    wait_for(lambda: all(gone(pid) for pid in workers), "the workers to end", 30)
    # The workers were stopped, not left to plan every queued session first.
    assert len((tmp_path / "planned").read_text().split()) < 20
    assert not manifest.exists() and list(out.iterdir()) == []
    assert latest_status(runner, state) == "interrupted"


def test_a_run_killed_outright_shows_as_interrupted_once_its_lock_is_free(
    runner: CliRunner, tmp_path: Path
) -> None:
    proc, manifest, state, out = start(tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    # Nothing could be cleaned up, but nothing looks complete: the rows are in a temporary file named as partial.
    assert not manifest.exists()
    assert [p.name.endswith(".partial") and p.name.startswith(".m.jsonl.") for p in out.iterdir()] == [True]
    assert latest_status(runner, state) == "interrupted"
    # A second run completes normally and renames its manifest into place.
    result = invoke(runner, "import", str(tmp_path / "sessions"), "--manifest", str(manifest), "--state", str(state))
    assert result.exit_code == 0 and manifest.exists() and latest_status(runner, state) == "ok"


FLUSH_DRIVER = r"""
import sys, time
from pathlib import Path
from hindsight_batch import cli
from hindsight_batch.sinks import hindsight

accepted = Path(sys.argv[1])

def retain(self, bank_id, items, operation_id):
    time.sleep(0.2)  # a slow server
    with accepted.open("a") as out:
        out.write("".join(item["content"] + "\n" for item in items))
    return hindsight.RetainAccepted(operation_id)

hindsight.HindsightClient.retain = retain
hindsight.HindsightClient.version = lambda self: "test"
hindsight.HindsightClient.operation = lambda self, bank, op: {"status": "completed"}
sys.argv = ["hindsight-batch", *sys.argv[2:]]
cli.main()
"""


def test_a_flush_stopped_by_sigterm_exits_143_releases_the_lock_and_loses_no_job(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".hindsight").mkdir(parents=True)
    (home / ".hindsight" / "config.json").write_text(json.dumps({"upload": {"batchItems": 1}}))
    queue = tmp_path / "queues" / "s1.auto.jsonl"
    queue.parent.mkdir()
    contents = [f"job {n}" for n in range(30)]
    queue.write_text("".join(json.dumps({"bankId": "b", "content": c, "document_id": f"d{n}",
                                         "update_mode": "replace"}) + "\n" for n, c in enumerate(contents)))
    driver, accepted = tmp_path / "flush_driver.py", tmp_path / "accepted"
    driver.write_text(FLUSH_DRIVER)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(home), "HINDSIGHT_BASE_URL": "http://127.0.0.1:9"}
    proc = subprocess.Popen([sys.executable, str(driver), str(accepted), "flush", str(queue.parent)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_for(lambda: (accepted.exists() and len(accepted.read_text().split("\n")) > 3) or proc.poll() is not None,
             "two jobs to be accepted")
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert stderr.strip().splitlines() == ["hindsight-batch: terminated (SIGTERM)"]
    assert sorted(p.name for p in queue.parent.iterdir()) == ["s1.auto.jsonl"]  # no lock, no temporary file
    sent = accepted.read_text().splitlines()
    left = [json.loads(line)["content"] for line in queue.read_text().splitlines()]
    assert 2 <= len(sent) < 30 and set(sent) | set(left) == set(contents)  # every job sent or still queued
    assert len(sent) + len(left) in (30, 31)  # at most the one in flight is in both (S5: never in neither)


@pytest.mark.parametrize("other_thread", [False, True], ids=["alone", "beside-another-thread"])
def test_a_signal_inside_signals_deferred_waits_for_the_end_of_the_block(other_thread: bool) -> None:
    """What keeps a SIGTERM from landing between making a temporary file and renaming it (queue rewrites, the
    manifest): the signal is delivered, but only once the block is over. Also while another thread runs (a
    progress bar's monitor): the kernel may hand a signal sent to the process to that thread instead."""
    from hindsight_batch.base.fsutil import signals_deferred

    seen: list[str] = []
    stop = threading.Event()
    waiter = threading.Thread(target=stop.wait, args=(30,), daemon=True)
    if other_thread:
        waiter.start()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append("handled"))
    try:
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # a handler would run here, between bytecodes, if the signal were not held
            seen.append("block over")
        assert seen == ["block over", "handled"]
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop.set()


QUERY_DRIVER = r"""
import os, signal, sys, threading
from hindsight_batch import cli
from hindsight_batch.importing import importer

sig = getattr(signal, sys.argv[1])
original = importer.Importer._finish

def finish_in_a_long_query(self, job, *args, **kwargs):
    original(self, job, *args, **kwargs)
    # The signal lands while DuckDB runs a query (as it did in ledger.mark_pending): DuckDB's client answers it
    # with RuntimeError("Query interrupted"), dropping the KeyboardInterrupt or Terminated the handler raised.
    threading.Timer(0.3, os.kill, (os.getpid(), sig)).start()
    self.ledger.db.execute("SELECT count(*) FROM range(100000000000)").fetchall()

importer.Importer._finish = finish_in_a_long_query
sys.argv = ["hindsight-batch", *sys.argv[2:]]
cli.main()
"""


@pytest.mark.parametrize(("sig", "code", "line"), [
    ("SIGINT", 130, "hindsight-batch: interrupted (SIGINT)"),
    ("SIGTERM", 143, "hindsight-batch: terminated (SIGTERM)"),
])
def test_a_signal_that_lands_inside_a_ledger_query_is_an_interrupt(
    runner: CliRunner, tmp_path: Path, sig: str, code: int, line: str
) -> None:
    """DuckDB turns the signal into RuntimeError("Query interrupted"): still exit 130/143, the run interrupted."""
    driver = tmp_path / "driver.py"
    driver.write_text(QUERY_DRIVER)
    folder = make_sessions(tmp_path / "sessions", 3)
    state, manifest = tmp_path / "state", tmp_path / "m.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, str(driver), sig, "import", str(folder), "--manifest", str(manifest),
                           "--state", str(state)], capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=_ctrl_c_acts)
    assert done.returncode == code, done.stderr
    assert done.stderr.strip().splitlines() == [line]
    assert not manifest.exists()
    assert latest_status(runner, state) == "interrupted"


# Sends the signal to itself when the commands start loading: the window before any command's own handlers.
_SIGNAL_WHILE_LOADING = """
import os, signal, sys
SENT = getattr(signal, sys.argv[1])
class SignalOnLoad:
    def find_spec(self, name, path=None, target=None):
        if name == "hindsight_batch.cli":
            os.kill(os.getpid(), SENT)
        return None
sys.meta_path.insert(0, SignalOnLoad())
sys.argv = ["hindsight-batch", "--json", "status"]
from hindsight_batch.__main__ import main
main()
"""


@pytest.mark.parametrize(("name", "code", "kind"), [("SIGINT", 130, "KeyboardInterrupt"),
                                                     ("SIGTERM", 143, "Terminated")])
def test_a_signal_while_the_commands_load_exits_with_its_code_and_no_traceback(
        name: str, code: int, kind: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_LOADING, name], capture_output=True, text=True,
                          timeout=60, cwd=REPO, env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.strip().startswith("hindsight-batch: "), done.stderr
    assert json.loads(done.stdout)["error"]["kind"] == kind
