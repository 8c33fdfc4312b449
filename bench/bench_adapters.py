"""Framework adapters: what hookgate adds to one agent run with one tool call.

Per framework, the same run (the model calls a tool once, then answers) in four variants:

- ``without``: no adapter at all;
- ``with``: the adapter and one matching callable ``pre_tool_use`` hook (the goal row: under
  5 % added), the hook run the engine's default way for a function registered in code: in
  place on the caller's thread;
- ``isolated``: the same with ``Settings(isolate_callables=True)``, the hook run on a worker
  thread with a hard deadline: the difference to ``with`` is the engine's thread hop;
- ``noop``: a no-op stand-in for the adapter registered at the same points of the framework
  (a middleware, plugin, capability or hook callbacks that do nothing): the framework's own
  cost of calling out at all, which no adapter can avoid.

Each framework uses its own offline model; the Claude Agent SDK rows run the bundled Claude
Code CLI against a scripted Anthropic API on loopback. The variants take turns, one run each
per round with the order rotated, so all see the same machine load; each is reported as the
median over the rounds, in wall-clock time and in the process's CPU time (``time.process_time``,
every thread of this process: far less moved by other processes on a shared machine, but
blind to time spent waiting to be scheduled, which the thread hop pays in wall time). The
Claude Agent SDK has fewer, longer rounds: its wall-clock rows move by more than the goal from
run to run on a loaded machine; its CPU row is this process's only (the SDK's side of the hook
callbacks), not the CLI's.

``HOOKGATE_BENCH_FRAMEWORKS=pydantic-ai,smolagents`` measures only those (keys of
:data:`FRAMEWORKS`). ``python -m bench.callgrind adapters pydantic-ai`` counts the instructions
of each variant's run instead (bench/callgrind.py): the way to tell a 1 % difference from the
machine's noise.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.callgrind import active, measured, rounds
from bench.harness import Row
from hookgate import Engine
from hookgate.settings import Settings

GOAL = "< 5% added"


def _engine(*, isolated: bool = False, tool: str = "shell") -> Engine:
    engine = Engine(settings=Settings(isolate_callables=isolated))

    @engine.hook("pre_tool_use", matcher=f"^{tool}$")
    def allow_ls(event: Any) -> None:
        return None

    return engine


@dataclass(slots=True)
class Timing:
    """Median µs per run of one variant: wall clock and this process's CPU time."""

    wall: float
    cpu: float


def _medians(walls: dict[str, list[float]], cpus: dict[str, list[float]]) -> dict[str, Timing]:
    return {
        name: Timing(statistics.median(walls[name]), statistics.median(cpus[name]))
        for name in walls
    }


def _interleaved_sync(
    makes: dict[str, Callable[[], object]], samples: int, group: str
) -> dict[str, Timing]:
    walls: dict[str, list[float]] = {name: [] for name in makes}
    cpus: dict[str, list[float]] = {name: [] for name in makes}
    names = list(makes)
    perf, cpu = time.perf_counter, time.process_time
    for make in makes.values():
        make()  # warm-up: imports, caches, first-use threads
    for index in range(samples):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            with measured(f"{group}:{name}"):
                started, cpu_started = perf(), cpu()
                makes[name]()
            cpus[name].append((cpu() - cpu_started) * 1e6)
            walls[name].append((perf() - started) * 1e6)
    return _medians(walls, cpus)


async def _interleaved_async(
    makes: dict[str, Callable[[], Awaitable[object]]],
    samples: int,
    group: str,
    cpu: Callable[[], float] = time.process_time,
) -> dict[str, Timing]:
    walls: dict[str, list[float]] = {name: [] for name in makes}
    cpus: dict[str, list[float]] = {name: [] for name in makes}
    names = list(makes)
    perf = time.perf_counter
    for make in makes.values():
        await make()
    for index in range(samples):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            with measured(f"{group}:{name}"):
                started, cpu_started = perf(), cpu()
                await makes[name]()
            cpus[name].append((cpu() - cpu_started) * 1e6)
            walls[name].append((perf() - started) * 1e6)
    return _medians(walls, cpus)


