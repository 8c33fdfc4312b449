// The hooks list: search and filters, badges, breaker state, and the enable switch per row.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { allEvents, HANDLER_TYPES } from "../catalogue.js";
import { session, canWrite, canTest, canPromote, whyNoTest, whyReadOnly, viewedTenant } from "../session.js";
import { exportButtons } from "./hook-files.js";
import { hookHref, listHref, navigate } from "../router.js";
import { eventBadge, handlerBadge, builtinBadge, breakerBadge, scopeLabel, shadowBadge } from "../ui/badges.js";
import { toggleSwitch } from "../ui/switch.js";
import { loadingState, emptyState, errorState, describeError } from "../ui/states.js";
import { toast } from "../ui/toast.js";
import { confirmDialog } from "../ui/dialog.js";
import { formatDuration, isoTime } from "../format.js";

const FIGURES_WINDOW = "24h";

const FILTERS = ["q", "event", "handler", "scope", "enabled", "mode"];

export function matchesFilters(hook, filters) {
  if (filters.event && hook.event !== filters.event) return false;
  if (filters.handler && hook.handler_type !== filters.handler) return false;
  if (filters.scope && hook.scope !== filters.scope) return false;
  if (filters.enabled === "on" && !hook.enabled) return false;
  if (filters.enabled === "off" && hook.enabled) return false;
  if (filters.mode && (hook.mode || "enforce") !== filters.mode) return false;
  if (filters.q) {
    const needle = filters.q.toLowerCase();
    const haystack = [hook.name, hook.id, hook.event, hook.handler_type, hook.matcher, hook.if_expr]
      .filter(Boolean)
      .join(" ")
      .toLowerCase();
    if (!haystack.includes(needle)) return false;
  }
  return true;
}

export async function renderHookList(root, route, ctx) {
  const filters = Object.fromEntries(FILTERS.map((k) => [k, route.query[k] || ""]));
  const results = h("div", { class: "list-results" }, loadingState("Loading hooks…"));
  mount(
    root,
    h(
      "div",
      { class: "page-head" },
      h("h1", { tabIndex: -1, text: viewedTenant() ? `Hooks · tenant ${viewedTenant()}` : "Hooks" }),
      h(
        "div",
        { class: "page-tools" },
        exportButtons(),
        // Writing is for admins: the controls are not offered to other roles.
        canWrite() ? h("a", { class: "btn btn-small", href: "#/hooks/import", text: "Import…" }) : null,
        canWrite() ? h("a", { class: "btn btn-primary", href: "#/hooks/new", text: "New hook" }) : null,
      ),
    ),
    filterBar(filters),
    results,
  );

  let hooks;
  // Figures are extra: the list shows without them when the gateway cannot give them.
  const figures = api.hookFigures(FIGURES_WINDOW).catch(() => null);
  try {
    hooks = await api.listHooks();
  } catch (err) {
    if (ctx.alive()) mount(results, errorState(err, () => renderHookList(root, route, ctx)));
    return;
  }
  if (!ctx.alive()) return;
  const shown = hooks.filter((hook) => matchesFilters(hook, filters));
  const anyFilter = FILTERS.some((k) => filters[k]);
  if (hooks.length === 0) {
    mount(
      results,
      emptyState(
        "No hooks yet",
        "Hooks run at points of the agent loop and decide allow or block.",
        canWrite() ? h("a", { class: "btn btn-primary", href: "#/hooks/new", text: "Create a hook" }) : null,
      ),
    );
    return;
  }
  if (shown.length === 0) {
    mount(
      results,
      emptyState(
        "No hooks match these filters",
        `${hooks.length} hook${hooks.length === 1 ? "" : "s"} hidden by the filters.`,
        h("a", { class: "btn", href: listHref(), text: "Clear filters" }),
      ),
    );
    return;
  }
  const figuresPayload = await figures;
  if (!ctx.alive()) return;
  const byHook = new Map((figuresPayload?.hooks || []).map((f) => [f.hook_id, f]));
  mount(
    results,
    h("p", { class: "list-count", "aria-live": "polite", text: countText(shown.length, hooks.length, anyFilter) }),
    h("p", { class: "muted figures-note", text: figuresNote(figuresPayload) }),
    hookTable(shown, byHook, () => renderHookList(root, route, ctx)),
  );
}

