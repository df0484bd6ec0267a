"""The importer through its seams (hindsight_batch/interfaces.py): a test double of each protocol drives a real
import of sample sessions, and each double is checked for what reached it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from hindsight_batch import ImportOptions, run_import
from hindsight_batch.config import ConfigResolver
from hindsight_batch.importing.importer import Importer, PipelineOptions
from hindsight_batch.importing.selection import Plan, Reuse, Skip
from hindsight_batch.interfaces import DocumentSink, ManifestSink, RoutingStrategy, RunLedger, SessionSource
from hindsight_batch.ledger import DocumentRow, Ledger, ReviewedSource, SourceState
from hindsight_batch.ledger.state import open_ledger
from hindsight_batch.plan.rows import ManifestRowJson, SourceRecord
from hindsight_batch.routing import strategy as routing_strategy
from hindsight_batch.routing.models import MemoryRouteDecision, RouteTarget, RoutingStrategyInput
from hindsight_batch.sinks.upload import UploadStats
from tests.conftest import SessionBuilder, read_manifest


class ChosenFiles:
    """A :class:`SessionSource` that finds the files it was given, whatever else the folder holds."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.asked: list[tuple[list[Path], bool]] = []

    def find_session_files(self, paths: Iterable[Path], env: Mapping[str, str] | None = None, *,
                           resolve: bool = False) -> list[Path]:
        self.asked.append((list(paths), resolve))
        return list(self.files)


class EverythingToTheProject:
    """A :class:`RoutingStrategy` that sends every chunk to the project bank, and keeps what it was asked."""

    name = "test-double"

    def __init__(self) -> None:
        self.asked: list[RoutingStrategyInput] = []

    def route(self, data: RoutingStrategyInput) -> MemoryRouteDecision:
        self.asked.append(data)
        bank = data.project_bank_id or ""
        return MemoryRouteDecision(
            route="project", confidence=1.0, signals=[], matched_signals=[], reason="the double's choice",
            mode=data.config.user_retain.mode, writes=["project"],
            targets=[RouteTarget(bank_role="project", bank_id=bank, tags=list(data.base_tags), will_write=True)],
            safety_notes=[], project_mission=data.missions.project, global_mission=data.missions.user,
            strategy=self.name)