def _rows(
    framework: str,
    timings: dict[str, Timing],
    cpu: str = "this process's CPU time",
) -> list[Row]:
    with_, without = timings["with"], timings["without"]
    rows = [
        Row(
            "adapters",
            f"{framework}: run with 1 tool call, 1 matching hook",
            with_.wall,
            "µs",
            "the same run without the adapter (wall clock)",
            without.wall,
            GOAL,
            with_.wall / without.wall < 1.05,
        ),
    ]
    if "isolated" in timings:
        rows.append(
            Row(
                "adapters",
                f"{framework}: the same, isolate_callables=True",
                timings["isolated"].wall,
                "µs",
                "the same run without the adapter (the gap to the row above is the thread hop)",
                without.wall,
            )
        )
    rows += [
        Row(
            "adapters",
            f"{framework}: no-op hooks at the same points",
            timings["noop"].wall,
            "µs",
            "the same run without them (the framework's own cost of hook points)",
            without.wall,
        ),
        Row(
            "adapters",
            f"{framework}: run with 1 matching hook, CPU time",
            with_.cpu,
            "µs",
            f"the same run without the adapter ({cpu})",
            without.cpu,
        ),
        Row(
            "adapters",
            f"{framework}: no-op hooks, CPU time",
            timings["noop"].cpu,
            "µs",
            f"the same run without them ({cpu})",
            without.cpu,
        ),
    ]
    return rows


def _shell(cmd: str) -> str:
    """Run a shell command."""
    return f"ran {cmd}"


# -- LangChain -----------------------------------------------------------------------------


def _langchain(samples: int) -> list[Row]:
    from langchain.agents import create_agent
    from langchain.agents.middleware.types import AgentMiddleware
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from hookgate.adapters.langchain import HookgateMiddleware

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            if isinstance(messages[-1], ToolMessage):
                message = AIMessage("done")
            else:
                call = {"name": "shell", "args": {"cmd": "ls"}, "id": "c1"}
                message = AIMessage("", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    class Noop(AgentMiddleware[Any, Any, Any]):
        # Declared the cheapest way for LangChain to call, as the adapter is: the async hooks
        # plain functions returning the handler's awaitable, the signatures stored (see
        # hookgate.adapters.langchain).
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def awrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

        def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            return handler(request)

    for hook in ("wrap_model_call", "wrap_tool_call", "awrap_model_call", "awrap_tool_call"):
        function = Noop.__dict__[hook]
        function.__signature__ = inspect.signature(function)

    shell = tool(_shell)
    model = Scripted(messages=iter(()))
    agents = {
        "with": create_agent(model, [shell], middleware=[HookgateMiddleware(_engine())]),
        "isolated": create_agent(
            model, [shell], middleware=[HookgateMiddleware(_engine(isolated=True))]
        ),
        "noop": create_agent(model, [shell], middleware=[Noop()]),
        "without": create_agent(model, [shell]),
    }
    state = {"messages": [{"role": "user", "content": "list"}]}
    timings = _interleaved_sync(
        {name: (lambda agent=agent: agent.invoke(state)) for name, agent in agents.items()},
        samples,
        "langchain-invoke",
    )
    # ainvoke runs the tools on the event loop's thread, invoke on LangGraph's worker threads
    # (where a plain-function hook costs the engine a thread hop).
    async_timings = asyncio.run(
        _interleaved_async(
            {name: (lambda agent=agent: agent.ainvoke(state)) for name, agent in agents.items()},
            samples,
            "langchain-ainvoke",
        )
    )
    return [
        *_rows("LangChain v1 (invoke)", timings),
        *_rows("LangChain v1 (ainvoke)", async_timings),
    ]


# -- OpenAI Agents -------------------------------------------------------------------------


def _openai_agents(samples: int) -> list[Row]:
    from agents import Agent, RunHooks, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel
    from agents.testing.model import assistant_message, function_call

    from hookgate.adapters.openai_agents import HookgateRunHooks, guard_tools

    set_tracing_disabled(True)  # no exporter thread in the measurement
    engine, isolated_engine = _engine(), _engine(isolated=True)
    model = ScriptedModel()
    tool = function_tool(_shell, name_override="shell")
    plain = Agent(name="bench", model=model, tools=[tool])
    guarded = Agent(name="bench", model=model, tools=guard_tools([tool], engine))
    isolated = Agent(name="bench", model=model, tools=guard_tools([tool], isolated_engine))
    # The no-op stand-in: RunHooks that do nothing and a tool whose invoker only forwards.
    forwarded = copy.copy(tool)
    inner = tool.on_invoke_tool

    async def forward(ctx: Any, args: str) -> Any:
        return await inner(ctx, args)

    forwarded.on_invoke_tool = forward
    noop = Agent(name="bench", model=model, tools=[forwarded])

    def run(agent: Agent[Any], run_hooks: Any) -> Callable[[], Awaitable[object]]:
        async def once() -> object:
            model.extend(
                [[function_call("shell", {"cmd": "ls"}, call_id="c1")], [assistant_message("done")]]
            )
            return await Runner.run(agent, "list", hooks=run_hooks)

        return once

    timings = asyncio.run(
        _interleaved_async(
            {
                "with": run(guarded, HookgateRunHooks(engine)),
                "isolated": run(isolated, HookgateRunHooks(isolated_engine)),
                "noop": run(noop, RunHooks()),
                "without": run(plain, None),
            },
            samples,
            "openai-agents",
        )
    )
    return _rows("OpenAI Agents", timings)


# -- Pydantic AI ---------------------------------------------------------------------------


def _pydantic_ai(samples: int) -> list[Row]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from hookgate.adapters.pydantic_ai import HookgateCapability

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("shell", {"cmd": "ls"}, tool_call_id="c1")])

    class Noop(AbstractCapability[Any]):
        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            return await handler()

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            return request_context

        async def after_model_request(
            self, ctx: Any, *, request_context: Any, response: Any
        ) -> Any:
            return response

        async def before_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any
        ) -> Any:
            return args

        async def after_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, result: Any
        ) -> Any:
            return result

    class Empty(AbstractCapability[Any]):
        pass

    agents: dict[str, Agent[None, str]] = {
        "with": Agent(FunctionModel(respond), capabilities=[HookgateCapability(_engine())]),
        "isolated": Agent(
            FunctionModel(respond), capabilities=[HookgateCapability(_engine(isolated=True))]
        ),
        "noop": Agent(FunctionModel(respond), capabilities=[Noop()]),
        # Pydantic AI calls every hook of every capability, overridden or not: what one more
        # capability costs it, whatever the capability does.
        "empty": Agent(FunctionModel(respond), capabilities=[Empty()]),
        "without": Agent(FunctionModel(respond)),
    }
    for agent in agents.values():
        agent.tool_plain(name="shell")(_shell)
    timings = asyncio.run(
        _interleaved_async(
            {name: (lambda agent=agent: agent.run("list")) for name, agent in agents.items()},
            samples,
            "pydantic-ai",
        )
    )
    empty = Row(
        "adapters",
        "Pydantic AI: an empty capability, CPU time",
        timings["empty"].cpu,
        "µs",
        "the same run without it (this process's CPU time)",
        timings["without"].cpu,
    )
    return [*_rows("Pydantic AI", timings), empty]


