#!/usr/bin/env python3
"""Record what the live Pi extensions really write (issue 36, item 7): tests/fixtures/extensions/<ext>/<scenario>/.

    .venv/bin/python scripts/record_extensions.py [--ext hpi|pi-probe ...] [--scenario NAME ...] [--out DIR]
                                                  [--server URL] [--keep]

Extensions: ``hpi`` (walodayeet/hindsight-pi from the machine's git mirror at a pinned commit) and ``pi-probe``
(scripts/pi_probe_extension.mjs, ours: what pi itself hands an extension, the pi side of pi-hindsight's facts,
since pi-hindsight is not served by the registry reachable here). Each scenario runs the extension's own code,
unchanged, inside pi (``--mode rpc``, the pinned pi of
tests/test_pi_conformance.py's ``install_pi``) under a private HOME, with a scripted model on 127.0.0.1
(scripts/scripted_model.py, a custom provider in ``~/.pi/agent/models.json``) and the real Hindsight server
(scripts/hindsight-server) behind a small proxy on 127.0.0.1 that logs what the extension sends and can be switched
off (the "server down at flush time" scenario). What is recorded, with temp paths normalised (PROVENANCE.md):
``sessions/`` (pi's session files), ``hindsight-home/`` (``~/.hindsight``: queues, config), ``project/`` (the
project's ``.hindsight``/``.pi`` files), ``server.json`` (the bank's documents as the server holds them),
``requests.jsonl`` (the extension's requests to the server), ``notices.json`` (what its commands told the user)
and, for the probe, ``probe.jsonl``. Each run appends itself to ``<out>/<ext>/provenance.json``.

Not part of the test suite: it needs npm and the network to the registry. The tests read the committed recordings.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from scripted_model import RETAIN_TRIGGER, TOOL_TRIGGER, ScriptedModel  # noqa: E402

from tests.test_pi_conformance import PI_VERSION, install_pi  # noqa: E402

HPI_MIRROR = Path("/work/.mirror/walodayeet+hindsight-pi/repo")
HPI_COMMIT = "538c7352717e3b8e2b901d81d14d70e09181527e"  # the mirror's HEAD, package.json version 0.4.0
# the commit before it (0.3.1): the last that persisted hindsight-recall-status entries with indicatorsInContext
HPI_OLD_COMMIT = "3c273360080d4d2ab187133bddf0555e419c176f"
# hpi's lock file pins @vectorize-io/hindsight-client 0.4.22; the registry reachable here serves 0.4.11 as the only
# 0.4.x (it drops update_mode and observation_scopes in retainBatch exactly as 0.4.22 does). PROVENANCE.md says so.
HPI_CLIENT = "@vectorize-io/hindsight-client@0.4.11"
WORK = Path(os.environ.get("HINDSIGHT_BATCH_RECORD_WORK") or Path(tempfile.gettempdir()) / "h36rec-work")
TIMEOUT = 120.0


def say(message: str) -> None:
    print(f"record: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the extension under test


def prepare_hpi(commit: str) -> Path:
    """hpi's tree at a pinned commit with its one runtime dependency installed beside it."""
    tree = WORK / f"hpi-{commit[:12]}"
    if (tree / "node_modules" / "@vectorize-io" / "hindsight-client").is_dir():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(HPI_MIRROR), "archive", commit], check=True,
                             capture_output=True, timeout=120).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True, timeout=120)
    deps = WORK / "deps-hpi"
    if not (deps / "node_modules" / "@vectorize-io" / "hindsight-client").is_dir():
        subprocess.run(["npm", "install", "--prefix", str(deps), "--no-audit", "--no-fund", "--loglevel=error",
                        HPI_CLIENT], check=True, timeout=600)
    (tree / "node_modules").symlink_to(deps / "node_modules")
    return tree


# ---------------------------------------------------------------- the server, behind a switchable logging proxy


