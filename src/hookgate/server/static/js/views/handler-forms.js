// The handler-specific part of the hook form. Each builder returns {element, read(), keys}:
// `read()` gives the handler's `config`; config keys the form has no field for are kept in an
// "Other settings (JSON)" box so editing a hook never drops them.
import { h, nextId } from "../dom.js";
import { session } from "../session.js";
import { field, splitList } from "./fields.js";

// A field's hint: its description in the type's config model, as the gateway sent it.
const describe = (type, key) => session.handlerConfigs[type]?.properties?.[key]?.description ?? null;

const text = (name, value, attrs = {}) =>
  h("input", { type: "text", name, value: value ?? "", autocomplete: "off", spellcheck: false, ...attrs });
const area = (name, value, rows = 4) => h("textarea", { name, rows, value: value ?? "", spellcheck: false });
const number = (name, value) => h("input", { type: "number", name, value: value ?? "", inputMode: "numeric" });

function commandForm(config) {
  const command = text("command", config.command, { class: "mono", placeholder: "bash ./hooks/guard.sh" });
  const cwd = text("cwd", config.cwd, { class: "mono", placeholder: "/workspace" });
  const env = text("allowed_env_vars", (config.allowed_env_vars || []).join(", "), { placeholder: "MY_VAR, OTHER_VAR" });
  return {
    keys: ["command", "cwd", "allowed_env_vars"],
    element: [
      field({ name: "config.command", label: "Command", hint: describe("command", "command"), control: command, wide: true }),
      field({ name: "config.cwd", label: "Working directory", hint: describe("command", "cwd"), control: cwd }),
      field({ name: "config.allowed_env_vars", label: "Allowed environment variables", hint: describe("command", "allowed_env_vars"), control: env }),
    ],
    read: () => {
      const out = { command: command.value.trim() };
      if (cwd.value.trim()) out.cwd = cwd.value.trim();
      const vars = splitList(env.value);
      if (vars.length) out.allowed_env_vars = vars;
      return out;
    },
  };
}

// The gateway always seals these (DEFAULT_SECRET_HEADERS); others when listed in secret_headers.
const ALWAYS_SECRET = new Set(["authorization", "proxy-authorization"]);

function httpForm(config) {
  const url = text("url", config.url, { type: "url", class: "mono", placeholder: "https://safety.internal/check" });
  const headers = config.headers && typeof config.headers === "object" ? config.headers : {};
  const secretNames = new Set(
    (Array.isArray(config.secret_headers) ? config.secret_headers : []).map((n) => String(n).toLowerCase()),
  );
  const rows = h("div", { class: "header-rows" });
  const addRow = (name = "", value = "", secret = false, stored = false) => {
    const nameInput = text("header_name", name, { class: "mono", placeholder: "X-Request-Source", "aria-label": "Header name" });
    const valueInput = h("input", {
      type: secret ? "password" : "text",
      name: "header_value",
      value: stored ? "" : value ?? "",
      autocomplete: "new-password",
      placeholder: stored ? "stored — leave empty to keep" : "value",
      "aria-label": "Header value",
    });
    const secretId = nextId("secret");
    const secretBox = h("input", { type: "checkbox", id: secretId, checked: secret, name: "header_secret" });
    const syncSecret = () => {
      const forced = ALWAYS_SECRET.has(nameInput.value.trim().toLowerCase());
      if (forced) secretBox.checked = true;
      secretBox.disabled = forced;
      valueInput.type = secretBox.checked ? "password" : "text";
    };
    secretBox.addEventListener("change", syncSecret);
    nameInput.addEventListener("input", syncSecret);
    const row = h(
      "div",
      { class: "header-row", dataset: { stored: stored ? "true" : "false" } },
      nameInput,
      valueInput,
      h("span", { class: "secret-toggle" }, secretBox, h("label", { for: secretId, text: "secret" })),
      h("button", { type: "button", class: "btn btn-small btn-quiet", text: "Remove", "aria-label": `Remove header ${name}`, onclick: () => row.remove() }),
    );
    rows.append(row);
    syncSecret();
    return row;
  };
  for (const [name, value] of Object.entries(headers)) {
    const secret = secretNames.has(name.toLowerCase()) || ALWAYS_SECRET.has(name.toLowerCase()) || value === null;
    // A secret value is never sent back by the gateway: only the fact that one is stored.
    addRow(name, secret ? "" : value, secret, secret);
  }
  const headerBlock = h(
    "div",
    { class: "field field-wide", dataset: { field: "config.headers" } },
    h("span", { class: "label", text: "Headers" }),
    h("p", { class: "hint", text: describe("http", "headers") ?? "" }),
    rows,
    h("button", {
      type: "button",
      class: "btn btn-small",
      text: "Add header",
      onclick: () => addRow().querySelector("input").focus(),
    }),
    h("p", { class: "field-error", hidden: true }),
  );
  return {
    keys: ["url", "headers", "secret_headers"],
    element: [
      field({ name: "config.url", label: "Webhook URL", hint: describe("http", "url"), control: url, wide: true }),
      headerBlock,
    ],
    read: () => {
      const out = { url: url.value.trim() };
      const hdrs = {};
      const secrets = [];
      for (const row of rows.querySelectorAll(".header-row")) {
        const [nameInput, valueInput] = row.querySelectorAll("input");
        const name = nameInput.value.trim();
        if (!name) continue;
        const secret = row.querySelector("input[type=checkbox]").checked;
        const stored = row.dataset.stored === "true";
        // null keeps the stored secret; a typed value replaces it
        hdrs[name] = stored && !valueInput.value ? null : valueInput.value;
        // The gateway lists every header it holds sealed; keep that list as it came, so an
        // untouched form reads back the same config.
        if (secret && (!ALWAYS_SECRET.has(name.toLowerCase()) || secretNames.has(name.toLowerCase()))) {
          secrets.push(name);
        }
      }
      if (Object.keys(hdrs).length) out.headers = hdrs;
      if (secrets.length) out.secret_headers = secrets;
      return out;
    },
  };
}