# -- Google ADK ----------------------------------------------------------------------------


def _adk(samples: int) -> list[Row]:
    from google.adk.agents import LlmAgent
    from google.adk.apps import App
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from hookgate.adapters.adk import HookgatePlugin

    class Scripted(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> Any:
            if any(c.role == "model" for c in llm_request.contents):
                part = types.Part(text="done")
            else:
                call = types.FunctionCall(name="shell", args={"cmd": "ls"}, id="c1")
                part = types.Part(function_call=call)
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def shell(cmd: str) -> dict[str, Any]:
        """Run a shell command."""
        return {"result": _shell(cmd)}

    def runner(plugins: list[Any]) -> Callable[[], Awaitable[object]]:
        agent = LlmAgent(name="bench", model=Scripted(), tools=[shell])
        app_runner = InMemoryRunner(app=App(name="bench", root_agent=agent, plugins=plugins))
        message = types.Content(role="user", parts=[types.Part(text="list")])

        async def once() -> object:
            session = await app_runner.session_service.create_session(app_name="bench", user_id="u")
            return [
                e
                async for e in app_runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                )
            ]

        return once

    class Noop(BasePlugin):
        async def on_user_message_callback(self, **kwargs: Any) -> None:
            return None

        async def before_run_callback(self, **kwargs: Any) -> None:
            return None

        async def after_run_callback(self, **kwargs: Any) -> None:
            return None

        async def before_agent_callback(self, **kwargs: Any) -> None:
            return None

        async def after_agent_callback(self, **kwargs: Any) -> None:
            return None

        async def before_model_callback(self, **kwargs: Any) -> None:
            return None

        async def after_model_callback(self, **kwargs: Any) -> None:
            return None

        async def before_tool_callback(self, **kwargs: Any) -> None:
            return None

        async def after_tool_callback(self, **kwargs: Any) -> None:
            return None

    # ADK logs a warning per model call when the scripted model reports no token usage.
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    timings = asyncio.run(
        _interleaved_async(
            {
                "with": runner([HookgatePlugin(_engine())]),
                "isolated": runner([HookgatePlugin(_engine(isolated=True))]),
                "noop": runner([Noop(name="noop")]),
                "without": runner([]),
            },
            samples,
            "adk",
        )
    )
    return _rows("Google ADK", timings)


# -- Claude Agent SDK ----------------------------------------------------------------------


