"""Attacks on ``hookgate import gemini`` (and ``import codex`` and ``import claude-code``,
which read the same way): a hostile ``.gemini/settings.json``, ``hooks.json`` or
``.claude/settings.json`` in a repository that someone imports (repo attacker).

Each hostile file must end in a clear error (exit 1, naming what is wrong) with nothing
written: the output file that was there before stays byte for byte. What does get imported
must not let the file's text escape into code: a matcher or an ``env`` value is data in the
converted hook, never CEL or shell."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support.agent_project import hookgate_alone as hookgate

from hookgate.integrations.hook_import import MAX_HOOKS_FILE_BYTES
from hookgate.matching import CelFilter, cel_activation

BEFORE = b"hooks: []  # the hooks file from before the import\n"
AGENTS = ["gemini", "codex", "claude-code"]


def refused(folder: Path, settings: Path, *said: str, agent: str = "gemini") -> str:
    """Import ``settings`` over an existing output file: exit 1, each of ``said`` in the
    message, the output file untouched and no temporary file left beside it."""
    target = folder / "hookgate.yaml"
    target.write_bytes(BEFORE)
    done = hookgate("import", agent, str(settings), "-o", str(target), cwd=folder)
    assert done.returncode == 1, done.stderr
    for text in said:
        assert text in done.stderr, done.stderr
    assert target.read_bytes() == BEFORE
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".hookgate")) == []
    assert "Traceback" not in done.stderr
    return done.stderr


def shell_call(folder: Path) -> dict[str, Any]:
    """Gemini CLI's BeforeTool input for ``ls``."""
    return {
        "hook_event_name": "BeforeTool",
        "session_id": "s",
        "cwd": str(folder),
        "tool_name": "run_shell_command",
        "tool_input": {"command": "ls"},
    }


def with_hooks(folder: Path, hooks: Any, **more: Any) -> Path:
    path = folder / "settings.json"
    path.write_text(json.dumps({**more, "hooks": hooks}))
    return path


@pytest.mark.parametrize("agent", AGENTS)
def test_a_huge_settings_file_is_refused_unread(tmp_path: Path, agent: str) -> None:
    path = tmp_path / "settings.json"
    with path.open("w") as file:
        file.write('{"hooks": {}, "pad": "')
        file.write("x" * (MAX_HOOKS_FILE_BYTES + 1))
        file.write('"}')
    refused(tmp_path, path, "larger than 4 MiB", agent=agent)


@pytest.mark.parametrize("agent", AGENTS)
def test_json_nested_too_deeply_is_refused(tmp_path: Path, agent: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": {}, "deep": ' + "[" * 200_000 + "]" * 200_000 + "}")
    refused(tmp_path, path, "nested too deeply", agent=agent)


@pytest.mark.parametrize("agent", AGENTS)
def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path, agent: str) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(
        b'{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "echo \xff\xfe"}]}]}}'
    )
    refused(tmp_path, path, "not UTF-8 text (byte", agent=agent)


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "link-to-/dev/zero"])
def test_a_settings_path_that_is_not_a_regular_file_is_refused_without_hanging(
    tmp_path: Path, special: str, agent: str
) -> None:
    if special == "fifo":
        path = tmp_path / "settings.json"
        os.mkfifo(path)  # reading it would wait for a writer forever
    elif special == "/dev/zero":
        path = Path("/dev/zero")  # reading it would never end
    else:
        path = tmp_path / "settings.json"
        path.symlink_to("/dev/zero")
    refused(tmp_path, path, "not a regular file", agent=agent)


