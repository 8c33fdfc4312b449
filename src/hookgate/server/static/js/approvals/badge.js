// The header's "Approvals" link with the count of pending approvals.
import { h } from "../dom.js";
import { onApprovalsChange } from "./live.js";

export function approvalsNavLink() {
  const count = h("span", { class: "count-badge", hidden: true, "aria-label": "pending approvals" });
  const link = h("a", { href: "#/approvals", class: "nav-approvals" }, "Approvals ", count);
  const unsubscribe = onApprovalsChange(({ pendingCount }) => {
    if (!link.isConnected && link.dataset.mounted) {
      unsubscribe();
      return;
    }
    link.dataset.mounted = "1";
    count.hidden = !pendingCount;
    count.textContent = pendingCount > 99 ? "99+" : String(pendingCount || 0);
    link.title = pendingCount ? `${pendingCount} approval(s) waiting for a decision` : "No approvals waiting";
  });
  return link;
}
