// Test: fire the hook on a sample event as a dry run and show what it answered.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { eventSpec, sampleEvent, SAMPLE_TOOLS } from "../catalogue.js";
import { formatDuration } from "../format.js";
import { decisionBadge } from "../ui/badges.js";
import { jsonDiffView } from "../ui/json-diff.js";
import { describeError } from "../ui/states.js";
import { field, showProblems, clearProblems } from "./fields.js";

const storageKey = (hookId) => `hookgate.sample.${hookId}`;

function loadSample(hook) {
  try {
    const saved = localStorage.getItem(storageKey(hook.id));
    if (saved) return saved;
  } catch {
    // storage disabled: start from the template
  }
  return JSON.stringify(sampleEvent(hook.event, guessTool(hook)), null, 2);
}

/** A tool the hook's matcher accepts, so the first run exercises the hook. */
function guessTool(hook) {
  if (!hook.matcher) return "exec";
  try {
    const re = new RegExp(hook.matcher);
    return Object.keys(SAMPLE_TOOLS).find((t) => re.test(t)) || "exec";
  } catch {
    return "exec"; // RE2 syntax JS does not read: fall back to the default
  }
}

export function renderTestTab(panel, hook, ctx) {
  const spec = eventSpec(hook.event);
  const result = h("div", { class: "test-result", "aria-live": "polite" });
  const jsonBox = h("textarea", { name: "sample", class: "mono", rows: 12, spellcheck: false, value: loadSample(hook) });
  const toolPicker =
    spec.match_field === "tool_name"
      ? h(
          "select",
          { name: "tool" },
          Object.keys(SAMPLE_TOOLS).map((t) => h("option", { value: t, text: t, selected: currentTool(jsonBox.value) === t })),
        )
      : null;
  toolPicker?.addEventListener("change", () => {
    jsonBox.value = JSON.stringify(sampleEvent(hook.event, toolPicker.value), null, 2);
  });
  const run = h("button", { type: "submit", class: "btn btn-primary", text: "Run dry test" });
  const form = h(
    "form",
    { class: "card test-form", novalidate: true, "aria-labelledby": "test-title" },
    h("h2", { id: "test-title", text: "Sample event" }),
    h("p", { class: "hint", text: `A dry run of ${hook.event}: the matcher, if_expr and handler run; nothing is written to the history and the breaker is not touched.` }),
    toolPicker ? field({ name: "tool", label: "Tool", hint: "Fills the sample with a typical input for that tool.", control: toolPicker }) : null,
    field({ name: "sample", label: "Event JSON (editable)", control: jsonBox, wide: true }),
    h(
      "div",
      { class: "form-actions" },
      run,
      h("button", {
        type: "button",
        class: "btn",
        text: "Reset sample",
        onclick: () => {
          jsonBox.value = JSON.stringify(sampleEvent(hook.event, toolPicker?.value || "exec"), null, 2);
        },
      }),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearProblems(form);
    let sample;
    try {
      sample = JSON.parse(jsonBox.value);
      if (!sample || typeof sample !== "object" || Array.isArray(sample)) throw new Error("the sample event must be a JSON object");
    } catch (err) {
      showProblems(form, new Map([["sample", [`Not valid JSON: ${err.message}`]]]));
      return;
    }
    try {
      localStorage.setItem(storageKey(hook.id), jsonBox.value);
    } catch {
      // not saved: fine
    }
    run.disabled = true;
    run.setAttribute("aria-busy", "true");
    mount(result, h("p", { class: "state state-loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), "Running…"));
    try {
      const answer = await api.testHook(hook.id, sample);
      if (ctx.alive()) mount(result, resultView(answer, sample, spec));
    } catch (err) {
      if (ctx.alive()) mount(result, h("div", { class: "state state-error", role: "alert" }, h("p", { class: "state-title", text: "The test could not run" }), h("p", { text: describeError(err) })));
    } finally {
      run.disabled = false;
      run.removeAttribute("aria-busy");
    }
  });
  mount(panel, h("div", { class: "test-layout" }, form, result));
}

function currentTool(text) {
  try {
    return JSON.parse(text).tool_name ?? JSON.parse(text).toolName;
  } catch {
    return null;
  }
}

function resultView(r, sample, spec) {
  const facts = [];
  const fact = (label, value, cls = "") => facts.push(h("dt", { text: label }), h("dd", { class: cls }, value));
  fact("Decision", decisionBadge(r.decision));
  if (r.matched === false) fact("Matched", "no — the matcher or if_expr did not select this sample, so the handler did not run");
  fact("Duration", formatDuration(r.durationMs));
  const status = r.statusCode;
  if (status !== undefined && status !== null) fact("Status code", h("code", { class: "status-code", text: String(status) }));
  if (r.model) fact("Model", r.model);
  if (r.reason) fact("Reason", r.reason, "reason");
  if (r.error) fact("Error", r.error, "error-text");
  const context = r.additionalContext;
  if (Array.isArray(context) && context.length) fact("Added context", h("ul", {}, context.map((c) => h("li", { text: c }))));
  const streams = [];
  if (r.stdout) streams.push(h("div", { class: "stream" }, h("h3", { text: "stdout" }), h("pre", { class: "stdout", text: r.stdout })));
  if (r.stderr) streams.push(h("div", { class: "stream" }, h("h3", { text: "stderr" }), h("pre", { class: "stderr", text: r.stderr })));
  const updated = r.updatedInput;
  const original = spec.input_field ? sample[spec.input_field] ?? sample[camel(spec.input_field)] : sample;
  return h(
    "section",
    { class: "card result-card", "aria-labelledby": "result-title", dataset: { decision: r.decision || "none" } },
    h("h2", { id: "result-title", text: "Result" }),
    h("dl", { class: "facts" }, facts),
    streams.length ? h("div", { class: "streams" }, streams) : null,
    updated !== undefined && updated !== null
      ? h("div", { class: "diff-block" }, h("h3", { text: "The hook rewrote the input" }), jsonDiffView(original ?? null, updated, { leftTitle: `Original ${spec.input_field || "event"}`, rightTitle: "updatedInput" }))
      : null,
  );
}

function camel(name) {
  return name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
}
