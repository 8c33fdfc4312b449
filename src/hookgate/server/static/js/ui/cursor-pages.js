// Lists the gateway pages by cursor, newest first (audit executions, dispatch records, a
// hook's history): one loader with its Newer/Older pager, and the filter form of the audit
// views. The cursors of the pages already seen are kept, so "Newer" goes back exactly.
import { h, mount } from "../dom.js";
import { allEvents } from "../catalogue.js";
import { loadingState, errorState, emptyState } from "./states.js";

/**
 * `fetchPage(cursor)` reads one page; `itemsOf(page)` its rows; `table(rows)` draws them;
 * `empty()` gives the [title, hint] shown when the first page has no rows.
 * Returns `load` (the current page) and `restart` (back to the first page).
 */
export function cursorPages({ results, ctx, loadingText, pagerLabel, fetchPage, itemsOf, table, empty }) {
  const state = { cursors: [null], page: 0 };
  const load = async () => {
    mount(results, loadingState(loadingText));
    let page;
    try {
      page = await fetchPage(state.cursors[state.page]);
    } catch (err) {
      if (ctx.alive()) mount(results, errorState(err, load));
      return;
    }
    if (!ctx.alive()) return;
    if (page.nextCursor) state.cursors[state.page + 1] = page.nextCursor;
    const rows = itemsOf(page);
    if (!rows.length && state.page === 0) {
      mount(results, emptyState(...empty()));
      return;
    }
    const turn = (step) => () => { state.page += step; load(); };
    mount(
      results,
      table(rows),
      h(
        "nav",
        { class: "pager", "aria-label": pagerLabel },
        h("button", { type: "button", class: "btn btn-small", text: "Newer", disabled: state.page === 0, onclick: turn(-1) }),
        h("span", { class: "muted", text: `Page ${state.page + 1}` }),
        h("button", { type: "button", class: "btn btn-small", text: "Older", disabled: !page.nextCursor, onclick: turn(1) }),
      ),
    );
  };
  const restart = () => {
    state.cursors = [null];
    state.page = 0;
    return load();
  };
  return { load, restart };
}

/**
 * The audit views' filter form: text filters (`[name, label]`, prefilled from the route's
 * query), event, decision, a time window (`until` only when asked) and Apply.
 * `read()` returns the filters as the API takes them (empty ones null, times as ISO).
 */
export function auditFilterForm({ prefix, ariaLabel, textFilters, decisions, route, until = false }) {
  const field = (name, label, control) => h("div", { class: "filter" }, h("label", { class: "filter-label", for: `${prefix}-${name}`, text: label }), control);
  const inputs = textFilters.map(([name, label]) => field(name, label, h("input", { id: `${prefix}-${name}`, name, type: "search", value: route.query[name] || "", autocomplete: "off" })));
  const event = h("select", { id: `${prefix}-event`, name: "event" }, ["", ...allEvents().map((e) => e.name)].map((v) => h("option", { value: v, text: v || "All events" })));
  const decision = h("select", { id: `${prefix}-decision`, name: "decision" }, decisions.map((v) => h("option", { value: v, text: v || "All decisions", selected: route.query.decision === v })));
  const time = (name) => h("input", { id: `${prefix}-${name}`, name, type: "datetime-local" });
  const form = h(
    "form",
    { class: "filters audit-filters", "aria-label": ariaLabel },
    inputs,
    field("event", "Event", event),
    field("decision", "Decision", decision),
    field("since", "From", time("since")),
    until ? field("until", "Until", time("until")) : null,
    h("button", { type: "submit", class: "btn", text: "Apply" }),
  );
  const read = () => {
    const filters = {};
    for (const el of form.querySelectorAll("input, select")) {
      let value = el.value.trim();
      if (value && el.type === "datetime-local") value = new Date(value).toISOString();
      filters[el.name] = value || null;
    }
    return filters;
  };
  return { form, read };
}
