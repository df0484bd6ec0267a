// What pi itself makes of a session file, as JSON on stdout: used by tests/test_pi_conformance.py.
//   node session_view.mjs <pi package dir> view <session file>     -> {leafId, context, branch, entries}
//   node session_view.mjs <pi package dir> append <session file>   -> appends a user and an assistant message
// The file is opened with pi's own SessionManager (which may rewrite an old-version file: pass a copy).
import { pathToFileURL } from "node:url";
import { join, dirname } from "node:path";

const [packageDir, command, file] = process.argv.slice(2);
const entry = join(packageDir, "node_modules", "@mariozechner", "pi-coding-agent", "dist", "core", "session-manager.js");
const { SessionManager } = await import(pathToFileURL(entry).href);

const manager = SessionManager.open(file, dirname(file));
if (command === "append") {
  const now = Date.now();
  manager.appendMessage({ role: "user", content: [{ type: "text", text: "appended by pi" }], timestamp: now });
  manager.appendMessage({
    role: "assistant", content: [{ type: "text", text: "pi answered" }], api: "test", provider: "test",
    model: "test", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: now,
  });
}
const context = manager.buildSessionContext();
process.stdout.write(JSON.stringify({
  leafId: manager.getLeafId(),
  context: context.messages,
  branch: manager.getBranch(),
  entries: manager.getEntries(),
}));
