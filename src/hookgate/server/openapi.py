"""The OpenAPI 3.1 document of the REST mirror, generated from the method table.

Each :class:`~hookgate.server.methods.Method` contributes one operation: its params model
becomes the query parameters (GET, DELETE) or the request body (POST, PATCH), its payload
model the success response, and every operation documents the error envelope. Hook
definitions (a create's body, an update's patch, a dry run's ``config``) are described by
the definition schema, :class:`hookgate.definition_model.DefinitionFields`, and each
handler type's config by its config model (``x-config-by-handler-type`` on ``config``).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel

from hookgate import __version__
from hookgate.definition_model import DefinitionFields
from hookgate.handlers.checks import handler_config_models
from hookgate.server.errors import HTTP_STATUS
from hookgate.server.method_table import METHODS
from hookgate.server.methods import Method
from hookgate.server.rest import API_PREFIX, CREATES

__all__ = ["openapi_document"]

_REF: Final = "#/components/schemas/{model}"
_ERROR_SCHEMA: Final = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": sorted(HTTP_STATUS)},
                "message": {"type": "string"},
                "details": {"type": "object"},
                "retryable": {"type": "boolean"},
            },
        }
    },
}


def _schema(model: type[BaseModel], components: dict[str, Any]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, ref_template=_REF)
    for name, definition in schema.pop("$defs", {}).items():
        components[name] = definition
    components[model.__name__] = schema
    return {"$ref": _REF.format(model=model.__name__)}


def _definition_schemas(components: dict[str, Any]) -> None:
    """``HookDefinition`` (what a create sends) and ``HookDefinitionPatch`` (an update: any
    of the same fields), both from the definition schema."""
    schema = DefinitionFields.model_json_schema(by_alias=True, ref_template=_REF)
    for name, definition in schema.pop("$defs", {}).items():
        components[name] = definition
    components["HookDefinition"] = schema
    by_type = {}
    for handler_type, model in handler_config_models().items():
        config = model.model_json_schema(ref_template=_REF)
        for name, definition in config.pop("$defs", {}).items():
            components[name] = definition
        components[model.__name__] = config
        by_type[handler_type] = {"$ref": _REF.format(model=model.__name__)}
    # Which model a definition's config follows depends on its handler_type: named beside the
    # field rather than as a schema condition, so that clients and fuzzers read it as data.
    schema["properties"]["config"]["x-config-by-handler-type"] = by_type
    patch = {k: v for k, v in schema.items() if k not in ("required", "title", "description")}
    components["HookDefinitionPatch"] = {
        **patch,
        "title": "HookDefinitionPatch",
        "description": "The fields to change: any of HookDefinition's.",
    }


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    # A query string cannot carry JSON null: an optional parameter is simply left out.
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [s for s in options if s.get("type") != "null"]
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
        if len(kept) == 1:
            return {**rest, **kept[0]}
        return {**rest, "anyOf": kept}
    return {k: v for k, v in schema.items() if k != "default"}


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _parameters(method: Method, query: bool) -> list[dict[str, Any]]:
    if method.name == "connect":
        return []  # over REST the key travels in the Authorization header, never in the URL
    schema = method.params.model_json_schema(by_alias=True, ref_template=_REF)
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    in_path = set(_path_names(method.http[1]))
    out = []
    for name, prop in properties.items():
        if name in in_path:
            out.append(
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            )
        elif query:
            out.append(
                {
                    "name": name,
                    "in": "query",
                    "required": name in required,
                    "schema": _without_null(prop),
                }
            )
    if method.name == "hooks.update":
        out.append(
            {
                "name": "expectedVersion",
                "in": "query",
                "required": False,
                "schema": {"type": "integer", "minimum": 1},
            }
        )
    return out


def _body_schema(method: Method, components: dict[str, Any]) -> dict[str, Any]:
    in_path = set(_path_names(method.http[1]))
    if method.name == "hooks.update":
        return {"$ref": _REF.format(model="HookDefinitionPatch")}
    if issubclass(method.params, DefinitionFields):
        return {"$ref": _REF.format(model="HookDefinition")}
    schema = method.params.model_json_schema(by_alias=True, ref_template=_REF)
    for name, definition in schema.pop("$defs", {}).items():
        components[name] = definition
    if method.name == "hooks.test":
        # An unsaved hook: validated as a definition by the method, documented as one here.
        schema["properties"]["config"] = {
            "anyOf": [{"$ref": _REF.format(model="HookDefinition")}, {"type": "null"}],
            "default": None,
        }
    if in_path:
        schema["properties"] = {
            k: v for k, v in schema.get("properties", {}).items() if k not in in_path
        }
        schema["required"] = [r for r in schema.get("required", []) if r not in in_path]
    name = method.params.__name__ + ("Body" if in_path else "")
    components[name] = schema
    return {"$ref": _REF.format(model=name)}


def _operation(method: Method, components: dict[str, Any]) -> dict[str, Any]:
    verb, _path = method.http
    query = verb in ("GET", "DELETE")
    success = "201" if method.name in CREATES else "200"
    operation: dict[str, Any] = {
        "operationId": method.name,
        "summary": method.summary,
        "description": f"Mirror of the WebSocket method `{method.name}` "
        f"(role: {method.role} or higher).",
        "parameters": _parameters(method, query),
        "responses": {
            success: {
                "description": "The method's payload.",
                "content": {"application/json": {"schema": _schema(method.payload, components)}},
            },
        },
    }
    for status, text in (
        ("400", "Invalid request"),
        ("401", "Missing, invalid or revoked API key"),
        ("403", "The key's role or scope is too low"),
        ("404", "No such hook (or not visible to this key)"),
        ("409", "Read-only builtin hook, or a version conflict"),
        ("413", "Body over the size limit"),
        ("503", "Shutting down"),
    ):
        operation["responses"][status] = {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}},
        }
    if not query:
        operation["requestBody"] = {
            "required": method.name != "hooks.test",
            "content": {"application/json": {"schema": _body_schema(method, components)}},
        }
    return operation


def openapi_document() -> dict[str, Any]:
    components: dict[str, Any] = {"Error": _ERROR_SCHEMA}
    _definition_schemas(components)
    paths: dict[str, dict[str, Any]] = {}
    for method in METHODS.values():
        verb, path = method.http
        paths.setdefault(API_PREFIX + path, {})[verb.lower()] = _operation(method, components)
    paths["/healthz"] = {
        "get": {
            "operationId": "healthz",
            "summary": "Liveness: the process answers (draining included); no key needed.",
            "security": [],
            "responses": {
                "200": {
                    "description": "The gateway is up.",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["status"],
                                "properties": {"status": {"type": "string"}},
                            }
                        }
                    },
                },
            },
        }
    }
    readiness = {
        "type": "object",
        "required": ["status", "checks"],
        "properties": {
            "status": {"type": "string", "enum": ["ready", "not ready"]},
            "checks": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    paths["/readyz"] = {
        "get": {
            "operationId": "readyz",
            "summary": "Readiness: database, migrations, Redis, not draining; no key needed.",
            "security": [],
            "responses": {
                status: {
                    "description": description,
                    "content": {"application/json": {"schema": readiness}},
                }
                for status, description in (
                    ("200", "This replica takes new work."),
                    ("503", "It does not: each check says why."),
                )
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hookgate gateway",
            "version": __version__,
            "description": "REST mirror of the hooks.* WebSocket methods. Every operation "
            "except /healthz and /readyz needs `Authorization: Bearer <API key>`.",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": paths,
    }
