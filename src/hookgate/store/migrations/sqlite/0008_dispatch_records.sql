-- hookgate schema 8 (SQLite): one record per dispatch.
-- Every dispatch (also one no hook matched, unless sampled away) is one row: what the agent
-- asked (event, tool, agent, session), the one answer it got (decision, reason), how long it
-- took, the hooks that ran (JSON: execution id, hook, decision, duration, redacted reason and
-- error), the approval a person decided (JSON: id, status, who, when), and the input's size,
-- hash and redacted excerpt. The full reason and the event's payload are kept only sealed
-- (AES-GCM, bound to the dispatch id) in detail. Execution rows name their dispatch.

ALTER TABLE hook_executions ADD COLUMN dispatch_id TEXT;

CREATE TABLE dispatch_records (
    -- insertion order; never reused (AUTOINCREMENT), so cursors stay valid
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    event TEXT NOT NULL,
    event_id TEXT NOT NULL DEFAULT '',
    tool_name TEXT,
    agent_id TEXT,
    session_id TEXT,
    decision TEXT NOT NULL,
    reason TEXT CHECK (reason IS NULL OR length(reason) <= 256),
    duration_ms REAL NOT NULL,
    matched INTEGER NOT NULL DEFAULT 0,
    hooks TEXT NOT NULL DEFAULT '[]',
    approval_id TEXT,
    approval TEXT,
    refused TEXT CHECK (refused IS NULL OR length(refused) <= 256),
    input_size INTEGER,
    input_hash TEXT NOT NULL DEFAULT '',
    input_summary TEXT CHECK (input_summary IS NULL OR length(input_summary) <= 256),
    trace_id TEXT,
    detail BLOB,
    created_at REAL NOT NULL
);
CREATE UNIQUE INDEX uq_dispatch_records_id ON dispatch_records (id);
CREATE INDEX idx_dispatch_records_tenant ON dispatch_records (tenant_id, seq);
CREATE INDEX idx_dispatch_records_session ON dispatch_records (session_id, seq);
CREATE INDEX idx_dispatch_records_approval ON dispatch_records (approval_id)
    WHERE approval_id IS NOT NULL;
