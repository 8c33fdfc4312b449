"""The MCP server the client talks to: hooks on tools, everything else passed through.

Built on the SDK's low-level :class:`~mcp.server.lowlevel.Server`:

* ``tools/call`` fires ``pre_tool_use`` (block, rewrite the arguments, or answer a synthetic
  result without calling the upstream), forwards the call, then fires ``post_tool_use`` as
  the synchronous stage (withhold the output on a block, an abort or any failure; rewrite
  it; append context: :mod:`hookgate.tool_output`);
* ``tools/list`` fires ``list_tools``, whose hooks may hide tools; a hidden tool cannot be
  called either;
* every other request is forwarded with the params the client sent and answered with what
  the upstream answered; notifications, progress and server-to-client requests flow back.

The capabilities the client sees are the upstream's, so the proxy is invisible apart from
what the hooks do.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, cast

from mcp import types
from mcp.server.caching import CACHEABLE_METHODS, CacheableMethod, CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from hookgate.mcp_proxy.child import ProgressSink
from hookgate.mcp_proxy.tool_results import (
    block_result,
    hook_result,
    with_context,
)
from hookgate.mcp_proxy.upstream import ServerRequests, Upstream, UpstreamError, UpstreamSpec
from hookgate.outcome import Outcome
from hookgate.tool_output import POST_TOOL_STAGE, OutputCheck, check_failed, output_check

__all__ = ["PREFIX_SEPARATOR", "SERVER_REQUESTS", "Evaluate", "McpProxy", "Wants"]

log = logging.getLogger("hookgate.mcp_proxy")

#: Decide one event: (canonical event name, payload) -> Outcome (an engine or a gateway).
Evaluate = Callable[[str, dict[str, Any]], Awaitable[Outcome]]
#: Whether an event could have any hook at all (False skips building and firing it).
Wants = Callable[[str], bool]

#: Requests forwarded as they are (``tools/*`` are hooked; ``ping`` is the proxy's own).
FORWARDED_REQUESTS: tuple[str, ...] = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
)
#: Client notifications forwarded upstream (``notifications/cancelled`` is applied by the
#: SDK: the forwarded request is abandoned and the upstream told).
FORWARDED_NOTIFICATIONS: tuple[str, ...] = (
    "notifications/roots/list_changed",
    "notifications/progress",
)
#: ``_meta`` keys of the 2026 per-request envelope: they describe the client's connection
#: to the proxy, not the proxy's connection to the upstream.
_ENVELOPE_PREFIX = "io.modelcontextprotocol/"
#: Pages of tools/list read before the first call; more is taken as a misbehaving server.
_MAX_PAGES = 100
#: Clients (HTTP sessions) remembered for notifications; the oldest are forgotten first.
_MAX_CLIENTS = 1000
#: Upstream notifications that carry no client's data, sent to every client.
_CONTENT_FREE = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
)
#: Server-to-client requests the operator may let pass (``--allow-sampling``, …).
SERVER_REQUESTS: frozenset[str] = frozenset({"sampling", "elicitation"})
#: The tool names MCP allows (1 to 128 of A-Z a-z 0-9 _ - .): other names (control
#: characters, lookalikes of another tool's name) are neither shown nor callable.
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
#: Between an upstream's name and its own tool or prompt names, with several upstreams.
PREFIX_SEPARATOR = "__"
#: Listings merged across several upstreams: method -> the result's list field.
_MERGED_LISTS = {
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


class _Page(NamedTuple):
    """One filtered page of tools/list: the result for the client, the names it shows and
    the names the hooks hid."""

    result: dict[str, Any]
    shown: set[str]
    hidden: set[str]


@dataclass(eq=False)
class _Backend:
    """One upstream and what the proxy learnt from its tool listings."""

    name: str
    upstream: Upstream
    #: What the client sees before this upstream's tool and prompt names ("" when alone).
    prefix: str
    schemas: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    #: The tools each client (MCP session) may call: what its listing showed after the
    #: hooks' filter (list_tools hooks see the session, so two clients may differ).
    shown: dict[str, set[str]] = field(default_factory=dict)
    #: The sessions whose ``shown`` holds a whole listing (every page) since the last list
    #: change.
    listed: set[str] = field(default_factory=set)

    def callable_tools(self, session_id: str) -> set[str]:
        """The session's callable set, made the newest (the oldest are forgotten first)."""
        names = self.shown.pop(session_id, None)
        if names is None:
            names = set()
            while len(self.shown) >= _MAX_CLIENTS:
                self.listed.discard(oldest := next(iter(self.shown)))
                del self.shown[oldest]
        self.shown[session_id] = names
        return names


