-- hookgate schema 4 (SQLite): human approvals.
-- A hook that answers "ask" (or is configured approval: required) creates a pending approval;
-- a person approves or denies it, or it expires. The row is also the audit record of the
-- decision: who decided, when, with which comment, and whether the input was edited.
-- tool_input, edited_input and outcome hold JSON text, sealed (AES-GCM) when the gateway
-- has a key.

ALTER TABLE agent_hooks ADD COLUMN approval TEXT;

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    agent_id TEXT,
    session_id TEXT,
    event TEXT NOT NULL,
    event_id TEXT,
    tool_name TEXT,
    tool_input TEXT,
    hook_id TEXT,
    hook_name TEXT NOT NULL DEFAULT '',
    reason TEXT,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    on_timeout TEXT NOT NULL DEFAULT 'block' CHECK (on_timeout IN ('block', 'allow')),
    outcome TEXT,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    decided_at REAL,
    decided_by TEXT,
    comment TEXT,
    input_edited INTEGER NOT NULL DEFAULT 0,
    edited_input TEXT
);
CREATE INDEX ix_approvals_tenant ON approvals (tenant_id, status, created_at);
CREATE INDEX ix_approvals_pending ON approvals (expires_at) WHERE status = 'pending';
