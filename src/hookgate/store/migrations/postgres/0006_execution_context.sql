-- hookgate schema 6 (PostgreSQL): what an execution was about and why it decided as it did.
-- tool_name is the event's tool (NULL for events without one); input_summary a redacted
-- excerpt of the event's input; reason the hook's reason, redacted and cut like error.
-- NULL on rows written before this migration. hook_ref is the hook's id as executed: it
-- stays when the hook is deleted (hook_id turns NULL), so a deleted hook's history is found.

ALTER TABLE hook_executions
    ADD COLUMN tool_name text,
    ADD COLUMN hook_ref text,
    ADD COLUMN input_summary varchar(256),
    ADD COLUMN reason varchar(256);
-- the Audit view filters a tenant's rows by tool, newest first
CREATE INDEX idx_hook_executions_tool ON hook_executions (tenant_id, tool_name, seq);
UPDATE hook_executions SET hook_ref = hook_id WHERE hook_id IS NOT NULL;
CREATE INDEX idx_hook_executions_hook_ref ON hook_executions (hook_ref, seq);
