// An ARIA tab list: arrow keys move between tabs, Home/End jump to the ends.
import { h } from "../dom.js";

/** `tabs`: [{id, label, href, disabledReason?}]; `active`: the selected id. */
export function tabList(tabs, active, panelId) {
  const links = tabs.map((tab) =>
    h("a", {
      role: "tab",
      id: `tab-${tab.id}`,
      class: "tab",
      href: tab.disabledReason ? undefined : tab.href,
      "aria-selected": String(tab.id === active),
      "aria-controls": panelId,
      "aria-disabled": tab.disabledReason ? "true" : undefined,
      title: tab.disabledReason || undefined,
      tabIndex: tab.id === active ? 0 : -1,
      text: tab.label,
    }),
  );
  const list = h("div", { role: "tablist", class: "tabs", "aria-label": "Hook sections" }, links);
  list.addEventListener("keydown", (event) => {
    const index = links.indexOf(document.activeElement);
    if (index < 0) return;
    const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: links.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = links[(moves[event.key] + links.length) % links.length];
    next.focus();
  });
  return list;
}
