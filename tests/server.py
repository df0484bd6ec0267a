"""The real Hindsight server for tests, started through scripts/hindsight-server: once per test session (under
pytest-xdist, once per worker), in the background as soon as the session's tests are known, so that it comes up
while other tests run; the first test that needs it waits for it.

These fixtures never skip: if the server cannot start, the tests that need it fail (CI must run them). They never
install it either (scripts/test.sh does, before pytest starts): a missing install fails at once, naming the command.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hindsight_batch.sinks.hindsight import HindsightClient

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "hindsight-server"
# The shared install, named before any test gives HOME a temporary folder (a server started from inside a test
# would otherwise look for it there).
SERVER_HOME = os.environ.get("HINDSIGHT_SERVER_HOME") or str(Path.home() / ".cache" / "hindsight-batch" / "server")
START_TIMEOUT = 600  # seconds: a start is about 20 s on an idle 2-core machine (the script waits 240 s for /health)
FIXTURES = ("hindsight_server", "hindsight_server_with_auth")


@dataclass(frozen=True)
class Server:
    url: str
    api_key: str | None

    def client(self) -> HindsightClient:
        return HindsightClient(self.url, self.api_key, max_attempts=3)


def _env() -> dict[str, str]:
    return {**os.environ, "HINDSIGHT_SERVER_HOME": SERVER_HOME}


class Starting:
    """``scripts/hindsight-server start`` running in the background; :meth:`server` waits for it."""

    def __init__(self, state: Path, api_key: str | None) -> None:
        self.state = state
        self.api_key = api_key
        # --no-install: a test never downloads 1.5 GB under pytest-timeout.
        args = [sys.executable, str(SCRIPT), "start", "--state", str(state), "--json", "--no-install"]
        env = _env()
        if api_key:
            env["HB_TEST_SERVER_KEY"] = api_key
            args += ["--api-key-env", "HB_TEST_SERVER_KEY"]
        state.mkdir(parents=True, exist_ok=True)
        # Files, not pipes: nobody reads a pipe while the start runs in the background.
        with (state / "start.out").open("wb") as out, (state / "start.err").open("wb") as err:
            self.process = subprocess.Popen(args, stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL)
        self._server: Server | None = None

    def server(self) -> Server:
        if self._server is None:
            try:
                code = self.process.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                code = -1
            if code != 0:
                stderr = (self.state / "start.err").read_text(errors="replace")
                pytest.fail(f"scripts/hindsight-server start failed ({code}):\n{stderr[-4000:]}")
            self._server = Server(json.loads((self.state / "start.out").read_text())["url"], self.api_key)
        return self._server

    def stopping(self) -> subprocess.Popen[bytes]:
        """``scripts/hindsight-server stop`` begun (a few seconds: the server's shutdown, the database dropped)."""
        if self.process.poll() is None:  # still starting (the session ended first): let it finish, then stop
            try:
                self.process.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return subprocess.Popen([sys.executable, str(SCRIPT), "stop", "--state", str(self.state)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())


def _start(state: Path, api_key: str | None) -> Server:
    """A server started now, waited for."""
    return Starting(state, api_key).server()


def _stop(state: Path) -> None:
    subprocess.run([sys.executable, str(SCRIPT), "stop", "--state", str(state)], capture_output=True, timeout=120,
                   env=_env())


@pytest.fixture(scope="session", autouse=True)
def _servers_starting(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Starting]]:
    """Starts, at the session's first test, the servers that some selected test uses. (Under xdist each worker
    collects every selected test, so each starts them; a worker whose share has none of those tests pays one
    start in the background.)"""
    used = {name for item in request.session.items for name in getattr(item, "fixturenames", ())}
    starting: dict[str, Starting] = {}
    try:
        for name in FIXTURES:
            if name in used:
                _begin(starting, name, tmp_path_factory)
        yield starting
    finally:
        for stopping in [each.stopping() for each in starting.values()]:  # side by side: the session's last wait
            stopping.wait(120)


def _begin(starting: dict[str, Starting], name: str, tmp_path_factory: pytest.TempPathFactory) -> Starting:
    if name not in starting:
        key = "hb-test-" + secrets.token_hex(16) if name == "hindsight_server_with_auth" else None
        starting[name] = Starting(tmp_path_factory.mktemp(name.replace("_", "-")), key)
    return starting[name]


def _server(starting: dict[str, Starting], name: str, tmp_path_factory: pytest.TempPathFactory) -> Server:
    # Begun ahead unless the test asked for the fixture by name (request.getfixturevalue).
    return _begin(starting, name, tmp_path_factory).server()


@pytest.fixture(scope="session")
def hindsight_server(_servers_starting: dict[str, Starting], tmp_path_factory: pytest.TempPathFactory) -> Server:
    return _server(_servers_starting, "hindsight_server", tmp_path_factory)


@pytest.fixture(scope="session")
def hindsight_server_with_auth(_servers_starting: dict[str, Starting],
                               tmp_path_factory: pytest.TempPathFactory) -> Server:
    return _server(_servers_starting, "hindsight_server_with_auth", tmp_path_factory)
