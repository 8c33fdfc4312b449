// Events: for the key's tenant (and optionally one agent), each event with the hooks it would
// run, in chain order (globals included), with matcher and if_expr; operators and admins can
// simulate an event: a dry run of the whole chain, each hook's answer and the outcome.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { atLeast, workingTenant } from "../session.js";
import { sampleEvent } from "../catalogue.js";
import { hookHref } from "../router.js";
import { decisionBadge } from "../ui/badges.js";
import { loadingState, errorState } from "../ui/states.js";

const SIMULATE_ROLE_REASON = "Simulating an event needs the operator or admin role.";

export async function renderEvents(main, route, ctx) {
  const results = h("div", { class: "events-results" });
  const agent = h("input", { id: "events-agent", name: "agentId", type: "search", value: route.query.agentId || "", autocomplete: "off" });
  const form = h(
    "form",
    { class: "filters", "aria-label": "Choose an agent" },
    h("div", { class: "filter" }, h("label", { class: "filter-label", for: "events-agent", text: "Agent (optional)" }), agent),
    h("button", { type: "submit", class: "btn", text: "Show" }),
  );
  const load = async () => {
    mount(results, loadingState("Loading the chains…"));
    let events;
    try {
      events = await api.chains({ agentId: agent.value.trim() || null });
    } catch (err) {
      if (ctx.alive()) mount(results, errorState(err, load));
      return;
    }
    if (!ctx.alive()) return;
    const used = events.filter((e) => e.hooks.length);
    const unused = events.filter((e) => !e.hooks.length).map((e) => e.event);
    mount(
      results,
      used.length ? used.map((e) => eventSection(e, () => agent.value.trim() || null)) : h("p", { class: "muted", text: "No event runs a hook for this tenant yet." }),
      unused.length ? h("p", { class: "muted unused-events", text: `No hooks run on: ${unused.join(", ")}.` }) : null,
    );
  };
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    load();
  });
  mount(
    main,
    h("h1", { tabIndex: -1, text: "Events" }),
    h("p", { class: "muted", text: `For tenant ${workingTenant()}: each event with the hooks it would run, in order. Disabled hooks are not in a chain.` }),
    form,
    results,
  );
  await load();
}

function eventSection(e, agentId) {
  const output = h("div", { class: "simulation", "aria-live": "polite" });
  const sample = h("textarea", { class: "json-input", rows: 6, "aria-label": `Sample event for ${e.event}`, hidden: true, text: JSON.stringify(sampleEvent(e.event), null, 2) });
  const canSimulate = atLeast("operator");
  const run = h("button", {
    type: "button",
    class: "btn btn-small",
    text: "Simulate",
    disabled: !canSimulate || !e.hooks.length,
    title: !canSimulate ? SIMULATE_ROLE_REASON : !e.hooks.length ? "No hook runs for this event." : "",
    "aria-label": `Simulate ${e.event}`,
    onclick: async () => {
      if (sample.hidden) {
        sample.hidden = false;
        run.textContent = "Run simulation";
        return;
      }
      let parsed;
      try {
        parsed = JSON.parse(sample.value);
      } catch (err) {
        mount(output, h("p", { class: "error-text", text: `The sample is not valid JSON: ${err.message}` }));
        return;
      }
      mount(output, loadingState("Running the chain…"));
      try {
        mount(output, simulationView(await api.simulate(e.event, parsed, { agentId: agentId() })));
      } catch (err) {
        mount(output, h("p", { class: "error-text", text: String(err.message || err) }));
      }
    },
  });
  return h(
    "section",
    { class: "card event-chain", dataset: { event: e.event } },
    h("div", { class: "approval-head" }, h("h2", { text: e.event }), h("div", {}, run, !canSimulate ? h("span", { class: "muted small", text: ` ${SIMULATE_ROLE_REASON}` }) : null)),
    e.hooks.length
      ? h(
          "ol",
          { class: "chain" },
          e.hooks.map((hook) =>
            h(
              "li",
              { dataset: { hookId: hook.hookId } },
              h("a", { href: hookHref(hook.hookId), text: hook.name || hook.hookId }),
              ` · ${hook.scope} · ${hook.handlerType}`,
              hook.matcher ? [" · matcher ", h("code", { text: hook.matcher })] : null,
              hook.ifExpr ? [" · if ", h("code", { text: hook.ifExpr })] : null,
            ),
          ),
        )
      : h("p", { class: "muted", text: "No hook runs for this event." }),
    sample,
    output,
  );
}

function simulationView(result) {
  return h(
    "div",
    { class: "simulation-result" },
    h("p", {}, "Outcome: ", decisionBadge(result.decision), result.reason ? ` ${result.reason}` : ""),
    result.complete === false ? h("p", { class: "muted", text: "Some hooks could not be run with this key; the outcome leaves them out." }) : null,
    h(
      "table",
      { class: "history-table" },
      h("thead", {}, h("tr", {}, ["Hook", "Matched", "Answer", "Reason or skip"].map((t) => h("th", { scope: "col", text: t })))),
      h(
        "tbody",
        {},
        result.hooks.map((hook) =>
          h(
            "tr",
            { dataset: { hookId: hook.hookId } },
            h("td", { "data-label": "Hook", text: hook.name || hook.hookId }),
            h("td", { "data-label": "Matched", text: hook.matched ? "yes" : "no" }),
            h("td", { "data-label": "Answer" }, hook.decision ? decisionBadge(hook.decision) : "—"),
            h("td", { "data-label": "Reason or skip", text: hook.reason || hook.error || hook.skipped || "—" }),
          ),
        ),
      ),
    ),
  );
}
