// Hooks as files: export the tenant's hooks (every role), import a file (admins). An import is
// checked first (a dry run) and shown hook by hook; it is applied only when every hook is valid.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { canWrite, workingTenant, IMPORT_ROLE_REASON, session } from "../session.js";
import { hookHref } from "../router.js";
import { notAllowedState, describeError } from "../ui/states.js";
import { toast } from "../ui/toast.js";
import { replayControls } from "./replay-view.js";

/** Download the tenant's hooks as `format` (yaml or json). */
export async function downloadHooks(format) {
  const file = await api.exportHooks(format);
  const type = format === "json" ? "application/json" : "application/yaml";
  const link = h("a", { href: URL.createObjectURL(new Blob([file.content], { type })), download: file.filename });
  document.body.append(link);
  link.click();
  link.remove();
  return file;
}

/** The Export buttons of the hooks list (every role may export). */
export function exportButtons() {
  const button = (format) =>
    h("button", {
      type: "button",
      class: "btn btn-small",
      text: `Export ${format.toUpperCase()}`,
      title: `Download tenant ${workingTenant()}'s hooks as a ${format.toUpperCase()} hooks file (secret header values are never included)`,
      onclick: async () => {
        try {
          const file = await downloadHooks(format);
          toast(`Exported ${file.count} hook${file.count === 1 ? "" : "s"} to ${file.filename}`, "ok");
        } catch (err) {
          toast(`Could not export: ${describeError(err)}`, "error", 6000);
        }
      },
    });
  return [button("yaml"), button("json")];
}

export function renderImport(main) {
  const title = h("h1", { tabIndex: -1, text: "Import hooks" });
  if (!canWrite()) {
    mount(main, title, notAllowedState(`${IMPORT_ROLE_REASON}; this key has the ${session.role} role.`, h("a", { class: "btn", href: "#/hooks", text: "Back to hooks" })));
    return;
  }
  const fileInput = h("input", { type: "file", id: "import-file", name: "file", accept: ".yaml,.yml,.json,application/json,application/yaml,text/yaml" });
  const report = h("div", { class: "import-report", "aria-live": "polite" });
  let content = null;
  const check = async () => {
    const file = fileInput.files[0];
    if (!file) return;
    content = await file.text();
    mount(report, h("p", { class: "muted", role: "status", text: `Checking ${file.name}…` }));
    try {
      const answer = await api.importHooks(content, { dryRun: true });
      const replayed = h("div", { class: "replay-result", "aria-live": "polite" });
      const replay = replayControls(() => ({ content }), replayed, { alive: () => true }, { label: "Replay this file" });
      mount(report, reportView(answer, file.name, apply, replay), replayed);
    } catch (err) {
      mount(report, h("p", { class: "error-text", role: "alert", text: describeError(err) }));
    }
  };
  const apply = async () => {
    try {
      const answer = await api.importHooks(content, { dryRun: false });
      mount(report, reportView(answer, fileInput.files[0]?.name || "the file", null));
      if (answer.applied) toast("Import applied", "ok");
    } catch (err) {
      mount(report, h("p", { class: "error-text", role: "alert", text: describeError(err) }));
    }
  };
  fileInput.addEventListener("change", check);
  mount(
    main,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/hooks", text: "Hooks" }), " / ", h("span", { text: "Import" })),
    title,
    h("p", { class: "muted", text: `Into tenant ${workingTenant()}. A hooks file as Export writes it ({hooks: [...]}, YAML or JSON). A hook whose name exists in the tenant is updated, a new name is created; hooks the file does not list stay. Every hook is checked before anything is written.` }),
    h("div", { class: "card" }, h("label", { for: "import-file", text: "Hooks file" }), " ", fileInput),
    report,
  );
}

const ACTION_TEXT = { create: "will be created", update: "will be updated", unchanged: "unchanged", invalid: "invalid" };
const DONE_TEXT = { create: "created", update: "updated", unchanged: "unchanged", invalid: "invalid" };

function reportView(answer, fileName, apply, replay = null) {
  if (answer.error) {
    return h("div", { class: "form-errors", role: "alert" }, h("p", { text: `${fileName}: ${answer.error}` }));
  }
  const invalid = answer.hooks.filter((e) => e.action === "invalid").length;
  const words = apply ? ACTION_TEXT : DONE_TEXT;
  const summary = invalid
    ? `${invalid} of ${answer.hooks.length} hooks have problems: nothing was imported. Fix the file and choose it again.`
    : apply
      ? `${answer.hooks.length} hooks checked: nothing written yet.`
      : answer.applied
        ? `Imported ${fileName}.`
        : "Nothing was written.";
  return h(
    "section",
    { class: "card", "aria-labelledby": "import-title" },
    h("h2", { id: "import-title", text: apply ? "Check" : "Result" }),
    h("p", { class: invalid ? "error-text" : "", role: invalid ? "alert" : "status", text: summary }),
    h(
      "table",
      { class: "import-table" },
      h("thead", {}, h("tr", {}, ["#", "Hook", "Action", "Problems and warnings"].map((t) => h("th", { scope: "col", text: t })))),
      h(
        "tbody",
        {},
        answer.hooks.map((entry) =>
          h(
            "tr",
            { dataset: { action: entry.action, index: String(entry.index) } },
            h("td", { "data-label": "#", text: String(entry.index + 1) }),
            h("td", { "data-label": "Hook" }, entry.hookId && !apply ? h("a", { href: hookHref(entry.hookId), text: entry.name || entry.hookId }) : entry.name || "(unnamed)"),
            h("td", { "data-label": "Action", class: `action-${entry.action}`, text: words[entry.action] }),
            h(
              "td",
              { "data-label": "Problems" },
              entry.problems.length ? h("ul", { class: "import-problems" }, entry.problems.map((p) => h("li", { text: `${p.field}: ${p.message}` }))) : null,
              entry.warnings.length ? h("ul", { class: "import-warnings" }, entry.warnings.map((p) => h("li", { text: `warning, ${p.field}: ${p.message}` }))) : null,
              !entry.problems.length && !entry.warnings.length ? "—" : null,
            ),
          ),
        ),
      ),
    ),
    apply && !invalid
      ? h("div", { class: "form-actions" }, h("button", { type: "button", class: "btn btn-primary", text: "Apply import", onclick: apply }), h("a", { class: "btn", href: "#/hooks", text: "Cancel" }), replay ? h("p", { class: "hint", text: "Or first see what this file would have decided on the tenant's recorded traffic:" }) : null, replay)
      : h("div", { class: "form-actions" }, h("a", { class: "btn", href: "#/hooks", text: "Back to hooks" })),
  );
}
