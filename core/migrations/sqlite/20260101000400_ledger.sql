-- Ledger and transfers. Keep in step with ../postgres/20260101000400_ledger.sql.
--
-- `GET /transfers/book?bank_account_id=` lists the transfers whose sender or receiver is one
-- account, newest first: one index per side, so the OR of the two is two index range scans.
CREATE INDEX book_transfers_by_sender
    ON book_transfers (platform_id, sender_bank_account_id, created_at, id);
CREATE INDEX book_transfers_by_receiver
    ON book_transfers (platform_id, receiver_bank_account_id, created_at, id);

-- How the ledger writes `ledger_postings` (see server/src/domain/ledger.rs):
-- - one journal entry per money movement; `journal_id` is `<source_id>:<event>` (events:
--   `create`, `clear`, `cancel` for book transfers, `receive` for ACH transfers), unique per
--   entry, and the postings of one entry sum to zero;
-- - one row per changed (account, balance) of an entry, with the net signed amount;
-- - `source_type` is `book_transfer` or `ach_transfer`, `source_id` the transfer id;
-- - `created_at` is the application clock's time of the movement, the same for every row of
--   an entry and equal to the transfer's `created_at` or `updated_at`.
