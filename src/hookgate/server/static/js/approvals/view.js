// The Approvals view (#/approvals[/<id>]): pending approvals with the tool input and the
// hook's reason, approve / deny with a comment, the input editable before approving; below,
// the recent decisions (who, when, comment, whether the input was edited). It redraws on
// every change the live watch reports.
import { h, mount, nextId } from "../dom.js";
import { gateway } from "../api.js";
import { atLeast, viewedTenant } from "../session.js";
import { formatTime, relativeTime, stableJson, parseTime } from "../format.js";
import { loadingState, emptyState, errorState, describeError } from "../ui/states.js";
import { toast } from "../ui/toast.js";
import { onApprovalsChange, noteListed } from "./live.js";

const canDecide = () => atLeast("approver");

export async function renderApprovals(main, route, ctx) {
  const heading = h("h1", { tabIndex: -1, text: "Approvals" });
  const intro = h("p", {
    class: "muted",
    text: canDecide()
      ? "Agents below are waiting for a person. Check the input and the hook's reason, then approve or deny."
      : "Agents below are waiting for a person. Viewers can see approvals; approvers, operators and admins decide them (never the key that asked).",
  });
  const pendingBox = h("section", { "aria-labelledby": "pending-title" });
  const recentBox = h("section", { "aria-labelledby": "recent-title" });
  mount(main, heading, intro, pendingBox, recentBox);
  mount(pendingBox, loadingState("Loading approvals…"));
  const drafts = new Map(); // what the person typed, kept across live redraws

  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const tenant = viewedTenant() ? { tenantId: viewedTenant() } : {};
      const [pending, recent] = await Promise.all([
        gateway.call("approvals.list", { status: "pending", ...tenant }),
        gateway.call("approvals.list", { status: "all", limit: 25, ...tenant }),
      ]);
      if (!ctx.alive()) return;
      if (!tenant.tenantId) noteListed(pending); // the header badge counts the whole scope
      drawPending(pendingBox, pending.approvals || [], pendingCounts(pending), route.id, drafts, refresh);
      drawRecent(recentBox, (recent.approvals || []).filter((a) => a.status !== "pending"));
    } catch (err) {
      if (ctx.alive()) mount(pendingBox, errorState(err, refresh));
    } finally {
      busy = false;
      if (again && ctx.alive()) {
        again = false;
        refresh();
      }
    }
  }
  await refresh();
  let first = true;
  const stop = onApprovalsChange(() => {
    if (first) {
      first = false;
      return;
    }
    if (!ctx.alive()) {
      stop();
      return;
    }
    refresh();
  });
  const ticker = setInterval(() => {
    if (!ctx.alive()) {
      clearInterval(ticker);
      stop();
      return;
    }
    for (const el of main.querySelectorAll("[data-expires]")) el.textContent = expiresText(el.dataset.expires);
  }, 1000);
}

