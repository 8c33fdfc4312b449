"""What the async and the sync client share: URLs, frames, the hooks.* method wrappers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from hookgate.client.errors import GatewayError

__all__ = ["HooksApi", "decode_response", "encode_request", "websocket_url"]


def websocket_url(url: str) -> str:
    """``http://host:port`` (or ``ws://…``, with or without ``/ws``) → ``ws://host:port/ws``."""
    url = url.rstrip("/")
    if url.startswith("http://"):
        url = "ws://" + url[len("http://") :]
    elif url.startswith("https://"):
        url = "wss://" + url[len("https://") :]
    elif not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    if not url.endswith("/ws"):
        url += "/ws"
    return url


def encode_request(frame_id: str, method: str, params: Mapping[str, Any] | None) -> str:
    frame = {"type": "req", "id": frame_id, "method": method, "params": dict(params or {})}
    return orjson.dumps(frame, default=str).decode()


def decode_response(raw: str | bytes) -> dict[str, Any]:
    frame = orjson.loads(raw)
    if not isinstance(frame, dict):
        raise GatewayError("INVALID_FRAME", f"the gateway sent a non-object frame: {raw!r:.200}")
    return frame


def result_of(frame: Mapping[str, Any]) -> Any:
    if frame.get("ok"):
        return frame.get("payload")
    raise GatewayError.from_error(frame.get("error"))


#: "Not given" (``None`` is a valid edited input: JSON null).
_UNSET: Any = object()