class McpProxy:
    """One proxy: its upstreams, the hooks (``evaluate``) and the server the client sees.

    With one upstream the client sees its names unchanged; with several, tool and prompt
    names are prefixed ``NAME__`` and each request goes to the upstream it names.
    """

    def __init__(
        self,
        upstreams: Mapping[str, UpstreamSpec],
        evaluate: Evaluate,
        *,
        init_timeout_s: float = 30.0,
        request_timeout_s: float | None = 300.0,
        wants: Wants | None = None,
        server_requests: frozenset[str] = frozenset(),
    ) -> None:
        """``server_requests``: the upstream's requests to the client that may pass
        (``sampling``, ``elicitation``); others are refused (the upstream is told the client
        cannot do them). Roots always pass when the client declares them."""
        if not upstreams:
            raise ValueError("a proxy needs at least one upstream")
        unknown = server_requests - SERVER_REQUESTS
        if unknown:
            raise ValueError(f"unknown server requests: {', '.join(sorted(unknown))}")
        self.evaluate = evaluate
        self._wants = wants
        self._passed_requests = server_requests
        self.multi = len(upstreams) > 1
        self.backends: list[_Backend] = []
        for name, spec in upstreams.items():
            upstream = Upstream(
                spec,
                on_notification=partial(self._from_upstream, name),
                server_requests=self._server_requests,
                init_timeout_s=init_timeout_s,
                request_timeout_s=request_timeout_s,
                label=name,
            )
            prefix = f"{name}{PREFIX_SEPARATOR}" if self.multi else ""
            self.backends.append(_Backend(name, upstream, prefix))
        self._by_name = {backend.name: backend for backend in self.backends}
        self.session_id = uuid.uuid4().hex
        #: The latest request's session of each client (one on stdio), newest last.
        self._clients: dict[str, ServerSession] = {}
        self._client_capabilities: dict[str, Any] = {}
        self._resource_owner: dict[str, _Backend] = {}
        #: The protocol version the latest ``initialize`` settled on.
        self.handshake_version: str | None = None
        self.server = _ProxyServer(self)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpProxy]:
        """Own the upstream connections while serving."""
        async with AsyncExitStack() as stack:
            for backend in self.backends:
                await stack.enter_async_context(backend.upstream.running())
            yield self

    # -- the client's side ----------------------------------------------------------------

    async def middleware(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Seen for every inbound message: remember the client; start the upstream first."""
        if ctx.request_id is not None:
            self._remember_client(ctx)
            self._note_client(ctx)
            if ctx.method in ("initialize", "server/discover"):
                # The answer carries the upstreams' capabilities, so the upstreams come first.
                for backend in self.backends:
                    await backend.upstream.connect()
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, Mapping):
            # The handshake's version, for the stdio fast path (one client on stdio).
            self.handshake_version = result.get("protocolVersion")
        return result

    def capabilities(self) -> types.ServerCapabilities | None:
        """The upstream's capabilities (with several, each one any of them has)."""
        merged: dict[str, Any] = {}
        for backend in self.backends:
            result = backend.upstream.initialize_result
            if result is None:
                return None
            for key, value in result.capabilities.model_dump(exclude_none=True).items():
                merged.setdefault(key, value)
        capabilities = types.ServerCapabilities.model_validate(merged)
        if capabilities.tools is None:
            capabilities.tools = types.ToolsCapability()
        return capabilities

    def instructions(self) -> str | None:
        parts = []
        for backend in self.backends:
            result = backend.upstream.initialize_result
            if result is not None and result.instructions:
                label = f"{backend.name}: " if self.multi else ""
                parts.append(label + result.instructions)
        return "\n\n".join(parts) or None

    async def forward(self, ctx: ServerRequestContext[Any, Any], _params: Any) -> dict[str, Any]:
        """Any request but tools/*: the client's params out, the upstream's answer back."""
        params = outbound_params(ctx.params)
        if not self.multi:
            upstream = self.backends[0].upstream
            result = await upstream.request(ctx.method, params, on_progress=_progress_relay(ctx))
        else:
            result = await self._routed(ctx, params or {})
        return _for_client(ctx, result)

    async def forward_notification(self, ctx: ServerRequestContext[Any, Any], _params: Any) -> None:
        for backend in self.backends:
            await backend.upstream.notify(ctx.method, outbound_params(ctx.params))

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        if not self.multi:
            backend = self.backends[0]
            listing = await backend.upstream.request("tools/list", outbound_params(ctx.params))
            session_id = self._session_of(ctx)
            page = await self._filter_listing(backend, listing, session_id)
            # The client's own pages keep its callable set current between whole listings.
            names = backend.callable_tools(session_id)
            names -= page.hidden
            names |= page.shown
            return _for_client(ctx, page.result)
        tools: list[Any] = []
        for backend in self.backends:
            for tool in await self._learn_tools(backend, self._session_of(ctx)):
                tools.append({**tool, "name": backend.prefix + tool["name"]})
        return _for_client(ctx, {"tools": tools})

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        result = await self.tool_call(
            params.name,
            params.arguments,
            request_id=ctx.request_id,
            session_id=self._session_of(ctx),
            outbound=outbound_params(ctx.params),
            on_progress=_progress_relay(ctx),
        )
        return _for_client(ctx, result)

    async def tool_call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        request_id: Any,
        session_id: str,
        outbound: dict[str, Any] | None,
        on_progress: ProgressSink | None,
    ) -> dict[str, Any]:
        """One tools/call with its hooks: the tool result for the client.

        ``outbound`` is the client's params minus its envelope (what is forwarded, with the
        name and arguments replaced); served by the SDK's server and by the stdio fast path
        (:mod:`hookgate.mcp_proxy.fast_calls`) alike.
        """
        routed = self._route(tool)
        if routed is None:
            return block_result(f"tool {tool!r} is not available")
        backend, name = routed
        args: dict[str, Any] = dict(arguments or {})
        if session_id not in backend.listed:
            await self._learn_tools(backend, session_id)
        if name not in backend.callable_tools(session_id):
            # Hidden by a hook, never listed by the upstream, or a name no listing can hold
            # (control characters, lookalikes of a listed name): never forwarded.
            return block_result(f"tool {tool!r} is not available")
        base = {
            "tool_name": name,
            "tool_use_id": str(request_id),
            "session_id": session_id,
            "server": backend.name,
        }
        pre = (
            await self._decide("pre_tool_use", {**base, "tool_input": args})
            if self._has_hooks("pre_tool_use") else Outcome()
        )
        if pre is None:
            return block_result(f"hookgate could not evaluate the hooks for {name!r}; blocked")
        if pre.blocked or pre.abort is not None or not pre.continue_:
            return block_result(pre.reason)
        schema = backend.schemas.get(name)
        if pre.result is not None:
            try:
                return with_context(hook_result(pre.result, schema), pre.additional_context)
            except ValueError as exc:
                return block_result(f"a hook's synthetic result for {name!r} is invalid: {exc}")
        if pre.updated_input is not None:
            if not isinstance(pre.updated_input, Mapping):
                return block_result(f"a hook rewrote the arguments of {name!r} into a non-object")
            args = dict(pre.updated_input)
        forwarded = dict(outbound or {})
        forwarded["name"] = name
        forwarded["arguments"] = args
        started = time.perf_counter()
        raw = await backend.upstream.request("tools/call", forwarded, on_progress=on_progress)
        if not isinstance(raw.get("content"), list):
            # The full check of the result's shape is the SDK's, when the answer is sent.
            raise UpstreamError(
                f"MCP server {backend.name} answered tools/call {name!r} without content"
            )
        result = raw
        context = list(pre.additional_context)
        if self._has_hooks("post_tool_use"):
            check = await self._check_output(
                {
                    **base,
                    "tool_input": args,
                    "tool_response": result,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                },
            )
            context.extend(check.context)
            if check.withheld:
                # The upstream's output never reaches the client: the notice replaces it.
                return with_context(block_result(check.text()), context)
            if check.action == "rewrite":
                try:
                    result = hook_result(check.output, schema)
                except ValueError as exc:
                    return block_result(f"a hook's rewritten output of {name!r} is invalid: {exc}")
        return with_context(result, context)

    # -- hooks ----------------------------------------------------------------------------

    def _has_hooks(self, event: str) -> bool:
        """False only when no hook exists for ``event`` (firing it would allow, unchanged)."""
        if self._wants is None:
            return True
        try:
            return self._wants(event)
        except Exception:
            return True

    async def _decide(self, event: str, payload: dict[str, Any]) -> Outcome | None:
        """The hooks' outcome, or None when they could not be evaluated (the caller blocks)."""
        try:
            return await self.evaluate(event, payload)
        except Exception:
            log.exception("evaluating %s for %s failed", event, payload.get("tool_name"))
            return None

    async def _check_output(self, payload: dict[str, Any]) -> OutputCheck:
        """``post_tool_use`` as the synchronous stage (:mod:`hookgate.tool_output`): every
        failure to evaluate it (a gateway that is down, an event too large for it, a
        malformed answer) withholds the output."""
        try:
            outcome = await self.evaluate(POST_TOOL_STAGE, payload)
        except Exception as exc:
            log.error("checking the output of %s failed (%s); withheld",
                      payload.get("tool_name"), type(exc).__name__)
            outcome = check_failed(exc)
        return output_check(outcome)

    async def _filter_listing(
        self, backend: _Backend, listing: dict[str, Any], session_id: str
    ) -> _Page:
        """One page of an upstream's tools/list, with the tools the hooks hide left out."""
        tools = listing.get("tools")
        if not isinstance(tools, list):
            raise UpstreamError(
                f"MCP server {backend.name} answered tools/list without a tool list"
            )
        named = [tool for tool in tools if _callable_name(backend, tool)]
        for tool in named:
            schema = tool.get("outputSchema")
            backend.schemas[tool["name"]] = dict(schema) if isinstance(schema, Mapping) else None
        tools = named
        payload = {"server": backend.name, "tools": tools, "session_id": session_id}
        outcome = await self._decide("list_tools", payload)
        if outcome is None:
            raise MCPError(INTERNAL_ERROR, "hookgate could not evaluate the tools/list hooks")
        if outcome.blocked:
            raise MCPError(INTERNAL_ERROR, f"tools/list blocked: {outcome.reason or 'by hookgate'}")
        shown = tools if outcome.updated_input is None else _kept(tools, outcome.updated_input)
        shown_names = {tool["name"] for tool in shown}
        hidden = {tool["name"] for tool in tools} - shown_names
        return _Page({**listing, "tools": shown}, shown_names, hidden)

    async def _learn_tools(self, backend: _Backend, session_id: str) -> list[Any]:
        """Every page of an upstream's tools, filtered by the hooks: before a first call (so
        hidden tools and output schemas are known whatever the client listed) and for a
        merged listing."""
        shown: list[Any] = []
        # A whole listing, from scratch: what it does not show cannot be called.
        names: set[str] = set()
        hidden: set[str] = set()
        cursor: Any = None
        for _page in range(_MAX_PAGES):
            listing = await backend.upstream.request(
                "tools/list", {"cursor": cursor} if cursor else None
            )
            page = await self._filter_listing(backend, listing, session_id)
            shown.extend(page.result["tools"])
            names |= page.shown
            hidden |= page.hidden
            cursor = listing.get("nextCursor")
            if not cursor:
                allowed = backend.callable_tools(session_id)
                allowed.clear()
                allowed |= names - hidden
                backend.listed.add(session_id)
                return shown
        raise UpstreamError(
            f"MCP server {backend.name} lists more than {_MAX_PAGES} pages of tools"
        )

    # -- several upstreams ----------------------------------------------------------------

    def _route(self, name: str) -> tuple[_Backend, str] | None:
        """The upstream a prefixed tool or prompt name belongs to, and its own name there."""
        if not self.multi:
            return self.backends[0], name
        owner, separator, own_name = name.partition(PREFIX_SEPARATOR)
        backend = self._by_name.get(owner)
        if not separator or backend is None or not own_name:
            return None
        return backend, own_name

    async def _routed(self, ctx: ServerRequestContext[Any, Any], params: dict[str, Any]) -> Any:
        method = ctx.method
        if method in _MERGED_LISTS:
            key = _MERGED_LISTS[method]
            items: list[Any] = []
            for backend in self.backends:
                listing = await backend.upstream.request(method, None)
                for item in listing.get(key) or []:
                    if method == "prompts/list":
                        item = {**item, "name": backend.prefix + item["name"]}
                    elif method == "resources/list":
                        self._resource_owner.setdefault(item.get("uri"), backend)
                    items.append(item)
            return {key: items}
        if method == "prompts/get":
            return await self._to_named(ctx, params, params, "name")
        if method == "completion/complete":
            ref = dict(params.get("ref") or {})
            if ref.get("type") == "ref/prompt":
                return await self._to_named(ctx, {**params, "ref": ref}, ref, "name")
            return await self._to_owner(ctx, params, ref.get("uri"))
        if method in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
            return await self._to_owner(ctx, params, params.get("uri"))
        # logging/setLevel and anything else: every upstream, the first answer returned.
        answers = [await backend.upstream.request(method, params) for backend in self.backends]
        return answers[0]

    async def _to_named(
        self, ctx: ServerRequestContext[Any, Any], params: dict[str, Any],
        holder: dict[str, Any], key: str,
    ) -> Any:
        routed = self._route(str(holder.get(key, "")))
        if routed is None:
            raise MCPError(INVALID_PARAMS, f"no upstream has {holder.get(key)!r}")
        backend, own_name = routed
        holder[key] = own_name
        return await backend.upstream.request(
            ctx.method, params, on_progress=_progress_relay(ctx)
        )

    async def _to_owner(
        self, ctx: ServerRequestContext[Any, Any], params: dict[str, Any], uri: Any
    ) -> Any:
        """A resource request: to the upstream that listed the URI, else to each in turn
        until one knows it."""
        owner = self._resource_owner.get(uri)
        candidates = [owner] if owner is not None else self.backends
        last: MCPError | None = None
        for backend in candidates:
            try:
                return await backend.upstream.request(
                    ctx.method, params, on_progress=_progress_relay(ctx)
                )
            except UpstreamError:
                raise
            except MCPError as exc:
                last = exc
        assert last is not None
        raise last

    # -- the upstream's side --------------------------------------------------------------

    async def _from_upstream(self, name: str, notification: types.ServerNotification) -> None:
        if isinstance(notification, types.ProgressNotification):
            return  # relayed per request, under the client's own token (_progress_relay)
        if isinstance(notification, types.ToolListChangedNotification):
            # Hidden tools are worked out again before the next call.
            self._by_name[name].listed.clear()
        if isinstance(notification, _CONTENT_FREE):
            targets = list(self._clients.values())  # "something changed": every client
        else:
            # Log messages and the like may carry one client's data; with several clients on
            # one upstream there is no telling whose, so none gets it.
            targets = self._only_client()
            if not targets:
                log.debug("dropped %s: %d clients share the upstream",
                          type(notification).__name__, len(self._clients))
        for session in targets:
            try:
                await session.send_notification(notification)
            except Exception:
                log.debug("dropped %s for a client that went away", type(notification).__name__)

    def _remember_client(self, ctx: ServerRequestContext[Any, Any]) -> None:
        key = self._session_of(ctx)
        self._clients.pop(key, None)
        self._clients[key] = ctx.session
        while len(self._clients) > _MAX_CLIENTS:
            del self._clients[next(iter(self._clients))]

    def _only_client(self) -> list[ServerSession]:
        return list(self._clients.values()) if len(self._clients) == 1 else []

    def _server_requests(self) -> ServerRequests:
        """Callbacks for requests the upstream sends, for what the client declared it can do."""
        declared = self._client_capabilities
        passed = self._passed_requests
        requests = ServerRequests()
        # Sampling (the client's model) and elicitation (its user) carry the upstream's text
        # to them with no hook point: refused unless the operator lets them pass.
        if "sampling" in declared and "sampling" in passed:
            requests.sampling = self._relay_request(types.CreateMessageRequest,
                                                    types.CreateMessageResult)
        if "elicitation" in declared and "elicitation" in passed:
            requests.elicitation = self._relay_request(types.ElicitRequest, types.ElicitResult)
        if "roots" in declared:
            relay = self._relay_request(types.ListRootsRequest, types.ListRootsResult)

            async def roots(ctx: Any) -> Any:
                return await relay(ctx, None)

            requests.roots = roots
        return requests

    def _relay_request(self, request_type: Any, result_type: Any) -> Any:
        async def relay(_ctx: Any, params: Any) -> Any:
            only = self._only_client()
            if not only:
                # Which client's call caused it cannot be told apart with several clients.
                return types.ErrorData(
                    code=INTERNAL_ERROR,
                    message="no single client to ask: run one proxy per client for this",
                )
            downstream = only[0]
            try:
                request = request_type(params=params) if params is not None else request_type()
                return await downstream.send_request(request, result_type)
            except MCPError as exc:
                return exc.error
            except Exception as exc:
                return types.ErrorData(code=INTERNAL_ERROR, message=f"client request failed: {exc}")

        return relay

    def _note_client(self, ctx: ServerRequestContext[Any, Any]) -> None:
        if self._client_capabilities:
            return
        params = ctx.params or {}
        declared = params.get("capabilities")
        if not isinstance(declared, Mapping):
            meta = params.get("_meta")
            if isinstance(meta, Mapping):
                declared = meta.get(_ENVELOPE_PREFIX + "clientCapabilities")
        if isinstance(declared, Mapping):
            self._client_capabilities = dict(declared)

    def _session_of(self, ctx: ServerRequestContext[Any, Any]) -> str:
        request = ctx.request
        headers = getattr(request, "headers", None)
        if headers is not None:
            session = headers.get("mcp-session-id")
            if session:
                return str(session)
        return self.session_id


