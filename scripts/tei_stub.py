#!/usr/bin/env python3
"""A tiny embeddings service speaking the TEI protocol, for running the real Hindsight server offline in tests.

``GET /info`` names the model; ``POST /embed`` with ``{"inputs": [text, …]}`` returns one 384-dimension vector
per text: a hashed bag of words, L2-normalised. Deterministic, stdlib only, binds where it is told (127.0.0.1).

    python3 scripts/tei_stub.py --port 8081
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSIONS = 384
_WORD = re.compile(r"\w+")


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        index = int.from_bytes(digest[:2], "little") % DIMENSIONS
        vector[index] += 1.0 if digest[2] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector] if any(vector) else [1.0 / math.sqrt(DIMENSIONS)] * DIMENSIONS


class Handler(BaseHTTPRequestHandler):
    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path in ("/info", "/health"):
            self._send(200, {"model_id": "hindsight-batch/hashed-bag-of-words-384", "max_input_length": 8192,
                             "max_client_batch_size": 512})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path != "/embed":
            self._send(404, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            inputs = json.loads(self.rfile.read(length)).get("inputs")
        except (ValueError, AttributeError):
            self._send(422, {"error": "body must be JSON with inputs"})
            return
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list):
            self._send(422, {"error": "inputs must be a string or a list"})
            return
        self._send(200, [embed(str(text)) for text in inputs])

    def log_message(self, format: str, *args: object) -> None:  # quiet: the server's log is what matters
        return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
