// Boot: sign in, draw the shell, route. Reconnects when the socket drops.
import { h, mount } from "./dom.js";
import { gateway } from "./api.js";
import { GatewayError } from "./gateway.js";
import { session, adopt, storedKey, storeKey, canManageKeys, viewedTenant, setViewedTenant } from "./session.js";
import { useCatalogue } from "./catalogue.js";
import { parseRoute } from "./router.js";
import { renderSignIn } from "./views/sign-in.js";
import { renderHookList } from "./views/hook-list.js";
import { renderHookForm } from "./views/hook-form.js";
import { renderHookDetail } from "./views/hook-detail.js";
import { renderApprovals } from "./approvals/view.js";
import { renderAudit } from "./views/audit.js";
import { renderDispatches } from "./views/dispatches.js";
import { renderChain } from "./views/chain.js";
import { renderEvents } from "./views/events.js";
import { renderKeys } from "./views/keys.js";
import { renderImport } from "./views/hook-files.js";
import * as api from "./api.js";
import { approvalsNavLink } from "./approvals/badge.js";
import { startApprovalWatch, stopApprovalWatch } from "./approvals/live.js";

const app = document.getElementById("app");
let renderToken = 0;
let main = null;
let banner = null;

async function signIn(key) {
  const hello = await gateway.connect(key);
  adopt(hello);
  useCatalogue(hello.events);
  storeKey(key);
  drawShell();
  startApprovalWatch();
  route();
}

function signOut(notice = null) {
  storeKey(null);
  stopApprovalWatch();
  gateway.onclose = null;
  gateway.close();
  main = null;
  renderSignIn(app, { signIn, notice });
}

function drawShell() {
  main = h("main", { id: "main", class: "main", tabIndex: -1 });
  banner = h("div", { class: "banner", role: "status", "aria-live": "polite", hidden: true });
  const chip = (cls, text, title = "") => h("span", { class: `chip ${cls}`, text, title });
  mount(
    app,
    h("a", { class: "skip-link", href: "#main", text: "Skip to content", onclick: (e) => { e.preventDefault(); main.focus(); } }),
    h(
      "header",
      { class: "topbar" },
      h("a", { class: "brand", href: "#/hooks" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "hookgate"),
      h(
        "nav",
        { class: "topnav", "aria-label": "Main" },
        h("a", { href: "#/hooks", text: "Hooks" }),
        h("a", { href: "#/events", text: "Events" }),
        h("a", { href: "#/audit", text: "Audit" }),
        approvalsNavLink(),
        // Only admins manage keys: the link is not offered to other roles.
        canManageKeys() ? h("a", { href: "#/keys", text: "Keys" }) : null,
      ),
      h(
        "div",
        { class: "who", "aria-label": "Signed in as" },
        chip(`chip-role role-${session.role}`, session.role, "Your role"),
        session.isMaster ? chip("chip-master", "master scope", "Can manage every tenant and global hooks") : null,
        chip("chip-tenant", session.tenantId ? `tenant ${String(session.tenantId).slice(0, 8)}` : "tenant ?", session.tenantId ? `Your key's tenant: ${session.tenantId}` : ""),
        session.isMaster ? tenantPicker() : null,
        chip(`chip-edition edition-${session.edition}`, `${session.edition} edition`, "Gateway edition"),
        h("button", { type: "button", class: "btn btn-small btn-quiet", text: "Sign out", onclick: () => signOut() }),
      ),
    ),
    banner,
    main,
    h("footer", { class: "footer", text: `hookgate${session.version ? ` ${session.version}` : ""}${session.keyName ? ` · key ${session.keyName}` : ""}` }),
  );
  gateway.onclose = reconnect;
}

/**
 * Master scope sees every tenant; the picker narrows hooks, events, audit, keys and files to
 * one. Known tenants are suggested (from the keys and hooks this key sees); any id may be typed.
 */
function tenantPicker() {
  const options = h("datalist", { id: "tenant-options" });
  const input = h("input", {
    type: "search",
    id: "tenant-picker",
    name: "tenant",
    list: "tenant-options",
    value: viewedTenant() || "",
    placeholder: "All tenants",
    autocomplete: "off",
    "aria-describedby": "tenant-picker-hint",
  });
  const apply = () => {
    const next = input.value.trim();
    if (next === (viewedTenant() || "")) return;
    setViewedTenant(next || null);
    route();
  };
  input.addEventListener("change", apply);
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") apply();
  });
  input.addEventListener("focus", () => suggestTenants(options), { once: true });
  return h(
    "span",
    { class: "tenant-picker" },
    h("label", { for: "tenant-picker", text: "Viewing" }),
    input,
    options,
    h("span", { id: "tenant-picker-hint", class: "visually-hidden", text: "Empty shows every tenant." }),
  );
}

