"""``hookgate approvals list|approve|deny``: decide approvals from the command line.

The commands talk to a running gateway (``--gateway`` or ``HOOKGATE_GATEWAY_URL``) with the
API key in ``HOOKGATE_API_KEY`` (never a flag: command lines are visible to other users), so
the gateway checks the role and records who decided, exactly as for the panel.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click

from hookgate.cli.terminal import echo_line

__all__ = ["register"]

STATUSES = ("pending", "approved", "denied", "expired", "all")


def register(main: click.Group) -> None:
    main.add_command(approvals)


def _client(gateway_url: str) -> Any:
    from hookgate.client import GatewayClient

    key = os.environ.get("HOOKGATE_API_KEY")
    if not key:
        raise click.ClickException("set HOOKGATE_API_KEY to an operator or admin API key")
    return GatewayClient(gateway_url, key, timeout=30)


def _call(gateway_url: str, action: Any) -> Any:
    from hookgate.client.errors import GatewayError

    try:
        with _client(gateway_url) as client:
            return action(client)
    except GatewayError as exc:
        raise click.ClickException(str(exc)) from None


_gateway_option = click.option(
    "--gateway",
    "gateway_url",
    envvar="HOOKGATE_GATEWAY_URL",
    required=True,
    metavar="URL",
    help="The gateway (http://host:port); or HOOKGATE_GATEWAY_URL.",
)


@click.group()
def approvals() -> None:
    """Approvals that hooks asked for: list them, approve or deny one."""


@approvals.command("list")
@_gateway_option
@click.option("--status", type=click.Choice(STATUSES), default="pending", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the approvals as JSON.")
def list_command(gateway_url: str, status: str, as_json: bool) -> None:
    """List approvals (pending by default), newest first."""
    payload = _call(gateway_url, lambda c: c.list_approvals(status))
    rows = payload.get("approvals") or []
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no {status} approvals" if status != "all" else "no approvals")
        return
    for row in rows:
        tool = row.get("tool_name") or row.get("event")
        echo_line(
            f"{row['id']}  {row['status']:<8}  {tool}  hook {row.get('hook_name')!r}"
            + (f"  agent {row['agent_id']}" if row.get("agent_id") else "")
        )
        if row.get("reason"):
            echo_line(f"    reason: {row['reason']}")
        echo_line(f"    input:  {json.dumps(row.get('tool_input'), sort_keys=True)}")
        if row["status"] == "pending":
            echo_line(f"    expires {row.get('expires_at')}")
        else:
            edited = ", input edited" if row.get("input_edited") else ""
            echo_line(
                f"    {row['status']} by {row.get('decided_by') or 'nobody'} at "
                f"{row.get('decided_at')}{edited}"
                + (f": {row['comment']}" if row.get("comment") else "")
            )
    if status == "pending" and isinstance(payload.get("pendingCount"), int):
        # The whole count (the list is one page), and the cap past which asking blocks.
        cap = payload.get("pendingLimit")
        echo_line(
            f"{payload['pendingCount']} pending"
            + (f" (at most {cap} per tenant)" if isinstance(cap, int) else "")
        )


@approvals.command("approve")
@_gateway_option
@click.argument("approval_id")
@click.option("--comment", "-m", default=None, help="Why; kept in the audit record.")
@click.option(
    "--input",
    "input_json",
    default=None,
    metavar="JSON",
    help="Run the tool with this input instead (the whole input, as JSON; @FILE reads it).",
)
def approve_command(
    gateway_url: str, approval_id: str, comment: str | None, input_json: str | None
) -> None:
    """Approve APPROVAL_ID: the waiting agent goes on."""
    kwargs: dict[str, Any] = {"comment": comment}
    if input_json is not None:
        text = input_json
        if text.startswith("@"):
            try:
                with open(text[1:], encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as exc:
                raise click.BadParameter(str(exc), param_hint="--input") from None
        try:
            kwargs["updated_input"] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--input") from None
    payload = _call(gateway_url, lambda c: c.approve(approval_id, **kwargs))
    approval = payload.get("approval") or {}
    edited = " with an edited input" if approval.get("input_edited") else ""
    click.echo(f"approved {approval_id}{edited}")


@approvals.command("deny")
@_gateway_option
@click.argument("approval_id")
@click.option("--comment", "-m", default=None, help="Why; the agent sees it in the reason.")
def deny_command(gateway_url: str, approval_id: str, comment: str | None) -> None:
    """Deny APPROVAL_ID: the waiting agent is blocked."""
    _call(gateway_url, lambda c: c.deny(approval_id, comment=comment))
    click.echo(f"denied {approval_id}")
