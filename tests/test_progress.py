"""The progress bar as a user watches it: by bytes read (also with ``--jobs``), and on ``--apply`` the items sent
and confirmed. Each import runs in its own process with tqdm told to draw every update (``TQDM_MININTERVAL=0``,
``TQDM_MINITERS=1``), so what the bar shows does not depend on how fast this machine is."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import SessionBuilder, small_sessions
from tests.fake_hindsight import FakeState, fake_hindsight

SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}
BAR = re.compile(r"(\d+(?:\.\d+)?)([kMG]?)/(\d+(?:\.\d+)?)([kMG]?) \[")  # tqdm's "4.19M/28.1M ["


def _import_showing_progress(tmp_path: Path, kill: str = "", failed: int = 0, **options: object) -> str:
    """Run ``hindsight_batch.api.run_import`` with the bar on in a fresh process; return what it drew (stderr).
    ``kill``: the name of a session file whose worker process dies planning it."""
    probe = (
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "from hindsight_batch.importing import workers\n"
        "from hindsight_batch.api import ImportOptions, run_import\n"
        "plan = workers.plan_session\n"
        "def planned(path, *args, **kwargs):\n"
        "    if path.name == sys.argv[3]:\n"
        "        os._exit(9)  # as a crash in C code or the kernel's OOM killer would end it\n"
        "    return plan(path, *args, **kwargs)\n"
        "workers.plan_session = planned\n"
        "asked = json.loads(sys.argv[1])\n"
        "if 'config_file' in asked:\n"
        "    asked['config_file'] = Path(asked['config_file'])\n"
        "options = ImportOptions(**{**asked, 'paths': (Path(sys.argv[2]),), 'progress': True})\n"
        "result = run_import(options)\n"
        "print(result.files, result.failed_files)\n"
    )
    env = {**os.environ, "TQDM_MININTERVAL": "0", "TQDM_MINITERS": "1"}
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(options), str(tmp_path / "sessions"),
                           kill],
                          capture_output=True, text=True, timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[1] == str(failed), done.stderr[-2000:]
    return done.stderr


def _positions(drawn: str) -> list[tuple[float, float, str]]:
    """Every state of the bar drawn: (bytes done, bytes in all, the text after the bar)."""
    states = []
    for frame in re.split(r"[\r\n]", drawn):
        found = BAR.search(frame)
        if found:
            done = float(found[1]) * SCALE[found[2]]
            total = float(found[3]) * SCALE[found[4]]
            states.append((done, total, frame[found.end():]))
    return states


def _large_sessions(tmp_path: Path, files: int, megabytes: int, line_bytes: int) -> list[int]:
    """``files`` sessions s0.jsonl... of ``megabytes`` tool results of ``line_bytes`` each; their sizes."""
    sizes = []
    for n in range(files):
        session = SessionBuilder(cwd="/work/big", session_id=f"big-{n}")
        for step in range(megabytes):
            session.user(f"step {step} of session {n}")
            session.tool_result("bash", "x" * line_bytes)
        sizes.append(session.write(tmp_path / "sessions" / f"s{n}.jsonl").stat().st_size)
    return sizes


def test_with_jobs_the_bar_moves_by_bytes_while_workers_read(tmp_path: Path) -> None:
    """``--jobs 2``: the bar moves within a file while a worker reads it (every 4 MB), not only when a worker
    is done. A worker reports the first line past 4 MiB (5.2 MB) into a file of 9.4 MB; whatever the order in
    which the two workers' reports arrive, a position drawn from one is no sum of whole files."""
    sizes = _large_sessions(tmp_path, files=3, megabytes=9, line_bytes=1_040_000)
    states = _positions(_import_showing_progress(tmp_path, jobs=2, live_retained="include"))
    assert states, "no progress bar was drawn"
    done = [state[0] for state in states]
    assert done == sorted(done), done  # never backwards
    total = sum(sizes)
    assert abs(states[-1][0] - total) <= total * 0.006 and abs(states[-1][1] - total) <= total * 0.006, states[-1]
    whole_files = {sum(chosen) for r in range(len(sizes) + 1) for chosen in itertools.combinations(sizes, r)}
    within = [value for value in done if all(abs(value - whole) > 0.2e6 for whole in whole_files)]
    assert within, f"the bar only moved when a whole file was done: {sorted(set(done))}"


def test_a_worker_that_dies_with_the_bar_on_fails_its_file_only_and_the_bar_still_ends_full(tmp_path: Path) -> None:
    """The pipe the workers report on outlives a worker that dies (no lock left held): the run goes on in a
    fresh pool, the dead worker's file fails alone, and the bar still reaches every byte."""
    sizes = _large_sessions(tmp_path, files=4, megabytes=6, line_bytes=1_000_000)
    states = _positions(_import_showing_progress(tmp_path, kill="s1.jsonl", failed=1, jobs=2,
                                                 live_retained="include"))
    done = [state[0] for state in states]
    assert done == sorted(done) and abs(done[-1] - sum(sizes)) <= sum(sizes) * 0.006, done


def test_on_apply_the_bar_counts_items_sent_and_then_confirmed(tmp_path: Path) -> None:
    """``--apply --wait``: the bar says how many items were sent and how many the server confirmed; the first
    answer about each request is "processing", so the bar shows them sent and not yet confirmed before it shows
    every one confirmed."""
    small_sessions(tmp_path / "sessions", "up")
    config = tmp_path / "config.json"
    state = FakeState(processing_polls=1)
    with fake_hindsight(state) as url:
        config.write_text(json.dumps({"baseUrl": url, "banks": {"project": {"bankId": "up-bank"}}}))
        drawn = _import_showing_progress(tmp_path, apply=True, wait=True, config_file=str(config),
                                         live_retained="include")
    held = len(state.held("up-bank"))
    assert held >= 3
    shown = [re.search(r"items sent (\d+), confirmed (\d+)", text) for _, _, text in _positions(drawn)]
    counts = [(int(found[1]), int(found[2])) for found in shown if found]
    assert (held, 0) in counts, counts  # all sent, none confirmed yet (the server was still processing)
    assert counts[-1] == (held, held), counts  # then every one confirmed
    assert "failed" not in drawn
