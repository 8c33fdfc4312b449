// A confirm dialog on the native <dialog>: focus trap and Escape come with it.
import { h } from "../dom.js";

export function confirmDialog({ title, text, confirmLabel = "Confirm", danger = false }) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "dialog", "aria-labelledby": "dialog-title" },
      h(
        "form",
        { method: "dialog" },
        h("h2", { id: "dialog-title", text: title }),
        h("p", { text }),
        h(
          "div",
          { class: "dialog-actions" },
          h("button", { value: "cancel", class: "btn", text: "Cancel" }),
          h("button", {
            value: "confirm",
            class: danger ? "btn btn-danger" : "btn btn-primary",
            text: confirmLabel,
          }),
        ),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(dialog.returnValue === "confirm");
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
