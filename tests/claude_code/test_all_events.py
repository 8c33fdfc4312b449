"""Claude Code's whole hook surface (2.1.330's 33 events) through ``install --all-events``,
with the real CLI: events hookgate did not map before reach the hooks file with Claude
Code's fields, and their answers are ones Claude Code honours."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.anthropic_server import ScriptedAnthropic, say, use_tool
from tests.support.claude_code_cli import ClaudeProject


def test_every_event_installs_and_the_new_ones_reach_the_hooks(
    project: ClaudeProject, api: ScriptedAnthropic, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.jsonl"
    record = f"cat >> {seen}; echo >> {seen}"
    hooks = project.write_hooks([
        {"event": name, "handler_type": "command", "name": f"record {name}",
         "config": {"command": record}}
        for name in ("instructions_loaded", "post_tool_batch", "message_display")
    ] + [{"event": "post_tool_batch", "handler_type": "command", "name": "stop the loop",
          "config": {"command": """echo '{"decision": "block", "reason": "batch reviewed"}'"""}}])
    (project.dir / "CLAUDE.md").write_text("Be careful.\n")
    project.install("--config", str(hooks), "--all-events")
    settings = json.loads(project.settings.read_text())["hooks"]
    assert len(settings) == 32 and "WorktreeCreate" not in settings
    api.script(use_tool("Bash", {"command": "touch A"}), say("after the batch"))
    run = project.run("go")
    assert run.returncode == 0, run.stderr
    assert project.exists("A")
    events = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    by_event = {event["hook_event_name"]: event for event in events}
    assert by_event["InstructionsLoaded"]["file_path"].endswith("CLAUDE.md")
    assert by_event["PostToolBatch"]["tool_calls"]
    # A block on PostToolBatch stops the agent's loop: the model is not asked again.
    assert len(api.agent_calls) == 1
