// Audit by dispatch: one record per agent action (also when no hook matched), filtered and
// paged by cursor; one record opens as a trace: each hook in chain order with its answer, the
// final decision and the approval (who decided, when). Times are shown as ISO 8601 (UTC),
// whatever form the gateway sent them in.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { session, atLeast, viewedTenant } from "../session.js";
import { dispatchHref, hookHref } from "../router.js";
import { formatDuration, isoTime, shortId } from "../format.js";
import { decisionBadge, shadowBadge } from "../ui/badges.js";
import { loadingState, errorState } from "../ui/states.js";
import { auditFilterForm, cursorPages } from "../ui/cursor-pages.js";

const PAGE_SIZE = 25;
const TEXT_FILTERS = [
  ["sessionId", "Session"],
  ["agentId", "Agent"],
  ["toolName", "Tool"],
];
const DECISIONS = ["", "allow", "block", "ask"];

/** The two ways to read the audit log; both pages show it. */
export function auditSwitch(current) {
  const link = (href, text, name) => h("a", { href, text, "aria-current": current === name ? "page" : null });
  return h(
    "nav",
    { class: "audit-switch", "aria-label": "Audit log by" },
    link("#/audit", "Hook executions", "executions"),
    link("#/audit/dispatches", "Dispatches", "dispatches"),
    // The chain check is an admin's walk over every record: offered to admins only.
    atLeast("admin") ? link("#/audit/chain", "Integrity", "chain") : null,
  );
}

export async function renderDispatches(main, route, ctx) {
  if (route.id) return renderTrace(main, route.id, ctx);
  return renderDispatchList(main, route, ctx);
}

const isoCell = (value) => h("time", { dateTime: isoTime(value), text: isoTime(value) });

async function renderDispatchList(main, route, ctx) {
  const results = h("div", { class: "dispatch-results" });
  const { form, read } = auditFilterForm({ prefix: "dispatch", ariaLabel: "Filter dispatches", textFilters: TEXT_FILTERS, decisions: DECISIONS, route });
  let filters = read();
  const pages = cursorPages({
    results,
    ctx,
    loadingText: "Loading dispatches…",
    pagerLabel: "Dispatch pages",
    fetchPage: (cursor) => api.dispatchPage(filters, { cursor, limit: PAGE_SIZE }),
    itemsOf: (page) => page.dispatches,
    table: dispatchTable,
    empty: () => ["No dispatches match", "A record appears for every event an agent dispatches; try fewer filters."],
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    filters = read();
    pages.restart();
  });
  mount(
    main,
    h("h1", { tabIndex: -1, text: "Audit" }),
    auditSwitch("dispatches"),
    h("p", { class: "muted", text: `${dispatchScope()}, newest first: one record per dispatch, also when no hook matched.` }),
    form,
    results,
  );
  await pages.load();
}

function dispatchScope() {
  if (viewedTenant()) return `Every dispatch of tenant ${viewedTenant()}`;
  return session.isMaster ? "Every dispatch of every tenant" : "Every dispatch of your tenant";
}

function dispatchTable(dispatches) {
  const columns = ["When", "Decision", "Event", "Tool", "Agent", "Session", "Hooks", ""];
  const cell = (label, ...content) => h("td", { "data-label": label }, content);
  const code = (text) => (text ? h("code", { text }) : "—");
  return h(
    "table",
    { class: "history-table dispatch-table" },
    h("thead", {}, h("tr", {}, columns.map((t) => h("th", { scope: "col", text: t })))),
    h(
      "tbody",
      {},
      dispatches.map((d) =>
        h(
          "tr",
          { class: "dispatch-row", dataset: { dispatchId: d.id, decision: d.decision } },
          cell("When", isoCell(d.created_at)),
          cell("Decision", decisionBadge(d.decision), d.approval ? [" ", decisionBadge("ask")] : null),
          cell("Event", d.event),
          cell("Tool", code(d.tool_name)),
          cell("Agent", code(d.agent_id)),
          cell("Session", code(d.session_id)),
          cell("Hooks", String(d.matched ?? (d.hooks || []).length)),
          h("td", { class: "row-actions" }, h("a", { class: "btn btn-small", href: dispatchHref(d.id), text: "Trace", "aria-label": `Trace of dispatch ${d.id}` })),
        ),
      ),
    ),
  );
}

