"""The ``http`` handler type's config model (see :mod:`hookgate.handlers.http`)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import AfterValidator, BeforeValidator, Field, field_validator

from hookgate.handlers.config_model import StatefulConfig, problem, tuple_to_list
from hookgate.net.ssrf import SsrfGuard, SsrfRefused

__all__ = ["HttpConfig"]


def _vetted_url(url: str) -> str:
    if not url:
        raise problem("http hooks need config.url (an http or https URL)")
    try:
        SsrfGuard().check_url(url)
    except SsrfRefused as exc:
        raise problem(f"url: {exc}") from None
    return url


def _post_only(method: str) -> str:
    if method.upper() != "POST":
        raise problem("method: webhooks are always sent with POST")
    return method


class HttpConfig(StatefulConfig):
    """A webhook: the event is POSTed as JSON; its answer is the hook's."""

    messages: ClassVar = {
        "url": "http hooks need config.url (an http or https URL)",
        "method": "method: webhooks are always sent with POST",
        "headers": "headers must be an object of header names to string values",
        "secret_headers": "secret_headers must be a list of header names",
    }

    url: Annotated[str, AfterValidator(_vetted_url)] = Field(
        description="POSTed the event JSON; answers {decision, reason, updatedInput, …}. "
        "Checked against the SSRF guard.",
        examples=["https://safety.internal/check"],
    )
    method: Annotated[str, AfterValidator(_post_only)] = Field(
        "POST", description="Always POST."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Request headers. Secret ones (Authorization always) are encrypted at "
        "rest and never shown again (on an update, null keeps a stored one).",
    )
    secret_headers: Annotated[list[str], BeforeValidator(tuple_to_list)] = Field(
        default_factory=list, description="Further headers to keep sealed."
    )

    @field_validator("headers", mode="before")
    @classmethod
    def _one_line_headers(cls, headers: object) -> object:
        # Checked here, before the types, so that a bad value is never echoed back (it may
        # be a secret): pydantic's own error would quote it.
        if not isinstance(headers, dict):
            return headers
        for name, value in headers.items():
            if not isinstance(name, str) or not name or any(c in name for c in "\r\n:"):
                raise problem(f"headers: invalid header name {name!r}")
            if not isinstance(value, str) or "\r" in value or "\n" in value:
                raise problem(f"headers.{name}: the value must be a one-line string")
        return headers


