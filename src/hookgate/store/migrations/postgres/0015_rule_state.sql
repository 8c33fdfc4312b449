-- hookgate schema 15 (PostgreSQL): the counters and stamps of rule hooks (hookgate.state.rules).
-- name is the SHA-256 of the key (kind, hook id or tool pattern, per, session or agent id,
-- window): session ids are agent input, so they are never stored as they came. value is a
-- counter (limit) or a time (the session history). Expired rows are never read and are
-- swept on writes. tenant_id is the event's tenant (set by the gateway from the caller's key).

CREATE TABLE rule_state (
    tenant_id text NOT NULL,
    name text NOT NULL,
    value double precision NOT NULL,
    expires_at double precision NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE INDEX rule_state_expires ON rule_state (expires_at);