async function renderTrace(main, dispatchId, ctx) {
  const body = h("div", { class: "trace" }, loadingState("Loading the dispatch…"));
  mount(
    main,
    h("h1", { tabIndex: -1, text: `Dispatch ${shortId(dispatchId)}` }),
    h("p", {}, h("a", { href: "#/audit/dispatches", text: "← All dispatches" })),
    body,
  );
  let d;
  try {
    d = await api.getDispatch(dispatchId);
  } catch (err) {
    if (ctx.alive()) mount(body, errorState(err, () => renderTrace(main, dispatchId, ctx)));
    return;
  }
  if (!ctx.alive()) return;
  const fact = (label, value) => [h("dt", { text: label }), h("dd", {}, value ?? "—")];
  const code = (text) => (text ? h("code", { text }) : "—");
  mount(
    body,
    h(
      "dl",
      { class: "facts trace-facts" },
      fact("Dispatch", code(d.id)),
      fact("Time", isoCell(d.created_at)),
      fact("Event", d.event),
      fact("Tool", code(d.tool_name)),
      fact("Agent", code(d.agent_id)),
      fact("Session", code(d.session_id)),
      d.tenant_id ? fact("Tenant", code(d.tenant_id)) : null,
      fact("Input size", d.input_size == null ? "—" : `${d.input_size} bytes`),
      d.refused ? fact("Refused", d.refused) : null,
    ),
    h("h2", { text: "Hooks in chain order" }),
    (d.hooks || []).length
      ? h("ol", { class: "trace-steps" }, d.hooks.map(traceStep))
      : h("p", { class: "muted", text: "No hook matched this dispatch." }),
    h(
      "p",
      { class: "trace-final" },
      h("strong", { text: "Final decision: " }),
      decisionBadge(d.decision),
      ` after ${formatDuration(d.duration_ms)}`,
      d.reason ? [" — ", h("span", { class: "reason-text", text: d.reason })] : null,
    ),
    d.approval ? approvalFacts(d.approval) : null,
  );
}

function traceStep(step) {
  const name = step.hook_name || shortId(step.hook_id);
  return h(
    "li",
    { class: "trace-step", dataset: { decision: step.decision || "none", mode: step.mode || "enforce" } },
    step.hook_id ? h("a", { href: hookHref(step.hook_id), text: name }) : h("span", { text: name }),
    " ",
    h("span", { class: "muted", text: `${step.handler_type || ""} v${step.hook_version ?? "?"}` }),
    " ",
    decisionBadge(step.decision),
    step.mode === "shadow" ? [" ", shadowBadge()] : null,
    ` ${formatDuration(step.duration_ms)}`,
    step.reason ? [" — ", h("span", { class: "reason-text", text: step.reason })] : null,
    step.error ? [" — ", h("span", { class: "error-text", text: step.error })] : null,
  );
}

function approvalFacts(a) {
  const fact = (label, value) => [h("dt", { text: label }), h("dd", {}, value ?? "—")];
  return h(
    "section",
    { class: "trace-approval", "aria-label": "Approval" },
    h("h2", { text: "Approval" }),
    h(
      "dl",
      { class: "facts" },
      fact("Status", h("span", { class: `approval-status status-${a.status}`, text: a.status })),
      fact("Asked by hook", a.hook ? h("code", { text: typeof a.hook === "string" ? a.hook : a.hook.name || a.hook.id || JSON.stringify(a.hook) }) : "—"),
      fact("Decided by", a.decided_by ? h("code", { text: a.decided_by }) : "—"),
      fact("Decided at", a.decided_at ? isoCell(a.decided_at) : "—"),
      fact("Expires at", a.expires_at ? isoCell(a.expires_at) : "—"),
      a.comment ? fact("Comment", a.comment) : null,
      a.input_edited ? fact("Input", "edited by the person before approving") : null,
      fact("Approval", h("a", { href: `#/approvals/${encodeURIComponent(a.id)}`, text: shortId(a.id) })),
    ),
  );
}
