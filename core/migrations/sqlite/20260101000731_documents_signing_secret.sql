-- Server-wide secrets (SQLite). Keep in step with ../postgres/20260101000731_documents_signing_secret.sql.
-- Not a tenant table: a secret belongs to the deployment, not to a platform.
-- `document_url_signing` keys the HMAC of signed document download links. It lives in the
-- database so that every bankd process sharing the database signs and checks links alike; the
-- first process that needs it inserts a random value (`ON CONFLICT DO NOTHING`, then reads it
-- back), so no secret is ever written into a migration or a configuration file.
CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY,
    secret BLOB NOT NULL CHECK (length(secret) >= 32),
    created_at TEXT NOT NULL
);
