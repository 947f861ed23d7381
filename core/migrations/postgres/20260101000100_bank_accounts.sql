-- Bank account list sorts (`sort=description`, `sort=balance`). Keep in step with
-- ../sqlite/20260101000100_bank_accounts.sql.
--
-- `sort=description` orders by LOWER(description) then id. SQLite compares text by code point
-- (its BINARY collation); PostgreSQL would use the database's locale (en_US orders "a b" after
-- "ab", and differently from SQLite), so the column gets the code-point collation "C" here and
-- both engines answer the same order. LIKE and LOWER keep working as before.
ALTER TABLE bank_accounts ALTER COLUMN description TYPE TEXT COLLATE "C";

CREATE INDEX bank_accounts_by_description ON bank_accounts (platform_id, LOWER(description), id);
CREATE INDEX bank_accounts_by_balance ON bank_accounts (platform_id, available_amount, id);
