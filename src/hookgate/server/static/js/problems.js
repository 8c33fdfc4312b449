// Turn a gateway validation error into messages per form field.

const TOP_FIELDS = new Set([
  "event", "handler_type", "scope", "name", "matcher", "if_expr", "timeout_ms", "on_timeout",
  "on_error", "priority", "enabled", "agent_ids", "config",
]);

/**
 * Returns `{fields: Map<field, string[]>, general: string[]}`. Uses `details.problems`
 * when the gateway sends it; otherwise splits the "field: message; field: message" text.
 */
export function fieldProblems(error) {
  const fields = new Map();
  const general = [];
  const add = (field, message) => {
    const key = normalizeField(field);
    if (key) {
      if (!fields.has(key)) fields.set(key, []);
      fields.get(key).push(message);
    } else {
      general.push(field ? `${field}: ${message}` : message);
    }
  };
  const problems = error?.details?.problems;
  if (Array.isArray(problems) && problems.length) {
    for (const p of problems) add(p.field, p.message);
    return { fields, general };
  }
  const text = String(error?.message || "request failed").replace(/^hook '.*?': /, "");
  for (const part of text.split(/;\s+/)) {
    const match = /^([a-z_.]+):\s+(.*)$/s.exec(part);
    if (match && normalizeField(match[1])) add(match[1], match[2]);
    else general.push(part);
  }
  return { fields, general };
}

function normalizeField(field) {
  if (!field) return null;
  const name = String(field).replace(/^params\./, "").replace(/^updates\./, "");
  if (name.startsWith("config.")) return name;
  if (name.startsWith("approval.")) return name;
  if (name === "approval") return "approval.required";
  if (name === "agent_id") return "agent_ids";
  return TOP_FIELDS.has(name) ? name : null;
}
