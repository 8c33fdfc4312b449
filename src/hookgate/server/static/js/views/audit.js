// Audit: executions across every hook of the caller's scope (deleted hooks included),
// filtered by session, agent, tool, decision, hook (id or name), event and time; paged by cursor;
// exported as CSV or JSON (the gateway streams the file).
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { storedKey, session, viewedTenant } from "../session.js";
import { auditFilterForm, cursorPages } from "../ui/cursor-pages.js";
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
  const results = h("div", { class: "audit-results" });
  const status = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  const { form, read } = auditFilterForm({ prefix: "audit", ariaLabel: "Filter the audit log", textFilters: TEXT_FILTERS, decisions: DECISIONS, route, until: true });
  let filters = read();
  const exportButton = (format) =>
    h("button", {
      type: "button",
      class: "btn btn-small",
      text: `Export ${format.toUpperCase()}`,
      onclick: async () => {
        status.textContent = `Preparing the ${format.toUpperCase()} export…`;
        try {
          const blob = await api.exportAudit(read(), format, storedKey());
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
  const pages = cursorPages({
    results,
    ctx,
    loadingText: "Loading the audit log…",
    pagerLabel: "Audit pages",
    fetchPage: (cursor) => api.auditPage(filters, { cursor, limit: PAGE_SIZE }),
    itemsOf: (page) => page.executions,
    table: (rows) => executionTable(rows, { acrossHooks: true }),
    empty: () => ["No executions match", "Rows appear when agents dispatch events; try fewer filters."],
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    filters = read();
    pages.restart();
  });
  mount(
    main,
    h("h1", { tabIndex: -1, text: "Audit" }),
    auditSwitch("executions"),
    h("p", { class: "muted", text: `${auditScope()}, newest first. Deleted hooks keep their history.` }),
    form,
    h("div", { class: "toolbar" }, exportButton("csv"), exportButton("json"), status),
    results,
  );
  await pages.load();
}

function auditScope() {
  if (viewedTenant()) return `Every hook execution of tenant ${viewedTenant()}`;
  return session.isMaster ? "Every hook execution of every tenant" : "Every hook execution of your tenant";
}
