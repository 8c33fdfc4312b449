from pathlib import Path

import pytest

from hookgate.testing import HookTester, assert_allowed, assert_blocked, sample_event


def test_hook_tester_from_file(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text('{"hooks": [{"event": "pre_tool_use", "handler_type": "callable",'
                    ' "config": {"callable": "tests.fixtures.sample_hooks:block_rm"}}]}')
    tester = HookTester.from_file(path)
    blocked = tester.fire("pre_tool_use", sample_event("pre_tool_use",
                                                       tool_input={"cmd": "rm -rf /tmp"}))
    assert_blocked(blocked, reason_contains="rm -rf")
    assert_allowed(tester.fire("pre_tool_use", sample_event("pre_tool_use")))
    assert len(tester.audit.records) == 2
    with pytest.raises(AssertionError):
        assert_allowed(blocked)
    tester.close()
