"""``hookgate migrate quality-gates FILE``: GoClaw quality gates to native hook definitions.

The mapping follows GoClaw's own migration table:

=================================  ==========================================================
legacy                             new
=================================  ==========================================================
``event: delegation.completed``    ``event: subagent_stop`` (non-blocking when fired and
                                   forgotten; blocks when the caller waits for it)
``type: command``                  ``handler_type: command`` (Lite); on Standard a command
                                   cannot run, so the gate is reported and left out
``type: agent``                    ``handler_type: agent`` (reviewer, APPROVED/REJECTED), or
                                   ``prompt`` with ``--agent-to prompt`` (decide tool)
``block_on_failure``               ``on_error`` / ``on_timeout``: block or allow
``max_retries``                    dropped: hooks block at once (retries: RetryLoop API,
                                   or keep the legacy file, whose outcome carries ``retry``)
``timeout_seconds``                ``timeout_ms`` (subagent_stop allows long timeouts)
=================================  ==========================================================

The new hooks are printed as JSON (or written to ``--output``, YAML for ``.yaml``/``.yml``);
every change in meaning is printed to stderr, one line each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from hookgate.config import ConfigError, read_document
from hookgate.definition import DefinitionError
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.host_code import EDITIONS, edition_refusal
from hookgate.integrations.goclaw.config import extract_gates
from hookgate.integrations.goclaw.gate_config import Gate, GateConfigError, parse_gates

__all__ = ["convert_gates", "register"]


def register(main: click.Group) -> None:
    main.add_command(migrate)


@click.group()
def migrate() -> None:
    """Convert configurations from other systems to hookgate hooks."""


def _common(gate: Gate, index: int, agent: str | None) -> tuple[dict[str, Any], list[str]]:
    where = f"gate {index + 1} ({gate.name or gate.type})"
    policy = "block" if gate.block_on_failure else "allow"
    timeout_ms = int(gate.timeout_seconds * 1000)
    longest = get_event("subagent_stop").max_timeout_ms
    hook: dict[str, Any] = {
        "event": "subagent_stop",
        "name": gate.name or f"quality-gate-{index + 1}-{gate.type}",
        "timeout_ms": min(timeout_ms, longest),
        "on_error": policy,
        "on_timeout": policy,
    }
    notes = [
        f"{where}: event delegation.completed -> subagent_stop (a failure blocks when the "
        "caller waits for the event, and is only recorded when it is fired and forgotten)",
        f"{where}: block_on_failure {str(gate.block_on_failure).lower()} -> on_error and "
        f"on_timeout {policy}",
    ]
    if timeout_ms > longest:
        notes.append(
            f"{where}: timeout_seconds {gate.timeout_seconds:g} -> timeout_ms {longest} "
            "(the longest a subagent_stop hook may run)"
        )
    if gate.max_retries:
        notes.append(
            f"{where}: max_retries {gate.max_retries} dropped (hooks block at once; the retry "
            "loop with feedback is hookgate.integrations.goclaw.gates.RetryLoop)"
        )
    if agent:
        hook["if_expr"] = f"source_agent == {json.dumps(agent)}"
        notes.append(f"{where}: gate of agent {agent!r} -> if_expr {hook['if_expr']}")
    return hook, notes


def convert_gates(
    gates: list[Gate], *, agent: str | None, agent_to: str, edition: str
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(new hook definitions, notes on what changed, problems that stop the migration)."""
    hooks: list[dict[str, Any]] = []
    notes: list[str] = []
    problems: list[str] = []
    for index, gate in enumerate(gates):
        hook, gate_notes = _common(gate, index, agent)
        where = f"gate {index + 1} ({gate.name or gate.type})"
        if gate.type == "command":
            if edition_refusal(edition, "command") is not None:
                problems.append(
                    f"{where}: command gates cannot run on the standard edition; put the check "
                    "behind a webhook and add an http hook by hand"
                )
                continue
            hook.update(handler_type="command", config={"command": gate.command})
            if gate.cwd:
                hook["config"]["cwd"] = gate.cwd
            if gate.allowed_env_vars:
                hook["config"]["allowed_env_vars"] = list(gate.allowed_env_vars)
            gate_notes.append(
                f"{where}: type command -> handler_type command: stdin is now the event JSON "
                "(the output is its 'output' field) instead of the raw output, exit 2 blocks "
                "and other non-zero exits are errors (was: any non-zero fails), HOOK_* "
                "variables are not set"
            )
        elif agent_to == "prompt":
            hook.update(
                handler_type="prompt",
                if_expr=hook.get("if_expr") or "output != null",
                config={
                    "prompt_template": (
                        f"You are the quality reviewer {gate.agent!r}. Block the delegated "
                        "output unless it fully and correctly completes the original task; "
                        "give specific, actionable feedback as the reason."
                    ),
                    **{k: v for k, v in gate.reviewer.items() if k != "prompt"},
                },
            )
            gate_notes.append(
                f"{where}: type agent -> handler_type prompt: the model answers with the decide "
                "tool (allow/block + reason) instead of APPROVED / REJECTED"
            )
        else:
            hook.update(handler_type="agent", config={"agent": gate.agent, **gate.reviewer})
            gate_notes.append(
                f"{where}: type agent -> handler_type agent (same review prompt and "
                "APPROVED / REJECTED answer)"
            )
        hooks.append(hook)
        notes.extend(gate_notes)
    for index, hook in enumerate(hooks):
        try:
            validate_definition(hook, edition=edition, default_scope="global")
        except DefinitionError as exc:
            problems.extend(f"new hooks[{index}].{p.field}: {p.message}" for p in exc.problems)
    return hooks, notes, problems


@migrate.command("quality-gates")
@click.argument("path", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the new hooks file here (JSON, or YAML for .yaml/.yml) instead of stdout.",
)
@click.option(
    "--agent-to",
    type=click.Choice(["agent", "prompt"]),
    default="agent",
    show_default=True,
    help="What agent (reviewer) gates become.",
)
@click.option("--edition", type=click.Choice(EDITIONS), default="lite")
def quality_gates(path: str, output: str | None, agent_to: str, edition: str) -> None:
    """Convert GoClaw quality gates in PATH to hookgate hook definitions.

    Exit status: 0 on success, 1 when the file is not a gate config or a gate cannot be
    converted.
    """
    try:
        document = read_document(path)
    except ConfigError as exc:
        raise click.ClickException("; ".join(exc.problems)) from None
    found = extract_gates(document)
    if found is None:
        raise click.ClickException(
            f'{path}: no quality gates found (expected {{"hooks": [{{"type": …}}]}}, a gate '
            "object, or an agent's other_config.quality_gates)"
        )
    try:
        gates = parse_gates(found.gates, where=found.where)
    except GateConfigError as exc:
        raise click.ClickException("; ".join(exc.problems)) from None
    hooks, notes, problems = convert_gates(
        gates, agent=found.agent, agent_to=agent_to, edition=edition
    )
    for note in notes:
        click.echo(f"changed: {note}", err=True)
    if problems:
        for problem in problems:
            click.echo(f"error: {problem}", err=True)
        raise SystemExit(1)
    document_out = {"hooks": hooks}
    if output is None:
        click.echo(json.dumps(document_out, indent=2))
        return
    target = Path(output)
    if target.suffix.lower() in (".yaml", ".yml"):
        target.write_text(yaml.safe_dump(document_out, sort_keys=False))
    else:
        target.write_text(json.dumps(document_out, indent=2) + "\n")
    click.echo(f"wrote {len(hooks)} hook(s) to {target}", err=True)
