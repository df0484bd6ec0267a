"""``import --jobs auto`` (the default): one process for a small import, else a worker per usable CPU (at most
``AUTO_MAX_JOBS``), where "usable" takes a container's CPU quota into account."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindsight_batch.importing import parallelism
from hindsight_batch.importing.parallelism import AUTO_MAX_JOBS, AUTO_MIN_BYTES, auto_jobs, usable_cpus
from tests.conftest import invoke, read_manifest, small_sessions

AFFINITY = len(os.sched_getaffinity(0))
NUMBERS = st.integers(min_value=-(10**20), max_value=10**20).map(str)  # as the kernel writes them, and worse


def cgroup(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(("files", "quota"), [
    ({}, None),  # no cgroup files (not Linux, or not mounted)
    ({"cpu.max": "max 100000\n"}, None),  # cgroup v2, no quota
    ({"cpu.max": "50000 100000\n"}, 1),  # half a CPU: still one
    ({"cpu.max": "150000 100000\n"}, 2),
    ({"cpu.max": "garbage\n"}, None),  # unreadable: ignored, never a crash
    ({"cpu.max": "100000 0\n"}, None),  # a zero period: no quota, not a division by zero
    ({"cpu.max": "-5 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # cgroup v1, no quota
    ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
])
def test_usable_cpus_is_the_affinity_lowered_to_the_cgroup_quota(
    tmp_path: Path, files: dict[str, str], quota: int | None
) -> None:
    expected = AFFINITY if quota is None else min(AFFINITY, quota)
    assert usable_cpus(cgroup(tmp_path, files)) == expected


def test_auto_jobs_is_one_process_for_a_small_import_or_a_single_file() -> None:
    assert auto_jobs(AUTO_MIN_BYTES - 1, 500, cpus=8) == 1
    assert auto_jobs(10 * AUTO_MIN_BYTES, 1, cpus=8) == 1
    assert auto_jobs(AUTO_MIN_BYTES, 2, cpus=8) == 2  # no more workers than files
    assert auto_jobs(AUTO_MIN_BYTES, 500, cpus=3) == 3
    assert auto_jobs(AUTO_MIN_BYTES, 500, cpus=64) == AUTO_MAX_JOBS
    assert auto_jobs(AUTO_MIN_BYTES, 500, cpus=1) == 1


def test_the_default_plans_in_workers_once_the_sessions_are_large_enough_with_the_same_plan(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = small_sessions(tmp_path / "sessions", "auto", count=6)
    total = sum(p.stat().st_size for p in sessions.iterdir())
    monkeypatch.setattr(parallelism, "usable_cpus", lambda: 3)

    def run(name: str, *extra: str) -> dict[str, object]:
        result = invoke(runner, "import", str(sessions), "--manifest", str(tmp_path / name), "--state",
                        str(tmp_path / name.replace(".jsonl", "")), "--json", *extra)
        assert result.exit_code == 0, result.stderr
        return dict(json.loads(result.output))

    monkeypatch.setattr(parallelism, "AUTO_MIN_BYTES", total + 1)  # just too small
    assert run("small.jsonl")["jobs"] == 1
    monkeypatch.setattr(parallelism, "AUTO_MIN_BYTES", total)  # just large enough
    assert run("large.jsonl")["jobs"] == 3
    assert run("explicit.jsonl", "--jobs", "auto")["jobs"] == 3
    assert run("one.jsonl", "--jobs", "1")["jobs"] == 1

    def plan(name: str) -> list[dict[str, object]]:
        return [{k: v for k, v in row.items() if k != "run_id"} for row in read_manifest(tmp_path / name)]

    assert plan("large.jsonl") == plan("small.jsonl") == plan("one.jsonl") and len(plan("one.jsonl")) == 6


def test_the_human_summary_says_how_many_worker_processes_planned(
    runner: CliRunner, tmp_path: Path
) -> None:
    sessions = small_sessions(tmp_path / "sessions", "human", count=3)
    result = invoke(runner, "import", str(sessions), "--jobs", "2", "--state", str(tmp_path / "state"))
    assert result.exit_code == 0 and ", 2 worker processes" in result.stderr
    result = invoke(runner, "import", str(sessions), "--state", str(tmp_path / "state"))
    assert result.exit_code == 0 and "worker processes" not in result.stderr


@pytest.mark.parametrize("value", ["0", "65", "-1", "many", "2.5", ""])
def test_a_bad_jobs_value_is_a_usage_error_naming_the_option(runner: CliRunner, tmp_path: Path, value: str) -> None:
    result = invoke(runner, "import", str(tmp_path), "--jobs", value, "--state", str(tmp_path / "state"))
    assert result.exit_code == 2
    assert "Invalid value for '--jobs'" in result.stderr and "from 1 to 64" in result.stderr
    assert not (tmp_path / "state").exists()  # refused before any work


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cpu_max=st.one_of(st.none(), st.text(max_size=40), st.binary(max_size=40),
                         st.builds("{} {}\n".format, st.one_of(st.just("max"), NUMBERS), NUMBERS)),
       v1=st.one_of(st.none(), st.tuples(st.one_of(st.text(max_size=20), NUMBERS), NUMBERS)))
def test_any_cgroup_file_gives_a_cpu_count_and_never_an_error(
    tmp_path_factory: pytest.TempPathFactory, cpu_max: str | bytes | None, v1: tuple[str, str] | None
) -> None:
    """Whatever the cgroup files hold (garbage, binary, zero, negative, huge numbers), the count is one CPU or
    more, and never more than the affinity allows."""
    root = tmp_path_factory.mktemp("cgroup")
    if isinstance(cpu_max, bytes):
        (root / "cpu.max").write_bytes(cpu_max)
    elif cpu_max is not None:
        (root / "cpu.max").write_text(cpu_max, errors="surrogateescape")
    if v1 is not None:
        (root / "cpu").mkdir()
        (root / "cpu" / "cpu.cfs_quota_us").write_text(v1[0], errors="surrogateescape")
        (root / "cpu" / "cpu.cfs_period_us").write_text(v1[1], errors="surrogateescape")
    assert 1 <= usable_cpus(root) <= AFFINITY


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=12))
def test_any_jobs_value_is_a_count_auto_or_a_usage_error(value: str) -> None:
    """``--jobs`` takes 1 to 64 or ``auto`` and nothing else: anything else is exit 2 naming the option, never a
    traceback and never a run."""
    import click

    from hindsight_batch.cli.importing import _jobs

    command = click.Command("import")
    context = click.Context(command)
    parameter = click.Option(["--jobs"])
    try:
        jobs = _jobs(context, parameter, value)
    except click.BadParameter as exc:
        assert "from 1 to 64" in exc.format_message()
    else:
        assert jobs == "auto" or (isinstance(jobs, int) and 1 <= jobs <= 64)


def test_the_library_plans_in_this_process_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_import`` keeps one process by default, however large the import: a program that calls it gets no
    child processes it did not ask for; ``jobs="auto"`` asks."""
    from hindsight_batch.api import ImportOptions, run_import

    sessions = small_sessions(tmp_path / "sessions", "lib", count=4)
    monkeypatch.setattr(parallelism, "AUTO_MIN_BYTES", 0)
    monkeypatch.setattr(parallelism, "usable_cpus", lambda: 2)
    plain = run_import(ImportOptions(paths=(sessions,), state_dir=tmp_path / "a", live_retained="include"))
    auto = run_import(ImportOptions(paths=(sessions,), state_dir=tmp_path / "b", live_retained="include",
                                    jobs="auto"))
    assert (plain.summary.jobs, auto.summary.jobs) == (1, 2) and plain.chunks == auto.chunks == 4
