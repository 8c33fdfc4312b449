// Decision counts as a small stacked bar chart (SVG), with the numbers as text beside it.
import { h } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
export const DECISIONS = ["allow", "block", "error", "timeout"];

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const child of children) if (child) el.append(child);
  return el;
}

/** Bucket executions by time; returns {buckets: [{start, counts}], totals}. */
export function bucketDecisions(executions, { buckets = 12, now = Date.now() } = {}) {
  const times = executions.map((e) => new Date(e.created_at).getTime()).filter((t) => !Number.isNaN(t));
  const totals = Object.fromEntries(DECISIONS.map((d) => [d, 0]));
  const oldest = times.length ? Math.min(...times) : now;
  // Span at least an hour, so a burst of test traffic is not stretched over the whole axis.
  const span = Math.max(now - oldest, 3600 * 1000) * 1.0001;
  const width = span / buckets;
  const start = now - span;
  const out = Array.from({ length: buckets }, (_, i) => ({
    start: start + i * width,
    counts: Object.fromEntries(DECISIONS.map((d) => [d, 0])),
  }));
  for (const e of executions) {
    const t = new Date(e.created_at).getTime();
    const decision = DECISIONS.includes(e.decision) ? e.decision : "error";
    totals[decision] += 1;
    if (Number.isNaN(t)) continue;
    const index = Math.min(buckets - 1, Math.max(0, Math.floor((t - start) / width)));
    out[index].counts[decision] += 1;
  }
  return { buckets: out, totals };
}

export function decisionChart(executions, options = {}) {
  const { buckets, totals } = bucketDecisions(executions, options);
  const total = Object.values(totals).reduce((a, b) => a + b, 0);
  const w = 240;
  const hgt = 64;
  const gap = 3;
  const barW = (w - gap * (buckets.length - 1)) / buckets.length;
  const max = Math.max(1, ...buckets.map((b) => Object.values(b.counts).reduce((x, y) => x + y, 0)));
  const bars = buckets.map((b, i) => {
    let y = hgt;
    const x = i * (barW + gap);
    const parts = DECISIONS.filter((d) => b.counts[d]).map((d) => {
      const height = (b.counts[d] / max) * (hgt - 2);
      y -= height;
      return svg("rect", { x, y, width: barW, height, class: `bar bar-${d}` });
    });
    return svg("g", {}, svg("rect", { x, y: 0, width: barW, height: hgt, class: "bar-bg" }), ...parts);
  });
  const summary = DECISIONS.map((d) => `${totals[d]} ${d}`).join(", ");
  return h(
    "figure",
    { class: "decision-chart", "data-total": String(total) },
    h(
      "div",
      { class: "chart-plot" },
      svg(
        "svg",
        { viewBox: `0 0 ${w} ${hgt}`, role: "img", "aria-label": `Recent decisions: ${summary}`, preserveAspectRatio: "none" },
        ...bars,
      ),
    ),
    h(
      "figcaption",
      { class: "chart-legend" },
      DECISIONS.map((d) =>
        h(
          "span",
          { class: "legend-item", dataset: { decision: d } },
          h("span", { class: `legend-swatch bar-${d}`, "aria-hidden": "true" }),
          `${d} `,
          h("strong", { class: "legend-count", text: String(totals[d]) }),
        ),
      ),
    ),
  );
}
