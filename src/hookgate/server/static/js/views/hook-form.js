// Create and edit a hook. The gateway validates; its messages are shown at their fields.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { allEvents, eventSpec, HANDLER_TYPES } from "../catalogue.js";
import { session, canWrite, whyReadOnly, hostCodeDisabledReason, viewedTenant } from "../session.js";
import { hookHref, navigate } from "../router.js";
import { fieldProblems } from "../problems.js";
import { loadingState, errorState, notAllowedState, describeError } from "../ui/states.js";
import { toast } from "../ui/toast.js";
import { field, radioGroup, showProblems, clearProblems, showWarnings, splitList } from "./fields.js";
import { handlerSubform, ExtraJsonError } from "./handler-forms.js";

const DEFAULTS = {
  event: "pre_tool_use",
  handler_type: "http",
  scope: "tenant",
  name: "",
  matcher: "",
  if_expr: "",
  priority: 0,
  timeout_ms: 5000,
  on_timeout: "block",
  on_error: "block",
  enabled: true,
  mode: "enforce",
  config: {},
  agent_ids: [],
};

const HANDLER_HINTS = {
  command: "Shell command on the gateway host",
  http: "POST to a webhook",
  prompt: "LLM evaluator",
  agent: "LLM reviewer: APPROVED or REJECTED",
  process: "Long-lived JSON-RPC process",
  quality_gate: "Legacy delegation quality gate",
  callable: "Python function in the gateway",
};

// Warnings of the save that led to this form, shown once when it opens (hook id → warnings).
const savedWarnings = new Map();

export async function renderHookForm(root, route, ctx) {
  const editing = route.name === "edit";
  if (!canWrite()) {
    mount(root, h("h1", { tabIndex: -1, text: editing ? "Edit hook" : "New hook" }), notAllowedState("Only admins can create or edit hooks."));
    return;
  }
  let hook = { ...DEFAULTS };
  if (editing) {
    mount(root, loadingState("Loading hook…"));
    try {
      hook = await api.getHook(route.id);
    } catch (err) {
      if (ctx.alive()) mount(root, h("h1", { tabIndex: -1, text: "Edit hook" }), errorState(err, () => renderHookForm(root, route, ctx)));
      return;
    }
    if (!ctx.alive()) return;
    const why = whyReadOnly(hook);
    if (why) {
      mount(root, h("h1", { tabIndex: -1, text: "Edit hook" }), notAllowedState(why, h("a", { class: "btn", href: hookHref(hook.id), text: "Back to the hook" })));
      return;
    }
  }
  const form = buildForm(hook, editing);
  mount(root, form);
  const warnings = editing ? savedWarnings.get(hook.id) : null;
  if (warnings) {
    savedWarnings.delete(hook.id);
    warningNotice(form, warnings);
  }
}

/** The hook was saved, but the gateway expects it not to work: say where and why. */
function warningNotice(form, warnings) {
  const unplaced = showWarnings(form, warnings);
  const notice = form.querySelector(".form-warnings");
  mount(
    notice,
    h("p", { class: "state-title", text: "Saved, with a warning" }),
    h("p", { text: "The hook is stored, but the gateway expects its calls to fail. Fix the field marked below and save again, or ask the gateway's operator to allow the address." }),
    unplaced.length ? h("ul", {}, unplaced.map((m) => h("li", { text: m }))) : null,
  );
  notice.hidden = false;
  notice.focus();
}

