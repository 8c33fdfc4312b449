// Who is signed in, and what that lets them see and press. The gateway enforces every rule
// again; the panel only avoids offering what would be refused.

const KEY_STORAGE = "hookgate.apiKey";
const TENANT_STORAGE = "hookgate.tenant";
// In rank order: an approver reads and decides approvals but never dispatches.
const RANK = { viewer: 0, approver: 1, operator: 2, admin: 3 };

export const session = {
  role: "viewer",
  tenantId: null,
  isMaster: false,
  edition: "lite",
  keyName: null,
  version: null,
  handlerTypes: null,
  // Each handler type's config as JSON Schema (its config model on the gateway).
  handlerConfigs: {},
  hostCode: null,
};

export function adopt(hello) {
  session.role = RANK[hello.role] !== undefined ? hello.role : "viewer";
  session.tenantId = hello.tenantId || null;
  session.isMaster = hello.isMasterScope === true;
  session.edition = hello.edition === "standard" ? "standard" : "lite";
  session.keyName = hello.keyName || null;
  session.version = hello.version || null;
  session.handlerTypes = Array.isArray(hello.handlerTypes) ? hello.handlerTypes : null;
  const configs = hello.handlerConfigs;
  session.handlerConfigs = configs && typeof configs === "object" && !Array.isArray(configs) ? configs : {};
  const hostCode = hello.hostCode;
  session.hostCode = hostCode && Array.isArray(hostCode.handlerTypes) ? hostCode : null;
}

// The key lives in sessionStorage: it survives a reload, not the closing of the tab.
export function storedKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

export function storeKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    else {
      sessionStorage.removeItem(KEY_STORAGE);
      sessionStorage.removeItem(TENANT_STORAGE);
    }
  } catch {
    // storage disabled: the user signs in again after a reload
  }
}

export function atLeast(role) {
  return RANK[session.role] >= RANK[role];
}

export const canTest = () => atLeast("operator");
export const canWrite = () => atLeast("admin");
/** Promoting a shadow hook (it starts to decide): operators and admins. */
export const canPromote = () => atLeast("operator");
export const canManageKeys = () => atLeast("admin");
export const KEYS_ROLE_REASON = "Managing API keys needs the admin role";
export const IMPORT_ROLE_REASON = "Importing hooks needs the admin role";

/**
 * The tenant a master-scope key looks at (hooks, events, audit, keys, files), or null for
 * every tenant. Other keys always see their own tenant: the gateway would refuse another.
 */
export function viewedTenant() {
  if (!session.isMaster) return null;
  try {
    return sessionStorage.getItem(TENANT_STORAGE) || null;
  } catch {
    return null;
  }
}

export function setViewedTenant(tenantId) {
  try {
    if (tenantId) sessionStorage.setItem(TENANT_STORAGE, tenantId);
    else sessionStorage.removeItem(TENANT_STORAGE);
  } catch {
    // storage disabled: the picker resets on reload
  }
}

/** The one tenant a per-tenant view (events, files) shows: the picked one, else the key's. */
export const workingTenant = () => viewedTenant() || session.tenantId;

/** Why the current user may not change `hook`, or null when they may. */
export function whyReadOnly(hook, { toggle = false } = {}) {
  if (!canWrite()) return "Only admins can change hooks";
  if (hook.scope === "global" && !session.isMaster) return "Global hooks need master scope";
  if (!session.isMaster && hook.tenant_id && session.tenantId && hook.tenant_id !== session.tenantId) {
    return "This hook belongs to another tenant";
  }
  if (!toggle && hook.source === "builtin") return "Builtin hooks are read-only (only the switch works)";
  return null;
}

/**
 * Why this key may not pick handler `type`, or null when it may. Hooks that run code on the
 * gateway host (command, process, callable) are refused on the standard edition and, unless
 * the gateway allows tenant host code, to keys without master scope; the gateway says which
 * types and why in its connect answer.
 */
// Used when an older gateway does not say which types run host code.
const HOST_CODE_FALLBACK = ["command", "process", "callable"];

/** Does this saved hook run code on the gateway host (a quality gate: when a gate is a command)? */
export function runsHostCode(hook) {
  if (hook.source === "builtin") return false; // hookgate's own code, tested like any hook
  const types = session.hostCode ? session.hostCode.handlerTypes : HOST_CODE_FALLBACK;
  if (types.includes(hook.handler_type)) return true;
  const gates = hook.handler_type === "quality_gate" && hook.config ? hook.config.gates : null;
  return Array.isArray(gates) && gates.some((gate) => gate && gate.type === "command");
}

/** Why this key may not define or test host code at all, or null when it may. */
export function hostCodeRefusal() {
  const hostCode = session.hostCode;
  return hostCode && !hostCode.allowed ? `Not available: ${hostCode.reason}` : null;
}

export function hostCodeDisabledReason(type) {
  const hostCode = session.hostCode;
  if (hostCode) {
    return !hostCode.allowed && hostCode.handlerTypes.includes(type) ? `Not available: ${hostCode.reason}` : null;
  }
  return type === "command" && session.edition === "standard"
    ? "Not available on the standard edition: command hooks run shell commands on the gateway host. Use http or prompt."
    : null;
}

/**
 * Why this key may not dry-run `hook`, or null. Hooks that run code on the gateway host: the
 * gateway lets only admins test them, and only master-scope keys unless it runs with
 * --tenant-host-code.
 */
export function whyNoTest(hook) {
  if (!canTest()) return "Testing needs the operator role";
  if (runsHostCode(hook)) {
    if (!atLeast("admin")) return `Testing a ${hook.handler_type} hook runs code on the gateway host: admins only`;
    return hostCodeRefusal();
  }
  return null;
}
