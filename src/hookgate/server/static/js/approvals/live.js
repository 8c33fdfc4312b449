// Live approvals: one long-poll loop (approvals.watch over the WebSocket) keeps the pending
// count and wakes whoever listens (the header badge, the Approvals view) when anything
// changed. It runs while the socket is up; main.js restarts it after a reconnect.
import { gateway } from "../api.js";

const WATCH_S = 25;
const listeners = new Set();
let generation = 0;
export const live = { revision: null, pendingCount: 0 };

/** Call `fn(live)` now and after every change; returns the unsubscribe function. */
export function onApprovalsChange(fn) {
  listeners.add(fn);
  fn(live);
  return () => listeners.delete(fn);
}

function publish() {
  for (const fn of [...listeners]) {
    try {
      fn(live);
    } catch (err) {
      console.error(err);
    }
  }
}

/** Record what a list call just saw (a list is fresher than the last watch answer). */
export function noteListed(payload) {
  if (typeof payload.pendingCount === "number") live.pendingCount = payload.pendingCount;
  if (typeof payload.revision === "number") live.revision = payload.revision;
}

export function startApprovalWatch() {
  generation += 1;
  const mine = generation;
  (async () => {
    try {
      const first = await gateway.call("approvals.list", { status: "pending", limit: 1 });
      noteListed(first);
      publish();
      while (mine === generation && gateway.connected) {
        const answer = await gateway.call(
          "approvals.watch",
          { revision: live.revision, timeoutS: WATCH_S },
          { timeoutMs: (WATCH_S + 10) * 1000 },
        );
        if (mine !== generation) return;
        live.revision = answer.revision;
        live.pendingCount = answer.pendingCount;
        if (answer.changed) publish();
      }
    } catch (err) {
      // The socket dropped (main.js reconnects and starts a new loop) or the gateway keeps
      // no approvals: the badge stays as it was.
      if (err?.code !== "DISCONNECTED") console.warn("approvals watch stopped:", err);
    }
  })();
}

export function stopApprovalWatch() {
  generation += 1;
}