async function suggestTenants(datalist) {
  const seen = new Set([session.tenantId].filter(Boolean));
  try {
    const [keys, hooks] = await Promise.all([api.listKeysForTenants(), api.listAllHooks()]);
    for (const item of [...keys, ...hooks]) if (item.tenant_id) seen.add(item.tenant_id);
  } catch {
    // suggestions only: typing a tenant id still works
  }
  mount(datalist, [...seen].sort().map((t) => h("option", { value: t })));
}

async function reconnect() {
  const key = storedKey();
  if (!key) return signOut("Signed out.");
  let delay = 500;
  for (let attempt = 1; attempt <= 8; attempt += 1) {
    showBanner(`Connection to the gateway lost. Reconnecting (attempt ${attempt})…`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    try {
      adopt(await gateway.connect(key));
      showBanner(null);
      gateway.onclose = reconnect;
      startApprovalWatch();
      route();
      return;
    } catch (err) {
      if (err instanceof GatewayError && err.code === "UNAUTHORIZED") {
        return signOut(`The gateway no longer accepts this key: ${err.message}`);
      }
      delay = Math.min(delay * 2, 8000);
    }
  }
  showBanner("The gateway is unreachable. Reload the page to try again.");
}

function showBanner(text) {
  if (!banner) return;
  banner.hidden = !text;
  banner.textContent = text || "";
}

function route() {
  if (!main) return;
  renderToken += 1;
  const token = renderToken;
  const ctx = { alive: () => token === renderToken && main !== null };
  const current = parseRoute();
  const done = () => {
    // Move focus to the new page's heading, so keyboard and screen-reader users land on it.
    if (!ctx.alive()) return;
    const heading = main.querySelector("h1");
    if (heading && !main.contains(document.activeElement)) heading.focus({ preventScroll: true });
  };
  let work;
  switch (current.name) {
    case "list":
      work = renderHookList(main, current, ctx);
      break;
    case "create":
    case "edit":
      work = renderHookForm(main, current, ctx);
      break;
    case "detail":
      work = renderHookDetail(main, current, ctx);
      break;
    case "approvals":
      work = renderApprovals(main, current, ctx);
      break;
    case "audit":
      work = renderAudit(main, current, ctx);
      break;
    case "dispatches":
      work = renderDispatches(main, current, ctx);
      break;
    case "chain":
      work = renderChain(main, current, ctx);
      break;
    case "events":
      work = renderEvents(main, current, ctx);
      break;
    case "keys":
      work = renderKeys(main, current, ctx);
      break;
    case "import":
      work = renderImport(main, current, ctx);
      break;
    default:
      mount(main, h("h1", { tabIndex: -1, text: "Page not found" }), h("p", {}, h("a", { href: "#/hooks", text: "Back to hooks" })));
  }
  Promise.resolve(work).then(done, (err) => {
    console.error(err);
    if (ctx.alive()) mount(main, h("h1", { tabIndex: -1, text: "Something went wrong" }), h("pre", { class: "error-text", text: String(err?.stack || err) }));
  });
}

window.addEventListener("hashchange", () => {
  if (main) {
    // A new page: let the route's heading take focus once it renders.
    if (main.contains(document.activeElement)) document.activeElement.blur();
    route();
  }
});

async function boot() {
  const key = storedKey();
  if (!key) {
    renderSignIn(app, { signIn });
    return;
  }
  mount(app, h("p", { class: "state state-loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), "Connecting to the gateway…"));
  try {
    await signIn(key);
  } catch (err) {
    storeKey(null);
    renderSignIn(app, { signIn, notice: `Please sign in again: ${err.message}` });
  }
}

boot();