@pytest.mark.parametrize(
    ("hooks", "more", "said"),
    [
        ([], {}, "no Gemini CLI hooks section"),
        ({"BeforeTool": {"matcher": "x"}}, {}, "hooks.BeforeTool: must be a list"),
        ({"BeforeTool": ["run_shell_command"]}, {}, "hooks.BeforeTool[0]: must be an object"),
        ({"BeforeTool": [{"hooks": "echo"}]}, {}, "must be an object with a 'hooks' list"),
        (
            {"BeforeTool": [{"matcher": 7, "hooks": []}]},
            {},
            "BeforeTool[0].matcher: must be a string",
        ),
        ({"BeforeTool": [{"sequential": "yes", "hooks": []}]}, {}, "sequential: must be true"),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": ["rm", "-rf"]}]}]},
            {},
            "hooks[0].command: must be a non-empty string",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "a\u0000b"}]}]},
            {},
            "hooks[0].command: must be a non-empty string (no NUL)",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "timeout": "9"}]}]},
            {},
            "timeout: must be a positive number",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "timeout": True}]}]},
            {},
            "timeout: must be a positive number",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "timeout": -5}]}]},
            {},
            "timeout: must be a positive number",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "env": ["A=1"]}]}]},
            {},
            "env: must be an object",
        ),
        (
            {
                "BeforeTool": [
                    {
                        "hooks": [
                            {"type": "command", "command": "x", "env": {"A;touch PWNED;B": "1"}}
                        ]
                    }
                ]
            },
            {},
            "must be a variable name with a string value",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "env": {"A": 1}}]}]},
            {},
            "must be a variable name with a string value",
        ),
        (
            {"BeforeTool": [{"hooks": [{"type": "runtime", "command": "x"}]}]},
            {},
            "'runtime' hooks are not imported",
        ),
        ({"BeforeTool": [{"hooks": [{"command": "x"}]}]}, {}, "None hooks are not imported"),
        (
            {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "name": {}}]}]},
            {},
            "name: must be a string",
        ),
        (
            {"AfterEverything": [{"hooks": [{"type": "command", "command": "x"}]}]},
            {},
            "hooks.AfterEverything: Gemini CLI has no such event",
        ),
        ({}, {"hooksConfig": {"disabled": "all"}}, "hooksConfig.disabled: must be a list"),
        ({}, {"hooksConfig": {"enabled": "no"}}, "hooksConfig.enabled: must be true or false"),
        ({}, {"hooksConfig": []}, "hooksConfig: must be an object"),
    ],
)
def test_wrong_types_anywhere_are_named_and_nothing_is_written(
    tmp_path: Path, hooks: Any, more: dict[str, Any], said: str
) -> None:
    refused(tmp_path, with_hooks(tmp_path, hooks, **more), said)


def test_a_bad_hook_among_good_ones_stops_the_whole_import(tmp_path: Path) -> None:
    """No partial file: one hook that cannot be converted keeps the good ones out too, and
    every problem is listed."""
    good = {"type": "command", "command": "echo ok", "timeout": 1000}
    settings = with_hooks(
        tmp_path,
        {
            "BeforeTool": [
                {"matcher": "run_shell_command", "hooks": [good]},
                {"matcher": "(?=x)", "hooks": [good]},
            ],
            "AfterTool": [{"hooks": [{"type": "command", "command": ""}]}],
        },
    )
    said = refused(tmp_path, settings, "2 problem(s)", "nothing written")
    assert "hooks.BeforeTool[1].matcher" in said and "hooks.AfterTool[0].hooks[0]" in said


@pytest.mark.parametrize(
    "matcher",
    [
        "(?!read_file)run_shell_command",  # lookahead
        "(?<=mcp_)github",  # lookbehind
        r"(run)\1",  # a back-reference
        "x" * 2000,  # longer than a matcher may be
        "[unclosed",
    ],
)
def test_a_matcher_that_is_not_re2_is_refused(tmp_path: Path, matcher: str) -> None:
    settings = with_hooks(
        tmp_path,
        {
            "BeforeTool": [
                {
                    "matcher": matcher,
                    "hooks": [{"type": "command", "command": "echo '{}'", "timeout": 1000}],
                }
            ]
        },
    )
    refused(tmp_path, settings, "BeforeTool[0].matcher", "not a regular expression RE2 runs")


