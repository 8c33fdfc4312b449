-- hookgate schema 1 (SQLite): hook definitions, executions, budgets, API keys.
-- Timestamps are epoch seconds (REAL); JSON columns hold JSON text.

CREATE TABLE hookgate_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    -- grows on every hook change; resolvers reload when it moves
    hooks_version INTEGER NOT NULL
);
INSERT INTO hookgate_state (id, hooks_version) VALUES (1, 0);

CREATE TABLE agent_hooks (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    agent_ids TEXT NOT NULL DEFAULT '[]',
    event TEXT NOT NULL,
    handler_type TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('global', 'tenant', 'agent')),
    config TEXT NOT NULL DEFAULT '{}',
    name TEXT NOT NULL DEFAULT '',
    matcher TEXT,
    if_expr TEXT,
    timeout_ms INTEGER NOT NULL DEFAULT 5000,
    on_timeout TEXT NOT NULL DEFAULT 'block' CHECK (on_timeout IN ('block', 'allow')),
    on_error TEXT NOT NULL DEFAULT 'block' CHECK (on_error IN ('block', 'allow')),
    priority INTEGER NOT NULL DEFAULT 0,
    enabled INTEGER NOT NULL DEFAULT 1,
    version INTEGER NOT NULL DEFAULT 1,
    source TEXT NOT NULL DEFAULT 'user' CHECK (source IN ('builtin', 'user')),
    sort_order INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    breaker_state TEXT NOT NULL DEFAULT 'closed'
        CHECK (breaker_state IN ('closed', 'open', 'half_open')),
    breaker_faults INTEGER NOT NULL DEFAULT 0,
    breaker_last_fault TEXT,
    breaker_changed_at REAL
);
-- names identify hooks for import/export, so they are unique within a tenant
CREATE UNIQUE INDEX uq_agent_hooks_name ON agent_hooks (tenant_id, name) WHERE name <> '';
CREATE INDEX idx_agent_hooks_lookup ON agent_hooks (tenant_id, event);

CREATE TABLE hook_executions (
    -- insertion order; never reused (AUTOINCREMENT), so history cursors stay valid
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    hook_id TEXT REFERENCES agent_hooks (id) ON DELETE SET NULL,
    hook_version INTEGER NOT NULL,
    hook_name TEXT NOT NULL DEFAULT '',
    handler_type TEXT NOT NULL,
    event TEXT NOT NULL,
    event_id TEXT NOT NULL,
    decision TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    tenant_id TEXT NOT NULL,
    agent_id TEXT,
    session_id TEXT,
    input_hash TEXT NOT NULL DEFAULT '',
    dedup_key TEXT NOT NULL,
    error TEXT CHECK (error IS NULL OR length(error) <= 256),
    error_detail BLOB,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
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
    tenant_id TEXT PRIMARY KEY,
    month_start TEXT NOT NULL,
    budget_total INTEGER NOT NULL CHECK (budget_total >= 0),
    remaining INTEGER NOT NULL,
    last_warned_at REAL,
    metadata TEXT NOT NULL DEFAULT '{}',
    updated_at REAL NOT NULL
);

CREATE TABLE hookgate_api_keys (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    master INTEGER NOT NULL DEFAULT 0,
    name TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
);
CREATE INDEX idx_hookgate_api_keys_tenant ON hookgate_api_keys (tenant_id);
