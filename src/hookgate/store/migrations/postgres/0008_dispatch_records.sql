-- hookgate schema 8 (PostgreSQL): one record per dispatch.
-- Every dispatch (also one no hook matched, unless sampled away) is one row: what the agent
-- asked (event, tool, agent, session), the one answer it got (decision, reason), how long it
-- took, the hooks that ran (JSON: execution id, hook, decision, duration, redacted reason and
-- error), the approval a person decided (JSON: id, status, who, when), and the input's size,
-- hash and redacted excerpt. The full reason and the event's payload are kept only sealed
-- (AES-GCM, bound to the dispatch id) in detail. Execution rows name their dispatch.

ALTER TABLE hook_executions ADD COLUMN dispatch_id text;

CREATE TABLE dispatch_records (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL,
    tenant_id text NOT NULL,
    event text NOT NULL,
    event_id text NOT NULL DEFAULT '',
    tool_name text,
    agent_id text,
    session_id text,
    decision text NOT NULL,
    reason varchar(256),
    duration_ms double precision NOT NULL,
    matched integer NOT NULL DEFAULT 0,
    hooks jsonb NOT NULL DEFAULT '[]',
    approval_id text,
    approval jsonb,
    refused varchar(256),
    input_size bigint,
    input_hash text NOT NULL DEFAULT '',
    input_summary varchar(256),
    trace_id text,
    detail bytea,
    created_at double precision NOT NULL
);
CREATE UNIQUE INDEX uq_dispatch_records_id ON dispatch_records (id);
CREATE INDEX idx_dispatch_records_tenant ON dispatch_records (tenant_id, seq);
CREATE INDEX idx_dispatch_records_session ON dispatch_records (session_id, seq);
CREATE INDEX idx_dispatch_records_approval ON dispatch_records (approval_id)
    WHERE approval_id IS NOT NULL;
