// An accessible on/off switch (a button with role="switch").
import { h } from "../dom.js";

/**
 * `onChange(next)` may return a promise; the switch shows busy and reverts when it rejects.
 * `disabledReason` disables the switch and explains why in its tooltip.
 */
export function toggleSwitch({ checked, label, onChange, disabledReason = null }) {
  const button = h(
    "button",
    {
      type: "button",
      class: "switch",
      role: "switch",
      "aria-checked": String(Boolean(checked)),
      "aria-label": label,
      title: disabledReason || (checked ? "Enabled: click to disable" : "Disabled: click to enable"),
      disabled: Boolean(disabledReason),
    },
    h("span", { class: "switch-knob", "aria-hidden": "true" }),
  );
  button.addEventListener("click", async () => {
    const next = button.getAttribute("aria-checked") !== "true";
    button.setAttribute("aria-checked", String(next));
    button.setAttribute("aria-busy", "true");
    button.disabled = true;
    try {
      await onChange(next);
    } catch {
      button.setAttribute("aria-checked", String(!next));
    } finally {
      button.removeAttribute("aria-busy");
      button.disabled = false;
    }
  });
  return button;
}
