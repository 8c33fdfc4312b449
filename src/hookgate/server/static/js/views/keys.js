// API keys (admins): create one with a role (and, with master scope, a tenant or master scope),
// see its secret once, list the keys, revoke one. The gateway checks every rule again.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { session, canManageKeys, storedKey, workingTenant, viewedTenant, KEYS_ROLE_REASON } from "../session.js";
import { formatTime } from "../format.js";
import { loadingState, errorState, emptyState, notAllowedState, describeError } from "../ui/states.js";
import { toast } from "../ui/toast.js";
import { confirmDialog } from "../ui/dialog.js";
import { field, showProblems, clearProblems } from "./fields.js";
import { fieldProblems } from "../problems.js";

const ROLES = [
  ["viewer", "viewer: reads hooks, history and audit"],
  ["approver", "approver: also decides approvals (a person's key: cannot dispatch)"],
  ["operator", "operator: also tests hooks, dispatches events, decides approvals it did not ask for"],
  ["admin", "admin: also changes hooks and manages keys"],
];

export async function renderKeys(main, route, ctx) {
  if (!canManageKeys()) {
    mount(main, h("h1", { tabIndex: -1, text: "API keys" }), notAllowedState(`${KEYS_ROLE_REASON}; this key has the ${session.role} role.`));
    return;
  }
  const secretSlot = h("div", { class: "secret-slot", "aria-live": "polite" });
  const results = h("div", { class: "key-results" });
  const showRevoked = h("input", { type: "checkbox", id: "keys-revoked", checked: route.query.revoked === "1" });
  const load = async () => {
    mount(results, loadingState("Loading keys…"));
    let keys;
    try {
      keys = await api.listKeys({ includeRevoked: showRevoked.checked });
    } catch (err) {
      if (ctx.alive()) mount(results, errorState(err, load));
      return;
    }
    if (!ctx.alive()) return;
    mount(results, keys.length ? keyTable(keys, load) : emptyState("No keys", "Create one above."));
  };
  showRevoked.addEventListener("change", load);
  const scopeText = session.isMaster
    ? viewedTenant() ? `Keys of tenant ${viewedTenant()}.` : "Keys of every tenant."
    : `Keys of tenant ${session.tenantId}.`;
  mount(
    main,
    h("h1", { tabIndex: -1, text: "API keys" }),
    h("p", { class: "muted", text: `${scopeText} A key's secret is shown once, when it is created; the gateway keeps only its hash.` }),
    createForm((created) => {
      mount(secretSlot, secretOnce(created, () => mount(secretSlot)));
      load();
    }),
    secretSlot,
    h("div", { class: "toolbar" }, h("label", { class: "check", for: "keys-revoked" }, showRevoked, " Show revoked keys")),
    results,
  );
  await load();
}

