"""The REST mirror and its OpenAPI document, against a real gateway; the document is fuzzed
with schemathesis (property-based) and no request may cause a server error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import Keys
from tests.server.gateway_process import GatewayProcess
from tests.server.test_ws_protocol import BLOCKER


class TestRestMirror:
    def test_every_operation(self, gateway: GatewayProcess, keys: Keys) -> None:
        key = keys.a_admin
        created = gateway.rest("POST", "/api/v1/hooks", key, json=BLOCKER | {"name": "rest"})
        assert created.status_code == 201, created.text
        hook_id = created.json()["hookId"]
        listed = gateway.rest("GET", "/api/v1/hooks", key,
                              params={"event": "pre_tool_use", "enabled": "true"})
        assert hook_id in [h["id"] for h in listed.json()["hooks"]]
        assert gateway.rest("GET", f"/api/v1/hooks/{hook_id}", key).json()["hook"]["name"] == "rest"
        patched = gateway.rest("PATCH", f"/api/v1/hooks/{hook_id}", key, json={"priority": 4})
        assert patched.json() == {"hookId": hook_id, "version": 2}
        stale = gateway.rest("PATCH", f"/api/v1/hooks/{hook_id}", key,
                             params={"expectedVersion": 1}, json={"priority": 5})
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "CONFLICT"
        toggled = gateway.rest("POST", f"/api/v1/hooks/{hook_id}/toggle", key,
                               json={"enabled": False})
        assert toggled.json() == {"hookId": hook_id, "enabled": False}
        gateway.rest("POST", f"/api/v1/hooks/{hook_id}/toggle", key, json={"enabled": True})
        tested = gateway.rest("POST", "/api/v1/hooks/test", key,
                              json={"hookId": hook_id, "sampleEvent": {"toolName": "rm"}})
        assert tested.json()["result"]["decision"] == "block"
        dispatched = gateway.rest("POST", "/api/v1/dispatch", key,
                                  json={"event": "pre_tool_use", "input": {"tool_name": "rm"}})
        assert dispatched.json()["decision"] == "block"
        history = gateway.rest("GET", "/api/v1/executions", key,
                               params={"hookId": hook_id, "limit": 5})
        assert history.status_code == 200 and "nextCursor" in history.json()
        assert gateway.rest("DELETE", f"/api/v1/hooks/{hook_id}", key).json() == {
            "hookId": hook_id
        }
        missing = gateway.rest("GET", f"/api/v1/hooks/{hook_id}", key)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"

    def test_errors_and_statuses(self, gateway: GatewayProcess, keys: Keys) -> None:
        no_key = httpx.get(gateway.url + "/api/v1/hooks")
        assert no_key.status_code == 401 and no_key.headers["www-authenticate"].startswith("Bearer")
        wrong_scheme = httpx.get(gateway.url + "/api/v1/hooks",
                                 headers={"Authorization": "Basic abc"})
        assert wrong_scheme.status_code == 401
        viewer = gateway.rest("POST", "/api/v1/hooks", keys.a_viewer, json=BLOCKER)
        assert viewer.status_code == 403 and viewer.json()["error"]["code"] == "UNAUTHORIZED"
        missing = gateway.rest("POST", "/api/v1/hooks", keys.a_admin, json={"event": "stop"})
        assert missing.status_code == 400
        assert missing.json()["error"]["message"] == "handler_type, event, and scope are required"
        bad_json = gateway.rest("POST", "/api/v1/dispatch", keys.a_admin, content=b"{nope")
        assert bad_json.status_code == 400 and "JSON" in bad_json.json()["error"]["message"]
        body = b'{"event": "stop", "input": {"x": "' + b"y" * (2 << 20) + b'"}}'
        huge = gateway.rest("POST", "/api/v1/dispatch", keys.a_admin, content=body)
        assert huge.status_code == 413
        assert huge.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
        assert httpx.get(gateway.url + "/healthz").status_code == 200

    def test_openapi_document(self, gateway: GatewayProcess, keys: Keys) -> None:
        assert httpx.get(gateway.url + "/api/v1/openapi.json").status_code == 401
        document = gateway.rest("GET", "/api/v1/openapi.json", keys.a_viewer).json()
        assert document["openapi"].startswith("3.1")
        operations = {
            op["operationId"]
            for path in document["paths"].values()
            for op in path.values()
        }
        assert {"hooks.list", "hooks.create", "hooks.get", "hooks.update", "hooks.delete",
                "hooks.toggle", "hooks.test", "hooks.history", "hooks.dispatch"} <= operations


@pytest.mark.timeout(240)
def test_schemathesis_finds_no_server_error(tmp_path: Path) -> None:
    """Property-based fuzzing of every operation in the OpenAPI document: no 5xx, responses
    match their documented schemas, statuses and content types."""
    from tests.server.conftest import start_gateway

    served = start_gateway(tmp_path)
    try:
        schema_file = tmp_path / "openapi.json"
        schema_file.write_text(served.rest("GET", "/api/v1/openapi.json").text)
        result = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "run",
                str(schema_file),
                "--url",
                served.url,
                "-H",
                f"Authorization: Bearer {served.master_key}",
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,"
                "response_schema_conformance",
                "--max-examples",
                "6",
                "--seed",
                "1",
                "--workers",
                "1",
                "--request-timeout",
                "20",
                "--phases",
                "examples,coverage,fuzzing",
                "--suppress-health-check",
                "all",
            ],
            capture_output=True,
            text=True,
            timeout=220,
        )
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
        assert "hooks.dispatch" in result.stdout or "/api/v1/dispatch" in result.stdout
    finally:
        served.stop()
    assert served.stopped_gracefully()
