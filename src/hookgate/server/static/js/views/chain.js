// Audit integrity (admins): checks the tamper-evident audit log (the dispatch records' hash
// chain and the hook rows each record covers) and shows each tenant's verdict and head. The
// head can be downloaded in the form `hookgate audit head` prints, to keep somewhere the
// database's operators cannot write; `hookgate audit verify --anchor FILE` checks against it.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { session, atLeast, viewedTenant } from "../session.js";
import { loadingState, errorState, notAllowedState } from "../ui/states.js";
import { auditSwitch } from "./dispatches.js";

export async function renderChain(main, route, ctx) {
  if (!atLeast("admin")) {
    mount(main, h("h1", { tabIndex: -1, text: "Audit integrity" }), notAllowedState(`Checking the audit chain needs the admin role; this key has the ${session.role} role.`));
    return;
  }
  const results = h("div", { class: "chain-results" });
  const status = h("p", { class: "muted", role: "status", "aria-live": "polite" });
  let report = null;
  const download = h("button", {
    type: "button",
    class: "btn btn-small",
    text: "Download head",
    disabled: true,
    onclick: () => {
      const heads = report.tenants.filter((t) => t.head).map((t) => t.head);
      const blob = new Blob([JSON.stringify({ heads }, null, 2)], { type: "application/json" });
      const link = h("a", { href: URL.createObjectURL(blob), download: "hookgate-audit-head.json" });
      document.body.append(link);
      link.click();
      link.remove();
      status.textContent = "Downloaded the head: keep it off this machine, then check with hookgate audit verify --anchor FILE.";
    },
  });
  const check = async () => {
    mount(results, loadingState("Checking the chain…"));
    download.disabled = true;
    try {
      report = await api.verifyAudit();
    } catch (err) {
      if (ctx.alive()) mount(results, errorState(err, check));
      return;
    }
    if (!ctx.alive()) return;
    download.disabled = !report.tenants.some((t) => t.head);
    const seconds = report.elapsed_s.toFixed(3);
    status.textContent = `${report.intact ? "Intact" : "BROKEN"}: ${report.records} records checked in ${seconds} s.`;
    mount(results, report.tenants.length ? chainTable(report.tenants) : h("p", { class: "muted", text: "No chain yet: records are chained as dispatches are recorded." }));
  };
  mount(
    main,
    h("h1", { tabIndex: -1, text: "Audit integrity" }),
    auditSwitch("chain"),
    h("p", { class: "muted", text: `${chainScope()}: each record carries the hash of the one before and covers its hook rows; a record or hook row altered, removed or reordered breaks the chain at the first place it touches.` }),
    h("div", { class: "toolbar" }, h("button", { type: "button", class: "btn", text: "Check again", onclick: check }), download, status),
    results,
  );
  await check();
}

function chainScope() {
  if (viewedTenant()) return `The chain of tenant ${viewedTenant()}`;
  return session.isMaster ? "Every tenant's chain" : "Your tenant's chain";
}

function chainTable(tenants) {
  const columns = ["Tenant", "Verdict", "Records", "Hook rows", "Places", "Head hash", "Problem"];
  const cell = (label, ...content) => h("td", { "data-label": label }, content);
  return h(
    "table",
    { class: "chain-table" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", text: c })))),
    h(
      "tbody",
      {},
      tenants.map((t) =>
        h(
          "tr",
          { class: "chain-row", dataset: { tenant: t.tenant_id } },
          cell("Tenant", t.tenant_id),
          cell("Verdict", h("span", { class: `badge ${t.intact ? "decision-allow" : "decision-block"}`, text: t.intact ? "intact" : "BROKEN" })),
          cell("Records", String(t.records) + (t.unchained ? ` (+${t.unchained} from before the chain)` : "")),
          cell("Hook rows", String(t.hook_rows ?? 0)),
          cell("Places", t.head ? `${t.head.base_seq + 1}–${t.head.seq}` : "no head"),
          cell("Head hash", t.head ? h("code", { title: t.head.hash, text: `${t.head.hash.slice(0, 16)}…` }) : ""),
          cell("Problem", t.problem ? `place ${t.problem.chain_seq}: ${t.problem.kind}: ${t.problem.why}` : ""),
        ),
      ),
    ),
  );
}