function createForm(onCreated) {
  const name = h("input", { type: "text", name: "name", autocomplete: "off", placeholder: "ci reader" });
  // A key never gets a role above the creator's (admin is the highest: every role is offered).
  const role = h("select", { name: "role" }, ROLES.map(([value, text]) => h("option", { value, text, selected: value === "viewer" })));
  const tenant = h("input", { type: "text", name: "tenantId", autocomplete: "off", value: workingTenant() || "" });
  const master = h("input", { type: "checkbox", name: "master" });
  const general = h("div", { class: "form-errors", role: "alert", tabIndex: -1, hidden: true });
  const submit = h("button", { type: "submit", class: "btn btn-primary", text: "Create key" });
  const form = h(
    "form",
    { class: "card key-form", novalidate: true, "aria-labelledby": "key-form-title" },
    h("h2", { id: "key-form-title", text: "New key" }),
    general,
    h(
      "div",
      { class: "grid" },
      field({ name: "name", label: "Name", hint: "A label to tell keys apart.", control: name }),
      field({ name: "role", label: "Role", control: role }),
      session.isMaster
        ? field({ name: "tenantId", label: "Tenant", hint: "The tenant the key acts for.", control: tenant })
        : field({ name: "tenantId", label: "Tenant", hint: "Keys of your key's tenant only (other tenants need master scope).", control: Object.assign(tenant, { readOnly: true }) }),
      session.isMaster
        ? field({ name: "master", label: "Master scope", hint: "Sees and manages every tenant and global hooks. Give it sparingly.", control: master })
        : null,
    ),
    h("div", { class: "form-actions" }, submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearProblems(form);
    general.hidden = true;
    submit.disabled = true;
    try {
      const created = await api.createKey({
        role: role.value,
        name: name.value.trim(),
        tenantId: session.isMaster ? tenant.value.trim() || null : null,
        master: session.isMaster && master.checked,
      });
      name.value = "";
      master.checked = false;
      toast(`Key ${created.key.prefix}… created`, "ok");
      onCreated(created);
    } catch (err) {
      const { fields, general: messages } = fieldProblems(err);
      const unplaced = showProblems(form, fields);
      const all = [...messages, ...unplaced];
      if (!fields.size && !all.length) all.push(describeError(err));
      if (all.length) {
        mount(general, h("p", { text: "The gateway refused the key:" }), h("ul", {}, all.map((m) => h("li", { text: m }))));
        general.hidden = false;
        general.focus();
      }
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

/** The new key's secret, shown this once; dismissing it forgets it. */
function secretOnce(created, dismiss) {
  const code = h("code", { class: "secret-value", text: created.secret });
  const status = h("span", { class: "muted", role: "status" });
  const key = created.key;
  return h(
    "section",
    { class: "secret-once", "aria-labelledby": "secret-title" },
    h("h2", { id: "secret-title", text: `Key ${key.name || key.prefix} created: copy it now` }),
    h("p", { text: `This is the only time the secret is shown. It signs in as ${key.role} of tenant ${key.tenant_id}${key.master ? " with master scope" : ""}.` }),
    code,
    h(
      "div",
      { class: "form-actions" },
      h("button", {
        type: "button",
        class: "btn",
        text: "Copy",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(created.secret);
            status.textContent = "Copied.";
          } catch {
            const range = document.createRange();
            range.selectNodeContents(code);
            window.getSelection().removeAllRanges();
            window.getSelection().addRange(range);
            status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
          }
        },
      }),
      h("button", { type: "button", class: "btn btn-quiet", text: "I stored it: hide", onclick: dismiss }),
      status,
    ),
  );
}

function keyTable(keys, reload) {
  // The signed-in key is recognised by its prefix (the panel never learns key ids otherwise).
  const mine = (storedKey() || "").slice(0, 10);
  return h(
    "table",
    { class: "key-table" },
    h("thead", {}, h("tr", {}, ["Name", "Prefix", "Tenant", "Role", "Created", "Revoked", ""].map((t) => h("th", { scope: "col", text: t })))),
    h(
      "tbody",
      {},
      keys.map((key) => {
        const isMine = key.prefix === mine;
        const revoked = Boolean(key.revoked_at);
        const blocked = key.master && !session.isMaster ? "Revoking a master key needs master scope" : null;
        return h(
          "tr",
          { class: revoked ? "is-revoked" : "", dataset: { keyId: key.id, prefix: key.prefix } },
          h("td", { "data-label": "Name", text: `${key.name || "—"}${isMine ? " (this key)" : ""}` }),
          h("td", { "data-label": "Prefix" }, h("code", { text: `${key.prefix}…` })),
          h("td", { "data-label": "Tenant", text: key.tenant_id }),
          h("td", { "data-label": "Role", text: `${key.role}${key.master ? " · master scope" : ""}` }),
          h("td", { "data-label": "Created", text: formatTime(key.created_at) }),
          h("td", { "data-label": "Revoked", text: revoked ? formatTime(key.revoked_at) : "—" }),
          h(
            "td",
            { class: "row-actions" },
            revoked
              ? null
              : h("button", {
                  type: "button",
                  class: "btn btn-small btn-danger-quiet",
                  text: "Revoke",
                  disabled: Boolean(blocked),
                  title: blocked || "",
                  "aria-label": `Revoke ${key.name || key.prefix}`,
                  onclick: async () => {
                    const ok = await confirmDialog({
                      title: `Revoke ${key.name || key.prefix}?`,
                      text: isMine
                        ? "This is the key you are signed in with: the panel signs you out."
                        : "Agents and people using it are refused from now on. This cannot be undone.",
                      confirmLabel: "Revoke",
                      danger: true,
                    });
                    if (!ok) return;
                    try {
                      await api.revokeKey(key.id);
                      toast(`Key ${key.prefix}… revoked`, "ok");
                      reload();
                    } catch (err) {
                      toast(`Could not revoke: ${describeError(err)}`, "error", 6000);
                    }
                  },
                }),
          ),
        );
      }),
    ),
  );
}