function figuresNote(payload) {
  if (!payload) return "Figures are not available from this gateway.";
  const sampled = payload.sampled ? ` (the newest ${payload.rows} executions)` : "";
  return `Fires, block rate, would-blocks of shadow hooks, p95 duration and last fired: executions of the last ${payload.window}${sampled}.`;
}

function countText(shown, total, filtered) {
  return filtered ? `${shown} of ${total} hooks` : `${total} hook${total === 1 ? "" : "s"}`;
}

function filterBar(filters) {
  const select = (name, label, options) =>
    h(
      "div",
      { class: "filter" },
      h("label", { class: "filter-label", for: `filter-${name}`, text: label }),
      h(
        "select",
        { name, id: `filter-${name}`, "data-filter": name },
        h("option", { value: "", text: "All" }),
        options.map(([value, text]) => h("option", { value, text, selected: filters[name] === value })),
      ),
    );
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter hooks" },
    h(
      "div",
      { class: "filter filter-search" },
      h("label", { class: "filter-label", for: "filter-q", text: "Search" }),
      h("input", {
        type: "search",
        id: "filter-q",
        name: "q",
        value: filters.q,
        placeholder: "Name, matcher, id…",
        autocomplete: "off",
      }),
    ),
    select("event", "Event", allEvents().map((e) => [e.name, e.name])),
    select("handler", "Handler", HANDLER_TYPES.map((t) => [t, t])),
    select("scope", "Scope", [["global", "global"], ["tenant", "tenant"], ["agent", "agent"]]),
    select("enabled", "Enabled", [["on", "Enabled"], ["off", "Disabled"]]),
    select("mode", "Mode", [["enforce", "Enforce"], ["shadow", "Shadow"]]),
  );
  const apply = () => {
    const data = Object.fromEntries(new FormData(form));
    navigate(listHref(data));
  };
  let timer = null;
  form.addEventListener("change", apply);
  form.addEventListener("input", (event) => {
    if (event.target.name !== "q") return;
    clearTimeout(timer);
    timer = setTimeout(apply, 250);
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    apply();
  });
  return form;
}

function hookTable(hooks, byHook, reload) {
  return h(
    "table",
    { class: "hook-table" },
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ["Hook", "Event", "Handler", "Scope", "Mode", "Matcher", "Priority", "Fires", "Block rate", "Would block", "p95", "Last fired", "Breaker", "Enabled", ""].map((t) =>
          h("th", { scope: "col", text: t }),
        ),
      ),
    ),
    h("tbody", {}, hooks.map((hook) => hookRow(hook, byHook.get(hook.id), reload))),
  );
}

