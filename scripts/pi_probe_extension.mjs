// A probe extension for scripts/record_extensions.py (scenario group "pi-probe"): it records what pi 0.73.1 itself
// hands an extension, the facts pi-hindsight (luxus) builds its retain cursor and session keys on, since luxus's
// own code could not be installed here. It writes one JSON line per event to $PI_PROBE_OUT and changes nothing.
import { appendFileSync } from "node:fs";
import { homedir } from "node:os";

export default function probe(pi) {
  const out = process.env.PI_PROBE_OUT;
  const write = (record) => { if (out) appendFileSync(out, `${JSON.stringify(record)}\n`, "utf8"); };
  const where = (ctx) => ({
    cwd: ctx.cwd,
    homedir: homedir(),
    sessionFile: ctx.sessionManager.getSessionFile(),
    sessionDir: ctx.sessionManager.getSessionDir(),
    sessionId: ctx.sessionManager.getSessionId(),
    leafId: ctx.sessionManager.getLeafId(),
  });
  pi.on("session_start", async (_event, ctx) => write({ event: "session_start", ...where(ctx) }));
  pi.on("message_end", async (event, ctx) => write({
    event: "message_end",
    messageKeys: Object.keys(event.message ?? {}).sort(),
    role: event.message?.role,
    leafId: ctx.sessionManager.getLeafId(),
  }));
  pi.on("agent_end", async (event, ctx) => write({
    event: "agent_end",
    ...where(ctx),
    // luxus fingerprints {id, role, timestamp, content, ...} of these: do they carry the session entry ids?
    messages: (event.messages ?? []).map((m) => ({ keys: Object.keys(m).sort(), id: m.id, role: m.role,
      timestamp: m.timestamp })),
    branchEntryIds: ctx.sessionManager.getBranch().filter((e) => e.type === "message").map((e) => e.id),
  }));
}