class _ProxyServer(Server[Any]):
    """The low-level server, answering ``initialize`` with the upstream's capabilities."""

    def __init__(self, proxy: McpProxy) -> None:
        # Results pass through, so they carry no freshness hints of the proxy's own; on
        # 2026-07-28 connections they are marked never fresh (hooks may change them anyway).
        never_fresh = cast(
            "dict[CacheableMethod, CacheHint]", dict.fromkeys(CACHEABLE_METHODS, CacheHint())
        )
        super().__init__("hookgate-mcp-proxy", cache_hints=never_fresh)
        self._proxy = proxy
        # Registered by method so the handlers may answer raw dicts (the upstream's wire form).
        self.add_request_handler("tools/list", types.PaginatedRequestParams, proxy.list_tools)
        self.add_request_handler("tools/call", types.CallToolRequestParams, proxy.call_tool)
        for method in FORWARDED_REQUESTS:
            self.add_request_handler(method, types.RequestParams, proxy.forward)
        for method in FORWARDED_NOTIFICATIONS:
            self.add_notification_handler(method, types.NotificationParams,
                                          proxy.forward_notification)
        # The SDK's OpenTelemetry middleware would open a span per message on the hot path;
        # hookgate's own tracing covers the hooks, so only the proxy's middleware runs.
        self.middleware[:] = [proxy.middleware]

    @property
    def server_info_stamp(self) -> dict[str, Any]:
        # The SDK deep-copies its identity into every 2026-era answer; ours is flat strings.
        return {"name": self.name, "version": self.version}

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        mirrored = self._proxy.capabilities()
        if mirrored is not None:
            self.instructions = self._proxy.instructions()
            return mirrored
        return super().get_capabilities(
            notification_options, experimental_capabilities, extensions,
            protocol_version=protocol_version,
        )