class ServerProxy:
    """Forwards to the real server and logs each request; ``down()`` closes the port (connection refused)."""

    def __init__(self, upstream: str, profile_shim: bool = True) -> None:
        self.upstream = upstream.rstrip("/")
        self.profile_shim = profile_shim
        self.log: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None
        self.port = 0

    def up(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                return

            def _forward(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                shimmed = owner.profile_shim and self.command == "GET" and PROFILE.match(self.path)
                if shimmed:
                    status, payload = owner.old_profile(shimmed.group(1))
                else:
                    request = urllib.request.Request(owner.upstream + self.path, data=raw or None,
                                                     method=self.command, headers={"Content-Type": "application/json"})
                    try:
                        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                            status, payload = response.status, response.read()
                    except urllib.error.HTTPError as error:
                        status, payload = error.code, error.read()
                entry = {"method": self.command, "path": self.path, "body": body, "status": status}
                owner.log.append({**entry, "answered_by": "proxy (0.x profile shim)"} if shimmed else entry)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def old_profile(self, bank: str) -> tuple[int, bytes]:
        """GET /banks/{id}/profile as a 0.x server answered it: 1.1.0 gives 410 Gone, which hpi's ensureBank takes
        for a failure (it only creates the bank on "404|not found"), so hpi would never connect (recorded as the
        scenario ``server-1.1-profile-gone``)."""
        banks = api(self.upstream, "/v1/default/banks?limit=1000").get("banks") or []
        if not any(b.get("bank_id") == bank for b in banks):
            return 404, json.dumps({"detail": f"Bank '{bank}' not found"}).encode()
        return 200, json.dumps({"bank_id": bank, "name": bank, "background": "",
                                "disposition": {"skepticism": 3, "literalism": 3, "empathy": 3}}).encode()

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


PROFILE = re.compile(r"^/v1/default/banks/([^/?]+)/profile$")


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base.rstrip("/") + path, timeout=TIMEOUT) as response:
        return json.loads(response.read())


def delete_bank(base: str, bank: str) -> None:
    request = urllib.request.Request(f"{base.rstrip('/')}/v1/default/banks/{bank}", method="DELETE")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT):
            pass
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise


def server_documents(base: str, bank: str) -> dict[str, Any]:
    """Every document of the bank, with its detail (text, tags, metadata) and chunks, as the server holds it."""
    try:
        listing = api(base, f"/v1/default/banks/{bank}/documents?limit=500")
    except urllib.error.HTTPError as error:
        return {"bank": bank, "error": f"{error.code} {error.read().decode('utf-8', 'replace')}"}
    documents = []
    for item in sorted(listing.get("items") or [], key=lambda d: str(d.get("id"))):
        detail = api(base, f"/v1/default/banks/{bank}/documents/{urllib.parse.quote(str(item['id']), safe='')}")
        documents.append(detail)
    return {"bank": bank, "total": listing.get("total"), "documents": documents}


# ---------------------------------------------------------------- pi in RPC mode


