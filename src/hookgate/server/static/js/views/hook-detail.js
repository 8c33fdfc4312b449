// One hook: header with its switch and actions, then the Overview, Test, Replay, History and
// Changes tabs.
import { h, mount } from "../dom.js";
import * as api from "../api.js";
import { whyNoTest, whyReadOnly } from "../session.js";
import { hookHref, navigate } from "../router.js";
import { eventBadge, handlerBadge, builtinBadge, breakerBadge, scopeLabel } from "../ui/badges.js";
import { toggleSwitch } from "../ui/switch.js";
import { tabList } from "../ui/tabs.js";
import { loadingState, errorState, notAllowedState, describeError } from "../ui/states.js";
import { toast } from "../ui/toast.js";
import { confirmDialog } from "../ui/dialog.js";
import { renderOverview } from "./overview-tab.js";
import { renderTestTab } from "./test-tab.js";
import { renderHistory } from "./history-tab.js";
import { renderChanges } from "./changes-tab.js";
import { renderReplayTab } from "./replay-tab.js";

export async function renderHookDetail(root, route, ctx) {
  mount(root, loadingState("Loading hook…"));
  let hook;
  try {
    hook = await api.getHook(route.id);
  } catch (err) {
    if (!ctx.alive()) return;
    const notFound = err.code === "NOT_FOUND";
    mount(
      root,
      h("h1", { tabIndex: -1, text: notFound ? "Hook not found" : "Hook" }),
      notFound
        ? h("p", {}, "It was deleted, or it belongs to a tenant you cannot see. ", h("a", { href: "#/hooks", text: "Back to hooks" }))
        : errorState(err, () => renderHookDetail(root, route, ctx)),
    );
    return;
  }
  if (!ctx.alive()) return;

  const name = hook.name || `${hook.handler_type} hook`;
  const readOnly = whyReadOnly(hook);
  const panel = h("div", { id: "tab-panel", class: "tab-panel", role: "tabpanel", "aria-labelledby": `tab-${route.tab}`, tabIndex: 0 });
  const testBlocked = whyNoTest(hook);
  mount(
    root,
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/hooks", text: "Hooks" }), " / ", h("span", { text: name })),
    h(
      "div",
      { class: "page-head detail-head" },
      h("div", { class: "detail-title" }, h("h1", { tabIndex: -1, text: name }), h("div", { class: "badges" }, eventBadge(hook.event), handlerBadge(hook.handler_type), scopeLabel(hook), hook.source === "builtin" ? builtinBadge() : null, breakerBadge(hook.breaker))),
      h(
        "div",
        { class: "detail-actions" },
        h(
          "span",
          { class: "switch-with-label" },
          toggleSwitch({
            checked: hook.enabled,
            label: `Enable ${name}`,
            disabledReason: whyReadOnly(hook, { toggle: true }),
            onChange: async (next) => {
              try {
                await api.toggleHook(hook.id, next);
                toast(`${name} ${next ? "enabled" : "disabled"}`, "ok");
              } catch (err) {
                toast(`Could not toggle: ${describeError(err)}`, "error", 6000);
                throw err;
              }
            },
          }),
          h("span", { class: "muted", text: "Enabled" }),
        ),
        readOnly ? h("span", { class: "muted readonly-note", text: readOnly }) : null,
        readOnly ? null : h("a", { class: "btn", href: hookHref(hook.id, "edit"), text: "Edit" }),
        readOnly
          ? null
          : h("button", {
              type: "button",
              class: "btn btn-danger-quiet",
              text: "Delete",
              onclick: async () => {
                const ok = await confirmDialog({ title: `Delete ${name}?`, text: "Its execution history is kept. This cannot be undone.", confirmLabel: "Delete", danger: true });
                if (!ok) return;
                try {
                  await api.deleteHook(hook.id);
                  toast(`${name} deleted`, "ok");
                  navigate("#/hooks");
                } catch (err) {
                  toast(`Could not delete: ${describeError(err)}`, "error", 6000);
                }
              },
            }),
      ),
    ),
    tabList(
      [
        { id: "overview", label: "Overview", href: hookHref(hook.id, "overview") },
        { id: "test", label: "Test", href: hookHref(hook.id, "test"), disabledReason: testBlocked },
        { id: "replay", label: "Replay", href: hookHref(hook.id, "replay"), disabledReason: testBlocked },
        { id: "history", label: "History", href: hookHref(hook.id, "history") },
        { id: "changes", label: "Changes", href: hookHref(hook.id, "changes") },
      ],
      route.tab,
      "tab-panel",
    ),
    panel,
  );
  if (route.tab === "test") {
    if (testBlocked) mount(panel, notAllowedState(testBlocked));
    else renderTestTab(panel, hook, ctx);
  } else if (route.tab === "replay") {
    if (testBlocked) mount(panel, notAllowedState(testBlocked));
    else renderReplayTab(panel, hook, ctx);
  } else if (route.tab === "changes") {
    renderChanges(panel, hook, ctx);
  } else if (route.tab === "history") {
    renderHistory(panel, hook, ctx, route.query);
  } else {
    renderOverview(panel, hook, ctx);
  }
}
