"""The integration registry: every built-in integration is one record, and an agent added
from outside hookgate is one module whose record reaches the hooks-file formats, the
command formats, the handler types and the gateway's routes."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from hookgate import Engine, handlers, integration_registry
from hookgate.config import parse_hooks
from hookgate.definition_model import validate_definition
from hookgate.events import get_event
from hookgate.handlers import available_handler_types, handler_class
from hookgate.integration_registry import BUILTIN, Integration, integration, integrations

#: An agent that did not exist when hookgate was written: its hook scripts read
#: ``{"what": <event>, "args": <tool input>}`` and answer ``NO`` on stdout to block.
PARROT = '''
from hookgate.config.formats import ConfigFormat
from hookgate.handlers.base import Handler
from hookgate.integration_registry import Integration, register_integration
from hookgate.outcome import HookResult


def command_document(spec, payload, cwd):
    return {"what": spec.name, "args": payload.get("tool_input")}, {"PARROT": "1"}


def parse_command_answer(spec, code, stdout, stderr, details):
    if stdout.strip() == "NO":
        return HookResult(decision="block", reason="parrot says no", details=details)
    return HookResult(details=details)


class SquawkHandler(Handler):
    handler_type = "squawk"

    async def run(self, call):
        return HookResult(decision="block", reason="squawk")


def _load(document, *, edition, base_dir):
    from hookgate.definition_model import validate_definition

    return [validate_definition({"event": "pre_tool_use", "handler_type": "squawk",
                                 "name": name}, default_scope="global")
            for name in document["parrot_hooks"]]


FORMAT = ConfigFormat("parrot", lambda doc: isinstance(doc, dict) and "parrot_hooks" in doc,
                      _load)


def routes():
    return []


register_integration(Integration(
    name="parrot",
    config_formats=("parrot_agent:FORMAT",),
    command_formats={"parrot": "parrot_agent"},
    routes=("parrot_agent:routes",),
    handler_types={"squawk": "parrot_agent:SquawkHandler"},
))
'''


@pytest.fixture
def parrot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The parrot agent's one module, imported as its user's program would."""
    (tmp_path / "parrot_agent.py").write_text(textwrap.dedent(PARROT))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(integration_registry, "_added", [])
    monkeypatch.setattr(handlers, "_registered", dict(handlers._registered))
    __import__("parrot_agent")
    yield
    sys.modules.pop("parrot_agent", None)


def test_every_builtin_integration_is_one_record() -> None:
    """Each name in BUILTIN has its record, under that name, in that order."""
    assert [record.name for record in integrations()] == list(BUILTIN)
    assert integration("claude_code").bridge_commands == ("claude-code",)
    with pytest.raises(KeyError):
        integration("no-such-agent")


def test_event_aliases_name_hookgate_events() -> None:
    """An integration's event names each map to an event hookgate has."""
    for record in integrations():
        for theirs, ours in record.event_names().items():
            assert get_event(ours).name == ours, (record.name, theirs)
    assert integration("claude_code").event_names()["PreToolUse"] == "pre_tool_use"
    assert integration("codex").event_names()["PermissionRequest"] == "approve_tool"


def test_quality_gate_comes_from_goclaws_record() -> None:
    """The handlers package names no integration: GoClaw's record brings quality_gate."""
    assert "quality_gate" in available_handler_types()
    assert handler_class("quality_gate").__module__ == "hookgate.integrations.goclaw.handler"


def test_the_cli_and_the_gateway_take_the_records_parts() -> None:
    """claude-code, codex and gemini are commands and bridges because their records say so;
    the gateway serves Claude Code's hook endpoint from its record."""
    from hookgate.cli import bridge_commands, main
    from hookgate.server.app import _integration_routes

    assert bridge_commands() == {"claude-code", "codex", "gemini"}
    assert {"claude-code", "codex", "gemini"} <= set(main.commands)
    paths = {getattr(route, "path", None) for route in _integration_routes()}
    assert "/api/v1/claude-code/hook" in paths


@pytest.mark.usefixtures("parrot")
async def test_an_agent_added_as_one_module(tmp_path: Path) -> None:
    """The parrot's command format runs a real script with its stdin and answer, its
    handler type validates and runs, and its hooks-file format is detected."""
    seen = tmp_path / "stdin.json"
    hook = {"event": "pre_tool_use", "handler_type": "command", "scope": "global",
            "config": {"command": f"cat > {seen}; echo \"NO$PARROT\"", "format": "parrot"}}
    async with Engine([hook]) as engine:
        outcome = await engine.fire("pre_tool_use", {"tool_name": "Bash",
                                                     "tool_input": {"command": "ls"}}, wait=True)
    # The script saw the parrot's document, and "NO1" is not "NO": allowed.
    assert seen.read_text() == '{"what": "pre_tool_use", "args": {"command": "ls"}}'
    assert outcome.decision == "allow"
    hook["config"]["command"] = "echo NO"  # type: ignore[index]
    async with Engine([hook]) as engine:
        outcome = await engine.fire("pre_tool_use", {"tool_name": "Bash"}, wait=True)
    assert (outcome.decision, outcome.reason) == ("block", "parrot says no")

    assert "squawk" in available_handler_types()
    definition = validate_definition({"event": "pre_tool_use", "handler_type": "squawk",
                                      "scope": "global"})
    async with Engine([definition]) as engine:
        assert (await engine.fire("pre_tool_use", {"tool_name": "x"}, wait=True)).blocked

    loaded = parse_hooks({"parrot_hooks": ["a", "b"]})
    assert [(d.name, d.handler_type) for d in loaded] == [("a", "squawk"), ("b", "squawk")]


def test_an_unknown_command_format_is_refused_with_the_known_ones() -> None:
    """A command hook naming a format no integration speaks fails validation, listing the
    formats there are."""
    from hookgate.definition import DefinitionError

    with pytest.raises(DefinitionError) as caught:
        validate_definition({"event": "stop", "handler_type": "command", "scope": "global",
                             "config": {"command": "true", "format": "parrot"}})
    assert "format must be one of goclaw, claude_code, gemini, got 'parrot'" in str(caught.value)


def test_a_record_names_modules_and_imports_none() -> None:
    """A record is strings: building one imports nothing."""
    before = set(sys.modules)
    Integration(name="x", cli_commands=("not.a.module",), routes=("nor:this",))
    assert set(sys.modules) == before
