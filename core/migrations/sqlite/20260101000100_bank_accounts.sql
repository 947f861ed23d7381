-- Bank account list sorts (`sort=description`, `sort=balance`). Keep in step with
-- ../postgres/20260101000100_bank_accounts.sql.
--
-- `sort=description` orders by LOWER(description) then id. SQLite already compares text by code
-- point (BINARY collation); the PostgreSQL migration makes that engine do the same.
CREATE INDEX bank_accounts_by_description ON bank_accounts (platform_id, LOWER(description), id);
CREATE INDEX bank_accounts_by_balance ON bank_accounts (platform_id, available_amount, id);
