"""The review page's inline style and script (no network: nothing is loaded from anywhere).

The script never puts data into ``innerHTML``: every value from the ledger (transcript text, file names, tags,
reasons) goes in through ``textContent`` or ``createTextNode``. Sessions are listed a page at a time and a
session's chunks (a JSON block of their own) are parsed and built only when it is opened, a chunk's text only
when the chunk is opened: the page stays quick with tens of thousands of chunks.
"""

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}
.cols{display:flex;gap:32px;flex-wrap:wrap}.axis{font-size:10px;fill:#555}svg text{font-size:11px}
#filters{display:flex;gap:10px;flex-wrap:wrap;align-items:end;margin:8px 0}
#filters label{display:flex;flex-direction:column;font-size:12px;color:#555}
.session{border:1px solid #ddd;border-radius:4px;margin:4px 0}
.session>button,.chunk>button{all:unset;cursor:pointer;display:block;padding:6px 10px;width:calc(100% - 20px)}
.session>button:hover,.chunk>button:hover{background:#f4f6fa}
.chunks{padding:0 10px 8px 22px}.chunk{border-left:3px solid #4e79a7;margin:6px 0;background:#fafafa}
.chunk.skip{border-left-color:#e15759}.meta{padding:2px 10px;font-size:13px}
.tag{display:inline-block;background:#eef;border-radius:3px;padding:0 5px;margin:1px 2px;font-size:12px}
pre.text{white-space:pre-wrap;word-break:break-word;max-height:480px;overflow:auto;background:#fff;
border:1px solid #eee;padding:6px;margin:4px 10px 8px;font-size:12px}
mark.redacted{background:#ffd54f;color:#000;border-radius:2px;padding:0 2px}
#pager{margin:8px 0}#pager button{margin-right:6px}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("review-data").textContent);
  // A session's chunks are a JSON block of their own, parsed only when the session is opened.
  function chunksOf(s) { return JSON.parse(document.getElementById("chunks-" + s.k).textContent); }
  var PAGE = 50, page = 0, shown = [];
  var MARK = /\[REDACTED:[A-Za-z0-9_.:-]+\]/g;
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fill(select, values) {
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  function uniq(get) {
    var seen = {};
    DATA.sessions.forEach(function (s) { get(s).forEach(function (v) { seen[v] = 1; }); });
    return Object.keys(seen).sort();
  }
  var f = {
    project: document.getElementById("f-project"), bank: document.getElementById("f-bank"),
    route: document.getElementById("f-route"), from: document.getElementById("f-from"),
    to: document.getElementById("f-to")
  };
  fill(f.project, uniq(function (s) { return [s.project === null ? "(none)" : s.project]; }));
  fill(f.bank, uniq(function (s) { return s.banks.length ? s.banks : ["(no bank)"]; }));
  fill(f.route, uniq(function (s) { return s.routes; }));
  function matches(s) {
    var day = s.start ? s.start.slice(0, 10) : null;
    if (f.project.value && (s.project === null ? "(none)" : s.project) !== f.project.value) return false;
    if (f.bank.value && (s.banks.length ? s.banks : ["(no bank)"]).indexOf(f.bank.value) < 0) return false;
    if (f.route.value && s.routes.indexOf(f.route.value) < 0) return false;
    if (f.from.value && (!day || day < f.from.value)) return false;
    if (f.to.value && (!day || day > f.to.value)) return false;
    return true;
  }
  function highlighted(text) {
    var pre = el("pre", "text"), last = 0, m;
    MARK.lastIndex = 0;
    while ((m = MARK.exec(text)) !== null) {
      pre.appendChild(document.createTextNode(text.slice(last, m.index)));
      pre.appendChild(el("mark", "redacted", m[0]));
      last = m.index + m[0].length;
    }
    pre.appendChild(document.createTextNode(text.slice(last)));
    return pre;
  }
  function chunkView(c) {
    var box = el("div", "chunk" + (c.banks.length ? "" : " skip"));
    var head = el("button", "chunk-head",
      c.seg + " #" + c.i + "  entries " + c.first + " \u2026 " + c.last + "  \u00b7  " + c.route +
      " (" + (c.conf === null ? "?" : c.conf) + ")  \u00b7  " + c.status);
    box.appendChild(head);
    var body = null;
    head.addEventListener("click", function () {
      if (body) { body.hidden = !body.hidden; return; }
      body = el("div", "chunk-body");
      body.appendChild(el("div", "meta reason", "reason: " + c.reason));
      if (c.skip) body.appendChild(el("div", "meta skip-reason", "skipped: " + c.skip));
      body.appendChild(el("div", "meta banks", "banks: " + (c.banks.join(", ") || "none") + "  \u00b7  " +
        c.bytes + " bytes"));
      var tags = el("div", "meta tags");
      c.tags.forEach(function (t) { tags.appendChild(el("span", "tag", t)); });
      body.appendChild(tags);
      var red = Object.keys(c.red);
      if (red.length) body.appendChild(el("div", "meta redactions", "redactions: " + red.map(function (k) {
        return k + " \u00d7" + c.red[k]; }).join(", ")));
      if (c.content !== null) body.appendChild(highlighted(c.content));
      else body.appendChild(el("div", "meta muted", "text not kept (import with --include-content)"));
      box.appendChild(body);
    });
    return box;
  }
  function sessionView(s) {
    var box = el("div", "session");
    box.dataset.session = s.id;
    var head = el("button", "session-head", (s.start ? s.start.slice(0, 16).replace("T", " ") + "  " : "") +
      (s.project === null ? "(no project)" : s.project) + "  \u00b7  " + s.n + " chunk(s), " +
      s.bytes + " bytes  \u00b7  " + (s.banks.join(", ") || "no bank") + "  \u00b7  " + s.file);
    box.appendChild(head);
    var list = null;
    head.addEventListener("click", function () {
      if (list) { list.hidden = !list.hidden; return; }
      list = el("div", "chunks");
      chunksOf(s).forEach(function (c) { list.appendChild(chunkView(c)); });
      box.appendChild(list);
    });
    return box;
  }
  var root = document.getElementById("sessions"), count = document.getElementById("count");
  var prev = document.getElementById("prev"), next = document.getElementById("next");
  function render() {
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    root.replaceChildren();
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (s) { root.appendChild(sessionView(s)); });
    var chunks = 0;
    shown.forEach(function (s) { chunks += s.n; });
    count.textContent = shown.length + " session(s), " + chunks + " chunk(s); page " + (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function apply() { shown = DATA.sessions.filter(matches); page = 0; render(); }
  Object.keys(f).forEach(function (k) { f[k].addEventListener("change", apply); });
  prev.addEventListener("click", function () { page -= 1; render(); });
  next.addEventListener("click", function () { page += 1; render(); });
  apply();
  document.body.dataset.ready = "1";
})();
"""
