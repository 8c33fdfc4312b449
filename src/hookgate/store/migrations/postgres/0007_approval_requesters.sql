-- hookgate schema 7 (PostgreSQL): who asked for an approval, and the approver role.
-- requested_key_id is the API key whose dispatch created the approval (NULL when no key asked:
-- the library, rows from before this migration). A decision from that key, or from a key that
-- asked for an approval in the same agent session, is refused.
-- The approver role may read and decide approvals but not dispatch.

ALTER TABLE approvals ADD COLUMN requested_key_id text;
CREATE INDEX ix_approvals_session_requester ON approvals (tenant_id, session_id, requested_key_id);

ALTER TABLE hookgate_api_keys DROP CONSTRAINT IF EXISTS hookgate_api_keys_role_check;
ALTER TABLE hookgate_api_keys ADD CONSTRAINT hookgate_api_keys_role_check
    CHECK (role IN ('viewer', 'approver', 'operator', 'admin'));
