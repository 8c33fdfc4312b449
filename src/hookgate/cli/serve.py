"""``hookgate serve``: run the gateway (WebSocket API, REST mirror, web panel, metrics).

On first start (no API key in the store yet) it creates a master admin key and prints it
once, with the address of the web panel: only once its socket listens, so a start that fails
(a busy port, a bad option) never makes a key it did not show. Migrations, builtin seeding and
that key are each done under the store's start-up lock: replicas may start at once.
SIGINT/SIGTERM shut down gracefully: requests in flight finish, queued background hooks run,
the audit log is flushed.
SIGTERM drains first (see :mod:`hookgate.server.drain`): readiness 503, new requests refused,
in-flight ones answered, and only then do the sockets close.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from hookgate.cli.store_options import location_options
from hookgate.host_code import EDITIONS
from hookgate.log import log_event
from hookgate.sandbox import MODES, SandboxUnavailable
from hookgate.secrets.keyring import Keyring, SecretError
from hookgate.settings import Settings
from hookgate.store import Caller, StoreError, open_store
from hookgate.store.approvals import DEFAULT_MAX_PENDING_APPROVALS
from hookgate.store.location import DATA_DIR_ENV, DATABASE_URL_ENV, default_data_dir

__all__ = ["register"]

DEFAULT_PORT = 8787


def register(main: click.Group) -> None:
    main.add_command(serve)


FIRST_KEY_NAME = "master admin (first start)"


@dataclass(frozen=True, slots=True)
class StartUp:
    """What the start-up work found in the store."""

    where: str
    #: The master key this process created (first start), shown once.
    token: str | None
    #: An active master key exists (made now or before).
    has_master: bool


async def _bootstrap(
    data_dir: str | None, database_url: str | None, keyring: Keyring | None, base: str
) -> StartUp:
    """Migrate the store, check the secret key against it, seed the builtin hooks and create
    the master admin key when there is no key at all: each under the store's start-up lock,
    so replicas starting at once do each exactly once. Called once the socket listens: a
    start that fails before (a busy port, a bad option, another replica's key) creates no
    key it could not show."""
    from hookgate.server.gateway import seed_builtin_hooks

    store = await open_store(data_dir=data_dir, database_url=database_url, pool_size=1)
    try:
        await store.verify_secret_key(keyring)
        await seed_builtin_hooks(store)
        shown: list[str] = []

        def show(token: str) -> None:
            shown.append(token)
            _show_first_key(token, base)

        try:
            created = await store.create_first_master_key(name=FIRST_KEY_NAME, show=show)
        except BaseException:
            if shown:  # shown, then the commit failed: say the key is not valid
                click.echo("That key was NOT saved (the store failed); start again for a new one.")
            raise
        if created is not None:
            return StartUp(repr(store), created[1], has_master=True)
        keys = await store.list_api_keys(Caller.master_scope())
        return StartUp(repr(store), None, has_master=any(k.master and k.active for k in keys))
    finally:
        await store.close()


def _show_first_key(token: str, base: str) -> None:
    click.echo("Created the master admin API key. It is shown only this once; store it now:")
    click.echo(f"  {token}")
    click.echo(f"Open the web panel at {base}/ and sign in with this key.")
    sys.stdout.flush()


def _store_option_hint(data_dir: str | None, database_url: str | None) -> str:
    """The store option ``hookgate keys`` needs to reach this store (never the URL: it may
    hold a password)."""
    if database_url:
        return " --database-url URL"
    return f" --data-dir {data_dir}" if data_dir else ""


def _keyring(data_dir: str | None, database_url: str | None) -> Keyring | None:
    """The key that seals secret header values: HOOKGATE_SECRET_KEY(_FILE), else a key file
    in the SQLite data directory (made on first start). With PostgreSQL and no key given there
    is none, and the gateway refuses secret header values rather than store them in clear."""
    key_dir: str | Path | None = None
    if not (database_url or os.environ.get(DATABASE_URL_ENV)):
        key_dir = data_dir or os.environ.get(DATA_DIR_ENV) or default_data_dir()
    env_keys = ("HOOKGATE_SECRET_KEY", "HOOKGATE_SECRET_KEY_FILE")
    has_env_key = any(os.environ.get(k) for k in env_keys)
    if key_dir is None and not has_env_key:
        return None
    try:
        return Keyring.from_env(data_dir=key_dir, create=True)
    except SecretError as exc:
        raise click.ClickException(str(exc)) from None


def _configure_sandbox(
    settings: Settings, mode: str, data_dir: str | None, database_url: str | None
) -> None:
    """Hook programs run sandboxed, without sight of the data directory and the key file."""
    hidden = [os.environ.get("HOOKGATE_SECRET_KEY_FILE") or ""]
    if not (database_url or os.environ.get(DATABASE_URL_ENV)):
        hidden.append(str(data_dir or os.environ.get(DATA_DIR_ENV) or default_data_dir()))
    settings.hook_sandbox = mode
    settings.sandbox_hidden = tuple(os.path.abspath(p) for p in hidden if p)
    try:
        sandbox = settings.sandbox()
    except SandboxUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    if mode == "auto" and not sandbox.active:
        message = (
            "bubblewrap is not installed: command and process hooks run unsandboxed, as the "
            "gateway's user (install the 'bubblewrap' package, or pass --hook-sandbox off)"
        )
        log_event("hookgate.sandbox.unavailable", level=logging.WARNING, message=message)
        click.echo(f"warning: {message}", err=True)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket (connections queue until the server runs)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP by name: asyncio turns Nagle off (TCP_NODELAY) only on connections whose
    # socket says so, and with proto 0 a keep-alive client waited 40 ms for each response's
    # body (written after its headers, held back until the client's delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


ENVIRONMENT_HELP = """\b
Environment settings:
  HOOKGATE_HOST, HOOKGATE_PORT, HOOKGATE_DATA_DIR, HOOKGATE_DATABASE_URL,
  HOOKGATE_DB_POOL_SIZE, HOOKGATE_EDITION, HOOKGATE_AUDIT_MODE, HOOKGATE_TRACE_EXPORTER,
  HOOKGATE_REDIS_URL, HOOKGATE_LLM_PROVIDERS, HOOKGATE_HOOK_SANDBOX,
  HOOKGATE_TENANT_HOST_CODE, HOOKGATE_APPROVAL_WEBHOOK, HOOKGATE_PUBLIC_URL,
  HOOKGATE_DRAIN_TIMEOUT     the options of the same name
  HOOKGATE_SSRF_ALLOWLIST    comma-separated CIDRs and host names that http and
                             prompt hooks may reach although private (default: none)
  HOOKGATE_SECRET_KEY        base64 key that seals secret headers and error details;
                             every replica on one database needs the same key
  HOOKGATE_SECRET_KEY_FILE   a file holding that key (default with SQLite:
                             secret.key in the data directory, made on first start)
  HOOKGATE_RETENTION_DAYS    days of execution history to keep (default 30; 0 keeps all)
  HOOKGATE_LLM_PROVIDER, HOOKGATE_LLM_MODEL, HOOKGATE_LLM_BASE_URL,
  HOOKGATE_LLM_API_KEY_ENV   the operator's defaults for the public providers (used
                             when no --llm-provider is given)
