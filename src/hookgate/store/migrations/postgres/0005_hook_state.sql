-- hookgate schema 5 (PostgreSQL): hook state, a small key-value map per session and per run.
-- One row per entry; value is JSON text; expired rows are never read and are pruned on writes.
-- tenant_id is the event's tenant (set by the gateway from the caller's key).

CREATE TABLE hook_state (
    tenant_id text NOT NULL,
    namespace text NOT NULL,
    scope text NOT NULL CHECK (scope IN ('session', 'run')),
    scope_id text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    expires_at double precision NOT NULL,
    PRIMARY KEY (tenant_id, namespace, scope, scope_id, key)
);
CREATE INDEX hook_state_expires ON hook_state (expires_at);
