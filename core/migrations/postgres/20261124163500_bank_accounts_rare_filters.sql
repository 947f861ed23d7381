-- `GET /bank-accounts` filtered by a value few accounts have: an overdraft reserve account,
-- `is_overdraftable=true`, a status other than `open`, a currency other than USD. Accounts are
-- made `open`, in USD and not overdraftable unless the platform asks otherwise, so these match
-- few of a platform's accounts, and the list walked its whole order index past the others: on
-- SQLite, among 1 326 477 accounts, one page of `currency_code=EUR` or `status=closed` (none
-- matching) took 0.29 s, 6-7 pages/s on 64 connections (bench/README.md). The common values
-- keep the list's own indexes, where most rows match.
--
-- Partial, so an account with the usual values (all the write scenarios make) adds no entry,
-- and a transfer, which changes only balances, never touches them. SQLite picks a partial index
-- when it prepares a statement, before values are bound, so the list query states each index's
-- condition as a literal (`currency_code <> 'USD'`) and, on SQLite, names the index (`INDEXED
-- BY`): without statistics it kept walking the sort's index (`store::bank_accounts::list`).
CREATE INDEX bank_accounts_by_reserve
    ON bank_accounts (platform_id, overdraft_reserve_account_id, created_at, id)
    WHERE overdraft_reserve_account_id IS NOT NULL;
CREATE INDEX bank_accounts_overdraftable
    ON bank_accounts (platform_id, created_at, id)
    WHERE is_overdraftable = TRUE;
CREATE INDEX bank_accounts_not_open
    ON bank_accounts (platform_id, status, created_at, id)
    WHERE status <> 'open';
CREATE INDEX bank_accounts_not_usd
    ON bank_accounts (platform_id, currency_code, created_at, id)
    WHERE currency_code <> 'USD';
