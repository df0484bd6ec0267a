"""A scripted model on 127.0.0.1 for recording what the live Pi extensions write (scripts/record_extensions.py).

It speaks the OpenAI chat-completions protocol (streamed, as pi's ``openai-completions`` provider asks for it) and
answers from a script, not from a model: a user prompt containing ``[tool]`` gets one ``read`` tool call for
``README.md`` first, one containing ``[retain]`` a ``hindsight_retain`` call (hpi's explicit-memory tool) with the
prompt as its content, every other request a short text that quotes the prompt. Deterministic, so two recordings
of one scenario differ only in ids and times.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL_TRIGGER = "[tool]"
RETAIN_TRIGGER = "[retain]"  # the model calls an extension's explicit-memory tool (hpi's hindsight_retain)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def scripted_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The reply to one request: ``{"tool_call": {...}}`` or ``{"text": ...}``."""
    # the user's prompt, not a recall block an extension injected as a user message after it
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"
                     and "hindsight_memories" not in _text_of(m).lower()), default=-1)
    prompt = _text_of(messages[last_user]) if last_user >= 0 else ""
    tool_done = any(m.get("role") == "tool" for m in messages[last_user + 1:])
    if TOOL_TRIGGER in prompt and not tool_done:
        return {"tool_call": {"name": "read", "arguments": json.dumps({"path": "README.md"})}}
    if RETAIN_TRIGGER in prompt and not tool_done:
        content = prompt.replace(RETAIN_TRIGGER, "").strip()
        return {"tool_call": {"name": "hindsight_retain", "arguments": json.dumps({"content": content})}}
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    return {"text": f"Scripted answer to: {first_line[:80]}" + (" (after reading README.md)" if tool_done else "")}


def _chunks(reply: dict[str, Any], model: str, serial: int) -> list[dict[str, Any]]:
    base = {"id": f"chatcmpl-scripted-{serial}", "object": "chat.completion.chunk", "created": 0, "model": model}
    if "tool_call" in reply:
        call = reply["tool_call"]
        delta: dict[str, Any] = {"role": "assistant", "tool_calls": [{
            "index": 0, "id": f"call_scripted_{serial}", "type": "function",
            "function": {"name": call["name"], "arguments": call["arguments"]}}]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": reply["text"]}
        finish = "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": usage},
    ]


class ScriptedModel:
    """``ScriptedModel().start()`` serves on a free port; ``base_url`` is what pi's models.json names."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:  # quiet: the recorder prints what matters
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    serial = len(owner.requests)
                reply = scripted_reply(body.get("messages") or [])
                chunks = _chunks(reply, str(body.get("model") or "scripted"), serial)
                if body.get("stream"):
                    payload = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                    payload += b"data: [DONE]\n\n"
                    content_type = "text/event-stream"
                else:
                    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
                    if "tool_call" in reply:
                        message["tool_calls"] = chunks[0]["choices"][0]["delta"]["tool_calls"]
                    payload = json.dumps({"id": f"chatcmpl-scripted-{serial}", "object": "chat.completion",
                                          "created": 0, "model": body.get("model"), "usage": chunks[2]["usage"],
                                          "choices": [{"index": 0, "message": message,
                                                       "finish_reason": chunks[1]["choices"][0]["finish_reason"]}]
                                          }).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ScriptedModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