function expiresText(iso) {
  const at = parseTime(iso);
  if (!at) return "";
  const seconds = Math.round((at.getTime() - Date.now()) / 1000);
  if (seconds <= 0) return "expiring…";
  if (seconds < 120) return `expires in ${seconds} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `expires in ${minutes} min` : `expires in ${Math.round(minutes / 60)} h`;
}

// The whole count (not only the listed page) and the per-tenant cap: decoys cannot hide how
// many are waiting, and the person sees when new asks are about to be refused.
function pendingCounts(payload) {
  const listed = (payload.approvals || []).length;
  const count = typeof payload.pendingCount === "number" ? payload.pendingCount : listed;
  return { count, listed, limit: typeof payload.pendingLimit === "number" ? payload.pendingLimit : null };
}

function pendingTitle({ count, listed, limit }) {
  let text = `Waiting for a decision (${count}`;
  if (limit) text += ` of at most ${limit} per tenant`;
  text += ")";
  if (listed < count) text += ` — showing the newest ${listed}`;
  return text;
}

function drawPending(box, approvals, counts, focusId, drafts, refresh) {
  const title = h("h2", { id: "pending-title", text: pendingTitle(counts), "data-pending-count": String(counts.count) });
  if (!approvals.length) {
    mount(box, title, emptyState("Nothing is waiting", "When a hook asks for approval, the agent waits here until someone decides."));
    return;
  }
  // Cards already on screen are kept as they are: a live redraw must not take away what
  // someone is typing, their focus, or an error shown to them.
  const shown = new Map([...box.querySelectorAll("article.approval-card")].map((el) => [el.dataset.approvalId, el]));
  const cards = approvals.map((a) => shown.get(a.id) || approvalCard(a, a.id === focusId, drafts, refresh));
  const list = box.querySelector(".approval-list") || h("div", { class: "approval-list" });
  if (!list.isConnected) mount(box, title, list);
  else box.querySelector("#pending-title").replaceWith(title);
  list.replaceChildren(...cards);
  if (focusId) box.querySelector(`[data-approval-id="${CSS.escape(focusId)}"]`)?.scrollIntoView({ block: "center" });
}

function fact(label, value) {
  return value ? [h("dt", { text: label }), h("dd", {}, value)] : null;
}

function approvalCard(approval, focused, drafts, refresh) {
  const inputId = nextId("approval-input");
  const commentId = nextId("approval-comment");
  const original = stableJson(approval.tool_input);
  const draft = drafts.get(approval.id) || { input: original, comment: "" };
  drafts.set(approval.id, draft);
  const error = h("p", { class: "field-error", role: "alert", hidden: true });
  const input = h("textarea", {
    id: inputId,
    class: "mono approval-input",
    rows: Math.min(14, Math.max(3, draft.input.split("\n").length)),
    value: draft.input,
    readOnly: !canDecide(),
    spellcheck: false,
    oninput: () => {
      draft.input = input.value;
      edited.hidden = input.value.trim() === original.trim();
    },
  });
  const edited = h("span", { class: "chip chip-edited", text: "edited", hidden: draft.input.trim() === original.trim() });
  const comment = h("input", {
    id: commentId,
    type: "text",
    maxLength: 2000,
    value: draft.comment,
    placeholder: "Why (kept in the audit record)",
    oninput: () => {
      draft.comment = comment.value;
    },
  });
  const buttons = [];
  async function decide(approve) {
    error.hidden = true;
    const params = { approvalId: approval.id };
    if (comment.value.trim()) params.comment = comment.value.trim();
    if (approve && input.value.trim() !== original.trim()) {
      try {
        params.updatedInput = JSON.parse(input.value);
      } catch (err) {
        error.textContent = `The input is not valid JSON: ${err.message}`;
        error.hidden = false;
        input.focus();
        return;
      }
    }
    for (const b of buttons) b.disabled = true;
    try {
      await gateway.call(approve ? "approvals.approve" : "approvals.deny", params);
      drafts.delete(approval.id);
      toast(approve ? "Approved: the agent goes on." : "Denied: the agent was told.", "ok");
      refresh();
    } catch (err) {
      error.textContent = describeError(err);
      error.hidden = false;
      for (const b of buttons) b.disabled = false;
    }
  }
  if (canDecide()) {
    buttons.push(
      h("button", { type: "button", class: "btn btn-primary", text: "Approve", onclick: () => decide(true) }),
      h("button", { type: "button", class: "btn btn-danger", text: "Deny", onclick: () => decide(false) }),
    );
  }
  return h(
    "article",
    { class: `card approval-card${focused ? " is-focused" : ""}`, dataset: { approvalId: approval.id }, "aria-label": `Approval for ${approval.tool_name || approval.event}` },
    h(
      "header",
      { class: "approval-head" },
      h("h3", {}, h("span", { class: "mono", text: approval.tool_name || approval.event })),
      h("span", { class: "chip chip-expires", dataset: { expires: approval.expires_at }, text: expiresText(approval.expires_at) }),
    ),
    h("p", { class: "approval-reason" }, h("strong", { text: `Hook ${approval.hook_name || "?"}: ` }), approval.reason || "asked for a person's approval"),
    h(
      "dl",
      { class: "facts" },
      fact("Event", approval.event),
      fact("Agent", approval.agent_id),
      fact("Session", approval.session_id),
      fact("Asked", `${relativeTime(approval.created_at)} (${formatTime(approval.created_at)})`),
      fact("If nobody decides", approval.on_timeout === "allow" ? "allowed" : "denied"),
    ),
    h("div", { class: "field" }, h("label", { for: inputId }, "Tool input ", edited, canDecide() ? h("span", { class: "muted", text: " — edit before approving to change what runs" }) : null), input),
    canDecide() ? h("div", { class: "field" }, h("label", { for: commentId, text: "Comment" }), comment) : null,
    error,
    buttons.length ? h("div", { class: "approval-actions" }, buttons) : h("p", { class: "muted", text: "Only approvers, operators and admins can decide." }),
  );
}

const STATUS_TEXT = { approved: "approved", denied: "denied", expired: "expired" };

function drawRecent(box, approvals) {
  const title = h("h2", { id: "recent-title", text: "Recently decided" });
  if (!approvals.length) {
    mount(box, title, h("p", { class: "muted", text: "No decisions yet." }));
    return;
  }
  mount(
    box,
    title,
    h(
      "table",
      { class: "table approvals-table" },
      h("thead", {}, h("tr", {}, ["Tool", "Hook", "Decision", "By", "When", "Comment", "Input"].map((t) => h("th", { scope: "col", text: t })))),
      h(
        "tbody",
        {},
        approvals.map((a) =>
          h(
            "tr",
            { dataset: { approvalId: a.id, status: a.status } },
            h("td", { class: "mono", "data-label": "Tool", text: a.tool_name || a.event }),
            h("td", { "data-label": "Hook", text: a.hook_name }),
            h("td", { "data-label": "Decision" }, h("span", { class: `badge badge-decision decision-${a.status === "approved" ? "allow" : a.status === "denied" ? "block" : "timeout"}`, text: STATUS_TEXT[a.status] || a.status })),
            h("td", { "data-label": "By", text: a.decided_by || (a.status === "expired" ? "nobody (timed out)" : "—") }),
            h("td", { "data-label": "When", text: formatTime(a.decided_at) }),
            h("td", { "data-label": "Comment", text: a.comment || "—" }),
            h("td", { "data-label": "Input", text: a.input_edited ? "edited" : "as asked" }),
          ),
        ),
      ),
    ),
  );
}
