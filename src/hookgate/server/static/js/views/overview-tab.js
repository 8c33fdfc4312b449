// Overview: the hook's summary card and a chart of its recent decisions.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { formatTime, relativeTime, stableJson } from "../format.js";
import { breakerBadge } from "../ui/badges.js";
import { decisionChart } from "../ui/chart.js";
import { loadingState, errorState, emptyState } from "../ui/states.js";

const CHART_SAMPLE = 200;

export function renderOverview(panel, hook, ctx) {
  const chartSlot = h("div", { class: "chart-slot" }, loadingState("Loading recent decisions…"));
  const row = (label, value) => [h("dt", { text: label }), h("dd", {}, value ?? h("span", { class: "muted", text: "—" }))];
  const code = (text) => (text ? h("code", { text }) : null);
  mount(
    panel,
    h(
      "div",
      { class: "overview" },
      h(
        "section",
        { class: "card summary-card", "aria-labelledby": "summary-title" },
        h("h2", { id: "summary-title", text: "Summary" }),
        h(
          "dl",
          { class: "summary" },
          hook.description ? row("What it does", h("span", { class: "hook-description", text: hook.description })) : null,
          row("Event", hook.event),
          row("Handler", hook.handler_type),
          row("Scope", hook.scope === "agent" ? `agent (${(hook.agent_ids || []).join(", ")})` : hook.scope),
          row("Matcher", code(hook.matcher)),
          row("if_expr", code(hook.if_expr)),
          row("Priority", String(hook.priority ?? 0)),
          row("Timeout", `${hook.timeout_ms} ms, then ${hook.on_timeout}`),
          row("On error", hook.on_error),
          row("Approval", hook.approval ? `${hook.approval.required ? "always asks a person" : "when the hook asks"}; ${hook.approval.timeout_ms} ms to decide, then ${hook.approval.on_timeout}` : null),
          row("Version", String(hook.version ?? 1)),
          row("Source", hook.source),
          row("Changed", provenance(hook)),
          row("Breaker", h("span", {}, breakerBadge(hook.breaker), hook.breaker?.last_fault && hook.breaker.state !== "closed" ? h("span", { class: "fault", text: ` ${hook.breaker.last_fault}` }) : null)),
          row("Id", code(hook.id)),
        ),
      ),
      h(
        "section",
        { class: "card", "aria-labelledby": "decisions-title" },
        h("h2", { id: "decisions-title", text: "Recent decisions" }),
        chartSlot,
      ),
      h(
        "section",
        { class: "card config-card", "aria-labelledby": "config-title" },
        h("h2", { id: "config-title", text: "Handler settings" }),
        h("pre", { class: "json", text: stableJson(maskSecrets(hook.config || {})) }),
      ),
    ),
  );
  loadChart(chartSlot, hook, ctx);
}

async function loadChart(slot, hook, ctx) {
  try {
    const page = await api.history(hook.id, { limit: CHART_SAMPLE });
    if (!ctx.alive()) return;
    if (!page.executions.length) {
      mount(slot, emptyState("No executions yet", "Decisions appear here once agents dispatch events this hook matches."));
      return;
    }
    const n = page.executions.length;
    mount(slot, decisionChart(page.executions), h("p", { class: "muted", text: `Last ${n} execution${n === 1 ? "" : "s"}${page.nextCursor ? " (older ones in History)" : ""}.` }));
  } catch (err) {
    if (ctx.alive()) mount(slot, errorState(err, () => loadChart(slot, hook, ctx)));
  }
}

/** "created by A · changed by B at T": who made the hook and who last changed it (the key's
 * name and id prefix, "system" for builtins); a side the gateway did not record says no name. */
function provenance(hook) {
  if (!hook.created_at && !hook.updated_at) return null;
  const created = hook.created_by ? `created by ${hook.created_by}` : `created ${formatTime(hook.created_at)}`;
  const changed = `changed${hook.updated_by ? ` by ${hook.updated_by}` : ""} at ${formatTime(hook.updated_at)}`;
  return h("span", { class: "provenance", title: `created ${formatTime(hook.created_at)} (${relativeTime(hook.created_at)}); changed ${relativeTime(hook.updated_at)}`, text: `${created} · ${changed}` });
}

/** Secret header values never reach the panel; show that one is stored. */
function maskSecrets(config) {
  if (!config.headers || typeof config.headers !== "object") return config;
  const headers = Object.fromEntries(Object.entries(config.headers).map(([k, v]) => [k, v === null ? "(secret, stored)" : v]));
  return { ...config, headers };
}
