-- hookgate schema 11 (SQLite): a per-tenant hash chain over dispatch records.
-- Each record written from now on carries its place in its tenant's chain (chain_seq,
-- 1, 2, …), the previous record's hash (prev_hash) and its own hash (record_hash: SHA-256 of
-- the previous hash, the place and the record's canonical content). Records written before
-- this schema have no place (NULL) and are outside the chain.
-- audit_chain_heads checkpoints each tenant's chain: the last place and hash written, and the
-- base the chain starts from (place 0 and 64 zeros, or the last record retention deleted).
-- audit_chain_gaps keeps place and hashes of records deleted from the middle of a chain
-- (retention of records no hook matched), so the records around them still link.
ALTER TABLE dispatch_records ADD COLUMN chain_seq INTEGER;
ALTER TABLE dispatch_records ADD COLUMN prev_hash TEXT;
ALTER TABLE dispatch_records ADD COLUMN record_hash TEXT;
CREATE INDEX idx_dispatch_records_chain ON dispatch_records (tenant_id, chain_seq);

CREATE TABLE audit_chain_heads (
    tenant_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    base_seq INTEGER NOT NULL,
    base_hash TEXT NOT NULL,
    updated_at REAL NOT NULL
);

CREATE TABLE audit_chain_gaps (
    tenant_id TEXT NOT NULL,
    chain_seq INTEGER NOT NULL,
    prev_hash TEXT NOT NULL,
    record_hash TEXT NOT NULL,
    PRIMARY KEY (tenant_id, chain_seq)
);
