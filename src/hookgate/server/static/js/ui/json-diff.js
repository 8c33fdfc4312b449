// A side-by-side line diff of two JSON values (keys sorted, so only real changes show).
import { h } from "../dom.js";
import { stableJson } from "../format.js";

const MAX_LINES = 2000; // beyond this an LCS table is too big; show both sides unaligned

// Pretty-printed JSON puts a comma after every member but the last, so a line is compared
// without it: adding a key after "cmd" must not mark the "cmd" line as changed.
const lineKey = (line) => line.replace(/,$/, "");

/** Edit script between two line arrays: [{op: "=", a, b} | {op: "-", a} | {op: "+", b}]. */
export function diffLines(left, right) {
  const n = left.length;
  const m = right.length;
  if (n * m > MAX_LINES * MAX_LINES) {
    return [...left.map((a) => ({ op: "-", a })), ...right.map((b) => ({ op: "+", b }))];
  }
  // lcs[i][j]: length of the longest common subsequence of left[i:] and right[j:]
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      lcs[i][j] = lineKey(left[i]) === lineKey(right[j]) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const ops = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (lineKey(left[i]) === lineKey(right[j])) {
      ops.push({ op: "=", a: left[i++], b: right[j++] });
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      ops.push({ op: "-", a: left[i++] });
    } else {
      ops.push({ op: "+", b: right[j++] });
    }
  }
  while (i < n) ops.push({ op: "-", a: left[i++] });
  while (j < m) ops.push({ op: "+", b: right[j++] });
  return ops;
}

/** Pair runs of removals and additions so a changed line sits beside its replacement. */
export function sideBySide(ops) {
  const rows = [];
  let k = 0;
  while (k < ops.length) {
    if (ops[k].op === "=") {
      rows.push({ kind: "same", left: ops[k].a, right: ops[k].b });
      k += 1;
      continue;
    }
    const removed = [];
    const added = [];
    while (k < ops.length && ops[k].op !== "=") {
      if (ops[k].op === "-") removed.push(ops[k].a);
      else added.push(ops[k].b);
      k += 1;
    }
    for (let r = 0; r < Math.max(removed.length, added.length); r += 1) {
      const left = removed[r];
      const right = added[r];
      const kind = left !== undefined && right !== undefined ? "changed" : left !== undefined ? "removed" : "added";
      rows.push({ kind, left, right });
    }
  }
  return rows;
}

export function jsonDiffView(original, updated, { leftTitle = "Original", rightTitle = "updatedInput" } = {}) {
  const rows = sideBySide(diffLines(stableJson(original).split("\n"), stableJson(updated).split("\n")));
  const changed = rows.filter((r) => r.kind !== "same").length;
  const cell = (text, side, kind) => {
    const marked = kind !== "same" && text !== undefined;
    const mark = marked ? (side === "left" ? "−" : "+") : " ";
    return h(
      "td",
      { class: `diff-cell diff-${side} ${marked ? `is-${side === "left" ? "del" : "add"}` : ""}` },
      h("span", { class: "diff-mark", "aria-hidden": "true", text: mark }),
      h("code", { text: text ?? "" }),
    );
  };
  return h(
    "figure",
    { class: "json-diff", "data-changed-lines": String(changed) },
    h("figcaption", {
      text: changed ? `${changed} line${changed === 1 ? "" : "s"} changed` : "No change to the input",
    }),
    h(
      "div",
      { class: "diff-scroll" },
      h(
        "table",
        { class: "diff-table" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col", text: leftTitle }), h("th", { scope: "col", text: rightTitle }))),
        h(
          "tbody",
          {},
          rows.map((row) =>
            h("tr", { class: `diff-row diff-${row.kind}` }, cell(row.left, "left", row.kind), cell(row.right, "right", row.kind)),
          ),
        ),
      ),
    ),
  );
}