def _for_client(ctx: ServerRequestContext[Any, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The upstream speaks the handshake era; a 2026-07-28 client needs ``resultType``."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and "resultType" not in result:
        return {**result, "resultType": "complete"}
    return result


def outbound_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The client's params for the upstream: the same, minus the client's own envelope."""
    if params is None:
        return None
    out = dict(params)
    meta = out.get("_meta")
    if isinstance(meta, Mapping):
        kept = {
            key: value
            for key, value in meta.items()
            if not key.startswith(_ENVELOPE_PREFIX) and key != "progressToken"
        }
        if kept:
            out["_meta"] = kept
        else:
            out.pop("_meta")
    return out


def _progress_relay(
    ctx: ServerRequestContext[Any, Any],
) -> Callable[[float, float | None, str | None], Awaitable[None]] | None:
    """Progress from the upstream, sent to the client under the client's own token."""
    meta = (ctx.params or {}).get("_meta")
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    if not isinstance(token, str | int) or isinstance(token, bool):
        return None
    session = ctx.session
    # Sent on the request's own channel (its SSE stream over streamable HTTP).
    related = str(ctx.request_id)

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        await session.send_progress_notification(
            token, progress, total, message, related_request_id=related
        )

    return relay


def _callable_name(backend: _Backend, tool: Any) -> bool:
    """Whether a listed tool has a name MCP allows; one that does not is left out."""
    name = tool.get("name") if isinstance(tool, Mapping) else None
    if isinstance(name, str) and _TOOL_NAME.fullmatch(name):
        return True
    log.warning("MCP server %s listed a tool named %r, not a valid MCP tool name; hidden",
                backend.name, name)
    return False


def _kept(tools: list[Any], wanted: Any) -> list[Any]:
    """The tools a list_tools hook kept: names or tool objects, only ones the upstream has."""
    if not isinstance(wanted, list):
        raise MCPError(INTERNAL_ERROR, "a list_tools hook answered something that is not a list")
    by_name = {tool.get("name"): tool for tool in tools if isinstance(tool, Mapping)}
    kept: list[Any] = []
    for item in wanted:
        name = item.get("name") if isinstance(item, Mapping) else item
        if name not in by_name:
            log.warning("list_tools hook kept %r, which the upstream does not have; ignored", name)
            continue
        kept.append(dict(item) if isinstance(item, Mapping) else by_name[name])
    return kept