class KeptManifest:
    """A :class:`ManifestSink` that keeps the rows it is given and how it was closed."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.closed: list[bool] = []

    def write_lines(self, lines: Sequence[bytes]) -> None:
        self.lines += lines

    def close(self, complete: bool = True) -> None:
        self.closed.append(complete)

    def rows(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


class KeptDocuments:
    """A :class:`DocumentSink` that keeps the items it is given instead of sending them."""

    def __init__(self) -> None:
        self.changed: Callable[[], None] | None = None
        self.added: list[tuple[DocumentRow, dict[str, object], int]] = []
        self.finished = 0
        self.told = 0  # times ``changed`` was called
        self.waited: list[float] = []
        self._stats = UploadStats()

    @property
    def stats(self) -> UploadStats:
        return self._stats

    def add(self, row: DocumentRow, payload: dict[str, object], size: int) -> None:
        self.added.append((row, payload, size))
        self._stats.statuses["sent"] += 1

    def finish(self) -> None:
        self.finished += 1
        if self.changed is not None:  # as the real sink does when the last requests are answered
            self.changed()
            self.told += 1

    def wait_for_operations(self, timeout: float) -> int:
        self.waited.append(timeout)
        return 0


class RecordingLedger:
    """A :class:`RunLedger` over a real ledger that records each call made to it (name, first argument)."""

    def __init__(self, ledger: Ledger) -> None:
        self.real = ledger
        self.path = ledger.path
        self.calls: list[tuple[str, object]] = []

    def _call(self, name: str, first: object = None) -> None:
        self.calls.append((name, first))

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    def add_manifest_records(self, lines: Sequence[bytes]) -> None:
        self._call("add_manifest_records", len(lines))
        self.real.add_manifest_records(lines)

    def record_sources(self, rows: Sequence[SourceRecord]) -> None:
        self._call("record_sources", [row.path for row in rows])
        self.real.record_sources(rows)

    def record_run_sources(self, run_id: str, rows: Sequence[ReviewedSource]) -> None:
        self._call("record_run_sources", [row.path for row in rows])
        self.real.record_run_sources(run_id, rows)

    def record_headers(self, rows: Sequence[tuple[str, str]]) -> None:
        self._call("record_headers", len(rows))
        self.real.record_headers(rows)

    def fingerprint_key(self) -> bytes:
        self._call("fingerprint_key")
        return self.real.fingerprint_key()

    def start_run(self, run_id: str, command: str, mode: str) -> None:
        self._call("start_run", run_id)
        self.real.start_run(run_id, command, mode)

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any]) -> None:
        self._call("finish_run", status)
        self.real.finish_run(run_id, status, summary)

    def record_failed_files(self, run_id: str, failed: Sequence[Mapping[str, Any]]) -> None:
        self._call("record_failed_files", [f["file"] for f in failed])
        self.real.record_failed_files(run_id, failed)

    def sources(self) -> dict[str, SourceState]:
        self._call("sources")
        return self.real.sources()

    def source_sessions(self) -> dict[str, str]:
        self._call("source_sessions")
        return self.real.source_sessions()

    def document_hashes(self) -> dict[tuple[str, str], tuple[str, str]]:
        self._call("document_hashes")
        return self.real.document_hashes()

    def expect_reuse(self, paths: Sequence[str]) -> None:
        self._call("expect_reuse", list(paths))
        self.real.expect_reuse(paths)

    def latest_rows(self, source_file: str, run_id: str) -> list[ManifestRowJson]:
        self._call("latest_rows", source_file)
        return self.real.latest_rows(source_file, run_id)


# The doubles fit their protocols (mypy checks these assignments).
_source: type[SessionSource] = ChosenFiles
_ledger: type[RunLedger] = RecordingLedger
_strategy: type[RoutingStrategy] = EverythingToTheProject
_manifest: type[ManifestSink] = KeptManifest
_documents: type[DocumentSink] = KeptDocuments


@pytest.fixture
def strategy(monkeypatch: pytest.MonkeyPatch) -> EverythingToTheProject:
    double = EverythingToTheProject()
    monkeypatch.setitem(routing_strategy.STRATEGIES, double.name, lambda: double)
    return double


def _sessions(folder: Path) -> list[Path]:
    paths = []
    for n in range(3):
        session = SessionBuilder(cwd="/work/demo", session_id=f"seam-{n}")
        session.user(f"session {n}: we moved the build of this project to ninja")
        session.assistant(f"done; the build of session {n} runs ninja now")
        paths.append(session.write(folder / f"s{n}.jsonl"))
    return paths


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"routing": {"strategy": "test-double"},
                                  "banks": {"project": {"bankId": "demo-bank"}}}))
    return config


def _resolver(tmp_path: Path) -> ConfigResolver:
    return ConfigResolver(config_file=_config(tmp_path))


def test_an_import_through_doubles_of_every_seam(tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """The source's files, and only those, are planned; every chunk is routed by the configured strategy; the
    manifest gets each row and is closed complete; with --apply each routed item reaches the document sink."""
    paths = _sessions(tmp_path / "sessions")
    files = [paths[0], paths[2]]
    manifest, documents = KeptManifest(), KeptDocuments()
    with open_ledger(tmp_path / "state") as ledger:
        summary = Importer(_resolver(tmp_path), ledger, PipelineOptions(apply=True, wait=True, wait_timeout=7.0),
                           files, lambda run_id: documents, manifest).run()

    assert summary.files == summary.sessions == 2 and not summary.failed_files
    rows = manifest.rows()
    assert {row["session_id"] for row in rows} == {"seam-0", "seam-2"}
    assert manifest.closed == [True]
    routed = [row for row in rows if row["status"] == "planned"]
    assert routed and all(row["bank_id"] == "demo-bank" for row in routed)
    assert {(row["decision"]["strategy"], row["decision"]["reason"]) for row in routed} == {
        ("test-double", "the double's choice")}
    assert len(strategy.asked) == len(routed)
    assert any("session 2: we moved the build" in asked.content for asked in strategy.asked)
    assert all(asked.project_bank_id == "demo-bank" for asked in strategy.asked)
    assert [(row.bank_id, row.document_id) for row, _, _ in documents.added] == [
        ("demo-bank", row["document_id"]) for row in routed]
    assert {row.session_id for row, _, _ in documents.added} == {"seam-0", "seam-2"}
    assert documents.finished == 1 and documents.waited == [7.0]
    assert documents.changed is None  # no progress bar: nobody is told
    assert summary.upload is not None and summary.upload["documents"] == {"sent": len(routed)}


def test_with_progress_the_document_sink_tells_the_bar(tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """With the progress bar, the document sink is given a ``changed`` callback, which it calls as its last
    requests are answered: the bar shows the items sent."""
    documents = KeptDocuments()
    with open_ledger(tmp_path / "state") as ledger:
        summary = Importer(_resolver(tmp_path), ledger, PipelineOptions(apply=True, progress=True),
                           _sessions(tmp_path / "sessions"), lambda run_id: documents, KeptManifest()).run()

    assert summary.sessions == 3 and documents.added
    assert documents.changed is not None and documents.told == 1  # the bar was told (and shown: no error)


def test_run_import_plans_the_files_its_session_source_finds(tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """``run_import`` asks its :class:`SessionSource` for the files of the paths it was given, and imports those
    (the folder holds a third session the source leaves out)."""
    paths = _sessions(tmp_path / "sessions")
    source = ChosenFiles([paths[0], paths[2]])
    result = run_import(ImportOptions(paths=[tmp_path / "sessions"], state_dir=tmp_path / "state",
                                      manifest=tmp_path / "m.jsonl", config_file=_config(tmp_path),
                                      live_retained="include"),
                        sessions=source)

    assert source.asked == [([tmp_path / "sessions"], True)]
    assert (result.files, result.sessions, result.failed_files) == (2, 2, 0)
    assert {row["session_id"] for row in read_manifest(tmp_path / "m.jsonl")} == {"seam-0", "seam-2"}
    assert strategy.asked  # the configured strategy routed them


def test_the_ledger_seam_gets_the_runs_record_the_rows_and_the_sources(
        tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """Through a :class:`RunLedger` double: a first run starts, writes each session's rows before its source and
    finishes ``ok``; a re-run over the unchanged sources reads them back (one pass, then each source's rows) and
    records what the dry run saw of each, for --from-run."""
    files = _sessions(tmp_path / "sessions")
    names = [str(path) for path in files]
    with open_ledger(tmp_path / "state") as real:
        first = RecordingLedger(real)
        summary = Importer(_resolver(tmp_path), first, PipelineOptions(), files, manifest=KeptManifest()).run()
        again = RecordingLedger(real)
        rerun = Importer(_resolver(tmp_path), again, PipelineOptions(), files, manifest=KeptManifest()).run()
        recorded = real.sources()

    written = first.names()
    assert ("start_run", summary.run_id) in first.calls and first.calls[-1] == ("finish_run", "ok")
    assert written.index("start_run") < written.index("add_manifest_records") < written.index("record_sources")
    assert ("add_manifest_records", 3) in first.calls and "latest_rows" not in written  # one row per session
    assert [paths for name, paths in first.calls if name == "record_sources"] == [names]
    assert ("record_run_sources", names) in first.calls
    assert sorted(recorded) == names and summary.sessions == 3
    assert rerun.unchanged_files == 3 and ("expect_reuse", names) in again.calls
    assert [path for name, path in again.calls if name == "latest_rows"] == names
    assert ("record_run_sources", names) in again.calls and again.calls[-1] == ("finish_run", "ok")


def test_a_re_run_reuses_the_rows_without_routing_again(tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """A dry run over unchanged sources gives the manifest sink the first run's rows (this run's id) and asks the
    strategy nothing: the rows come from the ledger."""
    files = _sessions(tmp_path / "sessions")
    first, again = KeptManifest(), KeptManifest()
    with open_ledger(tmp_path / "state") as ledger:
        Importer(_resolver(tmp_path), ledger, PipelineOptions(), files, manifest=first).run()
    asked = len(strategy.asked)
    with open_ledger(tmp_path / "state") as ledger:
        summary = Importer(_resolver(tmp_path), ledger, PipelineOptions(), files, manifest=again).run()

    assert asked > 0 and len(strategy.asked) == asked
    assert summary.unchanged_files == 3 and again.closed == [True]
    assert [{**row, "run_id": None} for row in again.rows()] == [{**row, "run_id": None} for row in first.rows()]
    assert {row["run_id"] for row in again.rows()} == {summary.run_id}


def test_file_selection_says_what_is_done_with_each_file(tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """Each file's verdict is typed: a new session is a Plan, a second file of the same session a Skip
    (duplicate), a file that is no session a Skip (not-a-session), and after a run an unchanged source a Reuse
    of the rows the manifest had."""
    paths = _sessions(tmp_path / "sessions")
    copy = tmp_path / "sessions" / "t0.jsonl"  # sorts after s0.jsonl: s0 imports the session
    copy.write_bytes(paths[0].read_bytes())
    other = tmp_path / "sessions" / "notes.jsonl"
    other.write_text('{"type":"note"}\n')
    files = [*paths, copy, other]
    with open_ledger(tmp_path / "state") as ledger:
        selection = Importer(_resolver(tmp_path), ledger, PipelineOptions(), files).selection
        verdicts = [selection.select(path) for path in files]
        first = KeptManifest()
        Importer(_resolver(tmp_path), ledger, PipelineOptions(), paths, manifest=first).run()
        again = Importer(_resolver(tmp_path), ledger, PipelineOptions(), paths)
        again.selection.known.update(ledger.sources())
        reused = again.selection.select(paths[1])

    assert [type(v) for v in verdicts[:3]] == [Plan, Plan, Plan]
    assert all(isinstance(v, Plan) and v.job.path == p and v.job.header.id == f"seam-{n}"
               for n, (v, p) in enumerate(zip(verdicts[:3], paths, strict=True)))
    assert verdicts[3:] == [Skip("duplicate"), Skip("not-a-session")]
    assert isinstance(reused, Reuse) and reused.name == str(paths[1])
    assert [json.loads(line)["session_id"] for line in reused.manifest_lines] == ["seam-1"]
    assert [json.loads(line)["document_id"] for line in reused.manifest_lines] == [
        row["document_id"] for row in first.rows() if row["session_id"] == "seam-1"]


class FailingOn(KeptManifest):
    """A :class:`ManifestSink` that fails (not a HindsightBatchError) on the rows of one session."""

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id

    def write_lines(self, lines: Sequence[bytes]) -> None:
        if any(json.loads(line)["session_id"] == self.session_id for line in lines):
            raise OSError(28, "No space left on device")
        super().write_lines(lines)


def test_a_manifest_sink_failing_on_a_reused_source_fails_that_file_only(
        tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """A reused source's rows are sunk inside the file's failure guard: the sink's error is that file's failure,
    and the other files' rows still reach the manifest."""
    files = _sessions(tmp_path / "sessions")
    with open_ledger(tmp_path / "state") as ledger:
        Importer(_resolver(tmp_path), ledger, PipelineOptions(), files, manifest=KeptManifest()).run()
    failing = FailingOn("seam-1")
    with open_ledger(tmp_path / "state") as ledger:
        summary = Importer(_resolver(tmp_path), ledger, PipelineOptions(), files, manifest=failing).run()

    assert [failed["file"] for failed in summary.failed_files] == [str(files[1])]
    assert {row["session_id"] for row in failing.rows()} == {"seam-0", "seam-2"}
    assert failing.closed == [True]
