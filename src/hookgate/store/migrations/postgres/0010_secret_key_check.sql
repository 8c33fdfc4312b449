-- hookgate schema 10 (PostgreSQL): a value sealed with the gateway's secret key, so a
-- gateway started with another key (a replica given a different HOOKGATE_SECRET_KEY) is
-- refused at start instead of failing later on every sealed header and approval. NULL until
-- a gateway with a key starts.
ALTER TABLE hookgate_state ADD COLUMN key_check text;