function hookRow(hook, figures, reload) {
  const readOnly = whyReadOnly(hook);
  const toggleBlocked = whyReadOnly(hook, { toggle: true });
  const name = hook.name || `${hook.handler_type} hook ${String(hook.id).slice(0, 8)}`;
  const cell = (label, ...content) => h("td", { "data-label": label }, content);
  const shadow = hook.mode === "shadow";
  const rowClass = [hook.enabled ? "" : "is-disabled", shadow ? "is-shadow" : ""].filter(Boolean).join(" ");
  return h(
    "tr",
    { dataset: { hookId: hook.id, hookName: hook.name || "", mode: hook.mode || "enforce" }, class: rowClass },
    h(
      "th",
      { scope: "row", class: "hook-name" },
      h("a", { href: hookHref(hook.id), text: name }),
      hook.source === "builtin" ? builtinBadge() : null,
      shadow ? shadowBadge() : null,
      hook.description ? h("span", { class: "hook-description", text: hook.description }) : null,
    ),
    cell("Event", eventBadge(hook.event)),
    cell("Handler", handlerBadge(hook.handler_type)),
    cell("Scope", scopeLabel(hook), otherTenant(hook)),
    cell("Mode", h("span", { class: `mode mode-${hook.mode || "enforce"}`, text: hook.mode || "enforce" })),
    cell("Matcher", hook.matcher ? h("code", { class: "matcher", text: hook.matcher }) : h("span", { class: "muted", text: "any" })),
    cell("Priority", String(hook.priority ?? 0)),
    cell("Fires", figures ? h("a", { href: `#/audit?hookId=${encodeURIComponent(hook.id)}`, title: "Open these executions in the Audit view", text: String(figures.fires) }) : "0"),
    cell("Block rate", figures ? `${Math.round(figures.block_rate * 100)} %` : "—"),
    cell(
      "Would block",
      shadow
        ? h("span", {
            class: "would-blocks",
            title: "Events this shadow hook would have blocked had it been enforced",
            text: String(figures?.would_blocks ?? 0),
          })
        : "—",
    ),
    cell("p95", figures ? formatDuration(figures.p95_ms) : "—"),
    cell("Last fired", figures ? h("time", { dateTime: figures.last_fired, text: isoTime(figures.last_fired) }) : "—"),
    cell("Breaker", breakerBadge(hook.breaker), hook.breaker?.last_fault && hook.breaker.state !== "closed"
      ? h("span", { class: "fault", text: hook.breaker.last_fault })
      : null),
    cell(
      "Enabled",
      toggleSwitch({
        checked: hook.enabled,
        label: `Enable ${name}`,
        disabledReason: toggleBlocked,
        onChange: async (next) => {
          try {
            await api.toggleHook(hook.id, next);
            hook.enabled = next;
            toast(`${name} ${next ? "enabled" : "disabled"}`, "ok");
          } catch (err) {
            toast(`Could not toggle ${name}: ${describeError(err)}`, "error", 6000);
            throw err;
          }
        },
      }),
    ),
    h(
      "td",
      { class: "row-actions" },
      testLink(hook),
      shadow ? promoteButton(hook, name, reload) : null,
      readOnly ? null : h("a", { class: "btn btn-small", href: hookHref(hook.id, "edit"), text: "Edit" }),
      readOnly
        ? null
        : h("button", {
            type: "button",
            class: "btn btn-small btn-danger-quiet",
            text: "Delete",
            onclick: async () => {
              const ok = await confirmDialog({
                title: `Delete ${name}?`,
                text: "Its execution history is kept. This cannot be undone.",
                confirmLabel: "Delete",
                danger: true,
              });
              if (!ok) return;
              try {
                await api.deleteHook(hook.id);
                toast(`${name} deleted`, "ok");
                reload();
              } catch (err) {
                toast(`Could not delete ${name}: ${describeError(err)}`, "error", 6000);
              }
            },
          }),
    ),
  );
}


/** A shadow hook's Promote button (operators and admins): from now on it decides. */
function promoteButton(hook, name, reload) {
  if (!canPromote()) return null; // viewers change nothing
  const why = whyNoPromote(hook);
  if (why) return h("button", { type: "button", class: "btn btn-small", text: "Promote", disabled: true, title: why, "aria-label": `Promote: ${why}` });
  return h("button", {
    type: "button",
    class: "btn btn-small btn-promote",
    text: "Promote",
    title: "Enforce this hook: its answers start to decide",
    onclick: async () => {
      const ok = await confirmDialog({
        title: `Enforce ${name}?`,
        text: "From now on its answers decide: a block blocks, a rewrite rewrites.",
        confirmLabel: "Promote",
      });
      if (!ok) return;
      try {
        await api.promoteHook(hook.id, hook.version);
        toast(`${name} now enforces`, "ok");
        reload();
      } catch (err) {
        toast(`Could not promote ${name}: ${describeError(err)}`, "error", 6000);
      }
    },
  });
}

function whyNoPromote(hook) {
  if (hook.scope === "global" && !session.isMaster) return "Global hooks need master scope";
  if (!session.isMaster && hook.tenant_id && session.tenantId && hook.tenant_id !== session.tenantId) {
    return "This hook belongs to another tenant";
  }
  return null;
}

/** The row's Test link; for a hook this key may not dry-run, a disabled button saying why. */
function testLink(hook) {
  if (!canTest()) return null; // viewers: nothing to test, the Test tab says why
  const why = whyNoTest(hook);
  return why
    ? h("button", { type: "button", class: "btn btn-small", text: "Test", disabled: true, title: why, "aria-label": `Test: ${why}` })
    : h("a", { class: "btn btn-small", href: hookHref(hook.id, "test"), text: "Test" });
}

/** With master scope the list holds every tenant's hooks: say whose each one is. */
function otherTenant(hook) {
  if (hook.scope === "global" || !hook.tenant_id || hook.tenant_id === session.tenantId) return null;
  return h("span", { class: "tenant-note", title: `tenant ${hook.tenant_id}`, text: ` · ${hook.tenant_id}` });
}
