// Small coloured labels: event, handler, decision, breaker state, builtin.
import { h } from "../dom.js";
import { eventSpec } from "../catalogue.js";

export function eventBadge(name) {
  const spec = eventSpec(name);
  return h("span", {
    class: `badge badge-event ${spec.blocking ? "is-blocking" : "is-observe"}`,
    title: spec.blocking ? "Blocking event: waits for the decision" : "Non-blocking: observe only",
    text: name,
  });
}

export function handlerBadge(type) {
  return h("span", { class: `badge badge-handler handler-${type}`, text: type });
}

const DECISION_LABELS = {
  allow: "allow", block: "block", ask: "ask", error: "error", timeout: "timeout",
  would_block: "would block", would_allow: "would allow", would_ask: "would ask",
  would_respond: "would respond", would_abort: "would abort",
};
const DECISION_TITLES = {
  ask: "A person was asked to approve",
  would_block: "A shadow hook: enforced, it would have blocked; nothing was blocked",
};

export function decisionBadge(decision) {
  const value = decision || "none";
  return h("span", {
    class: `badge badge-decision decision-${value}`,
    dataset: { decision: value },
    title: DECISION_TITLES[value],
    text: DECISION_LABELS[value] || value,
  });
}

export function builtinBadge() {
  return h("span", {
    class: "badge badge-builtin",
    title: "Shipped with hookgate: read-only except the switch",
    text: "builtin",
  });
}

export function shadowBadge() {
  return h("span", {
    class: "badge badge-shadow",
    title: "Shadow mode: runs and is recorded as what it would have decided, never decides",
    text: "shadow",
  });
}

const BREAKER_TEXT = { closed: "closed", open: "open", half_open: "half-open" };

export function breakerBadge(breaker) {
  const state = breaker?.state || "closed";
  const fault = breaker?.last_fault;
  const title =
    state === "closed"
      ? "Circuit breaker closed: the hook runs normally"
      : `Circuit breaker ${BREAKER_TEXT[state] || state}${fault ? ` — last fault: ${fault}` : ""}`;
  return h(
    "span",
    { class: `badge badge-breaker breaker-${state}`, title, dataset: { breaker: state } },
    BREAKER_TEXT[state] || state,
  );
}

export function scopeLabel(hook) {
  const n = Array.isArray(hook.agent_ids) ? hook.agent_ids.length : 0;
  const agents = hook.scope === "agent" ? ` · ${n} agent${n === 1 ? "" : "s"}` : "";
  return h("span", { class: `scope scope-${hook.scope}`, text: `${hook.scope}${agents}` });
}
