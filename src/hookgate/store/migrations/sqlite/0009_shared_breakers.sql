-- hookgate schema 9 (SQLite): circuit breakers shared by gateway processes on one database.
-- One row per hook that faulted: the fault window (a JSON list of epoch seconds, at most the
-- threshold's worth), the state and when it opened. Rows of closed breakers are deleted.

CREATE TABLE hook_breakers (
    hook_id TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('closed', 'open')),
    faults TEXT NOT NULL,
    opened_at REAL,
    last_fault TEXT,
    updated_at REAL NOT NULL
);