class Pi:
    """One pi process in RPC mode; prompts wait for the agent to finish, commands for their response."""

    def __init__(self, pi_root: Path, extension: Path, home: Path, project: Path, probe_out: Path,
                 args: list[str], env_extra: dict[str, str]):
        cli = pi_root / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
        # nothing of this process's environment but PATH: no HINDSIGHT_* switch, no provider key
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "PI_OFFLINE": "1", "TZ": "UTC", "PI_PROBE_OUT": str(probe_out), **env_extra}
        self.proc = subprocess.Popen(
            ["node", str(cli), "--mode", "rpc", "--provider", "scripted", "--model", "scripted-1",
             "--offline", "-e", str(extension), *args],
            cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notices: list[dict[str, Any]] = []
        self.statuses: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self._serial = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") == "extension_ui_request":
                method = event.get("method")
                if method == "notify":
                    self.notices.append({"message": event.get("message"), "level": event.get("notifyType")})
                elif method == "setStatus":
                    self.statuses.put(str(event.get("statusText")))
                elif method in ("select", "confirm", "input", "editor"):
                    self._write({"type": "extension_ui_response", "id": event["id"], "cancelled": True})
                continue
            self.events.put(event)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def _write(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def _wait(self, done: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=1.0)
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"pi exited while waiting for {what}: {''.join(self.stderr)[-2000:]}") from None
                continue
            if event.get("type") == "response" and event.get("success") is False:
                raise RuntimeError(f"pi refused {what}: {event}")
            if done(event):
                return event
        raise RuntimeError(f"timed out waiting for {what}: {''.join(self.stderr)[-2000:]}")

    def send(self, command: dict[str, Any]) -> dict[str, Any]:
        self._serial += 1
        ident = f"rec-{self._serial}"
        self._write({**command, "id": ident})
        return self._wait(lambda e: e.get("type") == "response" and e.get("id") == ident, str(command))

    def wait_status(self, word: str) -> None:
        """The extension's status line reaching ``word`` (hpi connects in the background after session_start; a
        command sent before that finds it "not connected")."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                if word in self.statuses.get(timeout=1.0):
                    return
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
        raise RuntimeError(f"extension status never reached {word!r}: {''.join(self.stderr)[-2000:]}")

    def prompt(self, text: str) -> None:
        """A user turn: returns when the agent has ended (the session file has the turn)."""
        self.send({"type": "prompt", "message": text})
        self._wait(lambda e: e.get("type") == "agent_end", f"agent_end after {text!r}")
        self._settle()

    def command(self, text: str) -> None:
        """An extension slash command: the response comes when its handler has run."""
        self.send({"type": "prompt", "message": text})
        self._settle()

    def _settle(self) -> None:
        # the state round trip orders us after pi's pending writes (message_end handlers run before agent_end)
        self.send({"type": "get_state"})

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = self.send({"type": "get_state"}).get("data") or {}
        return data

    def close(self) -> int:
        """stdin closed: pi shuts down as a user leaving does (session_shutdown runs the extension's flush)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise RuntimeError("pi did not exit after stdin closed") from None


# ---------------------------------------------------------------- one scenario's world


def hpi_session_name(cwd: str) -> str:
    """hpi's ``deriveWorkspaceSessionName`` (extensions/session.ts), which it sets as pi's session name: the
    recording spells it for /PROJECT, so it stays what hpi would have written there."""
    normalized = re.sub(r"^_+|_+$", "", re.sub(r"[^A-Za-z0-9._-]+", "_", re.sub(r"[:\\/]+", "_", cwd)))
    short = normalized[-48:] if len(normalized) > 48 else normalized
    return f"dir_{short}_{hashlib.sha256(cwd.encode()).hexdigest()[:8]}"



@dataclass
class World:
    """A private HOME and project for one scenario; paths under ``root`` are normalised in the recording."""

    name: str
    root: Path
    pi_root: Path
    extension: Path
    proxy: ServerProxy
    server: str
    model: ScriptedModel
    banks: list[str] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.root / "HOME"

    @property
    def project(self) -> Path:
        return self.root / "PROJECT"

    def setup(self, origin_name: str, global_config: dict[str, Any] | None = None, config_file: bool = True,
              pi_dir_symlink: bool = False) -> None:
        if pi_dir_symlink:  # ~/.pi is a link to another folder (dotfiles managers do this)
            (self.root / "PI-TARGET" / "agent").mkdir(parents=True)
            self.home.mkdir()
            (self.home / ".pi").symlink_to(self.root / "PI-TARGET")
        (self.home / ".pi" / "agent").mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True)
        models = {"providers": {"scripted": {
            "baseUrl": self.model.base_url, "api": "openai-completions", "apiKey": "scripted-model-needs-no-key",
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "scripted-1", "name": "Scripted model", "reasoning": False, "input": ["text"],
                        "contextWindow": 128000, "maxTokens": 4096}]}}}
        (self.home / ".pi" / "agent" / "models.json").write_text(json.dumps(models, indent=2))
        if config_file:
            (self.home / ".hindsight").mkdir()
            config = {"baseUrl": self.proxy.url, **(global_config or {})}
            (self.home / ".hindsight" / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        (self.project / "README.md").write_text("# widget\n\nA small project the scripted model reads.\n")
        git = ["git", "-C", str(self.project)]
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True, env={**os.environ, "HOME": str(self.home)})
        # hpi's default bank strategy (per-repo) names the bank after the origin's last path segment
        subprocess.run([*git, "remote", "add", "origin", f"git@example.invalid:acme/{origin_name}.git"], check=True)
        self.banks.append(origin_name)
        delete_bank(self.server, origin_name)  # a re-run against the same server starts from an empty bank

    def project_config(self, relative: str, data: dict[str, Any]) -> None:
        path = self.project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")

    def pi(self, args: list[str] | None = None, env: dict[str, str] | None = None) -> Pi:
        """``args`` for pi (``--continue``), ``env`` added to its otherwise bare environment."""
        return Pi(self.pi_root, self.extension, self.home, self.project, self.root / "probe.jsonl", args or [],
                  env or {})

    def finish(self, pi: Pi) -> int:
        code = pi.close()
        self.notices.extend(pi.notices)
        self.stderr.extend(pi.stderr)
        return code

    # -- the recording

    def normalise(self, text: str) -> str:
        root = str(self.root)
        encoded_root = root.lstrip("/").replace("/", "-")
        for old, new in ((hpi_session_name(str(self.project)), hpi_session_name("/PROJECT")),
                         (f"{root}/PROJECT", "/PROJECT"), (f"{root}/PI-TARGET", "/PI-TARGET"),
                         (f"{root}/HOME", "/HOME"),
                         (f"--{encoded_root}-PROJECT--", "--PROJECT--"), (root, "/TMP"),
                         (self.proxy.url, "http://HINDSIGHT"), (self.server.rstrip("/"), "http://HINDSIGHT"),
                         (self.model.base_url, "http://MODEL/v1")):
            text = text.replace(old, new)
        return text

    def _copy_tree(self, source: Path, dest: Path, skip: Callable[[Path], bool] = lambda _p: False) -> None:
        if not source.exists():
            return
        for path in sorted(source.rglob("*")):
            if path.is_dir() or skip(path):
                continue
            target = dest / self.normalise(str(path.relative_to(source)))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.normalise(path.read_text(encoding="utf-8")), encoding="utf-8")

    def snapshot(self, dest: Path) -> None:
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        self._copy_tree(self.home / ".pi" / "agent" / "sessions", dest / "sessions")
        self._copy_tree(self.home / ".hindsight", dest / "hindsight-home")
        self._copy_tree(self.project, dest / "project", skip=lambda p: ".git" in p.relative_to(self.project).parts
                        or p.name == "README.md")
        if (self.root / "probe.jsonl").exists():
            (dest / "probe.jsonl").write_text(self.normalise((self.root / "probe.jsonl").read_text()))
        server = {bank: server_documents(self.server, bank) for bank in self.banks}
        (dest / "server.json").write_text(self.normalise(json.dumps(server, indent=2, sort_keys=True)) + "\n")
        lines = [json.dumps(r, sort_keys=True) for r in self.proxy.log]
        (dest / "requests.jsonl").write_text(self.normalise("".join(line + "\n" for line in lines)))
        (dest / "notices.json").write_text(self.normalise(json.dumps(self.notices, indent=2)) + "\n")
        leftover = [p for p in dest.rglob("*") if p.is_file() and any(
            marker in p.read_text() for marker in (self.root.name, WORK.name, "scripted-model-needs-no-key"))]
        if leftover:
            raise RuntimeError(f"un-normalised path or key left in {leftover}")


