// Hash routes: #/hooks, #/hooks/new, #/hooks/<id>[/overview|/test|/replay|/history|/changes|/edit],
// #/hooks/import, #/approvals[/<id>], #/audit, #/audit/dispatches[/<id>], #/audit/chain, #/events, #/keys.

const TABS = new Set(["overview", "test", "replay", "history", "changes"]);

export function parseRoute(hash = window.location.hash) {
  const [path, queryString = ""] = hash.replace(/^#/, "").split("?");
  const query = Object.fromEntries(new URLSearchParams(queryString));
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "hooks")) {
    return { name: "list", query };
  }
  if (parts[0] === "audit" && parts.length === 1) return { name: "audit", query };
  if (parts[0] === "audit" && parts[1] === "chain" && parts.length === 2) return { name: "chain", query };
  if (parts[0] === "audit" && parts[1] === "dispatches" && parts.length <= 3) return { name: "dispatches", id: parts[2] || null, query };
  if (parts[0] === "events" && parts.length === 1) return { name: "events", query };
  if (parts[0] === "keys" && parts.length === 1) return { name: "keys", query };
  if (parts[0] === "approvals" && parts.length <= 2) return { name: "approvals", id: parts[1] || null, query };
  if (parts[0] !== "hooks") return { name: "notfound", query };
  if (parts[1] === "new" && parts.length === 2) return { name: "create", query };
  if (parts[1] === "import" && parts.length === 2) return { name: "import", query };
  const id = parts[1];
  const sub = parts[2] || "overview";
  if (parts.length <= 3 && sub === "edit") return { name: "edit", id, query };
  if (parts.length <= 3 && TABS.has(sub)) return { name: "detail", id, tab: sub, query };
  return { name: "notfound", query };
}

export function hookHref(id, sub = "") {
  return `#/hooks/${encodeURIComponent(id)}${sub ? `/${sub}` : ""}`;
}

export function listHref(query = {}) {
  const qs = new URLSearchParams(Object.entries(query).filter(([, v]) => v)).toString();
  return `#/hooks${qs ? `?${qs}` : ""}`;
}

export function navigate(href) {
  if (window.location.hash === href) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else window.location.hash = href;
}

export function dispatchHref(id) {
  return `#/audit/dispatches/${encodeURIComponent(id)}`;
}
