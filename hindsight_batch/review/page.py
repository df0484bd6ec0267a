"""The review page: one self-contained HTML file (style, script, chart and data inline), written ``0600``.

Safety of the page: transcript text and every other ledger value reach it only (a) HTML-escaped in the static
tables and the chart, or (b) inside the JSON block, where ``<``, ``>``, ``&`` and U+2028/U+2029 are written as
``\\uXXXX`` escapes, so no value can close the block or open a tag; the script then shows values with
``textContent`` only. A Content-Security-Policy allows no network at all and only the page's own script (by hash),
a second wall should anything slip through.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

from hindsight_batch.base import jsoncodec
from hindsight_batch.base.fsutil import replace_file, write_all
from hindsight_batch.errors import UsageError
from hindsight_batch.ledger.engine import duckdb
from hindsight_batch.review.assets import SCRIPT, STYLE
from hindsight_batch.review.query import ReviewData, load_review
from hindsight_batch.review.svg import timeline_svg

# Written as \uXXXX escapes (what JSON.parse reads back) so that no string can end the block or open a tag.
_JSON_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                 ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element, whatever strings it holds."""
    data = jsoncodec.dumps(value)
    for raw, escaped in _JSON_ESCAPES:  # one bytes pass each: str.translate is slow on a large page
        data = data.replace(raw, escaped)
    return data.decode("utf-8")


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


def _table(head: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    numeric = numeric or set()
    cells = "".join(f'<th{" class=n" if i in numeric else ""}>{escape(h)}</th>' for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f'<td{" class=n" if i in numeric else ""}>{escape("" if v is None else str(v))}</td>'
                         for i, v in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _range(first: str | None, last: str | None) -> str:
    if first is None:
        return "unknown"
    return first[:10] if last is None or last[:10] == first[:10] else f"{first[:10]} … {last[:10]}"


def render_page(data: ReviewData) -> Iterator[str]:
    """The page in parts, to be written one after the other (a page with text is about 10 MB per 1,000 chunks)."""
    run = data.run
    dest = _table(["bank", "project", "sessions", "chunks", "bytes", "dates"],
                  [[d["bank"], d["project"] or "(none)", d["sessions"], d["chunks"], d["bytes"],
                    _range(d["first"], d["last"])] for d in data.destinations], {2, 3, 4})
    suggestions = _table(
        ["project", "session", "chunk", "route", "confidence", "User Bank", "reason"],
        [[s["project"] or "(none)", s["session"], f'{s["segment"]} #{s["chunk"]}', s["route"], s["confidence"],
          s["user_bank"] or "(no id)", s["reason"]] for s in data.suggestions[:500]], {4})
    more = (f'<p class="muted">and {len(data.suggestions) - 500} more</p>' if len(data.suggestions) > 500 else "")
    skipped = _table(["reason", "chunks"], [list(r) for r in data.skipped], {1})
    dropped = _table(["reason", "messages"], [list(r) for r in data.dropped], {1})
    redactions = _table(["rule", "count"], [list(r) for r in data.redactions], {1})
    apply_hint = ""
    if run["command"] == "import" and run["mode"] == "dry-run":  # what sends exactly this plan, nothing else
        apply_hint = (f'<p id="apply-hint">To send exactly what this page shows: <code>hindsight-batch import '
                      f'--apply --from-run {escape(run["run_id"])}</code> (a session changed since is refused).</p>')
    index = [{**{key: value for key, value in session.items() if key != "chunks"}, "n": len(session["chunks"]),
              "k": k} for k, session in enumerate(data.sessions)]
    payload = script_json({"run": run, "sessions": index})
    csp = (f"default-src 'none'; script-src {_hash(SCRIPT)}; style-src {_hash(STYLE)}; img-src data:; "
           "connect-src 'none'; form-action 'none'; base-uri 'none'")
    yield f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">
<meta name="referrer" content="no-referrer">
<title>hindsight-batch review: run {escape(run["run_id"])}</title>
<style>{STYLE}</style></head>
<body>
<h1>Review of run {escape(run["run_id"])}</h1>
<p class="muted">{escape(str(run["command"]))} ({escape(str(run["mode"]))}), {escape(str(run["status"]))},
started {escape(str(run["started_at"]))}; <span id="total-chunks">{data.chunks}</span> chunk(s) in
<span id="total-sessions">{len(data.sessions)}</span> session(s).</p>
{apply_hint}
<h2>Where it goes</h2>
<div id="destinations">{dest}</div>
<h3>Chunks per week, by bank</h3>
<div id="timeline">{timeline_svg(data.timeline)}</div>
<h2>What was left out</h2>
<div class="cols">
<div id="skipped"><h3>Chunks skipped, by reason</h3>{skipped}</div>
<div id="dropped"><h3>Messages dropped, by reason</h3>{dropped}</div>
<div id="redactions"><h3>Redactions, by rule</h3>{redactions}</div>
</div>
<h3>User Bank suggestions (explicit-only mode: suggested, not written)</h3>
<div id="suggestions"><p><span id="suggestion-count">{len(data.suggestions)}</span> chunk(s)</p>
{suggestions}{more}</div>
<h2>Sessions</h2>
<div id="filters">
<label>project<select id="f-project"><option value="">all</option></select></label>
<label>bank<select id="f-bank"><option value="">all</option></select></label>
<label>route<select id="f-route"><option value="">all</option></select></label>
<label>from<input id="f-from" type="date"></label>
<label>to<input id="f-to" type="date"></label>
</div>
<div id="count"></div>
<div id="pager"><button id="prev" type="button">previous</button><button id="next" type="button">next</button></div>
<div id="sessions"></div>
<script type="application/json" id="review-data">{payload}</script>
"""
    for k, session in enumerate(data.sessions):
        yield f'<script type="application/json" id="chunks-{k}">{script_json(session["chunks"])}</script>\n'
    yield f"""<script>{SCRIPT}</script>
</body></html>
"""


def default_output(run_id: str) -> Path:
    return Path(f"review-{run_id}.html")


def write_review(db: duckdb.DuckDBPyConnection, output: Path | None = None, run_id: str | None = None) -> Path:
    """Write the review page of ``run_id`` (default: the latest run that planned chunks) to ``output`` (default
    ``review-<run>.html`` here), mode 0600, replacing it whole (a reader never sees half a page)."""
    data = load_review(db, run_id)
    path = output if output is not None else default_output(data.run["run_id"])
    target = Path(os.path.realpath(path))  # a symlink stays a link: its target is replaced

    def write(fd: int) -> None:
        for part in render_page(data):
            write_all(fd, part.encode("utf-8"))

    try:
        replace_file(target, write, private=True)  # it can hold transcripts; a reader never sees half a page
    except OSError as exc:
        raise UsageError(f"-o {path}: cannot write it: {exc.strerror or type(exc).__name__}") from None
    return path