function promptForm(config) {
  const template = area("prompt_template", config.prompt_template, 5);
  const model = text("model", config.model, { placeholder: "haiku" });
  const cap = number("max_invocations_per_turn", config.max_invocations_per_turn);
  cap.placeholder = "5";
  return {
    keys: ["prompt_template", "model", "max_invocations_per_turn"],
    element: [
      field({ name: "config.prompt_template", label: "Prompt template", hint: describe("prompt", "prompt_template"), control: template, wide: true }),
      field({ name: "config.model", label: "Model", hint: describe("prompt", "model"), control: model }),
      field({ name: "config.max_invocations_per_turn", label: "Per-turn cap", hint: describe("prompt", "max_invocations_per_turn"), control: cap }),
    ],
    read: () => {
      const out = {};
      if (template.value.trim()) out.prompt_template = template.value;
      if (model.value.trim()) out.model = model.value.trim();
      if (cap.value !== "") out.max_invocations_per_turn = Number(cap.value);
      return out;
    },
  };
}

function agentForm(config) {
  const agent = text("agent", config.agent, { placeholder: "reviewer" });
  const model = text("model", config.model, { placeholder: "sonnet" });
  const prompt = area("prompt", config.prompt, 4);
  return {
    keys: ["agent", "model", "prompt"],
    element: [
      field({ name: "config.agent", label: "Reviewer agent", hint: describe("agent", "agent"), control: agent }),
      field({ name: "config.model", label: "Reviewer model", hint: describe("agent", "model"), control: model }),
      field({ name: "config.prompt", label: "Reviewer instructions", hint: describe("agent", "prompt"), control: prompt, wide: true }),
    ],
    read: () => {
      const out = {};
      if (agent.value.trim()) out.agent = agent.value.trim();
      if (model.value.trim()) out.model = model.value.trim();
      if (prompt.value.trim()) out.prompt = prompt.value;
      return out;
    },
  };
}

function processForm(config) {
  const command = area("command", (Array.isArray(config.command) ? config.command : config.command ? [config.command] : []).join("\n"), 3);
  const dir = text("dir", config.dir, { class: "mono" });
  const env = area("env", Object.entries(config.env || {}).map(([k, v]) => `${k}=${v}`).join("\n"), 2);
  const observe = text("observe", (config.observe || []).join(", "), { placeholder: "tool_exec_start, turn_end" });
  const intercept = text("intercept", (config.intercept || []).join(", "), { placeholder: "before_tool, approve_tool" });
  return {
    keys: ["command", "dir", "env", "observe", "intercept"],
    element: [
      field({ name: "config.command", label: "Command (one argument per line)", hint: describe("process", "command"), control: command, wide: true }),
      field({ name: "config.dir", label: "Directory", hint: describe("process", "dir"), control: dir }),
      field({ name: "config.env", label: "Environment (KEY=value per line)", hint: describe("process", "env"), control: env }),
      field({ name: "config.observe", label: "Observe", hint: describe("process", "observe"), control: observe }),
      field({ name: "config.intercept", label: "Intercept", hint: describe("process", "intercept"), control: intercept }),
    ],
    read: () => {
      const out = { command: command.value.split("\n").map((s) => s.trim()).filter(Boolean) };
      if (dir.value.trim()) out.dir = dir.value.trim();
      const pairs = env.value.split("\n").map((s) => s.trim()).filter(Boolean);
      if (pairs.length) out.env = Object.fromEntries(pairs.map((p) => [p.split("=")[0], p.split("=").slice(1).join("=")]));
      if (splitList(observe.value).length) out.observe = splitList(observe.value);
      if (splitList(intercept.value).length) out.intercept = splitList(intercept.value);
      return out;
    },
  };
}

