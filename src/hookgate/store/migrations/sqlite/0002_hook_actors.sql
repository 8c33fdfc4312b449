-- hookgate schema 2 (SQLite): who created a hook and who last changed it.
-- The actor is an API key's name and id prefix, "system" for builtin seeding, or the CLI;
-- never the key itself. NULL on rows written before this migration.

ALTER TABLE agent_hooks ADD COLUMN created_by TEXT;
ALTER TABLE agent_hooks ADD COLUMN updated_by TEXT;
