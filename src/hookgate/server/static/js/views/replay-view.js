// Replay: what a candidate hook (or hooks file) would have decided on the tenant's recorded
// traffic. The form and the report; used by the hook's Replay tab and the Import page.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { dispatchHref } from "../router.js";
import { decisionBadge } from "../ui/badges.js";
import { describeError } from "../ui/states.js";

const WINDOWS = [
  ["1h", "Last hour", 3600e3],
  ["24h", "Last 24 hours", 86400e3],
  ["7d", "Last 7 days", 7 * 86400e3],
  ["30d", "Last 30 days", 30 * 86400e3],
];

/** A window picker and a Replay button; `candidate()` gives `{hook}` or `{content}` (or
 *  throws an Error whose message is shown). The report is mounted into `result`. */
export function replayControls(candidate, result, ctx, { label = "Replay" } = {}) {
  const windowPicker = h(
    "select",
    { name: "window", "aria-label": "Recorded traffic to replay" },
    WINDOWS.map(([value, text]) => h("option", { value, text, selected: value === "7d" })),
  );
  const button = h("button", { type: "button", class: "btn btn-primary", text: label });
  button.addEventListener("click", async () => {
    let chosen;
    try {
      chosen = candidate();
    } catch (err) {
      mount(result, h("p", { class: "error-text", role: "alert", text: err.message }));
      return;
    }
    const span = WINDOWS.find(([value]) => value === windowPicker.value)[2];
    const since = new Date(Date.now() - span).toISOString();
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    mount(result, h("p", { class: "state state-loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), "Replaying…"));
    try {
      const report = await api.replay(chosen, { since });
      if (ctx.alive()) mount(result, replayReport(report));
    } catch (err) {
      if (ctx.alive()) mount(result, h("div", { class: "state state-error", role: "alert" }, h("p", { class: "state-title", text: "The replay could not run" }), h("p", { text: describeError(err) })));
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  });
  return h("div", { class: "form-actions replay-controls" }, windowPicker, button);
}

/** The report: a summary, the changes (each dispatch links to its trace), shadow hooks. */
export function replayReport(r) {
  const summary = `Replayed ${r.replayed} dispatches: ${r.changed} would change, ${r.unknown} unknown, ${r.unreadable} unreadable.`;
  const shadow = Object.entries(r.shadow || {});
  return h(
    "section",
    { class: "card replay-report", "aria-labelledby": "replay-title", dataset: { changed: String(r.changed) } },
    h("h2", { id: "replay-title", text: "Replay" }),
    h("p", { class: "replay-summary", role: "status", text: summary }),
    r.complete ? null : h("p", { class: "muted", text: `Stopped early: ${r.stopped}.` }),
    r.changes.length
      ? h(
          "table",
          { class: "replay-table" },
          h("thead", {}, h("tr", {}, ["Dispatch", "When", "Tool", "Before", "After", "Reason"].map((t) => h("th", { scope: "col", text: t })))),
          h(
            "tbody",
            {},
            r.changes.map((c) =>
              h(
                "tr",
                { dataset: { dispatch: c.dispatch_id, after: c.after } },
                h("td", { "data-label": "Dispatch" }, h("a", { href: dispatchHref(c.dispatch_id), class: "mono", text: c.dispatch_id.slice(0, 13) })),
                h("td", { "data-label": "When", text: c.created_at }),
                h("td", { "data-label": "Tool", text: c.tool_name || "—" }),
                h("td", { "data-label": "Before" }, decisionBadge(c.before)),
                h("td", { "data-label": "After" }, decisionBadge(c.after)),
                h("td", { "data-label": "Reason", class: "reason", text: c.reason || "" }),
              ),
            ),
          ),
        )
      : h("p", { class: "muted", text: "No recorded dispatch would be decided differently." }),
    r.changes_left_off ? h("p", { class: "muted", text: `${r.changes_left_off} more changes not listed.` }) : null,
    shadow.length
      ? h(
          "ul",
          { class: "replay-shadow" },
          shadow.map(([name, counts]) => h("li", { text: `Shadow hook ${name}: ${Object.entries(counts).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", ")}` })),
        )
      : null,
  );
}
