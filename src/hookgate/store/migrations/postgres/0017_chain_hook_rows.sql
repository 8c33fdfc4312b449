-- hookgate schema 17 (PostgreSQL): the audit chain covers each record's hook rows, in one hash.
-- Records written from now on carry hook_rows: "id=digest" per hook row (hook_executions
-- with the record's dispatch_id) in write order, ";" between, "" for none. Their record_hash
-- is SHA-256 of the previous hash, the place, and the record's stored columns with hook_rows
-- (hookgate.store.chain). Records written before keep their schema-11 hash (hook_rows NULL).
-- hooks and approval become json, which keeps the text written (jsonb rewrites it), so the
-- hash covers exactly what is stored, as on SQLite.
-- The index finds a record's hook rows, for the writer and for verification.
ALTER TABLE dispatch_records ADD COLUMN hook_rows text;
ALTER TABLE dispatch_records ALTER COLUMN hooks DROP DEFAULT;
ALTER TABLE dispatch_records ALTER COLUMN hooks TYPE json USING hooks::json;
ALTER TABLE dispatch_records ALTER COLUMN hooks SET DEFAULT '[]';
ALTER TABLE dispatch_records ALTER COLUMN approval TYPE json USING approval::json;
CREATE INDEX idx_hook_executions_dispatch ON hook_executions (dispatch_id);
