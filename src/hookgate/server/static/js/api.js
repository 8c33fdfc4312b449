// The hooks.* methods the panel calls, in one place: every parameter shape lives here.
import { Gateway } from "./gateway.js";

export const gateway = new Gateway();

const call = (method, params) => gateway.call(method, params);

export async function listHooks() {
  const payload = await call("hooks.list", {});
  return Array.isArray(payload.hooks) ? payload.hooks : [];
}

export async function getHook(hookId) {
  const payload = await call("hooks.get", { hookId });
  return payload.hook ?? payload;
}

export async function createHook(definition) {
  const payload = await call("hooks.create", definition);
  return payload.hookId ?? payload.id;
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

export async function toggleHook(hookId, enabled) {
  return call("hooks.toggle", { hookId, enabled });
}

/** Dry run of a saved hook (by id, so the gateway uses its stored secrets) on a sample event. */
export async function testHook(hookId, sampleEvent) {
  const payload = await call("hooks.test", { hookId, sampleEvent });
  return payload.result ?? payload;
}

/** Dry run of an unsaved definition. */
export async function testDefinition(config, sampleEvent) {
  const payload = await call("hooks.test", { config, sampleEvent });
  return payload.result ?? payload;
}

export async function history(hookId, { cursor = null, limit = 25, decision = null, since = null, until = null } = {}) {
  const params = { hookId, limit };
  if (cursor) params.cursor = cursor;
  if (decision) params.decision = decision;
  if (since) params.since = since;
  if (until) params.until = until;
  const payload = await call("hooks.history", params);
  return {
    executions: Array.isArray(payload.executions) ? payload.executions : [],
    nextCursor: payload.nextCursor || payload.next_cursor || null,
  };
}

// The Audit view: executions across hooks with every filter hooks.history takes.
export async function auditPage(filters, { cursor = null, limit = 25 } = {}) {
  const params = { limit };
  for (const [key, value] of Object.entries(filters)) if (value) params[key] = value;
  if (cursor) params.cursor = cursor;
  const payload = await call("hooks.history", params);
  return {
    executions: Array.isArray(payload.executions) ? payload.executions : [],
    nextCursor: payload.nextCursor || payload.next_cursor || null,
  };
}

// The export is a streamed REST download; the key goes in the Authorization header.
export async function exportAudit(filters, format, apiKey) {
  const query = new URLSearchParams({ format });
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

export async function chains({ agentId = null } = {}) {
  const payload = await call("hooks.chain", agentId ? { agentId } : {});
  return Array.isArray(payload.events) ? payload.events : [];
}

export async function simulate(event, sampleEvent, { agentId = null } = {}) {
  const params = { event, sampleEvent };
  if (agentId) params.agentId = agentId;
  return call("hooks.simulate", params);
}