function buildForm(hook, editing) {
  // Every handler type is shown (host-code ones disabled with the reason when this key may
  // not use them); callable only when the gateway offers it.
  const handlerTypes = [...new Set([...HANDLER_TYPES, ...(session.handlerTypes || [])])];
  const general = h("div", { class: "form-errors", role: "alert", tabIndex: -1, hidden: true });
  const warningBox = h("div", { class: "form-warnings", role: "status", tabIndex: -1, hidden: true });
  const picked = !editing && session.isMaster ? viewedTenant() : null;
  let handlerType = hook.handler_type;
  let subform = handlerSubform(handlerType, hook.config || {});
  const subformSlot = h("div", { class: "subform-slot" }, subform.element);

  const nameInput = h("input", { type: "text", name: "name", value: hook.name || "", autocomplete: "off", placeholder: "Block rm -rf" });
  const eventSelect = h(
    "select",
    { name: "event" },
    h("optgroup", { label: "Blocking" }, allEvents().filter((e) => e.blocking).map((e) => h("option", { value: e.name, text: e.name, selected: e.name === hook.event }))),
    h("optgroup", { label: "Observe only" }, allEvents().filter((e) => !e.blocking).map((e) => h("option", { value: e.name, text: e.name, selected: e.name === hook.event }))),
  );
  const matcherInput = h("input", { type: "text", name: "matcher", class: "mono", value: hook.matcher || "", autocomplete: "off", spellcheck: false, placeholder: "^(exec|shell)$" });
  const matcherHint = h("span");
  const updateMatcherHint = () => {
    const spec = eventSpec(eventSelect.value);
    matcherHint.textContent = spec.match_field
      ? `Regular expression (RE2) on ${spec.match_field}. Empty matches every call.`
      : "This event has no field a matcher tests; use if_expr.";
  };
  eventSelect.addEventListener("change", updateMatcherHint);
  updateMatcherHint();
  const ifInput = h("textarea", { name: "if_expr", class: "mono", rows: 2, value: hook.if_expr || "", spellcheck: false, placeholder: 'tool_name == "exec" && size(tool_input.cmd) > 80' });
  const priorityInput = h("input", { type: "number", name: "priority", value: String(hook.priority ?? 0), inputMode: "numeric" });
  const timeoutInput = h("input", { type: "number", name: "timeout_ms", value: String(hook.timeout_ms ?? 5000), inputMode: "numeric" });
  const onTimeout = h(
    "select",
    { name: "on_timeout" },
    ["block", "allow"].map((v) => h("option", { value: v, text: v, selected: hook.on_timeout === v })),
  );
  const onError = h(
    "select",
    { name: "on_error" },
    ["block", "allow"].map((v) => h("option", { value: v, text: v, selected: (hook.on_error || "block") === v })),
  );
  const enabledBox = h("input", { type: "checkbox", name: "enabled", checked: hook.enabled !== false });
  const modeSelect = h(
    "select",
    { name: "mode" },
    [["enforce", "enforce: it decides"], ["shadow", "shadow: recorded, never decides"]].map(([v, text]) =>
      h("option", { value: v, text, selected: (hook.mode || "enforce") === v }),
    ),
  );
  // approval: a person decides every call the hook lets through (blocking events only).
  const approval = hook.approval || null;
  const approvalBox = h("input", { type: "checkbox", name: "approval.required", checked: Boolean(approval?.required) });
  const approvalTimeout = h("input", { type: "number", name: "approval.timeout_ms", value: String(approval?.timeout_ms ?? 60000), inputMode: "numeric" });
  const approvalOnTimeout = h(
    "select",
    { name: "approval.on_timeout" },
    [["block", "block (deny)"], ["allow", "allow"]].map(([v, t]) => h("option", { value: v, text: t, selected: (approval?.on_timeout || "block") === v })),
  );
  const agentIds = h("textarea", { name: "agent_ids", rows: 2, class: "mono", value: (hook.agent_ids || []).join("\n"), placeholder: "one agent id per line" });
  const agentField = field({ name: "agent_ids", label: "Agent ids", hint: "The agents this hook applies to.", control: agentIds, wide: true });
  let scope = hook.scope;
  agentField.hidden = scope !== "agent";

  const scopeOptions = [
    { value: "global", label: "Global", hint: "Every tenant", disabledReason: session.isMaster ? null : "Needs master scope" },
    { value: "tenant", label: "Tenant", hint: "Any agent of this tenant" },
    { value: "agent", label: "Agent", hint: "Listed agents only" },
  ];
  // Host-code types are shown greyed out with the reason (an existing hook keeps its own type
  // selectable, so the form still opens; the gateway refuses the save if it must).
  const handlerOptions = handlerTypes.map((t) => ({
    value: t,
    label: t,
    hint: HANDLER_HINTS[t] || "",
    disabledReason: editing && hook.handler_type === t ? null : hostCodeDisabledReason(t),
  }));

  const form = h(
    "form",
    { class: "hook-form", novalidate: true, "aria-labelledby": "form-title" },
    h("div", { class: "page-head" }, h("h1", { id: "form-title", tabIndex: -1, text: editing ? `Edit ${hook.name || "hook"}` : "New hook" }), editing ? h("span", { class: "muted", text: `version ${hook.version}` }) : null),
    general,
    warningBox,
    picked ? h("p", { class: "muted", text: `Tenant and agent hooks are created for tenant ${picked} (the tenant picked in the header).` }) : null,
    h(
      "section",
      { class: "card" },
      h("h2", { text: "What and when" }),
      h(
        "div",
        { class: "grid" },
        field({ name: "name", label: "Name", control: nameInput }),
        field({ name: "event", label: "Event", hint: "Blocking events wait for the decision.", control: eventSelect }),
        radioGroup({
          name: "handler_type",
          legend: "Handler",
          options: handlerOptions,
          value: handlerType,
          onChange: (value) => {
            handlerType = value;
            subform = handlerSubform(value, {});
            mount(subformSlot, subform.element);
          },
        }),
        radioGroup({
          name: "scope",
          legend: "Scope",
          options: scopeOptions,
          value: scope,
          onChange: (value) => {
            scope = value;
            agentField.hidden = value !== "agent";
          },
        }),
        agentField,
        field({ name: "matcher", label: "Matcher", hint: matcherHint, control: matcherInput }),
        field({ name: "if_expr", label: "if_expr", hint: "CEL over the event (tool_name, tool_input, depth, …); must be true for the hook to run.", control: ifInput }),
      ),
    ),
    h("section", { class: "card" }, h("h2", { text: "Handler" }), subformSlot),
    h(
      "section",
      { class: "card" },
      h("h2", { text: "Order and limits" }),
      h(
        "div",
        { class: "grid grid-4" },
        field({ name: "priority", label: "Priority", hint: "Higher runs first.", control: priorityInput }),
        field({ name: "timeout_ms", label: "Timeout (ms)", hint: "At most 10000.", control: timeoutInput }),
        field({ name: "on_timeout", label: "On timeout", control: onTimeout }),
        field({ name: "on_error", label: "On error", hint: "When the hook fails on a blocking event.", control: onError }),
        field({ name: "enabled", label: "Enabled", control: enabledBox }),
        field({ name: "mode", label: "Mode", hint: "Shadow: runs and records what it would have decided; never blocks.", control: modeSelect }),
      ),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", { text: "Human approval" }),
      h("p", { class: "hint", text: "A hook can also ask a person by answering ask; these settings apply then too. Only blocking events can wait for a person." }),
      h(
        "div",
        { class: "grid grid-4" },
        field({ name: "approval.required", label: "Always ask a person", hint: "Every call this hook lets through waits for an approval.", control: approvalBox }),
        field({ name: "approval.timeout_ms", label: "Time to decide (ms)", control: approvalTimeout }),
        field({ name: "approval.on_timeout", label: "If nobody decides", control: approvalOnTimeout }),
      ),
    ),
    h(
      "div",
      { class: "form-actions" },
      h("button", { type: "submit", class: "btn btn-primary", text: editing ? "Save changes" : "Create hook" }),
      h("a", { class: "btn", href: editing ? hookHref(hook.id) : "#/hooks", text: "Cancel" }),
    ),
  );

  const read = () => {
    const data = {
      event: eventSelect.value,
      handler_type: handlerType,
      scope,
      name: nameInput.value.trim(),
      matcher: matcherInput.value.trim() || null,
      if_expr: ifInput.value.trim() || null,
      priority: toNumber(priorityInput.value),
      timeout_ms: toNumber(timeoutInput.value),
      on_timeout: onTimeout.value,
      on_error: onError.value,
      enabled: enabledBox.checked,
      mode: modeSelect.value,
      config: subform.read(),
    };
    if (scope === "agent") data.agent_ids = splitList(agentIds.value);
    // Sent when it says something: a hook without approval settings keeps none.
    const asked = {
      required: approvalBox.checked,
      timeout_ms: toNumber(approvalTimeout.value),
      on_timeout: approvalOnTimeout.value,
    };
    if (approval || asked.required || asked.timeout_ms !== 60000 || asked.on_timeout !== "block") data.approval = asked;
    return data;
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearProblems(form);
    general.hidden = true;
    let data;
    try {
      data = read();
    } catch (err) {
      if (!(err instanceof ExtraJsonError)) throw err;
      showProblems(form, new Map([["config.extra", [err.message]]]));
      return;
    }
    const submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    try {
      let id = hook.id;
      if (editing) await api.updateHook(hook.id, changedFields(hook, data), hook.version);
      else id = await api.createHook(data);
      const warnings = data.handler_type === "http" ? await savedWarningsOf(id) : [];
      if (warnings.length) {
        // Stay in the form (as an edit of the saved hook) with the warnings at their fields.
        savedWarnings.set(id, warnings);
        toast(`${data.name || "Hook"} saved, with a warning`, "warn", 6000);
        navigate(hookHref(id, "edit"));
      } else {
        toast(`${data.name || "Hook"} ${editing ? "saved" : "created"}`, "ok");
        navigate(hookHref(id));
      }
    } catch (err) {
      showError(form, general, err, subform);
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  });
  return form;
}

