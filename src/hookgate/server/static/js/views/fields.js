// Form fields with a label, a hint and an error slot wired for screen readers.
import { h, nextId } from "../dom.js";

/**
 * `name` is the problem key the gateway uses (`matcher`, `config.url`, …); the error slot of
 * the field shows the gateway's message for it.
 */
export function field({ name, label, hint = null, control, wide = false }) {
  const id = control.id || nextId("f");
  control.id = id;
  const hintId = hint ? `${id}-hint` : null;
  const errorId = `${id}-error`;
  control.setAttribute("aria-describedby", [hintId, errorId].filter(Boolean).join(" "));
  return h(
    "div",
    { class: `field${wide ? " field-wide" : ""}`, dataset: { field: name } },
    h("label", { for: id, text: label }),
    control,
    hint ? h("p", { class: "hint", id: hintId }, hint) : null,
    h("p", { class: "field-error", id: errorId, hidden: true }),
    h("p", { class: "field-warning", id: `${id}-warning`, hidden: true }),
  );
}

/**
 * Show the gateway's save-time `warnings` (`[{field, message}]`) at their fields, marked as
 * warnings, not errors (the hook was saved); returns the messages no field showed.
 */
export function showWarnings(form, warnings) {
  const unplaced = [];
  for (const { field: name, message } of warnings) {
    const wrapper = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    const slot = wrapper?.querySelector(":scope > .field-warning");
    if (!slot) {
      unplaced.push(`${name}: ${message}`);
      continue;
    }
    slot.textContent = message;
    slot.hidden = false;
    wrapper.classList.add("has-warning");
    const control = wrapper.querySelector("input, select, textarea");
    if (control && !control.getAttribute("aria-describedby").includes(slot.id)) {
      control.setAttribute("aria-describedby", `${control.getAttribute("aria-describedby")} ${slot.id}`);
    }
  }
  return unplaced;
}

/** A fieldset of radio buttons; options: [{value, label, hint?, disabledReason?}]. */
export function radioGroup({ name, legend, options, value, onChange = null }) {
  const errorId = nextId("err");
  return h(
    "fieldset",
    { class: "field field-wide radio-group", dataset: { field: name }, "aria-describedby": errorId },
    h("legend", { text: legend }),
    h(
      "div",
      { class: "radio-options" },
      options.map((opt) => {
        const id = nextId("r");
        const reasonId = opt.disabledReason ? `${id}-why` : null;
        return h(
          "div",
          { class: `radio-option${opt.disabledReason ? " is-disabled" : ""}` },
          h("input", {
            type: "radio",
            id,
            name,
            value: opt.value,
            checked: opt.value === value,
            disabled: Boolean(opt.disabledReason),
            "aria-describedby": reasonId || undefined,
            onchange: onChange ? () => onChange(opt.value) : undefined,
          }),
          h("label", { for: id }, h("span", { class: "radio-label", text: opt.label }), opt.hint ? h("span", { class: "radio-hint", text: opt.hint }) : null),
          opt.disabledReason ? h("p", { class: "disabled-reason", id: reasonId, text: opt.disabledReason }) : null,
        );
      }),
    ),
    h("p", { class: "field-error", id: errorId, hidden: true }),
  );
}

/** Show `problems` (Map field → messages) at their fields; returns the names nobody showed. */
export function showProblems(form, problems) {
  clearProblems(form);
  const unplaced = [];
  let first = null;
  for (const [name, messages] of problems) {
    const wrapper = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (!wrapper) {
      unplaced.push(...messages.map((m) => `${name}: ${m}`));
      continue;
    }
    const slot = wrapper.querySelector(":scope > .field-error");
    slot.textContent = messages.join(" ");
    slot.hidden = false;
    wrapper.classList.add("has-error");
    const control = wrapper.querySelector("input:not([type=hidden]), select, textarea");
    if (control) control.setAttribute("aria-invalid", "true");
    if (!first) first = control || wrapper;
  }
  if (first) first.focus();
  return unplaced;
}

export function clearProblems(form) {
  for (const wrapper of form.querySelectorAll(".has-error")) {
    wrapper.classList.remove("has-error");
    const slot = wrapper.querySelector(":scope > .field-error");
    if (slot) {
      slot.textContent = "";
      slot.hidden = true;
    }
  }
  for (const control of form.querySelectorAll("[aria-invalid]")) control.removeAttribute("aria-invalid");
}

export function splitList(text) {
  return String(text || "")
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter(Boolean);
}
