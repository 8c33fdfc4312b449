-- hookgate schema 7 (SQLite): who asked for an approval, and the approver role.
-- requested_key_id is the API key whose dispatch created the approval (NULL when no key asked:
-- the library, rows from before this migration). A decision from that key, or from a key that
-- asked for an approval in the same agent session, is refused.
-- The approver role may read and decide approvals but not dispatch; SQLite cannot change a
-- CHECK constraint in place, so the keys table is rebuilt with the new list of roles.

ALTER TABLE approvals ADD COLUMN requested_key_id TEXT;
CREATE INDEX ix_approvals_session_requester ON approvals (tenant_id, session_id, requested_key_id);

CREATE TABLE hookgate_api_keys_v7 (
    id TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('viewer', 'approver', 'operator', 'admin')),
    master INTEGER NOT NULL DEFAULT 0,
    name TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
);
INSERT INTO hookgate_api_keys_v7 (id, key_hash, prefix, tenant_id, role, master, name, created_at, revoked_at)
    SELECT id, key_hash, prefix, tenant_id, role, master, name, created_at, revoked_at
    FROM hookgate_api_keys;
DROP TABLE hookgate_api_keys;
ALTER TABLE hookgate_api_keys_v7 RENAME TO hookgate_api_keys;
CREATE INDEX idx_hookgate_api_keys_tenant ON hookgate_api_keys (tenant_id);
