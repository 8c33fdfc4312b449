// Tiny DOM helpers: the panel builds its views with h() instead of a framework.

/**
 * Create an element. `props` keys: `class`, `text`, `dataset`, `on<event>` handlers,
 * `aria-*`/`data-*`/other attributes, and DOM properties (value, checked, disabled, …).
 * Children may be nodes, strings, numbers, arrays, or null/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key in el && !key.includes("-") && key !== "list" && key !== "form") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replace everything inside `parent` with `children`. */
export function mount(parent, ...children) {
  parent.replaceChildren();
  return append(parent, children);
}

let uid = 0;
/** A document-unique id, for label/aria wiring. */
export function nextId(prefix = "id") {
  uid += 1;
  return `${prefix}-${uid}`;
}
