-- hookgate schema 17 (SQLite): the audit chain covers each record's hook rows, in one hash.
-- Records written from now on carry hook_rows: "id=digest" per hook row (hook_executions
-- with the record's dispatch_id) in write order, ";" between, "" for none. Their record_hash
-- is SHA-256 of the previous hash, the place, and the record's stored columns with hook_rows
-- (hookgate.store.chain). Records written before keep their schema-11 hash (hook_rows NULL).
-- The index finds a record's hook rows, for the writer and for verification.
ALTER TABLE dispatch_records ADD COLUMN hook_rows TEXT;
CREATE INDEX idx_hook_executions_dispatch ON hook_executions (dispatch_id);