/** The gateway's save-time check (the SSRF guard on a webhook URL); the save already stands. */
async function savedWarningsOf(hookId) {
  try {
    return await api.checkHook(hookId);
  } catch {
    return []; // the check is advice: a failure to run it never undoes a save
  }
}

function toNumber(value) {
  if (value === "" || value === null) return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : value; // let the gateway name the problem
}

/** The top-level fields that differ from the saved hook (config is sent whole). */
export function changedFields(hook, data) {
  const out = {};
  for (const [key, value] of Object.entries(data)) {
    const before = hook[key] ?? null;
    if (JSON.stringify(before) !== JSON.stringify(value ?? null)) out[key] = value;
  }
  return out;
}

function showError(form, general, err, subform) {
  const { fields, general: messages } = fieldProblems(err);
  // "config" problems name a key of the handler's settings when they can be placed there.
  const placed = new Map();
  for (const [name, list] of fields) {
    if (name !== "config") {
      placed.set(name, list);
      continue;
    }
    for (const message of list) {
      const key = subform.keys.find((k) => new RegExp(`(^|config\\.|['"\` ])${k}(['"\`:\\s]|$)`).test(message));
      const target = key && form.querySelector(`[data-field="config.${key}"]`) ? `config.${key}` : "config";
      placed.set(target, [...(placed.get(target) || []), message]);
    }
  }
  const unplaced = showProblems(form, placed);
  const all = [...messages, ...unplaced];
  if (!fields.size && !all.length) all.push(describeError(err));
  if (err.code === "CONFLICT") all.unshift("Someone changed this hook since you opened it. Reload to see their version.");
  if (all.length) {
    mount(general, h("p", { text: fields.size ? "The gateway refused the hook:" : "Could not save:" }), h("ul", {}, all.map((m) => h("li", { text: m }))));
    general.hidden = false;
    if (!fields.size) general.focus?.();
  }
  if (!fields.size) toast(`Not saved: ${describeError(err)}`, "error", 6000);
}
