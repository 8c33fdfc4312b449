// Loading, empty and error states, the same everywhere.
import { h } from "../dom.js";

export function loadingState(text = "Loading…") {
  return h(
    "div",
    { class: "state state-loading", role: "status", "aria-live": "polite" },
    h("span", { class: "spinner", "aria-hidden": "true" }),
    text,
  );
}

export function emptyState(title, text, ...actions) {
  return h(
    "div",
    { class: "state state-empty" },
    h("p", { class: "state-title", text: title }),
    text ? h("p", { class: "state-text", text }) : null,
    actions.length ? h("div", { class: "state-actions" }, actions) : null,
  );
}

/**
 * What this key may not do, and why: not an error. Views show it instead of a control the
 * role lacks; a refusal the panel did not foresee (UNAUTHORIZED) is shown the same way.
 */
export function notAllowedState(reason, ...actions) {
  return h(
    "div",
    { class: "state state-not-allowed", role: "status" },
    h("p", { class: "state-title", text: "Not available with this key" }),
    h("p", { class: "state-text", text: reason }),
    actions.length ? h("div", { class: "state-actions" }, actions) : null,
  );
}

export function errorState(error, onRetry) {
  if (error && error.code === "UNAUTHORIZED") return notAllowedState(error.message);
  return h(
    "div",
    { class: "state state-error", role: "alert" },
    h("p", { class: "state-title", text: "Something went wrong" }),
    h("p", { class: "state-text", text: describeError(error) }),
    onRetry ? h("button", { type: "button", class: "btn", onclick: onRetry, text: "Retry" }) : null,
  );
}

export function describeError(error) {
  if (!error) return "unknown error";
  const code = error.code && error.code !== "ERROR" ? `${error.code}: ` : "";
  return `${code}${error.message || String(error)}`;
}