See docs/gateway.md for every setting."""


@click.command(epilog=ENVIRONMENT_HELP)
@click.option("--host", envvar="HOOKGATE_HOST", default="127.0.0.1", show_default=True,
              help="Address to listen on (keep 127.0.0.1 unless a proxy terminates TLS).")
@click.option("--port", envvar="HOOKGATE_PORT", type=int, default=DEFAULT_PORT,
              show_default=True, help="Port (0 picks a free one and prints it).")
@location_options
@click.option("--db-pool-size", envvar="HOOKGATE_DB_POOL_SIZE", type=click.IntRange(min=1),
              default=10, show_default=True,
              help="PostgreSQL: the most connections this process opens for requests; it also "
              "holds up to 2 for the audit log and 1 for LISTEN (see docs/storage.md).")
@click.option("--edition", envvar="HOOKGATE_EDITION", type=click.Choice(EDITIONS),
              default="lite", show_default=True,
              help="standard refuses every hook that runs code on the host (command, process, "
              "callable, command gates) when defined, tested and run.")
@click.option("--hook-sandbox", envvar="HOOKGATE_HOOK_SANDBOX", type=click.Choice(MODES),
              default="auto", show_default=True,
              help="Run command and process hooks and command gates under bubblewrap (own PID "
              "namespace, data directory and key file hidden, file system read-only but the "
              "hook's cwd). auto: when installed (a warning at start when not).")
@click.option("--tenant-host-code", is_flag=True, envvar="HOOKGATE_TENANT_HOST_CODE",
              help="Let tenant admins define, test and run hooks that run code on this host "
              "(single-team deployments). Default: only master-scope keys may.")
@click.option("--allow-callable", "callable_modules", multiple=True, metavar="MODULE",
              help="Let callable hooks name functions in MODULE (repeatable). Default: none.")
@click.option("--max-frame-bytes", type=int, default=1 << 20, show_default=True,
              help="Largest WebSocket frame or REST body accepted.")
@click.option("--audit-mode", envvar="HOOKGATE_AUDIT_MODE", type=click.Choice(["async", "sync"]),
              default="async", show_default=True,
              help="async: rows are flushed in batches; sync: a decision returns once its "
              "row is committed.")
@click.option("--trace-exporter", envvar="HOOKGATE_TRACE_EXPORTER", default="none",
              show_default=True, help="Spans: none, otlp, console or jsonl:PATH (needs [otel]).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="json: one object per line: key (such as security.hook.circuit_breaker), "
              "level and the event's fields.")
@click.option("--llm-provider", "llm_providers", multiple=True, envvar="HOOKGATE_LLM_PROVIDERS",
              metavar="SPEC",
              help="A model provider prompt and agent hooks may use (repeatable): "
              "name=NAME,format=openai|anthropic,base_url=URL[,api_key_env=VAR][,model=M]. "
              "Default: the public OpenAI and Anthropic endpoints with the keys in this "
              "environment. Tenants name a provider; they never pick the key variable.")
@click.option("--connect-timeout", "connect_timeout_s", type=click.FloatRange(min=0.1),
              default=10.0, show_default=True,
              help="Seconds a WebSocket has, from opening, to sign in with a connect frame.")
@click.option("--redis-url", envvar="HOOKGATE_REDIS_URL", default=None,
              help="redis://host:port/db: share prompt hooks' decision cache and per-turn "
              "counters between replicas (needs hookgate[redis]).")
@click.option("--approval-webhook", envvar="HOOKGATE_APPROVAL_WEBHOOK", default=None,
              metavar="URL", help="POST a notification here (SSRF-guarded like http hooks) "
              "when a hook asks a person for approval.")
@click.option("--drain-timeout", "drain_timeout_s", envvar="HOOKGATE_DRAIN_TIMEOUT",
              type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="On SIGTERM: seconds to wait for requests in flight (readiness is 503 and "
              "new requests are refused meanwhile) before the sockets close.")
@click.option("--max-pending-approvals", envvar="HOOKGATE_MAX_PENDING_APPROVALS",
              type=click.IntRange(min=1), default=DEFAULT_MAX_PENDING_APPROVALS,
              show_default=True, help="Pending approvals one tenant may have at once; past "
              "it a hook that asks for a person blocks, with the reason.")
@click.option("--public-url", envvar="HOOKGATE_PUBLIC_URL", default=None, metavar="URL",
              help="The panel's address as people reach it (the link in approval "
              "notifications); default: the address this gateway listens on.")
def serve(
    host: str,
    port: int,
    data_dir: str | None,
    database_url: str | None,
    db_pool_size: int,
    edition: str,
    callable_modules: tuple[str, ...],
    max_frame_bytes: int,
    audit_mode: str,
    trace_exporter: str,
    log_format: str,
    llm_providers: tuple[str, ...],
    connect_timeout_s: float,
    redis_url: str | None,
    tenant_host_code: bool,
    approval_webhook: str | None,
    max_pending_approvals: int,
    public_url: str | None,
    hook_sandbox: str,
    drain_timeout_s: float,
) -> None:
    """Run the hookgate gateway."""
    import uvicorn

    from hookgate.server.app import create_app
    from hookgate.server.drain import DrainingServer, drain_app
    from hookgate.server.gateway import Gateway, GatewayOptions
    from hookgate.server.logs import configure_logging
    from hookgate.server.tracing import TraceSetupError, configure_tracing

    root_level = logging.getLogger().level or logging.WARNING
    configure_logging(min(root_level, logging.INFO), log_format)
    try:
        provider = configure_tracing(trace_exporter)
    except TraceSetupError as exc:
        raise click.ClickException(str(exc)) from None
    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    base = f"http://{shown_host}:{bound_port}"
    from hookgate.llm.providers import ProviderRegistry, parse_provider

    try:
        providers = tuple(parse_provider(spec) for spec in llm_providers)
        ProviderRegistry(providers)  # refuses a name given twice
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--llm-provider") from None
    options = GatewayOptions(
        edition=edition,
        max_frame_bytes=max_frame_bytes,
        callable_modules=callable_modules,
        audit_mode=audit_mode,
        connect_timeout_s=connect_timeout_s,
        redis_url=redis_url,
        llm_providers=providers,
        tenant_host_code=tenant_host_code,
        approval_webhook_url=approval_webhook,
        max_pending_approvals=max_pending_approvals,
        public_url=public_url or base,
        drain_timeout_s=drain_timeout_s,
    )
    if redis_url:
        try:
            import redis  # noqa: F401 - only checks that the extra is installed
        except ImportError:
            raise click.ClickException(
                "--redis-url needs the redis client: pip install 'hookgate[redis]'"
            ) from None

    keyring = _keyring(data_dir, database_url)
    try:
        settings = Settings.from_env()
    except ValueError as exc:  # a malformed setting in the environment
        raise click.ClickException(str(exc)) from None
    _configure_sandbox(settings, hook_sandbox, data_dir, database_url)

    # Everything that can refuse the start has run and the socket listens: only now may a
    # first master key be made (it is printed at once).
    try:
        started = asyncio.run(_bootstrap(data_dir, database_url, keyring, base))
    except StoreError as exc:
        sock.close()
        raise click.ClickException(str(exc)) from None

    async def make_gateway() -> Gateway:
        store = await open_store(
            data_dir=data_dir, database_url=database_url, pool_size=db_pool_size
        )
        # The keyring seals secret header values and execution error details, and opens
        # them again (http hooks at dispatch, admins reading history).
        return Gateway(
            store,
            options=options,
            settings=settings,
            keyring=keyring,
            tracer_provider=provider,
        )

    if started.token is None and not started.has_master:
        store_hint = _store_option_hint(data_dir, database_url)
        click.echo(
            "This store has no active master key. Make one (it is shown once) with:\n"
            f"  hookgate keys create --master --role admin{store_hint}"
        )
    click.echo(
        f"hookgate gateway ({edition} edition) listening on {base} "
        f"(WebSocket {base.replace('http', 'ws', 1)}/ws, REST {base}/api/v1); "
        f"store: {started.where}"
    )
    sys.stdout.flush()
    app = create_app(make_gateway)
    config = uvicorn.Config(
        app,
        ws="auto",
        loop="asyncio",
        http="auto",
        lifespan="on",
        log_level="warning",
        access_log=False,
        ws_max_size=max(16 << 20, 4 * max_frame_bytes),
        # Frames are small JSON: compressing each costs more CPU than it saves on loopback.
        ws_per_message_deflate=False,
        # The drain already waited for requests in flight; this bounds what is left.
        timeout_graceful_shutdown=max(1, int(drain_timeout_s)),
    )
    server: Any = DrainingServer(config, drain_app(app, drain_timeout_s))
    # The gateway's lifespan closes everything (store, audit log, spans): uvicorn re-raises
    # SIGTERM/SIGINT after a graceful shutdown, so nothing after run() is sure to execute.
    server.run(sockets=[sock])
    if not server.started:
        raise SystemExit(1)
