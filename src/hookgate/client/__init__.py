"""Clients for the hookgate gateway: :class:`AsyncGatewayClient` and :class:`GatewayClient`.

Both speak the WebSocket protocol with ``Authorization: Bearer <key>`` and offer the
``hooks.*`` methods as helpers (``dispatch``, ``list_hooks``, ``create_hook``, ``test_hook``,
``history``, …); ``call(method, params)`` reaches any method. A refused request raises
:class:`GatewayError` with the gateway's code and message.
"""

from hookgate.client.aio import AsyncGatewayClient
from hookgate.client.errors import GatewayConnectionError, GatewayError
from hookgate.client.outcome import outcome_from_payload
from hookgate.client.sync import GatewayClient

__all__ = [
    "AsyncGatewayClient",
    "GatewayClient",
    "GatewayConnectionError",
    "GatewayError",
    "outcome_from_payload",
]
