-- `GET /transfers/book?status=` for the statuses other than COMPLETED: a few transfers among
-- many, which the list's own index (`book_transfers_list`) walked past one by one: on SQLite,
-- among 356 574 transfers none of them canceled, `status=CANCELED` ran at 11.5/s on 64
-- connections, p99 6-7 s (bench/README.md). COMPLETED, the common status, stays on the list
-- index, where most rows match. Partial, so a transfer completed when
-- it is created adds no entry; a held one adds an entry, removed when it clears.
--
-- SQLite picks a partial index when it prepares a statement, before values are bound, so the
-- list query writes the status as a literal together with this index's own condition
-- (`store::transfers::list_book_transfers`).
CREATE INDEX book_transfers_not_completed
    ON book_transfers (platform_id, status, created_at, id)
    WHERE status <> 'COMPLETED';
