// Changes: the hook's definition history, newest first: who changed what and when, and a
// side-by-side diff of each version against the one before it (or any two picked versions).
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { isoTime } from "../format.js";
import { jsonDiffView } from "../ui/json-diff.js";
import { loadingState, errorState, emptyState } from "../ui/states.js";

export async function renderChanges(panel, hook, ctx) {
  mount(panel, loadingState("Loading the definition history…"));
  let revisions;
  try {
    revisions = await api.hookRevisions(hook.id);
  } catch (err) {
    if (ctx.alive()) mount(panel, errorState(err, () => renderChanges(panel, hook, ctx)));
    return;
  }
  if (!ctx.alive()) return;
  if (!revisions.length) {
    mount(panel, emptyState("No changes recorded", "Changes are recorded from this version of hookgate on; builtin hooks and (for tenant keys) global hooks have none to show."));
    return;
  }
  const label = (r) => `v${r.version} · ${r.action} · ${isoTime(r.changed_at)}`;
  const picker = (id, text, selected) =>
    h("div", { class: "filter" }, h("label", { class: "filter-label", for: id, text }),
      h("select", { id }, revisions.map((r, i) => h("option", { value: String(i), text: label(r), selected: i === selected }))));
  const from = picker("changes-from", "Compare", Math.min(1, revisions.length - 1));
  const to = picker("changes-to", "with", 0);
  const diffSlot = h("div", { class: "changes-diff" });
  const showDiff = () => {
    const a = revisions[Number(from.querySelector("select").value)];
    const b = revisions[Number(to.querySelector("select").value)];
    mount(diffSlot, jsonDiffView(a.definition, b.definition, { leftTitle: `v${a.version}`, rightTitle: `v${b.version}` }));
  };
  for (const el of [from, to]) el.querySelector("select").addEventListener("change", showDiff);
  mount(
    panel,
    h(
      "table",
      { class: "history-table changes-table" },
      h("thead", {}, h("tr", {}, ["Version", "Change", "Who", "When", ""].map((t) => h("th", { scope: "col", text: t })))),
      h(
        "tbody",
        {},
        revisions.map((r, i) =>
          h(
            "tr",
            { class: "change-row", dataset: { version: String(r.version), action: r.action } },
            h("td", { "data-label": "Version", text: `v${r.version}` }),
            h("td", { "data-label": "Change", text: r.action }),
            h("td", { "data-label": "Who" }, r.changed_by ? h("code", { text: r.changed_by }) : "—"),
            h("td", { "data-label": "When" }, h("time", { dateTime: isoTime(r.changed_at), text: isoTime(r.changed_at) })),
            h("td", { class: "row-actions" }, i + 1 < revisions.length
              ? h("button", {
                  type: "button",
                  class: "btn btn-small",
                  text: "Diff",
                  "aria-label": `Diff v${r.version} against the version before`,
                  onclick: () => {
                    from.querySelector("select").value = String(i + 1);
                    to.querySelector("select").value = String(i);
                    showDiff();
                  },
                })
              : null),
          ),
        ),
      ),
    ),
    h("form", { class: "filters changes-filters", "aria-label": "Versions to compare", onsubmit: (e) => e.preventDefault() }, from, to),
    diffSlot,
  );
  showDiff();
}
