-- hookgate schema 13 (SQLite): a hook's definition history. One row per change (created,
-- updated, enabled, disabled, deleted) with the definition as it stood after it (sealed
-- secrets stay sealed), who made it and when; the panel diffs consecutive versions.
CREATE TABLE hook_revisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    hook_id TEXT NOT NULL,
    tenant_id TEXT,
    version INTEGER NOT NULL,
    action TEXT NOT NULL,
    changed_at REAL NOT NULL,
    changed_by TEXT,
    definition TEXT NOT NULL
);
CREATE INDEX hook_revisions_hook ON hook_revisions (hook_id, seq);
