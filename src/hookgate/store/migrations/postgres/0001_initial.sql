-- hookgate schema 1 (PostgreSQL): hook definitions, executions, budgets, API keys.
-- Timestamps are epoch seconds (double precision), the same values the SQLite store keeps.

CREATE TABLE hookgate_state (
    id integer PRIMARY KEY CHECK (id = 1),
    -- grows on every hook change; resolvers reload when it moves
    hooks_version bigint NOT NULL
);
INSERT INTO hookgate_state (id, hooks_version) VALUES (1, 0);

CREATE TABLE agent_hooks (
    id text PRIMARY KEY,
    tenant_id text NOT NULL,
    agent_ids jsonb NOT NULL DEFAULT '[]',
    event varchar(64) NOT NULL,
    handler_type varchar(32) NOT NULL,
    scope varchar(8) NOT NULL CHECK (scope IN ('global', 'tenant', 'agent')),
    config jsonb NOT NULL DEFAULT '{}',
    name text NOT NULL DEFAULT '',
    matcher text,
    if_expr text,
    timeout_ms integer NOT NULL DEFAULT 5000,
    on_timeout varchar(8) NOT NULL DEFAULT 'block' CHECK (on_timeout IN ('block', 'allow')),
    on_error varchar(8) NOT NULL DEFAULT 'block' CHECK (on_error IN ('block', 'allow')),
    priority integer NOT NULL DEFAULT 0,
    enabled boolean NOT NULL DEFAULT true,
    version integer NOT NULL DEFAULT 1,
    source varchar(8) NOT NULL DEFAULT 'user' CHECK (source IN ('builtin', 'user')),
    sort_order bigint NOT NULL DEFAULT 0,
    metadata jsonb NOT NULL DEFAULT '{}',
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    breaker_state varchar(16) NOT NULL DEFAULT 'closed'
        CHECK (breaker_state IN ('closed', 'open', 'half_open')),
    breaker_faults integer NOT NULL DEFAULT 0,
    breaker_last_fault text,
    breaker_changed_at double precision
);
-- names identify hooks for import/export, so they are unique within a tenant
CREATE UNIQUE INDEX uq_agent_hooks_name ON agent_hooks (tenant_id, name) WHERE name <> '';
CREATE INDEX idx_agent_hooks_lookup ON agent_hooks (tenant_id, event);

CREATE TABLE hook_executions (
    -- insertion order, the history cursor
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL,
    hook_id text REFERENCES agent_hooks (id) ON DELETE SET NULL,
    hook_version integer NOT NULL,
    hook_name text NOT NULL DEFAULT '',
    handler_type text NOT NULL,
    event text NOT NULL,
    event_id text NOT NULL,
    decision text NOT NULL,
    duration_ms double precision NOT NULL,
    tenant_id text NOT NULL,
    agent_id text,
    session_id text,
    input_hash text NOT NULL DEFAULT '',
    dedup_key text NOT NULL,
    error varchar(256),
    error_detail bytea,
    metadata jsonb NOT NULL DEFAULT '{}',
    created_at double precision NOT NULL
);
CREATE UNIQUE INDEX uq_hook_executions_dedup ON hook_executions (dedup_key);
-- Single-row reads are for the sealed error detail, so only rows with one are indexed by
-- id: a full index on ids costs the audit log a third of its insert rate.
CREATE INDEX idx_hook_executions_id ON hook_executions (id) WHERE error_detail IS NOT NULL;
CREATE INDEX idx_hook_executions_tenant ON hook_executions (tenant_id, seq);
CREATE INDEX idx_hook_executions_hook ON hook_executions (hook_id, seq);
CREATE INDEX idx_hook_executions_session ON hook_executions (session_id, seq);
-- No index on created_at: retention finds its boundary along seq (rows arrive in time
-- order), and the time-range filters ride on the tenant/hook/session indexes.

CREATE TABLE tenant_hook_budget (
    tenant_id text PRIMARY KEY,
    month_start date NOT NULL,
    budget_total bigint NOT NULL CHECK (budget_total >= 0),
    remaining bigint NOT NULL,
    last_warned_at double precision,
    metadata jsonb NOT NULL DEFAULT '{}',
    updated_at double precision NOT NULL
);

CREATE TABLE hookgate_api_keys (
    id text PRIMARY KEY,
    key_hash text NOT NULL UNIQUE,
    prefix text NOT NULL,
    tenant_id text NOT NULL,
    role varchar(16) NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    master boolean NOT NULL DEFAULT false,
    name text NOT NULL DEFAULT '',
    created_at double precision NOT NULL,
    revoked_at double precision
);
CREATE INDEX idx_hookgate_api_keys_tenant ON hookgate_api_keys (tenant_id);