def test_a_matcher_cannot_break_out_of_the_converted_condition(tmp_path: Path) -> None:
    """A SessionEnd matcher is an equality on the reason, written into a CEL condition: a
    matcher holding quotes and ``||`` stays one string literal."""
    hostile = '" || true || "'
    settings = with_hooks(
        tmp_path,
        {
            "SessionEnd": [
                {
                    "matcher": hostile,
                    "hooks": [{"type": "command", "command": "echo bye", "timeout": 1000}],
                }
            ]
        },
    )
    done = hookgate("import", "gemini", str(settings), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    condition = CelFilter(yaml.safe_load(done.stdout)["hooks"][0]["if_expr"])
    for reason, runs in (("exit", False), ("", False), (hostile, True)):
        activation = cel_activation("session_end", {"reason": reason})
        assert condition.evaluate(activation) is runs, reason


def test_an_env_value_is_data_not_shell(tmp_path: Path) -> None:
    """A hook's ``env`` value becomes ``export NAME='value';`` before the command: a value
    holding quotes and ``;`` reaches the script as it is, and runs nothing."""
    value = "x'; touch PWNED; echo '"
    script = tmp_path / "show.sh"
    script.write_text(
        '#!/bin/sh\ncat >/dev/null\nprintf \'{"decision": "deny", '
        '"reason": "%s"}\' "$(printf %s "$V" | tr -d \'"\')"\n'
    )
    script.chmod(0o755)
    settings = with_hooks(
        tmp_path,
        {
            "BeforeTool": [
                {
                    "matcher": "run_shell_command",
                    "hooks": [
                        {
                            "type": "command",
                            "command": str(script),
                            "timeout": 5000,
                            "env": {"V": value},
                        }
                    ],
                }
            ]
        },
    )
    converted = tmp_path / "converted.yaml"
    assert (
        hookgate("import", "gemini", str(settings), "-o", str(converted), cwd=tmp_path).returncode
        == 0
    )
    event = shell_call(tmp_path)
    done = hookgate("gemini", "--config", str(converted), cwd=tmp_path, stdin=json.dumps(event))
    answer = json.loads(done.stdout)
    assert answer["decision"] == "deny" and value in answer["reason"], answer
    assert not (tmp_path / "PWNED").exists()


def test_a_gemini_format_hook_that_fails_open_in_gemini_blocks_in_hookgate(tmp_path: Path) -> None:
    """The imported script runs under Gemini's contract, but its failures block: a crash
    (exit 1), exit 2 with ``{}``, and a cut-off JSON deny each let Gemini CLI run the tool."""
    event = shell_call(tmp_path)
    for command in ("exit 1", "echo '{}'; exit 2", 'printf \'{"decision": "deny"\''):
        settings = with_hooks(
            tmp_path,
            {"BeforeTool": [{"hooks": [{"type": "command", "command": command, "timeout": 2000}]}]},
        )
        converted = tmp_path / "converted.yaml"
        assert (
            hookgate(
                "import", "gemini", str(settings), "-o", str(converted), cwd=tmp_path
            ).returncode
            == 0
        )
        done = hookgate("gemini", "--config", str(converted), cwd=tmp_path, stdin=json.dumps(event))
        assert json.loads(done.stdout)["decision"] == "deny", (command, done.stdout)


def test_a_codex_hook_that_would_not_load_stops_the_import(tmp_path: Path) -> None:
    """``import codex`` wrote the hooks it could convert and a file that did not load (a
    matcher RE2 cannot run passed through): now it refuses, naming both problems."""
    hooks = tmp_path / "hooks.json"
    hooks.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "(?!Read)Bash",
                            "hooks": [{"type": "command", "command": "true"}],
                        },
                        {
                            "matcher": "Bash",
                            "hooks": [{"type": "command", "command": "true", "timeout": "x"}],
                        },
                    ]
                }
            }
        )
    )
    said = refused(tmp_path, hooks, "problem(s)", "nothing written", agent="codex")
    assert "codex PreToolUse[0].hooks[0]: matcher" in said
    assert "PreToolUse[1].hooks[0].timeout" in said


def test_a_claude_code_hook_that_would_not_load_stops_the_import(tmp_path: Path) -> None:
    """``import claude-code`` wrote a file that did not load when a matcher RE2 cannot run
    passed through; now it refuses with nothing written. A hook type hookgate does not run
    stays Claude Code's own: listed as not imported, the rest written."""
    settings = tmp_path / "settings.json"
    group = {"matcher": "(?!Read)Bash", "hooks": [{"type": "command", "command": "true"}]}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [group]}}))
    said = refused(tmp_path, settings, "would not load", "nothing written", agent="claude-code")
    assert "claude-code PreToolUse[0].hooks[0]: matcher" in said
    kept = {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}
    theirs = {"hooks": [{"type": "mcp_tool", "server": "s", "tool": "t"}]}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [kept, theirs]}}))
    target = tmp_path / "hookgate.yaml"
    done = hookgate("import", "claude-code", str(settings), "-o", str(target), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "not imported: hooks.PreToolUse[1].hooks[0]: 'mcp_tool'" in done.stderr
    assert [h["matcher"] for h in yaml.safe_load(target.read_text())["hooks"]] == ["^(?:Bash)$"]
