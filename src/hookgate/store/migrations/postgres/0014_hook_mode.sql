-- hookgate schema 14 (PostgreSQL): a hook's mode. enforce: it decides; shadow: it runs and
-- its answer is recorded as what it would have decided, never changing the outcome.
ALTER TABLE agent_hooks ADD COLUMN mode text NOT NULL DEFAULT 'enforce'
    CHECK (mode IN ('enforce', 'shadow'));
