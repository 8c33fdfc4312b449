-- hookgate schema 13 (PostgreSQL): a hook's definition history. One row per change (created,
-- updated, enabled, disabled, deleted) with the definition as it stood after it (sealed
-- secrets stay sealed), who made it and when; the panel diffs consecutive versions.
CREATE TABLE hook_revisions (
    seq bigserial PRIMARY KEY,
    hook_id text NOT NULL,
    tenant_id text,
    version integer NOT NULL,
    action text NOT NULL,
    changed_at double precision NOT NULL,
    changed_by text,
    definition text NOT NULL
);
CREATE INDEX hook_revisions_hook ON hook_revisions (hook_id, seq);
