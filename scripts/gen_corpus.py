#!/usr/bin/env python3
"""Write a deterministic synthetic corpus of Pi sessions with a real-world profile, for the benchmark.

Many files with log-normal sizes (median about 100 KB, p99 about 5 MB) plus one file of at least 200 MB, laid out
like a pi session root (one folder per cwd). Sessions hold prose, thinking blocks, tool calls and large tool
outputs, base64 images, recall entries in both shapes, hindsight tool calls and results, about one fake secret per
50 KB, branches and compactions. The same --seed and --total-mb always give the same bytes.

The mix follows the real sessions in shared/samples-real/pi: most bytes are tool output, then assistant messages
(tool-call arguments more than prose), little user text; with default settings about 7% of the bytes are kept
(real: 6%), and prose has a natural word distribution (see WORDS).

    .venv/bin/python scripts/gen_corpus.py OUT_DIR [--total-mb 300] [--big-mb 200] [--seed 1] [--shape default]

--shape picks the corpus's shape (scripts/bench.py measures each):
  default      the profile above;
  small-files  no large file, files of about 15 KB (median, 40 KB mean): per-file costs dominate;
  long-lines   spaced JSON (``", "`` and ``": "``, ASCII-escaped as Python's json.dumps writes it), long tool
               outputs on long lines: most bytes in tool output, few records per MB;
  keywords     keyword-dense prose: "token", "secret" or "password" in most kept messages (redaction's slow path).
  unicode      the default profile with text outside ASCII in most texts, as assistants write it: dashes, curly
               quotes, arrows, accented and Turkish words, emoji, CJK (Python's str methods take slower paths).
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Words by how often they occur (Zipf: the k-th is drawn with weight 1/k), calibrated against the real sessions in
# shared/samples-real/pi: function words dominate, and about one message in ten holds a word that a redaction
# rule looks for ("token", "password", "secret", URLs), as there. Uniform draws from a small technical vocabulary
# put "token" in two messages of three and made redaction and routing look several times costlier than on
# real transcripts.
WORDS = ("the", "to", "and", "a", "in", "is", "it", "of", "for", "now", "let", "me", "i", "this", "that", "we",
    "file", "test", "with", "on", "be", "can", "check", "should", "fix", "run", "code", "not", "so", "if",
    "add", "use", "function", "error", "from", "by", "see", "need", "then", "update", "what", "there", "at",
    "change", "which", "value", "tests", "build", "it's", "all", "new", "make", "will", "one", "also", "but",
    "module", "config", "here", "type", "first", "look", "case", "line", "return", "issue", "output",
    "call", "data", "path", "list", "set", "read", "write", "same", "passes", "works", "queue", "lock", "owner",
    "stale", "importer", "ledger", "manifest", "chunk", "route", "bank", "memory", "parser", "reader", "project",
    "user", "retry", "server", "request", "batch", "document", "session", "window", "review", "commit", "branch",
    "timeout", "cache", "index", "schema", "migration", "handler", "budget", "deploy", "prefer", "token",
    "architecture", "temporary", "endpoint", "https://docs.example.com/guide")
# Zipf-Mandelbrot weights; "token" and URLs are rarer still (0.03% of words in the real sessions).
CUM_WEIGHTS = list(itertools.accumulate((0.2 if word in ("token", WORDS[-1]) else 1) / (rank + 8)
                                        for rank, word in enumerate(WORDS, 1)))
PROJECTS = ["acme-api", "acme-web", "data-pipeline", "dotfiles", "ml-experiments", "infra", "mobile-app", "docs"]
SECRETS = [
    "ghp_{r36}", "sk-proj-{r40}", "sk-ant-api03-{r40}", "AKIA{U16}", "xoxb-1234567890-{r20}",
    "Authorization: Bearer {r32}", "postgres://app:{r12}@db.example.com/app", "DB_PASSWORD={r14}",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.{r24}",
]


SHAPES = ("default", "small-files", "long-lines", "keywords", "unicode")


@dataclass
class Shape:
    """What --shape changes: JSON spacing, tool-output size, keyword density."""

    separators: tuple[str, str] = (",", ":")
    ensure_ascii: bool = False
    output_median: int = 2_000
    keywords: bool = False
    unicode: bool = False


SHAPE = Shape()
KEYWORDS = ("token", "secret", "password", "api token", "the secret key", "password reset")
UNICODE_WORDS = ("—", "“done”", "→", "it’s", "✓", "café", "naïve", "Größe", "İstanbul", "değişiklik", "🎉", "👍🏽",
                 "测试通过", "ファイル", "修正しました", "Привет")


class Writer:
    def __init__(self, rng: random.Random, path: Path, session_id: str, cwd: str) -> None:
        self.rng = rng
        self.path = path
        self.n = 0
        self.ms = 1_777_629_600_000
        self.leaf: str | None = None
        self.ids: list[str] = []
        self.size = 0
        self.since_secret = 0
        self.out = path.open("w", encoding="utf-8")
        self._write({"type": "session", "version": 3, "id": session_id, "timestamp": self._iso(), "cwd": cwd})

    def _iso(self) -> str:
        seconds, ms = divmod(self.ms, 1000)
        import time as _time

        return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(seconds)) + f".{ms:03d}Z"

    def _write(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, ensure_ascii=SHAPE.ensure_ascii, separators=SHAPE.separators) + "\n"
        self.out.write(line)
        self.size += len(line)
        self.since_secret += len(line)

    def words(self, count: int) -> str:
        rng = self.rng
        words = rng.choices(WORDS, cum_weights=CUM_WEIGHTS, k=count)
        if SHAPE.unicode and rng.random() < 0.7:  # a word in twenty outside ASCII, in most texts
            for _ in range(max(1, count // 20)):
                words[rng.randrange(count)] = rng.choice(UNICODE_WORDS)
        text = " ".join(words)
        if SHAPE.keywords and rng.random() < 0.8:  # a keyword somewhere in most texts, not a secret
            at = rng.randrange(len(text) + 1)
            at = text.rfind(" ", 0, at) + 1
            text = f"{text[:at]}{rng.choice(KEYWORDS)} {text[at:]}"
        if self.since_secret > 50_000:  # about one secret per 50 KB
            self.since_secret = 0
            template = rng.choice(SECRETS)
            alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            secret = (template.replace("{r36}", "".join(rng.choice(alphabet) for _ in range(36)))
                      .replace("{r40}", "".join(rng.choice(alphabet) for _ in range(40)))
                      .replace("{r32}", "".join(rng.choice(alphabet) for _ in range(32)))
                      .replace("{r24}", "".join(rng.choice(alphabet) for _ in range(24)))
                      .replace("{r20}", "".join(rng.choice(alphabet) for _ in range(20)))
                      .replace("{r14}", "".join(rng.choice(alphabet) for _ in range(14)))
                      .replace("{r12}", "".join(rng.choice(alphabet) for _ in range(12)))
                      .replace("{U16}", "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(16))))
            text += f" {secret} "
        return text

    def entry(self, kind: str, parent: str | bool | None = True, **fields: Any) -> str:
        self.n += 1
        self.ms += self.rng.randint(200, 30_000)
        entry_id = f"{self.n:08x}"
        parent_id = self.leaf if parent is True else (None if parent is False else parent)
        if kind == "custom_message":
            obj = {"type": kind, **fields, "id": entry_id, "parentId": parent_id, "timestamp": self._iso()}
        else:
            obj = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": self._iso(), **fields}
        self._write(obj)
        self.leaf = entry_id
        self.ids.append(entry_id)
        return entry_id

    def message(self, role: str, content: Any, parent: str | bool | None = True, **extra: Any) -> str:
        head = {k: extra.pop(k) for k in ("toolCallId", "toolName", "customType") if k in extra}
        # pi's key order: role, (toolCallId, toolName), content, …, timestamp
        return self.entry("message", parent, message={"role": role, **head, "content": content, **extra,
                                                      "timestamp": self.ms})

    def turn(self) -> None:
        rng = self.rng
        parent: str | bool | None = True
        if len(self.ids) > 20 and rng.random() < 0.03:  # the user goes back: a branch
            parent = self.ids[rng.randrange(len(self.ids) - 10, len(self.ids) - 2)]
        user_content: list[dict[str, Any]] = [{"type": "text", "text": self.words(rng.randint(5, 120))}]
        if rng.random() < 0.02:
            image = base64.b64encode(rng.randbytes(rng.randint(20_000, 120_000))).decode()
            user_content.append({"type": "image", "data": image, "mimeType": "image/png"})
        user = self.message("user", user_content, parent)
        if rng.random() < 0.05:
            self.entry("custom_message", customType="hindsight-recall", display=False,
                       content="<hindsight_memories>\n" + self.words(rng.randint(50, 400)) + "\n</hindsight_memories>")
        elif rng.random() < 0.02:
            self.message("custom", "<hindsight-memory>" + self.words(80) + "</hindsight-memory>",
                         customType="hindsight-recall", display=False)
        for _step in range(rng.randint(1, 6)):
            tool = rng.choice(["bash", "read", "edit", "grep", "write", "bash", "hindsight_recall"]
                              if rng.random() > 0.97 else ["bash", "read", "edit", "grep", "write", "bash"])
            call_id = f"toolu_{self.n:010d}"
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.25:
                blocks.append({"type": "thinking", "thinking": self.words(rng.randint(20, 300)),
                               "thinkingSignature": "c2ln" * 20})
            if rng.random() < 0.5:
                blocks.append({"type": "text", "text": self.words(rng.randint(5, 60))})
            arguments: dict[str, Any] = {"path": "src/x.py"}
            if tool == "bash":
                arguments = {"command": self.words(6)}
            elif tool in ("edit", "write"):  # edits and writes carry file content, as in real sessions
                body = self.words(int(min(rng.lognormvariate(math.log(80), 1.0), 4_000)))
                arguments = {"path": "src/x.py", "oldText" if tool == "edit" else "content": body}
            blocks.append({"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments})
            self.message("assistant", blocks, api="anthropic-messages", provider="anthropic",
                         model="claude-sonnet-4-5", stopReason="toolUse",
                         usage={"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 150,
                                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
            size = int(min(rng.lognormvariate(math.log(SHAPE.output_median), 1.5), 1_500_000))
            output = (self.words(40) + "\n") * max(1, size // 300)
            self.message("toolResult", [{"type": "text", "text": output}], toolCallId=call_id, toolName=tool,
                         isError=rng.random() < 0.05)
        self.message("assistant", [{"type": "text", "text": self.words(rng.randint(10, 150))}],
                     api="anthropic-messages", provider="anthropic", model="claude-sonnet-4-5", stopReason="stop")
        if self.size > 2_000_000 and rng.random() < 0.02:
            self.entry("compaction", summary=self.words(200), firstKeptEntryId=user, tokensBefore=150_000,
                       details={"readFiles": [], "modifiedFiles": []}, fromHook=False)

    def close(self) -> None:
        self.out.close()


def write_session(rng: random.Random, root: Path, index: int, target: int) -> int:
    project = PROJECTS[index % len(PROJECTS)]
    folder = root / f"--home-dev-{project}--"
    folder.mkdir(parents=True, exist_ok=True)
    session_id = f"0196a1b2-{index:04x}-7000-8000-{rng.getrandbits(48):012x}"
    writer = Writer(rng, folder / f"2026-05-01T10-00-00-000Z_{session_id}.jsonl", session_id, f"/home/dev/{project}")
    writer.entry("model_change", False, provider="anthropic", modelId="claude-sonnet-4-5")
    writer.entry("thinking_level_change", thinkingLevel="medium")
    while writer.size < target:
        writer.turn()
    writer.close()
    return writer.size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--total-mb", type=int, default=300)
    parser.add_argument("--big-mb", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shape", choices=SHAPES, default="default")
    args = parser.parse_args()
    global SHAPE
    median = 100_000
    if args.shape == "small-files":
        args.big_mb, median = 0, 15_000
    elif args.shape == "long-lines":
        SHAPE = Shape(separators=(", ", ": "), ensure_ascii=True, output_median=20_000)
    elif args.shape == "keywords":
        SHAPE = Shape(keywords=True)
    elif args.shape == "unicode":
        SHAPE = Shape(unicode=True)
    rng = random.Random(args.seed)
    sizes = random.Random(args.seed + 1)  # file sizes from their own stream: they do not move when content does
    args.out.mkdir(parents=True, exist_ok=True)
    total = args.total_mb * 1_000_000
    big = min(args.big_mb * 1_000_000, total)
    written_sizes = [write_session(rng, args.out, 0, big)] if big else []
    written = sum(written_sizes)
    index = len(written_sizes)
    mu, sigma = math.log(median), math.log(50) / 2.326  # median 100 KB, p99 about 5 MB (default shape)
    while written < total:
        target = int(min(sizes.lognormvariate(mu, sigma), total - written + 1))
        size = write_session(rng, args.out, index, max(target, 2_000))
        written_sizes.append(size)
        written += size
        index += 1
    small = sorted(written_sizes[1 if big else 0:]) or [0]
    print(f"wrote {len(written_sizes)} sessions, {written / 1e6:.0f} MB, under {args.out}: "
          f"largest {written_sizes[0] / 1e6:.0f} MB; "
          f"others median {small[len(small) // 2] / 1e3:.0f} KB, p99 {small[int(len(small) * 0.99)] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
