"""The real Hindsight server for tests, started once per test session through scripts/hindsight-server.

These fixtures never skip: if the server cannot start, the tests that need it fail (CI must run them).
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
# would otherwise install a fresh 1.4 GB copy there).
SERVER_HOME = os.environ.get("HINDSIGHT_SERVER_HOME") or str(Path.home() / ".cache" / "hindsight-batch" / "server")


@dataclass(frozen=True)
class Server:
    url: str
    api_key: str | None

    def client(self) -> HindsightClient:
        return HindsightClient(self.url, self.api_key, max_attempts=3)


def _start(state: Path, api_key: str | None) -> Server:
    # --no-install: scripts/test.sh installs the server before pytest starts; a test never downloads 1.5 GB under
    # pytest-timeout, it fails at once naming the install command.
    args = [sys.executable, str(SCRIPT), "start", "--state", str(state), "--json", "--no-install"]
    env = {**os.environ, "HINDSIGHT_SERVER_HOME": SERVER_HOME}
    if api_key:
        env["HB_TEST_SERVER_KEY"] = api_key
        args += ["--api-key-env", "HB_TEST_SERVER_KEY"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"scripts/hindsight-server start failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return Server(json.loads(done.stdout)["url"], api_key)


def _stop(state: Path) -> None:
    subprocess.run([sys.executable, str(SCRIPT), "stop", "--state", str(state)], capture_output=True, timeout=120,
                   env={**os.environ, "HINDSIGHT_SERVER_HOME": SERVER_HOME})


@pytest.fixture(scope="session")
def hindsight_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("hindsight-server")
    try:
        yield _start(state, None)
    finally:
        _stop(state)


@pytest.fixture(scope="session")
def hindsight_server_with_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("hindsight-server-auth")
    try:
        yield _start(state, "hb-test-" + secrets.token_hex(16))
    finally:
        _stop(state)