# ---------------------------------------------------------------- hpi scenarios

Scenario = Callable[[World, Path], None]


def hpi_live_and_complete(world: World, out: Path) -> None:
    """Two turns (one with a tool call), recorded while pi still runs (live, k=2); one more turn, then pi exits
    (complete: session_shutdown flushed the queue)."""
    world.setup("hpi-live")
    pi = world.pi()
    pi.prompt("Please remember that the widget build uses make. " + TOOL_TRIGGER)
    pi.prompt("Second question: what does the README say?")
    world.notices.extend(pi.notices)
    world.snapshot(out / "live-k2")
    pi.notices.clear()
    pi.prompt("Third turn, after the live snapshot.")
    world.finish(pi)
    world.snapshot(out / "complete")


def hpi_off_session(world: World, out: Path) -> None:
    """/hindsight:toggle-retain after the first turn: the second turn is not queued."""
    world.setup("hpi-off-session")
    pi = world.pi()
    pi.prompt("First turn, retained.")
    pi.command("/hindsight:toggle-retain")
    pi.prompt("Second turn, after retain was switched off for this session.")
    world.finish(pi)
    world.snapshot(out / "off-session")


def hpi_off_project(world: World, out: Path) -> None:
    """``.hindsight/config.json`` in the project: host.pi enabled:false."""
    world.setup("hpi-off-project")
    world.project_config(".hindsight/config.json", {"host": {"pi": {"enabled": False}}})
    pi = world.pi()
    pi.prompt("A turn in a project where hindsight is switched off.")
    world.finish(pi)
    world.snapshot(out / "off-project")


