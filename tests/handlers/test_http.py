"""The http handler against a real webhook server on loopback (reached via the allowlist)."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.handlers.conftest import LOOPBACK
from tests.support.webhook_server import Reply, WebhookServer

from hookgate import Engine, MemoryAudit, Settings
from hookgate.approvals import ApprovalRequest, CallbackApprover
from hookgate.handlers.base import Services
from hookgate.handlers.http import HttpHandler
from hookgate.net.ssrf import StaticResolver
from hookgate.outcome import Outcome
from hookgate.secrets.headers import MASK, mask_hook, seal_headers
from hookgate.secrets.keyring import Keyring, generate_key_text

EXEC = {"tool_name": "exec", "tool_input": {"cmd": "ls -la"}, "session_id": "s-1"}


@pytest.fixture
def server() -> Iterator[WebhookServer]:
    with WebhookServer() as running:
        yield running


@pytest.fixture
def fast_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HttpHandler, "retry_delay_s", 0.05)


def webhook(url: str, **extra: Any) -> dict[str, Any]:
    config = {"url": url, **extra.pop("config", {})}
    return {"event": "pre_tool_use", "handler_type": "http", "config": config, **extra}


async def fire(engine: Engine, event: str = "pre_tool_use", **payload: Any) -> Outcome:
    return await engine.fire(event, {**EXEC, **payload})


# -- response shapes ------------------------------------------------------------------------


async def test_event_is_posted_as_json(engine: Engine, server: WebhookServer) -> None:
    engine.add(webhook(server.url(), config={"headers": {"X-Team": "infra"}}))
    outcome = await fire(engine, extra={1: {"x"}})
    assert outcome.decision == "allow"
    seen = server.requests[0]
    assert seen.json["event"] == "pre_tool_use"
    assert seen.json["tool_name"] == "exec" and seen.json["tool_input"] == {"cmd": "ls -la"}
    assert seen.json["extra"] == {"1": "{'x'}"}  # not JSON-native: stringified, not dropped
    assert seen.headers["X-Team"] == "infra"
    assert seen.headers["Content-Type"] == "application/json"
    assert outcome.trace[0].details["http_status"] == 200


async def test_block_with_reason(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(200, {"decision": "block", "reason": "exec is off today"}))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert (outcome.decision, outcome.reason) == ("block", "exec is off today")


async def test_continue_false_blocks(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(200, {"continue": False}))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.decision == "block" and outcome.continue_ is False


async def test_the_whole_answer_is_honoured(engine: Engine, server: WebhookServer) -> None:
    server.script(
        Reply(
            200,
            {
                "decision": "allow",
                "reason": "rewrote the flags",
                "additionalContext": "ls is read-only",
                "updatedInput": {"cmd": "ls"},
                "continue": True,
            },
        )
    )
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.decision == "allow"
    assert outcome.updated_input == {"cmd": "ls"}
    assert outcome.additional_context == ["ls is read-only"]
    assert outcome.trace[0].details["reason"] == "rewrote the flags"


async def test_snake_case_keys_and_synthetic_result(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(200, {"additional_context": ["a", "b"], "result": "cached listing"}))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.additional_context == ["a", "b"]
    assert outcome.result == "cached listing"


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, "OK"),
        Reply(200, None),
        Reply(204, None),
        Reply(201, "<html>fine</html>", headers={"Content-Type": "text/html"}),
    ],
    ids=["text", "empty", "204", "html"],
)
async def test_non_json_2xx_allows(engine: Engine, server: WebhookServer, reply: Reply) -> None:
    server.script(reply)
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.decision == "allow"
    assert outcome.trace[0].decision == "allow"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"decision": "ask"}, "no approver"),
        ({"decision": "defer"}, "no approver"),
        ({"decision": "deny"}, "must be 'allow' or 'block'"),
        ({"decision": "BLOCK"}, "must be 'allow' or 'block'"),
        ({"decison": "block"}, "unknown key"),
        ({"decision": "allow", "details": {"x": 1}}, "unknown key"),
        ({"decision": "allow", "continue": "no"}, "continue"),
        ([{"decision": "allow"}], "expected an object"),
        ("true", "expected an object"),
        (b'{"decision": "block", "score": NaN}', "unknown key"),
    ],
)
async def test_malformed_answers_fail_closed_even_with_on_error_allow(
    engine: Engine, server: WebhookServer, body: Any, message: str
) -> None:
    server.script(Reply(200, body if isinstance(body, bytes) else json.dumps(body)))
    engine.add(webhook(server.url(), on_error="allow"))
    outcome = await fire(engine)
    assert outcome.decision == "block"
    assert "malformed answer" in (outcome.trace[0].error or "")
    assert message in (outcome.trace[0].error or "")


async def test_ask_passes_on_when_an_approver_exists(server: WebhookServer) -> None:
    asked: list[str | None] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request.reason)
        return False

    approver = CallbackApprover(deny, name="ops")
    engine = Engine(settings=LOOPBACK, services=Services(LOOPBACK, approver=approver))
    server.script(Reply(200, {"decision": "ask", "reason": "needs a human"}))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    await engine.aclose()
    assert asked == ["needs a human"]
    assert outcome.decision == "block" and outcome.reason == "denied by ops"


# -- status classes, retries, caps ----------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 429])
async def test_4xx_fails_closed_without_retry(
    engine: Engine, server: WebhookServer, status: int
) -> None:
    server.script(Reply(status, {"error": "nope"}))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.decision == "block"
    assert f"webhook answered {status}" in (outcome.reason or "")
    assert len(server.requests) == 1
    assert outcome.trace[0].details["http_status"] == status


async def test_4xx_respects_on_error_allow(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(403))
    engine.add(webhook(server.url(), on_error="allow"))
    outcome = await fire(engine)
    assert outcome.decision == "allow" and outcome.trace[0].decision == "error"


async def test_5xx_retries_once_after_one_second(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(503), Reply(200, {"decision": "block", "reason": "second try"}))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert (outcome.decision, outcome.reason) == ("block", "second try")
    first, second = server.requests
    assert second.at - first.at >= 0.95  # waited the retry delay first
    assert outcome.trace[0].details["attempts"] == 2


async def test_5xx_twice_fails_closed(
    engine: Engine, server: WebhookServer, fast_retry: None
) -> None:
    server.script(Reply(500), Reply(502))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.decision == "block"
    assert "502 on both attempts" in (outcome.reason or "")
    assert len(server.requests) == 2


async def test_connection_error_retries_once_then_fails(engine: Engine) -> None:
    with socket.socket() as probe:  # a loopback port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine.add(webhook(f"http://127.0.0.1:{port}/hook"))
    begin = time.monotonic()
    outcome = await fire(engine)
    elapsed = time.monotonic() - begin
    assert outcome.decision == "block"
    assert "unreachable after 2 attempts" in (outcome.reason or "")
    assert elapsed >= 0.95  # one retry delay between the attempts


async def test_redirects_are_errors_and_not_followed(engine: Engine) -> None:
    with WebhookServer() as target, WebhookServer() as origin:
        origin.script(Reply(307, None, headers={"Location": target.url("/other")}))
        engine.add(webhook(origin.url()))
        outcome = await fire(engine)
        assert outcome.decision == "block"
        assert "redirect (307" in (outcome.reason or "")
        assert target.requests == []


async def test_response_body_is_capped_at_one_mib(engine: Engine, server: WebhookServer) -> None:
    prefix = b'{"decision": "block", "reason": "'
    exact = prefix + b"x" * (1024 * 1024 - len(prefix) - 2) + b'"}'
    assert len(exact) == 1024 * 1024
    server.script(Reply(200, exact), Reply(200, exact[:-2] + b'x"}'))
    engine.add(webhook(server.url(), on_error="allow"))
    at_cap = await fire(engine)
    assert at_cap.decision == "block" and at_cap.reason is not None
    over_cap = await fire(engine)
    assert over_cap.trace[0].decision == "error"
    assert "exceeds the 1048576 byte cap" in (over_cap.trace[0].error or "")


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"x" * (1024 * 1024 + 1), chunked=True),
        Reply(200, b" " * (8 * 1024 * 1024), gzip=True),  # 8 KiB on the wire, 8 MiB inflated
    ],
    ids=["chunked", "gzip-inflates-past-the-cap"],
)
async def test_cap_holds_without_content_length(
    engine: Engine, server: WebhookServer, reply: Reply
) -> None:
    server.script(reply)
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert outcome.decision == "block"
    assert "exceeds the 1048576 byte cap" in (outcome.reason or "")


async def test_chunked_answer_within_the_cap_is_read(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(200, {"decision": "block", "reason": "streamed"}, chunked=True, gzip=True))
    engine.add(webhook(server.url()))
    outcome = await fire(engine)
    assert (outcome.decision, outcome.reason) == ("block", "streamed")


async def test_timeout_follows_on_timeout(engine: Engine, server: WebhookServer) -> None:
    server.script(Reply(200, {"decision": "allow"}, delay_s=2))
    engine.add(webhook(server.url(), timeout_ms=200))
    outcome = await fire(engine)
    assert outcome.decision == "block" and outcome.trace[0].decision == "timeout"


async def test_non_blocking_event_records_but_never_blocks(
    engine: Engine, server: WebhookServer
) -> None:
    server.script(Reply(200, {"decision": "block", "reason": "audit says no"}))
    engine.add(webhook(server.url(), event="post_tool_use"))
    outcome = await engine.fire("post_tool_use", {**EXEC, "tool_response": "ok"}, wait=True)
    assert outcome.decision == "allow"
    assert outcome.trace[0].decision == "block"


# -- SSRF through the handler ---------------------------------------------------------------


async def test_loopback_without_allowlist_is_refused(server: WebhookServer) -> None:
    engine = Engine()
    engine.add(webhook(server.url(), on_error="allow"))
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.trace[0].decision == "error"
    assert "loopback" in (outcome.trace[0].error or "")
    assert outcome.trace[0].details["ssrf_refused"] is True
    assert server.requests == []


async def test_resolved_private_address_is_refused_before_connecting() -> None:
    resolver = StaticResolver({"hooks.example.com": ["10.20.30.40"]})
    engine = Engine(services=Services(Settings(), ssrf_resolver=resolver))
    engine.add(webhook("https://hooks.example.com/check"))
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.decision == "block"
    assert "refused to connect to hooks.example.com (10.20.30.40): private" in (
        outcome.reason or ""
    )
    assert resolver.lookups == ["hooks.example.com"]


async def test_unguarded_http_client_is_refused(server: WebhookServer) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        engine = Engine(settings=LOOPBACK, services=Services(LOOPBACK, http_client=session))
        engine.add(webhook(server.url()))
        outcome = await fire(engine)
    assert outcome.decision == "block"
    assert "SSRF-guarded client" in (outcome.reason or "")
    assert server.requests == []


# -- secret headers -------------------------------------------------------------------------

SECRET = "Bearer hg-test-7f3c9a1be44d"


def sealed_hook(url: str, keyring: Keyring, hook_id: str = "hook-1") -> dict[str, Any]:
    config = seal_headers(
        {
            "url": url,
            "headers": {"Authorization": SECRET, "X-Api-Key": "k-9f8e7d6c5b"},
            "secret_headers": ["X-Api-Key"],
        },
        hook_id,
        keyring,
    )
    return webhook(url, id=hook_id, config={k: v for k, v in config.items() if k != "url"})


async def test_sealed_headers_are_decrypted_only_at_dispatch(server: WebhookServer) -> None:
    keyring = Keyring.from_text(generate_key_text())
    engine = Engine(settings=LOOPBACK, services=Services(LOOPBACK, keyring=keyring))
    definition = engine.add(sealed_hook(server.url(), keyring))
    stored = definition.config["headers"]
    assert stored["Authorization"].startswith("enc:v1:")
    assert SECRET not in json.dumps(definition.to_dict())
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.decision == "allow"
    assert server.requests[0].headers["Authorization"] == SECRET
    assert server.requests[0].headers["X-Api-Key"] == "k-9f8e7d6c5b"


async def test_ciphertext_bound_to_another_hook_does_not_open(server: WebhookServer) -> None:
    keyring = Keyring.from_text(generate_key_text())
    engine = Engine(settings=LOOPBACK, services=Services(LOOPBACK, keyring=keyring))
    stolen = sealed_hook(server.url(), keyring, hook_id="hook-A")
    stolen["id"] = "hook-B"
    engine.add(stolen)
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.decision == "block"
    assert "header 'Authorization'" in (outcome.reason or "")
    assert "does not decrypt" in (outcome.reason or "")
    assert server.requests == []


async def test_sealed_header_without_a_key_is_a_clear_error(
    server: WebhookServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOOKGATE_SECRET_KEY", raising=False)
    monkeypatch.delenv("HOOKGATE_SECRET_KEY_FILE", raising=False)
    engine = Engine(settings=LOOPBACK)
    engine.add(sealed_hook(server.url(), Keyring.from_text(generate_key_text())))
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.decision == "block"
    assert "no key is configured" in (outcome.reason or "")


async def test_key_from_the_environment_is_used(
    server: WebhookServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_text = generate_key_text("env1")
    monkeypatch.setenv("HOOKGATE_SECRET_KEY", key_text)
    engine = Engine(settings=LOOPBACK)
    engine.add(sealed_hook(server.url(), Keyring.from_text(key_text)))
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.decision == "allow"
    assert server.requests[0].headers["Authorization"] == SECRET


async def test_no_secret_in_reads_traces_audit_or_logs(
    server: WebhookServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    keyring = Keyring.from_text(generate_key_text())
    audit = MemoryAudit()
    engine = Engine(
        settings=LOOPBACK, audit=audit, services=Services(LOOPBACK, keyring=keyring)
    )
    # The server echoes the credential back in an error body: it must be scrubbed.
    server.respond = lambda seen: Reply(401, f"bad token {seen.headers['Authorization']}")
    definition = engine.add(sealed_hook(server.url(), keyring))
    outcome = await fire(engine)
    await engine.aclose()
    assert outcome.decision == "block" and "[REDACTED]" in (outcome.reason or "")
    token = SECRET.split()[-1]
    read = json.dumps(mask_hook(definition.to_dict()))
    assert read.count(MASK) == 2
    for text in (read, outcome.to_json(), caplog.text, repr(audit.records)):
        assert token not in text and "k-9f8e7d6c5b" not in text


async def test_plaintext_secret_headers_are_masked_for_reads() -> None:
    hook = webhook(
        "https://example.com/x", config={"headers": {"authorization": "Bearer plain-abcdef"}}
    )
    masked = mask_hook(hook)
    assert masked["config"]["headers"]["authorization"] == MASK
    assert hook["config"]["headers"]["authorization"] == "Bearer plain-abcdef"


# -- config validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "need config.url"),
        ({"url": "ftp://x.example/"}, "only http and https"),
        ({"url": "https://u:p@x.example/"}, "credentials in the URL"),
        ({"url": "https://x.example/", "method": "GET"}, "always sent with POST"),
        ({"url": "https://x.example/", "headers": {"X": "a\r\nInjected: 1"}}, "one-line"),
        ({"url": "https://x.example/", "headers": ["Authorization"]}, "must be an object"),
        ({"url": "https://x.example/", "secret_headers": "X-Key"}, "list of header names"),
        ({"url": "https://x.example/", "body_template": "{}"}, "unknown http config key"),
    ],
)
def test_config_validation(config: dict[str, Any], message: str) -> None:
    problems = HttpHandler.validate_config(config)
    assert any(message in p for p in problems), problems
    assert not any("Injected" in p for p in problems)