const BUILDERS = { command: commandForm, http: httpForm, prompt: promptForm, agent: agentForm, process: processForm };

// A field's schema without its "or null" (pydantic writes an optional field as anyOf).
function plain(prop) {
  const options = Array.isArray(prop.anyOf) ? prop.anyOf.filter((p) => p.type !== "null") : null;
  return options && options.length === 1 ? { ...prop, ...options[0] } : prop;
}

function kindOf(prop) {
  if (prop.enum || prop.const !== undefined) return "choice";
  if (prop.type === "string" || prop.type === "integer" || prop.type === "number" || prop.type === "boolean") return prop.type;
  if (prop.type === "array" && prop.items && plain(prop.items).type === "string") return "list";
  return "json";
}

// The form of a type the panel has no hand-made form for (a new handler type, an
// integration's): one field per property of the type's config model, as the gateway sent it.
function schemaForm(config, schema) {
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const readers = [];
  const element = [];
  for (const [key, raw] of Object.entries(props)) {
    if (key === "state") continue; // hook state: kept as it came, in "Other settings"
    const prop = plain(raw); // a $ref'd model stays a JSON box (its description is the model's)
    const kind = kindOf(prop);
    const value = config[key];
    let control;
    let read;
    if (kind === "boolean") {
      control = h("input", { type: "checkbox", name: key, checked: value ?? prop.default ?? false });
      read = () => (control.checked === (prop.default ?? false) && value === undefined ? undefined : control.checked);
    } else if (kind === "choice") {
      const choices = prop.enum || [prop.const];
      control = h("select", { name: key }, required.has(key) ? null : h("option", { value: "", text: "(default)" }),
        choices.map((c) => h("option", { value: String(c), text: String(c), selected: value === c })));
      read = () => (control.value === "" ? undefined : choices.find((c) => String(c) === control.value));
    } else if (kind === "integer" || kind === "number") {
      control = number(key, value);
      if (prop.default !== undefined && prop.default !== null) control.placeholder = String(prop.default);
      read = () => (control.value === "" ? undefined : Number(control.value));
    } else if (kind === "list") {
      control = text(key, Array.isArray(value) ? value.join(", ") : "", { placeholder: "a, b" });
      read = () => (splitList(control.value).length ? splitList(control.value) : undefined);
    } else if (kind === "string") {
      control = text(key, value, { class: "mono" });
      read = () => (control.value.trim() ? control.value.trim() : undefined);
    } else {
      control = area(key, value === undefined ? "" : JSON.stringify(value, null, 2), 3);
      control.classList.add("mono");
      read = () => {
        if (!control.value.trim()) return undefined;
        try {
          return JSON.parse(control.value);
        } catch (err) {
          throw new ExtraJsonError(`${key}: not valid JSON: ${err.message}`);
        }
      };
    }
    readers.push([key, read]);
    const label = raw.title || prop.title || key.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
    element.push(field({ name: `config.${key}`, label, hint: prop.description || null, control, wide: kind === "json" }));
  }
  return {
    keys: readers.map(([key]) => key),
    element,
    read: () => Object.fromEntries(readers.map(([key, read]) => [key, read()]).filter(([, v]) => v !== undefined)),
  };
}

export class ExtraJsonError extends Error {}

/** The sub-form for `type`, filled from `config`. */
export function handlerSubform(type, config = {}) {
  const build = BUILDERS[type];
  const schema = session.handlerConfigs[type];
  const part = build ? build(config) : schema ? schemaForm(config, schema) : { keys: [], element: [], read: () => ({}) };
  const extra = Object.fromEntries(Object.entries(config).filter(([k]) => !part.keys.includes(k)));
  const extraBox = area("config_extra", Object.keys(extra).length ? JSON.stringify(extra, null, 2) : "", 3);
  extraBox.classList.add("mono");
  extraBox.placeholder = '{"format": "claude_code"}';
  const element = h(
    "fieldset",
    { class: "subform", dataset: { field: "config", handler: type } },
    h("legend", { text: `${type} settings` }),
    h("p", { class: "field-error", hidden: true }),
    h("div", { class: "grid" }, part.element, field({ name: "config.extra", label: "Other settings (JSON)", hint: "Handler settings the form has no field for.", control: extraBox, wide: true })),
  );
  return {
    element,
    keys: [...part.keys, ...Object.keys(extra)],
    read() {
      let more = {};
      if (extraBox.value.trim()) {
        try {
          more = JSON.parse(extraBox.value);
        } catch (err) {
          throw new ExtraJsonError(`not valid JSON: ${err.message}`);
        }
        if (!more || typeof more !== "object" || Array.isArray(more)) throw new ExtraJsonError("must be a JSON object");
      }
      return { ...more, ...part.read() };
    },
  };
}
