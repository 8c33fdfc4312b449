// Short confirmations and failures, announced to screen readers.
import { h } from "../dom.js";

function region() {
  let el = document.getElementById("toasts");
  if (!el) {
    el = h("div", { id: "toasts", class: "toasts", role: "status", "aria-live": "polite" });
    document.body.append(el);
  }
  return el;
}

export function toast(message, kind = "info", ms = 4000) {
  const item = h("div", { class: `toast toast-${kind}`, text: message });
  region().append(item);
  setTimeout(() => item.remove(), ms);
}
