// Replay tab: this hook, as edited here, replayed against the tenant's recorded traffic.
import { h, mount } from "../dom.js";
import { field } from "./fields.js";
import { replayControls } from "./replay-view.js";

// What a definition carries that is the server's, not the author's.
const SERVER_FIELDS = ["id", "version", "source", "created_at", "updated_at", "created_by", "updated_by", "breaker", "order", "tenant_id", "written_by_master"];

function candidateOf(hook) {
  const definition = { ...hook };
  for (const name of SERVER_FIELDS) delete definition[name];
  return definition;
}

export function renderReplayTab(panel, hook, ctx) {
  const result = h("div", { class: "replay-result", "aria-live": "polite" });
  const box = h("textarea", { name: "candidate", class: "mono", rows: 14, spellcheck: false, value: JSON.stringify(candidateOf(hook), null, 2) });
  const candidate = () => {
    let definition;
    try {
      definition = JSON.parse(box.value);
    } catch (err) {
      throw new Error(`Not valid JSON: ${err.message}`);
    }
    if (!definition || typeof definition !== "object" || Array.isArray(definition)) throw new Error("The candidate must be a JSON object (a hook definition)");
    return { hook: { ...definition, id: hook.id } };
  };
  mount(
    panel,
    h(
      "div",
      { class: "card replay-form" },
      h("h2", { text: "Candidate" }),
      h("p", { class: "hint", text: "Edit the definition and replay the tenant's recorded traffic through its hooks with this one in place: what would be decided differently. Hooks that call out (http, prompt, agent, command, process) answer from their recorded replies; nothing is called and nothing is saved." }),
      field({ name: "candidate", label: "Hook definition (JSON)", control: box, wide: true }),
      replayControls(candidate, result, ctx),
    ),
    result,
  );
}
