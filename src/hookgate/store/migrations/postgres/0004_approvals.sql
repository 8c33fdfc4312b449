-- hookgate schema 4 (PostgreSQL): human approvals.
-- A hook that answers "ask" (or is configured approval: required) creates a pending approval;
-- a person approves or denies it, or it expires. The row is also the audit record of the
-- decision: who decided, when, with which comment, and whether the input was edited.
-- tool_input, edited_input and outcome hold JSON text, sealed (AES-GCM) when the gateway
-- has a key. Every change sends NOTIFY hookgate_approvals, so replicas wake their waiters.

ALTER TABLE agent_hooks ADD COLUMN approval text;

CREATE TABLE approvals (
    id text PRIMARY KEY,
    tenant_id text NOT NULL,
    agent_id text,
    session_id text,
    event text NOT NULL,
    event_id text,
    tool_name text,
    tool_input text,
    hook_id text,
    hook_name text NOT NULL DEFAULT '',
    reason text,
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    on_timeout text NOT NULL DEFAULT 'block' CHECK (on_timeout IN ('block', 'allow')),
    outcome text,
    created_at double precision NOT NULL,
    expires_at double precision NOT NULL,
    decided_at double precision,
    decided_by text,
    comment text,
    input_edited boolean NOT NULL DEFAULT false,
    edited_input text
);
CREATE INDEX ix_approvals_tenant ON approvals (tenant_id, status, created_at);
CREATE INDEX ix_approvals_pending ON approvals (expires_at) WHERE status = 'pending';