def _claude_agent_sdk(samples: int) -> list[Row]:
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, query

    from hookgate.adapters.claude_agent_sdk import hook_matchers

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support.anthropic_server import Reply, ScriptedAnthropic

    root = Path(tempfile.mkdtemp(prefix="hookgate-bench-"))
    (root / "home" / ".claude").mkdir(parents=True)
    (root / "project").mkdir()
    engine = _engine(tool="Bash")
    with ScriptedAnthropic() as api:
        env = {
            "HOME": str(root / "home"),
            "CLAUDE_CONFIG_DIR": str(root / "home" / ".claude"),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-offline",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_PROXY": "127.0.0.1,localhost",
        }

        def run(hooks: Any) -> Callable[[], Awaitable[object]]:
            options = ClaudeAgentOptions(
                hooks=hooks, cwd=str(root / "project"), env=env, allowed_tools=["Bash"]
            )

            async def once() -> object:
                api.script(Reply(tool="Bash", tool_input={"command": "true"}), Reply(text="done"))
                return [m async for m in query(prompt="list", options=options)]

            return once

        async def nothing(input_data: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
            return {}

        # The no-op stand-in registers the events the adapter registers for this engine.
        matchers = hook_matchers(engine)
        noop = {event: [HookMatcher(hooks=[nothing])] for event in matchers}
        timings = asyncio.run(
            _interleaved_async(
                {"with": run(matchers), "noop": run(noop), "without": run(None)},
                samples,
                "claude-agent-sdk",
            )
        )
    return _rows("Claude Agent SDK (bundled CLI)", timings)


# -- smolagents ----------------------------------------------------------------------------


def _smolagents(samples: int) -> list[Row]:
    from smolagents import ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )

    from hookgate.adapters.smolagents import guard

    class Scripted(Model):
        def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
            done = any(str(getattr(m.role, "value", m.role)) == "tool-call" for m in messages)
            name, arguments = (
                ("final_answer", {"answer": "done"}) if done else ("shell", {"cmd": "ls"})
            )
            function = ChatMessageToolCallFunction(name=name, arguments=arguments)
            call = ChatMessageToolCall(function=function, id="c1", type="function")
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    @tool
    def shell(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: the command line.
        """
        return _shell(cmd)

    def agent() -> Any:
        return ToolCallingAgent(tools=[shell], model=Scripted(model_id="s"), verbosity_level=0)

    engine, isolated_engine = _engine(), _engine(isolated=True)
    guarded, plain, noop = guard(agent(), engine), agent(), agent()
    isolated = guard(agent(), isolated_engine)
    # The no-op stand-in: the same methods wrapped by functions that only forward.
    for name in ("run", "process_tool_calls", "execute_tool_call"):
        inner = getattr(noop, name)
        setattr(noop, name, lambda *a, inner=inner, **k: inner(*a, **k))
    inner_generate = noop.model.generate
    noop.model.generate = lambda *a, **k: inner_generate(*a, **k)
    timings = _interleaved_sync(
        {
            "with": lambda: guarded.run("list"),
            "isolated": lambda: isolated.run("list"),
            "noop": lambda: noop.run("list"),
            "without": lambda: plain.run("list"),
        },
        samples,
        "smolagents",
    )
    engine.close()
    isolated_engine.close()
    return _rows("smolagents ToolCallingAgent", timings)


FRAMEWORKS: dict[str, Callable[[int], list[Row]]] = {
    "langchain": _langchain,
    "openai-agents": _openai_agents,
    "pydantic-ai": _pydantic_ai,
    "adk": _adk,
    "claude-agent-sdk": _claude_agent_sdk,
    "smolagents": _smolagents,
}


def selected() -> dict[str, Callable[[int], list[Row]]]:
    """The frameworks to measure: those named in ``HOOKGATE_BENCH_FRAMEWORKS`` (comma-separated
    keys of :data:`FRAMEWORKS`), else all."""
    names = [n.strip() for n in os.environ.get("HOOKGATE_BENCH_FRAMEWORKS", "").split(",")]
    names = [n for n in names if n]
    unknown = sorted(set(names) - set(FRAMEWORKS))
    if unknown:
        raise SystemExit(f"unknown framework(s) {unknown}: choose from {sorted(FRAMEWORKS)}")
    return {n: FRAMEWORKS[n] for n in names} if names else dict(FRAMEWORKS)


def run(quick: bool = False) -> list[Row]:
    rows = []
    for name, measure in selected().items():
        # A CLI run takes seconds: fewer rounds there. Instruction counts hardly vary.
        samples = (3 if quick else 25) if name == "claude-agent-sdk" else (20 if quick else 200)
        if active():
            samples = rounds()
        try:
            rows.extend(measure(samples))
        except ImportError as exc:
            rows.append(Row("adapters", f"{name}: not installed ({exc.name})", 0.0, "µs"))
    return rows
