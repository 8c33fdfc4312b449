"""hookgate's layers: each module and package of ``src/hookgate`` sits in one layer, and it
imports only from its own layer and those below. The table is the one docs/CONTRIBUTING.md
shows; every import counts, lazy and type-only ones too (as in test_import_cycles)."""

from __future__ import annotations

from tests.test_import_cycles import import_graph

#: Bottom to top. A name is a top-level module or package of ``hookgate``.
LAYERS: list[tuple[str, set[str]]] = [
    ("ground", {"errors", "log", "payload_limits", "audit", "integration_registry",
                "outcall_types", "settings", "sandbox"}),
    ("facts", {"events", "matching", "outcome", "safeguards", "runtime_kinds", "definition",
               "hook_event", "tool_output", "boundary", "net", "secrets", "client"}),
    ("state", {"state", "approvals", "builtins", "compiled_hook", "shadow"}),
    ("selection and models", {"llm", "matcher_index", "registry"}),
    ("handlers and the chain", {"handlers", "chain"}),
    ("around the engine", {"definition_model", "host_code", "reply_recording", "mcp_proxy",
                           "execution", "config", "store", "engine_audit"}),
    ("the engine", {"engine", "hookgate", "testing"}),
    ("the gateway", {"server", "replay"}),
    ("agent systems", {"integrations"}),
    ("commands and adapters", {"cli", "adapters", "launcher", "__main__"}),
]


def _place(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_import_runs_down_the_layers() -> None:
    """No module imports from a layer above its own."""
    layer = {name: index for index, (_, names) in enumerate(LAYERS) for name in names}
    graph = import_graph()
    unplaced = sorted({_place(m) for m in graph} - set(layer))
    assert not unplaced, f"put these in a layer: {unplaced}"
    upward = sorted(
        f"{source} ({LAYERS[layer[_place(source)]][0]}) -> {target} "
        f"({LAYERS[layer[_place(target)]][0]})"
        for source, targets in graph.items()
        for target in targets
        if layer[_place(target)] > layer[_place(source)]
    )
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)