def hpi_off_project_save_messages(world: World, out: Path) -> None:
    """``.hindsight/config.json`` in the project: host.pi saveMessages:false."""
    world.setup("hpi-no-save-messages")
    world.project_config(".hindsight/config.json", {"host": {"pi": {"saveMessages": False}}})
    pi = world.pi()
    pi.prompt("A turn in a project where saveMessages is false.")
    world.finish(pi)
    world.snapshot(out / "off-project-save-messages")


def hpi_tags(world: World, out: Path) -> None:
    """/hindsight:tag twice, then a turn: the tags ride on the queued records and the server document."""
    world.setup("hpi-tags")
    pi = world.pi()
    pi.prompt("First turn, before any session tag.")
    pi.command("/hindsight:tag alpha")
    pi.command("/hindsight:tag beta")
    pi.prompt("Second turn, after tagging the session.")
    world.finish(pi)
    world.snapshot(out / "tags")


def hpi_backfill_session(world: World, out: Path) -> None:
    """Retain off for the session, two turns, then on again and /hindsight:parse-and-upsert-session (what hpi
    tells the user to do), then exit."""
    world.setup("hpi-backfill-session")
    pi = world.pi()
    pi.command("/hindsight:toggle-retain")
    pi.prompt("First turn, not retained live.")
    pi.prompt("Second turn, not retained live. " + TOOL_TRIGGER)
    pi.command("/hindsight:toggle-retain")
    pi.command("/hindsight:parse-and-upsert-session")
    world.finish(pi)
    world.snapshot(out / "backfill-session")


def hpi_backfill_historical(world: World, out: Path) -> None:
    """Two sessions made while the project switched hpi off; then, with it on, a new session runs
    /hindsight:upsert-historical-sessions confirm."""
    world.setup("hpi-backfill-historical")
    world.project_config(".hindsight/config.json", {"host": {"pi": {"enabled": False}}})
    for n in (1, 2):
        pi = world.pi()
        pi.prompt(f"Historical session {n}, first turn.")
        pi.prompt(f"Historical session {n}, second turn. " + (TOOL_TRIGGER if n == 1 else ""))
        world.finish(pi)
    (world.project / ".hindsight" / "config.json").unlink()
    (world.project / ".hindsight").rmdir()
    pi = world.pi()
    pi.wait_status("connected")
    pi.command("/hindsight:upsert-historical-sessions")
    pi.command("/hindsight:upsert-historical-sessions confirm")
    world.finish(pi)
    world.snapshot(out / "backfill-historical")


def hpi_queued(world: World, out: Path) -> None:
    """Two turns; the server goes down before pi exits, so the flush fails and the queue stays."""
    world.setup("hpi-queued")
    pi = world.pi()
    pi.prompt("First turn, queued.")
    pi.prompt("Second turn, queued. " + TOOL_TRIGGER)
    world.proxy.down()
    world.finish(pi)
    world.snapshot(out / "queued")


def hpi_recall_persisted(world: World, out: Path) -> None:
    """A first session stores a turn; a second with host.pi autoRecallPersist:true persists the recall it injects
    (custom message ``hindsight-recall``)."""
    world.setup("hpi-recall", {"host": {"pi": {"autoRecallPersist": True, "recallMode": "context"}}})
    pi = world.pi()
    pi.prompt("The widget build uses make and the tests run with pytest.")
    world.finish(pi)
    pi = world.pi()
    pi.prompt("How does the widget build work? Which make target runs the tests?")
    world.finish(pi)
    world.snapshot(out / "recall-persisted")


def hpi_no_config(world: World, out: Path) -> None:
    """No ~/.hindsight/config.json and no HINDSIGHT_* variable: hpi's ``enabled`` default is false then."""
    world.setup("hpi-no-config", config_file=False)
    pi = world.pi()
    pi.prompt("A turn with no hindsight configuration at all.")
    world.finish(pi)
    world.snapshot(out / "no-config")


def hpi_recall_status_old(world: World, out: Path) -> None:
    """hpi 0.3.1 (3c27336) with host.pi indicatorsInContext:true: the recall and retain indicators are persisted
    as ``hindsight-recall-status`` / ``hindsight-retain-status`` custom messages (538c735 stopped that)."""
    world.setup("hpi-recall-status", {"host": {"pi": {"indicatorsInContext": True}}})
    pi = world.pi()
    pi.prompt("The widget build uses make and the tests run with pytest.")
    world.finish(pi)
    pi = world.pi()
    pi.prompt("How does the widget build work? Which make target runs the tests?")
    world.finish(pi)
    world.snapshot(out / "recall-status-0.3.1")


