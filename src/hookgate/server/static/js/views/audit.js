// Audit: executions across every hook of the caller's scope (deleted hooks included),
// filtered by session, agent, tool, decision, hook (id or name), event and time; paged by cursor;
// exported as CSV or JSON (the gateway streams the file).
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { storedKey, session, viewedTenant } from "../session.js";
import { allEvents } from "../catalogue.js";
import { loadingState, errorState, emptyState } from "../ui/states.js";
import { executionTable } from "./history-tab.js";
import { auditSwitch } from "./dispatches.js";

const PAGE_SIZE = 25;
const TEXT_FILTERS = [
  ["sessionId", "Session"],
  ["agentId", "Agent"],
  ["toolName", "Tool"],
  ["hookId", "Hook id"],
  ["hookName", "Hook name"],
];
const DECISIONS = ["", "allow", "block", "ask", "error", "timeout"];

export async function renderAudit(main, route, ctx) {
  const filters = {};
  const state = { cursors: [null], page: 0 };
  const results = h("div", { class: "audit-results" });
  const status = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  const field = (name, label, control) => h("div", { class: "filter" }, h("label", { class: "filter-label", for: `audit-${name}`, text: label }), control);
  const inputs = TEXT_FILTERS.map(([name, label]) => field(name, label, h("input", { id: `audit-${name}`, name, type: "search", value: route.query[name] || "", autocomplete: "off" })));
  const events = allEvents().map((e) => e.name);
  const event = h("select", { id: "audit-event", name: "event" }, ["", ...events].map((v) => h("option", { value: v, text: v || "All events" })));
  const decision = h("select", { id: "audit-decision", name: "decision" }, DECISIONS.map((v) => h("option", { value: v, text: v || "All decisions" })));
  const since = h("input", { id: "audit-since", name: "since", type: "datetime-local" });
  const until = h("input", { id: "audit-until", name: "until", type: "datetime-local" });
  const form = h(
    "form",
    { class: "filters audit-filters", "aria-label": "Filter the audit log" },
    inputs,
    field("event", "Event", event),
    field("decision", "Decision", decision),
    field("since", "From", since),
    field("until", "Until", until),
    h("button", { type: "submit", class: "btn", text: "Apply" }),
  );
  const read = () => {
    for (const el of form.querySelectorAll("input, select")) {
      let value = el.value.trim();
      if (value && el.type === "datetime-local") value = new Date(value).toISOString();
      filters[el.name] = value || null;
    }
  };
  const exportButton = (format) =>
    h("button", {
      type: "button",
      class: "btn btn-small",
      text: `Export ${format.toUpperCase()}`,
      onclick: async () => {
        read();
        status.textContent = `Preparing the ${format.toUpperCase()} export…`;
        try {
          const blob = await api.exportAudit(filters, format, storedKey());
          const link = h("a", { href: URL.createObjectURL(blob), download: `hookgate-audit.${format}` });
          document.body.append(link);
          link.click();
          link.remove();
          status.textContent = `Exported the filtered rows as ${format.toUpperCase()}.`;
        } catch (err) {
          status.textContent = String(err.message || err);
        }
      },
    });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    state.cursors = [null];
    state.page = 0;
    load();
  });
  const load = async () => {
    read();
    mount(results, loadingState("Loading the audit log…"));
    let page;
    try {
      page = await api.auditPage(filters, { cursor: state.cursors[state.page], limit: PAGE_SIZE });
    } catch (err) {
      if (ctx.alive()) mount(results, errorState(err, load));
      return;
    }
    if (!ctx.alive()) return;
    if (page.nextCursor) state.cursors[state.page + 1] = page.nextCursor;
    if (!page.executions.length && state.page === 0) {
      mount(results, emptyState("No executions match", "Rows appear when agents dispatch events; try fewer filters."));
      return;
    }
    mount(
      results,
      executionTable(page.executions, { acrossHooks: true }),
      h(
        "nav",
        { class: "pager", "aria-label": "Audit pages" },
        h("button", { type: "button", class: "btn btn-small", text: "Newer", disabled: state.page === 0, onclick: () => { state.page -= 1; load(); } }),
        h("span", { class: "muted", text: `Page ${state.page + 1}` }),
        h("button", { type: "button", class: "btn btn-small", text: "Older", disabled: !page.nextCursor, onclick: () => { state.page += 1; load(); } }),
      ),
    );
  };
  mount(
    main,
    h("h1", { tabIndex: -1, text: "Audit" }),
    auditSwitch("executions"),
    h("p", { class: "muted", text: `${auditScope()}, newest first. Deleted hooks keep their history.` }),
    form,
    h("div", { class: "toolbar" }, exportButton("csv"), exportButton("json"), status),
    results,
  );
  await load();
}

function auditScope() {
  if (viewedTenant()) return `Every hook execution of tenant ${viewedTenant()}`;
  return session.isMaster ? "Every hook execution of every tenant" : "Every hook execution of your tenant";
}
