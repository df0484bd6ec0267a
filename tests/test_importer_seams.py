"""The importer through its seams (hindsight_batch/interfaces.py): a test double of each protocol drives a real
import of sample sessions, and each double is checked for what reached it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from hindsight_batch.config import ConfigResolver
from hindsight_batch.importing.importer import Importer, PipelineOptions
from hindsight_batch.importing.selection import Plan, Reuse, Skip
from hindsight_batch.interfaces import DocumentSink, ManifestSink, RoutingStrategy, SessionSource
from hindsight_batch.ledger import DocumentRow
from hindsight_batch.ledger.state import open_ledger
from hindsight_batch.routing import strategy as routing_strategy
from hindsight_batch.routing.models import MemoryRouteDecision, RouteTarget, RoutingStrategyInput
from hindsight_batch.sinks.upload import UploadStats
from tests.conftest import SessionBuilder


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

    def wait_for_operations(self, timeout: float) -> int:
        self.waited.append(timeout)
        return 0


# The doubles fit their protocols (mypy checks these assignments).
_source: type[SessionSource] = ChosenFiles
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


def _resolver(tmp_path: Path) -> ConfigResolver:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"routing": {"strategy": "test-double"},
                                  "banks": {"project": {"bankId": "demo-bank"}}}))
    return ConfigResolver(config_file=config)


def test_an_import_through_doubles_of_every_seam(tmp_path: Path, strategy: EverythingToTheProject) -> None:
    """The source's files, and only those, are planned; every chunk is routed by the configured strategy; the
    manifest gets each row and is closed complete; with --apply each routed item reaches the document sink."""
    paths = _sessions(tmp_path / "sessions")
    source = ChosenFiles([paths[0], paths[2]])
    files = source.find_session_files([tmp_path / "sessions"], resolve=True)
    manifest, documents = KeptManifest(), KeptDocuments()
    with open_ledger(tmp_path / "state") as ledger:
        summary = Importer(_resolver(tmp_path), ledger, PipelineOptions(apply=True, wait=True, wait_timeout=7.0),
                           files, lambda run_id: documents, manifest).run()

    assert source.asked == [([tmp_path / "sessions"], True)]
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
    assert summary.upload is not None and summary.upload["documents"] == {"sent": len(routed)}


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
