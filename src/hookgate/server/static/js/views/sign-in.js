// Sign in with an API key. The key goes to the gateway in the first WebSocket frame.
import { h, mount } from "../dom.js";
import { field, showProblems, clearProblems } from "./fields.js";
import { describeError } from "../ui/states.js";

/** `signIn(key)` resolves when the gateway accepted the key, rejects with its error. */
export function renderSignIn(root, { signIn, notice = null }) {
  const keyInput = h("input", {
    type: "password",
    name: "apiKey",
    autocomplete: "current-password",
    spellcheck: false,
    required: true,
    placeholder: "hg-…",
  });
  const submit = h("button", { type: "submit", class: "btn btn-primary btn-block", text: "Sign in" });
  const form = h(
    "form",
    { class: "card sign-in", novalidate: true, "aria-labelledby": "sign-in-title" },
    h("div", { class: "brand brand-large" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "hookgate"),
    h("h1", { id: "sign-in-title", tabIndex: -1, text: "Sign in to the Hooks panel" }),
    notice ? h("p", { class: "notice", role: "status", text: notice }) : null,
    field({
      name: "apiKey",
      label: "API key",
      hint: "Kept in this tab only (session storage). Create keys with `hookgate keys create`.",
      control: keyInput,
      wide: true,
    }),
    submit,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearProblems(form);
    const key = keyInput.value.trim();
    if (!key) {
      showProblems(form, new Map([["apiKey", ["Enter an API key."]]]));
      return;
    }
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    submit.textContent = "Signing in…";
    try {
      await signIn(key);
    } catch (err) {
      showProblems(form, new Map([["apiKey", [describeError(err)]]]));
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
      submit.textContent = "Sign in";
    }
  });
  mount(root, h("div", { class: "sign-in-page" }, form));
  keyInput.focus();
}
