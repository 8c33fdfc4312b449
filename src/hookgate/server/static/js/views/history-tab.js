// History: the hook's executions, newest first, filtered and paged by cursor.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { session } from "../session.js";
import { formatDuration, formatTime, relativeTime, stableJson, shortId } from "../format.js";
import { decisionBadge } from "../ui/badges.js";
import { cursorPages } from "../ui/cursor-pages.js";

const PAGE_SIZE = 20;
const RANGES = [
  ["", "Any time"],
  ["1h", "Last hour"],
  ["24h", "Last 24 hours"],
  ["7d", "Last 7 days"],
];
const RANGE_MS = { "1h": 3600e3, "24h": 86400e3, "7d": 7 * 86400e3 };

export function renderHistory(panel, hook, ctx) {
  const state = { decision: "", range: "" };
  const results = h("div", { class: "history-results" });
  const decision = h(
    "select",
    { name: "decision", id: "history-decision" },
    [["", "All decisions"], ["allow", "allow"], ["block", "block"], ["ask", "ask"], ["error", "error"], ["timeout", "timeout"]].map(([v, t]) => h("option", { value: v, text: t })),
  );
  const range = h("select", { name: "range", id: "history-range" }, RANGES.map(([v, t]) => h("option", { value: v, text: t })));
  const filters = h(
    "form",
    { class: "filters history-filters", "aria-label": "Filter executions" },
    h("div", { class: "filter" }, h("label", { class: "filter-label", for: "history-decision", text: "Decision" }), decision),
    h("div", { class: "filter" }, h("label", { class: "filter-label", for: "history-range", text: "Time" }), range),
    h("button", { type: "submit", class: "btn", text: "Refresh" }),
  );
  const pages = cursorPages({
    results,
    ctx,
    loadingText: "Loading executions…",
    pagerLabel: "History pages",
    fetchPage: (cursor) => {
      const since = state.range ? new Date(Date.now() - RANGE_MS[state.range]).toISOString() : null;
      return api.history(hook.id, { cursor, limit: PAGE_SIZE, decision: state.decision || null, since });
    },
    itemsOf: (page) => page.executions,
    table: (rows) => executionTable(rows),
    empty: () => {
      const filtered = state.decision || state.range;
      return filtered
        ? ["No executions match", "Try another decision or time range."]
        : ["No executions yet", "Rows appear when agents dispatch events this hook matches. Dry-run tests are not recorded."];
    },
  });
  const restart = () => {
    state.decision = decision.value;
    state.range = range.value;
    pages.restart();
  };
  filters.addEventListener("change", restart);
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    restart();
  });
  mount(panel, filters, results);
  pages.load();
}

// The per-hook tab leaves out the hook and the event (the same on every row); the Audit view
// across hooks shows both.
export function executionTable(executions, { acrossHooks = false } = {}) {
  const columns = ["", "When", "Decision", ...(acrossHooks ? ["Hook", "Event"] : []), "Tool", "Reason", "Agent", "Session", "Duration"];
  return h(
    "table",
    { class: "history-table" },
    h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col", text: t })))),
    executions.map((e) => executionRows(e, columns.length, acrossHooks)),
  );
}

// Each execution is its own <tbody>: the summary row and its (hidden) detail row.
function executionRows(e, width, acrossHooks) {
  const detailId = `exec-${e.id}`;
  const detail = h("tr", { class: "exec-detail", id: detailId, hidden: true }, h("td", { colSpan: width }, detailView(e)));
  const toggle = h("button", {
    type: "button",
    class: "btn btn-small btn-quiet expand",
    "aria-expanded": "false",
    "aria-controls": detailId,
    "aria-label": `Details of the execution at ${formatTime(e.created_at)}`,
    text: "▸",
    onclick: () => {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "▾" : "▸";
      detail.hidden = !open;
    },
  });
  const cell = (label, ...content) => h("td", { "data-label": label }, content);
  const code = (text) => (text ? h("code", { text }) : "—");
  const why = [
    e.reason ? h("span", { class: "reason-text", text: e.reason }) : null,
    e.error ? h("span", { class: "error-text", text: e.error }) : null,
  ].filter(Boolean);
  const hookLabel = e.hook_name || shortId(e.hook_ref || e.hook_id || "");
  return h(
    "tbody",
    { class: "exec", dataset: { decision: e.decision, executionId: e.id } },
    h(
      "tr",
      { class: "exec-row" },
      h("td", { class: "expand-cell" }, toggle),
      cell("When", h("time", { dateTime: e.created_at, title: formatTime(e.created_at), text: relativeTime(e.created_at) })),
      cell("Decision", decisionBadge(e.decision)),
      acrossHooks ? cell("Hook", e.hook_id || e.handler_type === "engine" ? hookLabel : h("span", { title: "This hook was deleted; its history is kept.", text: `${hookLabel} (deleted)` })) : null,
      acrossHooks ? cell("Event", e.event) : null,
      cell("Tool", code(e.tool_name)),
      cell("Reason", ...(why.length ? why : ["—"])),
      cell("Agent", code(e.agent_id)),
      cell("Session", code(e.session_id)),
      cell("Duration", formatDuration(e.duration_ms)),
    ),
    detail,
  );
}

function detailView(e) {
  const isAdmin = session.role === "admin";
  return h(
    "div",
    { class: "exec-detail-body" },
    h(
      "dl",
      { class: "facts" },
      h("dt", { text: "Execution" }), h("dd", {}, h("code", { text: e.id })),
      h("dt", { text: "Time" }), h("dd", { text: formatTime(e.created_at) }),
      h("dt", { text: "Hook version" }), h("dd", { text: String(e.hook_version ?? "—") }),
      e.hook_ref || e.hook_id ? [h("dt", { text: "Hook" }), h("dd", {}, h("code", { text: shortId(e.hook_ref || e.hook_id) }))] : null,
      h("dt", { text: "Event" }), h("dd", { text: e.event }),
    ),
    h("h3", { text: "Input (redacted excerpt)" }),
    h("pre", { class: "input-summary", text: e.input_summary || "—" }),
    h("h3", { text: "Metadata" }),
    h("pre", { class: "json metadata", text: stableJson(e.metadata || {}) }),
    isAdmin && e.error_detail
      ? [h("h3", { text: "Full error (decrypted, admins only)" }), h("pre", { class: "error-detail", text: e.error_detail })]
      : null,
    !isAdmin && e.error ? h("p", { class: "muted", text: "The full error is shown to admins only." }) : null,
  );
}
