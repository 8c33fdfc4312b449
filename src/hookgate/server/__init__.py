"""The hookgate gateway: ``hooks.*`` over WebSocket and REST, API keys, metrics, tracing.

``hookgate serve`` builds a :class:`~hookgate.server.gateway.Gateway` (store, engine, audit
writer) and serves :func:`~hookgate.server.app.create_app` with uvicorn.
"""

from hookgate.server.app import create_app
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway, GatewayOptions

__all__ = ["ApiError", "Gateway", "GatewayOptions", "create_app"]
