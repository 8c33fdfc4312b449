from hookgate import Engine


async def test_engine_blocks_and_allows() -> None:
    engine = Engine()

    @engine.hook("pre_tool_use", matcher="^exec$")
    def guard(event):  # type: ignore[no-untyped-def]
        if "rm" in event.tool_input["cmd"]:
            return {"decision": "block", "reason": "no rm"}
        return None

    blocked = await engine.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "rm x"})
    allowed = await engine.fire("pre_tool_use", tool_name="exec", tool_input={"cmd": "ls"})
    assert blocked.decision == "block" and blocked.reason == "no rm"
    assert allowed.decision == "allow"
