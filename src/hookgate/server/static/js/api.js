// The gateway methods the panel calls, in one place: every parameter shape lives here.
// The wire spelling: a frame's own keys (params, payload keys) are camelCase, the records in
// them (hooks, executions, approvals, keys, outcomes) keep their snake_case field names.
import { Gateway } from "./gateway.js";
import { viewedTenant } from "./session.js";

export const gateway = new Gateway();

const call = (method, params) => gateway.call(method, params);

/** `{tenantId}` when a master-scope key picked a tenant, else nothing (the key's own scope). */
const picked = () => {
  const tenantId = viewedTenant();
  return tenantId ? { tenantId } : {};
};

export async function listHooks() {
  const payload = await call("hooks.list", picked());
  return payload.hooks;
}

/** Every hook this key sees (master scope: all tenants), whatever tenant is picked. */
export async function listAllHooks() {
  return (await call("hooks.list", {})).hooks;
}

export async function getHook(hookId) {
  return (await call("hooks.get", { hookId })).hook;
}

export async function createHook(definition) {
  const tenantId = viewedTenant();
  const params = tenantId && definition.scope !== "global" ? { ...definition, tenant_id: tenantId } : definition;
  return (await call("hooks.create", params)).hookId;
}

/** What a saved hook will run into although it is valid: `[{field, message}]`. */
export async function checkHook(hookId) {
  return (await call("hooks.check", { hookId })).warnings;
}

/** `expectedVersion` makes the gateway refuse (CONFLICT) when someone saved in between. */
export async function updateHook(hookId, updates, expectedVersion = null) {
  const params = { hookId, updates };
  if (expectedVersion) params.expectedVersion = expectedVersion;
  return call("hooks.update", params);
}

export async function deleteHook(hookId) {
  return call("hooks.delete", { hookId });
}

/** A shadow hook starts to decide (operators and admins). */
export async function promoteHook(hookId, expectedVersion = null) {
  const params = { hookId };
  if (expectedVersion) params.expectedVersion = expectedVersion;
  return call("hooks.promote", params);
}

export async function toggleHook(hookId, enabled) {
  return call("hooks.toggle", { hookId, enabled });
}

/** Dry run of a saved hook (by id, so the gateway uses its stored secrets) on a sample event. */
export async function testHook(hookId, sampleEvent) {
  return (await call("hooks.test", { hookId, sampleEvent })).result;
}

/** Dry run of an unsaved definition. */
export async function testDefinition(config, sampleEvent) {
  return (await call("hooks.test", { config, sampleEvent })).result;
}

export async function history(hookId, { cursor = null, limit = 25, decision = null, since = null, until = null } = {}) {
  const params = { hookId, limit };
  if (cursor) params.cursor = cursor;
  if (decision) params.decision = decision;
  if (since) params.since = since;
  if (until) params.until = until;
  return call("hooks.history", params);
}

// The Audit view: executions across hooks with every filter hooks.history takes.
export async function auditPage(filters, { cursor = null, limit = 25 } = {}) {
  const params = { limit, ...picked() };
  for (const [key, value] of Object.entries(filters)) if (value) params[key] = value;
  if (cursor) params.cursor = cursor;
  return call("hooks.history", params);
}

/** A hook's definition history, newest first: `[{version, action, changed_at, changed_by,
 * definition}]`. */
export async function hookRevisions(hookId) {
  return (await call("hooks.revisions", { hookId })).revisions;
}

/** Per-hook figures over a window (`1h`, `24h`, `7d`, `30d`), computed by the gateway from
 * the audit rows: `{window, since, until, rows, sampled, hooks: [{hook_id, hook_name, fires,
 * blocks, block_rate, p95_ms, last_fired}]}`. */
export async function hookFigures(window = "24h") {
  return call("hooks.figures", { window, ...picked() });
}

// Dispatch records: one per dispatch (event, tool, agent, session, decision, the hooks that
// ran in order, the approval). `decision` is allow, block or ask (every dispatch that asked).
export async function dispatchPage(filters, { cursor = null, limit = 25 } = {}) {
  const params = { limit, ...picked() };
  for (const [key, value] of Object.entries(filters)) if (value) params[key] = value;
  if (cursor) params.cursor = cursor;
  return call("dispatches.list", params);
}

export async function getDispatch(dispatchId) {
  return (await call("dispatches.get", { dispatchId })).dispatch;
}

// The export is a streamed REST download; the key goes in the Authorization header.
export async function exportAudit(filters, format, apiKey) {
  const query = new URLSearchParams({ format, ...picked() });
  for (const [key, value] of Object.entries(filters)) if (value) query.set(key, value);
  const response = await fetch(`/api/v1/executions/export?${query}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  if (!response.ok) {
    let message = `export failed (HTTP ${response.status})`;
    try {
      message = (await response.json()).error.message || message;
    } catch {
      // not JSON: keep the status line
    }
    throw new Error(message);
  }
  return response.blob();
}

/** The audit chain check (admins): `{intact, records, elapsed_s, tenants: [{tenant_id, intact,
 * records, hook_rows, unchained, head: {seq, hash, base_seq, base_hash}, problem}]}`. */
export async function verifyAudit() {
  return call("audit.verify", picked());
}

export async function chains({ agentId = null } = {}) {
  return (await call("hooks.chain", agentId ? { agentId, ...picked() } : picked())).events;
}

export async function simulate(event, sampleEvent, { agentId = null } = {}) {
  const params = { event, sampleEvent, ...picked() };
  if (agentId) params.agentId = agentId;
  return call("hooks.simulate", params);
}

/**
 * Replay the tenant's recorded dispatches with a candidate in place: `{hook}` (one
 * definition) or `{content}` (a hooks file), and `since`. Answers `{replayed, changed,
 * unknown, unreadable, changes: [...], shadow, complete, stopped, candidate}`.
 */
export async function replay(candidate, { since = null } = {}) {
  const params = { ...candidate, ...picked() };
  if (since) params.since = since;
  return call("hooks.replay", params);
}

// Hooks files: the tenant's hooks as YAML or JSON, and a file applied back (admins).
export async function exportHooks(format) {
  return call("hooks.export", { format, ...picked() });
}

/** `{applied, hooks: [{index, name, action, hookId, problems, warnings}], error}`. */
export async function importHooks(content, { dryRun }) {
  return call("hooks.import", { content, dryRun, ...picked() });
}

// API keys (admins): the secret is in the answer to createKey only.
export async function listKeys({ includeRevoked = false } = {}) {
  return (await call("keys.list", { includeRevoked, ...picked() })).keys;
}

/** Every key this key may list (for the tenant picker's suggestions). */
export async function listKeysForTenants() {
  return (await call("keys.list", {})).keys;
}

export async function createKey({ role, name, tenantId = null, master = false }) {
  const params = { role, name, master };
  if (tenantId) params.tenantId = tenantId;
  return call("keys.create", params);
}

export async function revokeKey(keyId) {
  return (await call("keys.revoke", { keyId })).key;
}
