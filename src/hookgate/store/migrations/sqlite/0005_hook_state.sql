-- hookgate schema 5 (SQLite): hook state, a small key-value map per session and per run.
-- One row per entry; value is JSON; expired rows are never read and are pruned on writes.
-- tenant_id is the event's tenant (set by the gateway from the caller's key).

CREATE TABLE hook_state (
    tenant_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('session', 'run')),
    scope_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (tenant_id, namespace, scope, scope_id, key)
);
CREATE INDEX hook_state_expires ON hook_state (expires_at);
