"""Save-time warnings for webhook URLs the SSRF guard would refuse.

A hook is saved even when its URL is loopback, private or does not resolve (the operator may
be about to allow it), but the answer says so, with the allow-list that would let it through:
otherwise the first sign would be every dispatch failing (and blocking). The check is the
guard the http handler uses at dispatch, with the gateway's allow-list; DNS gets a short,
wall-clock bound so a slow resolver cannot hold a save.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from hookgate.net.ssrf import ALLOWLIST_ENV, Allowlist, Resolver, SsrfGuard, SsrfRefused
from hookgate.settings import Settings

__all__ = ["ALLOWLIST_HINT", "url_warnings"]

#: How long a save waits for DNS before warning that the host did not resolve in time.
RESOLVE_TIMEOUT_S: Final = 2.0
ALLOWLIST_HINT: Final = (
    f"{ALLOWLIST_ENV} is set by the gateway's operator where the gateway runs: "
    f"comma-separated CIDRs and host names, e.g. '10.0.0.0/8,hooks.internal,*.corp.example'."
)


async def url_warnings(
    handler_type: str,
    config: Mapping[str, Any],
    settings: Settings,
    resolver: Resolver | None = None,
) -> list[dict[str, str]]:
    """``[{field, message}]`` for an http hook's URL that dispatch would refuse, else ``[]``."""
    url = config.get("url")
    if handler_type != "http" or not isinstance(url, str) or not url:
        return []
    guard = SsrfGuard(Allowlist.from_settings(settings), resolver=resolver)
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT_S):
            await guard.vet_url(url)
    except SsrfRefused as exc:
        unresolved = "resolve" in str(exc)
        message = str(exc)
    except TimeoutError:
        unresolved = True
        message = f"the host did not resolve within {RESOLVE_TIMEOUT_S:g} s"
    else:
        return []
    hint = "Check the host name." if unresolved else ALLOWLIST_HINT
    return [
        {
            "field": "config.url",
            "message": f"{message}. Saved, but every call will fail until this changes. {hint}",
        }
    ]