def hpi_resumed(world: World, out: Path) -> None:
    """Two turns, exit (first flush); ``pi --continue`` the same session, one turn, exit (second flush). With
    update_mode dropped by the client, what does the server keep of the first flush?"""
    world.setup("hpi-resumed")
    pi = world.pi()
    pi.prompt("First run, first turn.")
    pi.prompt("First run, second turn.")
    world.finish(pi)
    pi = world.pi(["--continue"])
    pi.prompt("Second run (resumed), third turn.")
    world.finish(pi)
    world.snapshot(out / "resumed")


def hpi_new_session_with_parent(world: World, out: Path) -> None:
    """One turn; then pi's new_session with parentSession (what /new after a fork does): hpi flushes the first
    session at session_before_switch, and the child's records carry its parent tag."""
    world.setup("hpi-parent")
    pi = world.pi()
    pi.prompt("Parent session turn.")
    parent_file = pi.state()["sessionFile"]
    pi.send({"type": "new_session", "parentSession": parent_file})
    pi.wait_status("connected")
    pi.prompt("Child session turn.")
    world.finish(pi)
    world.snapshot(out / "new-session-with-parent")


def hpi_env_only(world: World, out: Path) -> None:
    """No config file; only HINDSIGHT_BASE_URL set (hpi's enabled default is true then): its defaults apply
    (bank strategy per-repo: the origin's last segment)."""
    world.setup("hpi-env-only", config_file=False)
    pi = world.pi(env={"HINDSIGHT_BASE_URL": world.proxy.url})
    pi.prompt("A turn with only HINDSIGHT_BASE_URL set.")
    world.finish(pi)
    world.snapshot(out / "env-only")


def hpi_explicit_retain(world: World, out: Path) -> None:
    """The model calls hpi's hindsight_retain tool (the user asked it to remember something), then pi exits."""
    world.setup("hpi-explicit")
    pi = world.pi()
    pi.prompt("Remember that releases are cut on Fridays. " + RETAIN_TRIGGER)
    world.finish(pi)
    world.snapshot(out / "explicit-retain")


def hpi_profile_gone(world: World, out: Path) -> None:
    """No shim: the real 1.1.0 answer (410) to hpi's bank check. hpi stays offline: nothing queued or stored."""
    world.setup("hpi-profile-gone")
    pi = world.pi()
    pi.prompt("A turn while hpi could not connect.")
    world.finish(pi)
    world.snapshot(out / "server-1.1-profile-gone")


HPI_SCENARIOS: dict[str, Scenario] = {
    "live-complete": hpi_live_and_complete,
    "off-session": hpi_off_session,
    "off-project": hpi_off_project,
    "off-project-save-messages": hpi_off_project_save_messages,
    "tags": hpi_tags,
    "backfill-session": hpi_backfill_session,
    "backfill-historical": hpi_backfill_historical,
    "queued": hpi_queued,
    "recall-persisted": hpi_recall_persisted,
    "server-1.1-profile-gone": hpi_profile_gone,
    "no-config": hpi_no_config,
    "env-only": hpi_env_only,
    "explicit-retain": hpi_explicit_retain,
    "resumed": hpi_resumed,
    "new-session-with-parent": hpi_new_session_with_parent,
    "recall-status-0.3.1": hpi_recall_status_old,
}
COMMIT_OF = {"recall-status-0.3.1": HPI_OLD_COMMIT}  # every other scenario runs HPI_COMMIT
NO_SHIM = {"server-1.1-profile-gone"}


# ---------------------------------------------------------------- pi itself, as luxus's code would see it


def probe_symlinked_home(world: World, out: Path) -> None:
    """``~/.pi`` a symlink; two turns (one with a tool call) and exit, the probe extension logging what pi hands an
    extension: the session path as pi spells it and agent_end's messages (luxus's cursor input)."""
    world.setup("pi-probe", config_file=False, pi_dir_symlink=True)
    world.banks.clear()  # no Hindsight extension runs here
    pi = world.pi()
    pi.prompt("First probe turn. " + TOOL_TRIGGER)
    pi.prompt("Second probe turn.")
    world.finish(pi)
    world.snapshot(out / "symlinked-home")


PROBE_SCENARIOS: dict[str, Scenario] = {"symlinked-home": probe_symlinked_home}
PROBE = ROOT / "scripts" / "pi_probe_extension.mjs"


