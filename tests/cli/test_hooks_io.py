"""``hookgate hooks export|import``: hooks as code, both ways, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.cli.store_cli_support import store_location

from hookgate.cli import main

ENV_CLEAN = {"HOOKGATE_DATA_DIR": None, "HOOKGATE_DATABASE_URL": None}


@pytest.fixture(params=["sqlite", "postgres"])
def store_args(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    yield from store_location(request.param, tmp_path)


FN = "tests.store.conftest:allow"

HOOKS_FILE = f"""
hooks:
  - name: no-rm
    event: pre_tool_use
    handler_type: callable
    scope: tenant
    tenant_id: acme
    matcher: "^exec$"
    priority: 5
    config: {{callable: "{FN}"}}
  - name: reviewer-only
    event: pre_tool_use
    handler_type: callable
    scope: agent
    tenant_id: acme
    agent_ids: [reviewer]
    if_expr: 'tool_name == "write"'
    config: {{callable: "{FN}"}}
  - name: audit-all
    event: post_tool_use
    handler_type: callable
    scope: global
    enabled: false
    config: {{callable: "{FN}"}}
  - event: stop
    handler_type: callable
    scope: tenant
    tenant_id: other
    config: {{callable: "{FN}"}}
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env=ENV_CLEAN)
    return result.exit_code, result.output


def test_import_export_round_trip(store_args: list[str], tmp_path: Path) -> None:
    source = tmp_path / "hooks.yaml"
    source.write_text(HOOKS_FILE)
    code, out = run("hooks", "import", str(source), *store_args)
    assert code == 0, out
    assert "4 created, 0 updated, 0 deleted, 0 unchanged" in out
    assert "created    acme/no-rm" in out and "created    global/audit-all" in out

    exported = tmp_path / "exported.yaml"
    code, out = run("hooks", "export", "-o", str(exported), *store_args)
    assert code == 0, out
    document = yaml.safe_load(exported.read_text())
    by_name = {h.get("name", ""): h for h in document["hooks"]}
    assert by_name["no-rm"]["matcher"] == "^exec$" and by_name["no-rm"]["tenant_id"] == "acme"
    assert by_name["reviewer-only"]["agent_ids"] == ["reviewer"]
    assert by_name["audit-all"]["enabled"] is False and "tenant_id" not in by_name["audit-all"]
    assert "id" in by_name[""]  # the unnamed hook keeps its id so it can be found again

    # importing the export changes nothing (the round trip is exact)
    code, out = run("hooks", "import", str(exported), *store_args)
    assert code == 0, out
    assert "0 created, 0 updated, 0 deleted, 4 unchanged" in out
    code, again = run("hooks", "export", *store_args)
    assert again == exported.read_text()

    # an edit in the file becomes an update with a version bump
    edited = exported.read_text().replace("^exec$", "^(exec|shell)$")
    exported.write_text(edited)
    code, out = run("hooks", "import", str(exported), *store_args)
    assert code == 0, out
    assert "updated    acme/no-rm -> v2 (matcher)" in out
    assert "0 created, 1 updated, 0 deleted, 3 unchanged" in out


def test_tenant_export_imports_into_another_tenant_and_prunes(
    store_args: list[str], tmp_path: Path
) -> None:
    source = tmp_path / "hooks.yaml"
    source.write_text(HOOKS_FILE)
    assert run("hooks", "import", str(source), *store_args)[0] == 0
    acme = tmp_path / "acme.json"
    code, out = run("hooks", "export", "--tenant", "acme", "-o", str(acme), *store_args)
    assert code == 0, out
    text = acme.read_text()
    assert text.lstrip().startswith("{") and "tenant_id" not in text
    assert "audit-all" not in text  # global and other tenants' hooks are not acme's own

    code, out = run("hooks", "import", str(acme), "--tenant", "globex", *store_args)
    assert code == 0, out
    assert "created    globex/no-rm" in out and "2 created" in out

    # drop one hook from the file: --prune deletes it, only within that tenant
    trimmed = tmp_path / "trimmed.yaml"
    trimmed.write_text(
        f"""
hooks:
  - name: no-rm
    event: pre_tool_use
    handler_type: callable
    scope: tenant
    matcher: "^exec$"
    priority: 5
    config: {{callable: "{FN}"}}
"""
    )
    prune = ["--tenant", "globex", "--prune"]
    code, out = run("hooks", "import", str(trimmed), *prune, "--dry-run", *store_args)
    assert code == 0 and "would apply: 0 created, 0 updated, 1 deleted, 1 unchanged" in out
    code, out = run("hooks", "import", str(trimmed), *prune, *store_args)
    assert code == 0 and "deleted    globex/reviewer-only" in out
    code, out = run("hooks", "export", *store_args)
    names = [(h.get("tenant_id"), h.get("name")) for h in yaml.safe_load(out)["hooks"]]
    assert ("globex", "reviewer-only") not in names
    assert ("acme", "reviewer-only") in names  # other tenants untouched


def test_bad_files_write_nothing(store_args: list[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"""
hooks:
  - name: ok
    event: pre_tool_use
    handler_type: callable
    scope: tenant
    tenant_id: acme
    config: {{callable: "{FN}"}}
  - name: broken
    event: pre_tool_use
    handler_type: callable
    scope: tenant
    tenant_id: acme
    timeout_ms: 999999
    config: {{callable: "{FN}"}}
"""
    )
    code, out = run("hooks", "import", str(bad), *store_args)
    assert code == 1 and "hooks[1] (broken).timeout_ms" in out
    no_tenant = tmp_path / "no-tenant.yaml"
    no_tenant.write_text(
        f"""
hooks:
  - name: lost
    event: pre_tool_use
    handler_type: callable
    scope: tenant
    config: {{callable: "{FN}"}}
"""
    )
    code, out = run("hooks", "import", str(no_tenant), *store_args)
    assert code != 0 and "needs tenant_id (or use --tenant)" in out
    code, out = run("hooks", "import", str(bad.with_name("missing.yaml")), *store_args)
    assert code != 0
    code, out = run("hooks", "export", *store_args)
    assert code == 0 and out.strip() == "hooks: []"
