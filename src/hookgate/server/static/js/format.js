// Formatting of times, durations and JSON for display.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function parseTime(value) {
  if (value === null || value === undefined || value === "") return null;
  const date = typeof value === "number" ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

export function formatTime(value) {
  const date = parseTime(value);
  return date ? dateTime.format(date) : "—";
}

/** ISO 8601 (UTC) of a time the gateway sent as an ISO string or as epoch seconds/ms. */
export function isoTime(value) {
  const date = parseTime(value);
  return date ? date.toISOString() : "—";
}

export function relativeTime(value, now = Date.now()) {
  const date = parseTime(value);
  if (!date) return "—";
  const seconds = Math.round((now - date.getTime()) / 1000);
  if (seconds < 45) return "just now";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  return formatTime(date);
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(Number(ms))) return "—";
  const value = Number(ms);
  if (value < 1) return `${value.toFixed(2)} ms`;
  if (value < 1000) return `${Math.round(value)} ms`;
  return `${(value / 1000).toFixed(2)} s`;
}

/** JSON with sorted keys, so two values that are equal print the same. */
export function stableJson(value) {
  return JSON.stringify(sortKeys(value), null, 2) ?? "null";
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys(value[k])]),
    );
  }
  return value;
}

export function shortId(id) {
  return id ? String(id).slice(0, 8) : "—";
}
