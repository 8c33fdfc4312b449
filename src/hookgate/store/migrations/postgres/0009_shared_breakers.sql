-- hookgate schema 9 (PostgreSQL): circuit breakers shared by gateway replicas (without Redis).
-- One row per hook that faulted: the fault window (a JSON list of epoch seconds, at most the
-- threshold's worth), the state and when it opened. Rows of closed breakers are deleted.

CREATE TABLE hook_breakers (
    hook_id text PRIMARY KEY,
    state text NOT NULL CHECK (state IN ('closed', 'open')),
    faults text NOT NULL,
    opened_at double precision,
    last_fault text,
    updated_at double precision NOT NULL
);
CREATE INDEX hook_breakers_open ON hook_breakers (state) WHERE state = 'open';