def _drop_none(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class HooksApi:
    """The ``hooks.*`` methods as keyword-argument helpers; ``_call`` does the transport.

    The async client's helpers return awaitables, the sync client's return values.
    """

    def _call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def info(self) -> Any:
        """Edition, role, tenant and what this gateway offers (the ``connect`` payload)."""
        return self._call("connect", {})

    def list_hooks(self, **filters: Any) -> Any:
        """``hooks.list``: filters ``event``, ``scope``, ``handlerType``, ``enabled``, …"""
        return self._call("hooks.list", _drop_none(filters))

    def get_hook(self, hook_id: str) -> Any:
        return self._call("hooks.get", {"hookId": hook_id})

    def create_hook(self, definition: Mapping[str, Any]) -> Any:
        return self._call("hooks.create", definition)

    def update_hook(
        self, hook_id: str, updates: Mapping[str, Any], *, expected_version: int | None = None
    ) -> Any:
        params: dict[str, Any] = {"hookId": hook_id, "updates": dict(updates)}
        if expected_version is not None:
            params["expectedVersion"] = expected_version
        return self._call("hooks.update", params)

    def delete_hook(self, hook_id: str) -> Any:
        return self._call("hooks.delete", {"hookId": hook_id})

    def promote_hook(self, hook_id: str, *, expected_version: int | None = None) -> Any:
        """A shadow hook starts to decide (``mode: enforce``); operators and admins."""
        params: dict[str, Any] = {"hookId": hook_id}
        if expected_version is not None:
            params["expectedVersion"] = expected_version
        return self._call("hooks.promote", params)

    def toggle_hook(self, hook_id: str, enabled: bool) -> Any:
        return self._call("hooks.toggle", {"hookId": hook_id, "enabled": enabled})

    def test_hook(
        self,
        sample_event: Mapping[str, Any],
        *,
        config: Mapping[str, Any] | None = None,
        hook_id: str | None = None,
    ) -> Any:
        params: dict[str, Any] = {"sampleEvent": dict(sample_event)}
        if config is not None:
            params["config"] = dict(config)
        if hook_id is not None:
            params["hookId"] = hook_id
        return self._call("hooks.test", params)

    def check_hook(self, hook_id: str) -> Any:
        """``hooks.check``: ``{hookId, warnings}`` for a saved hook (a webhook URL the SSRF
        guard will refuse)."""
        return self._call("hooks.check", {"hookId": hook_id})

    def export_hooks(self, *, format: str = "yaml", tenant_id: str | None = None) -> Any:
        """``hooks.export``: ``{filename, format, content, count}``, secrets left out."""
        return self._call("hooks.export", _drop_none({"format": format, "tenantId": tenant_id}))

    def import_hooks(
        self, content: str, *, dry_run: bool = False, tenant_id: str | None = None
    ) -> Any:
        """``hooks.import``: one report entry per hook; nothing is written when any is
        invalid (or with ``dry_run``)."""
        params = {"content": content, "dryRun": dry_run, "tenantId": tenant_id}
        return self._call("hooks.import", _drop_none(params))

    def list_keys(self, *, tenant_id: str | None = None, include_revoked: bool = False) -> Any:
        return self._call(
            "keys.list", _drop_none({"tenantId": tenant_id, "includeRevoked": include_revoked})
        )

    def create_key(
        self,
        role: str,
        *,
        name: str = "",
        tenant_id: str | None = None,
        master: bool = False,
    ) -> Any:
        """``keys.create``: ``{key, secret}``; the secret is in this answer only."""
        params = {"role": role, "name": name, "tenantId": tenant_id, "master": master}
        return self._call("keys.create", _drop_none(params))

    def revoke_key(self, key_id: str) -> Any:
        return self._call("keys.revoke", {"keyId": key_id})

    def history(self, **query: Any) -> Any:
        """``hooks.history``: ``hookId``, ``sessionId``, ``decision``, ``cursor``, ``limit``…"""
        return self._call("hooks.history", _drop_none(query))

    def dispatch(
        self,
        event: str,
        input: Mapping[str, Any] | None = None,
        *,
        wait: bool = False,
        traceparent: str | None = None,
        approval_wait_s: float | None = None,
    ) -> Any:
        """Fire ``event`` with ``input`` (the fields of ``hookgate fire --input``); the
        payload is the outcome dict (decision, reason, updated_input, …, trace). When a hook
        asks a person, the call waits for the decision (at most ``approval_wait_s``, by
        default 5 s less than the client's timeout; then the outcome blocks with
        ``approval.status == "pending"``: see :meth:`wait_approval`).
        """
        params: dict[str, Any] = {"event": event, "input": dict(input or {})}
        if wait:
            params["wait"] = True
        if traceparent:
            params["traceparent"] = traceparent
        if approval_wait_s is None:
            # Answer before this client's own response timeout would drop the connection:
            # an approval still undecided by then comes back pending, with its id.
            approval_wait_s = max(1.0, float(getattr(self, "timeout", 30.0)) - 5.0)
        params["approvalWaitS"] = approval_wait_s
        return self._call("hooks.dispatch", params)

    # -- approvals ----------------------------------------------------------------------------

    def list_approvals(self, status: str = "pending", **query: Any) -> Any:
        """``approvals.list``: ``status`` pending (default), approved, denied, expired, all."""
        return self._call("approvals.list", _drop_none({"status": status, **query}))

    def approve(
        self, approval_id: str, *, comment: str | None = None, updated_input: Any = _UNSET
    ) -> Any:
        """``approvals.approve``; ``updated_input`` replaces the tool input that runs."""
        params: dict[str, Any] = _drop_none({"approvalId": approval_id, "comment": comment})
        if updated_input is not _UNSET:
            params["updatedInput"] = updated_input
        return self._call("approvals.approve", params)

    def deny(self, approval_id: str, *, comment: str | None = None) -> Any:
        return self._call(
            "approvals.deny", _drop_none({"approvalId": approval_id, "comment": comment})
        )

    def wait_approval(self, approval_id: str, timeout_s: float = 25.0) -> Any:
        """``approvals.wait``: the outcome of the dispatch that asked, once decided (still
        ``pending`` when ``timeout_s`` passed first)."""
        return self._call("approvals.wait", {"approvalId": approval_id, "timeoutS": timeout_s})