@dataclass
class Extension:
    scenarios: dict[str, Scenario]
    code: Callable[[str], Path]  # the extension entry for a scenario
    provenance: dict[str, Any]


EXTENSIONS = {
    "hpi": Extension(HPI_SCENARIOS, lambda name: prepare_hpi(COMMIT_OF.get(name, HPI_COMMIT)) / "extensions",
                     {"extension": "walodayeet/hindsight-pi", "commit": HPI_COMMIT, "commit_of_scenario": COMMIT_OF,
                      "client": HPI_CLIENT}),
    "pi-probe": Extension(PROBE_SCENARIOS, lambda _name: PROBE,
                          {"extension": "scripts/pi_probe_extension.mjs (this project's probe, not luxus's code)"}),
}


# ---------------------------------------------------------------- main


def start_server(state: Path) -> str:
    done = subprocess.run([str(ROOT / "scripts" / "hindsight-server"), "start", "--state", str(state), "--json"],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"hindsight-server start failed: {done.stderr[-2000:]}")
    url: str = json.loads(done.stdout.strip().splitlines()[-1])["url"]
    return url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ext", action="append", choices=sorted(EXTENSIONS), help="default: all")
    parser.add_argument("--scenario", action="append", help="default: all of the extension's")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "extensions")
    parser.add_argument("--server", help="a running server's URL (default: start one with scripts/hindsight-server)")
    parser.add_argument("--keep", action="store_true", help="keep the scenario folders (for debugging)")
    args = parser.parse_args()
    chosen = {ext: [n for n in EXTENSIONS[ext].scenarios if not args.scenario or n in args.scenario]
              for ext in args.ext or sorted(EXTENSIONS)}
    unknown = set(args.scenario or []) - {n for names in chosen.values() for n in names}
    if unknown:
        parser.error(f"no such scenario for {sorted(chosen)}: {sorted(unknown)}")

    pi_root = install_pi()
    state = WORK / "server-state"
    server = args.server or start_server(state)
    model = ScriptedModel().start()
    server_version = api(server, "/version").get("api_version")
    failed = False
    try:
        for ext, names in chosen.items():
            if names:
                failed |= record(ext, names, args, pi_root, server, model, str(server_version))
    finally:
        model.stop()
        if not args.server:
            subprocess.run([str(ROOT / "scripts" / "hindsight-server"), "stop", "--state", str(state)],
                           timeout=300, check=False)
    return 1 if failed else 0


def record(ext: str, names: list[str], args: argparse.Namespace, pi_root: Path, server: str, model: ScriptedModel,
           server_version: str) -> bool:
    """Runs the scenarios, writes <out>/<ext>/provenance.json; True if one failed."""
    extension = EXTENSIONS[ext]
    failures: dict[str, str] = {}
    ran: list[str] = []
    for name in names:
        root = Path(tempfile.mkdtemp(prefix=f"rec-{name}-", dir=WORK))
        proxy = ServerProxy(server, profile_shim=name not in NO_SHIM)
        proxy.up()
        world = World(name, root, pi_root, extension.code(name), proxy, server, model)
        say(f"{ext} {name} in {root}")
        try:
            extension.scenarios[name](world, args.out / ext)
            ran.append(name)
        except Exception as error:  # one scenario's failure is recorded, the others still run
            failures[name] = f"{type(error).__name__}: {world.normalise(str(error))[-1500:]}"
            say(f"{name} FAILED: {failures[name]}")
        finally:
            proxy.down()
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    provenance = args.out / ext / "provenance.json"
    provenance.parent.mkdir(parents=True, exist_ok=True)
    # a partial re-run keeps the earlier runs' lines: each scenario folder comes from the last run that names it
    runs = json.loads(provenance.read_text()).get("runs", []) if provenance.exists() else []
    this_run = {"recorded": stamp, "command": " ".join(["scripts/record_extensions.py", *sys.argv[1:]]),
                "scenarios": sorted(ran), "failures": failures}
    summary: dict[str, Any] = {**extension.provenance, "pi": f"@mariozechner/pi-coding-agent@{PI_VERSION}",
                               "server": f"hindsight-api-slim {server_version}", "runs": [*runs, this_run]}
    provenance.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return bool(failures)


if __name__ == "__main__":
    raise SystemExit(main())
